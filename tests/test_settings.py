"""The presets and named settings as data (``marlinkit/settings/*.toml``): loaded to the very objects the code built
before they were data (results are keyed by a hash of their configuration), and a file that does not fit its schema
refused with an error naming the file, the table and the key."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import tomllib
from pathlib import Path

import pytest

from marlinkit import paths, presets, settings
from marlinkit.maestro import ablation, curriculum, reference_queue, results, sweep
from marlinkit.maestro.curriculum_env import Calibration
from marlinkit.runs import ResultStore, config_hash
from marlinkit.settings import SettingsError


def canonical(value):
    """``value`` as JSON-able data with every float as its exact bits (``float.hex``) and None values left out."""
    if isinstance(value, float):
        return {"float": value.hex()}
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, dict):
        return {str(k): canonical(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    if hasattr(value, "given"):
        return {"MADDPGOverrides": canonical(value.given())}
    if dataclasses.is_dataclass(value):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return {type(value).__name__: canonical(fields)}
    raise TypeError(type(value))


def digest(value) -> str:
    return hashlib.sha256(json.dumps(canonical(value), sort_keys=True).encode()).hexdigest()[:16]


#: What the code built before the settings were data (computed on it with :func:`digest`): each MADDPG setting's
#: description, overrides and training traffic; each curriculum setting's rule on the 165 and a 100 scale.
MADDPG_DIGESTS = {
    "paper": "60de8c5527dccb89", "ue25": "130381d5fa8192e2", "lr1e-3": "ab692ea1fa69443c",
    "ue25_lr1e-3": "a79477618fb8f91d", "ue25_tau0.05": "afb710f4c4e2b9ed", "ue25_t0.5": "9b1e38eb8dafdb9a",
    "paper_context0.3": "aa7ad0eb06a76862", "paper_context0.4": "e1742666817d6da5",
    "ue25_context0.3": "53464218eb4b63f8", "ue25_openblas": "90c49c64403775cf", "shared5": "95801fbf4925d902",
    "shared1": "9ed448a437bbaa2e", "separate5": "2cccd44042e989ff",
}
CURRICULUM_DIGESTS = {"paper": "2cfeb6d33724771d", "plain_maddpg": "cde24bbd204a484d",
                      "plain_maddpg_final": "f42bbeef2e3faa4e", "measured": "bec20b0311599e4d"}
#: The reference queue's settings, order, paper seeds and preset.
QUEUE_DIGEST = "f8bc8fea71e41450"
#: The run keys of :func:`run_keys`, the 55 ablation rows it makes.
RUN_KEYS_DIGEST = "5b84b26d6cf67429"
#: The paper preset's calibration on CityFlow (the committed reference rows' sidecars).
CALIBRATION = Calibration(target_paper=165.0, zero_return=-146.73125000000007, target_return=-76.36562499999998)


def test_every_named_setting_loads_as_the_code_built_it():
    assert {name: digest({"d": s.description, "m": s.maddpg, "t": s.train_difficulty})
            for name, s in sweep.SETTINGS.items()} == MADDPG_DIGESTS
    assert list(sweep.SETTINGS) == list(MADDPG_DIGESTS)  # the sweep's figure draws them in this order
    assert {name: digest([curriculum.rule_config(name), curriculum.rule_config(name, 100.0)])
            for name in curriculum.SETTINGS} == CURRICULUM_DIGESTS
    assert list(curriculum.SETTINGS) == list(CURRICULUM_DIGESTS)
    queue = [reference_queue.SETTINGS, reference_queue.ORDER, reference_queue.PAPER_SEEDS, reference_queue.PRESET]
    assert digest(queue) == QUEUE_DIGEST
    assert results.LEARNING_SETTINGS == ("shared5",)


def test_the_floats_are_the_doubles_the_runs_used():
    shared1 = sweep.SETTINGS["shared1"].maddpg
    assert shared1.gamma == 0.9 ** 0.2 and shared1.gamma.hex() == (0.9 ** 0.2).hex()
    assert sweep.SETTINGS["lr1e-3"].maddpg.actor_lr == 1e-3 and sweep.SETTINGS["shared5"].maddpg.gamma == 0.9
    measured = curriculum.SETTINGS["measured"]
    assert measured.target == round(curriculum.MEASURED_LEARNER_SCORE / curriculum.PAPER_FINAL_OVER_TARGET, 2)
    assert measured.d_initial == curriculum.REAL_FLOW_DIFFICULTY
    assert curriculum.PLAIN_MADDPG_SCORE == {"mean": 67.46, "final": 109.3}
    assert settings.paper_maddpg().given() == {"update_every": 100}
    # an integer where a float belongs would change the key: 1 and 1.0 hash apart
    assert config_hash({"gamma": 1}) != config_hash({"gamma": 1.0})


def run_keys() -> dict[str, list[str]]:
    """The key of seed 200's run of every configuration, for every curriculum setting, MADDPG setting on the real flow
    and architect (the preset's LLM: the paper's curriculum only)."""
    out = {}
    on_real_flow = [name for name, s in sweep.SETTINGS.items() if s.train_difficulty is None]
    for rule in curriculum.SETTINGS:
        for setting in (None, *on_real_flow):
            for architect in (None, "reference"):
                if architect is None and rule != "paper":
                    continue
                overrides = reference_queue.overrides(architect, setting, rule if architect else None)
                cfg = presets.ablation_config("paper", record=False, **overrides)
                out[f"{rule}|{setting}|{architect}"] = [config_hash(ablation.run_config(cfg, a, 200, CALIBRATION))
                                                        for a in cfg.ablations]
    return out


def test_every_ablation_row_keeps_its_run_keys():
    keys = run_keys()
    assert len(keys) == 55
    assert keys["paper|shared5|reference"] == ["dac01cb2da37", "78691f41b291", "baf8e92eef6a", "925cf7c740c5"]
    assert hashlib.sha256(json.dumps(keys, sort_keys=True).encode()).hexdigest()[:16] == RUN_KEYS_DIGEST


@pytest.mark.parametrize("row", ["reference_architect", "reference_architect_shared5"])
def test_the_committed_runs_of_a_row_hash_as_its_sidecars_record(row):
    """Every committed run of the reference architect's rows is found complete under the settings as loaded (the
    preset's own rows and ue25_openblas: tests/maestro/test_ablation.py)."""
    cfg = presets.ablation_config("paper", record=False, **settings.ablation_rows()[row].overrides())
    store = ResultStore(ablation.results_root("paper", cfg))
    sidecars = sorted(store.root.glob("A*__seed*.json"))
    assert len(sidecars) >= 4, store.root
    for path in sidecars:
        sidecar = store.load_sidecar(path.stem)
        run = sidecar["config"]
        key = config_hash(ablation.run_config(cfg, run["ablation"], run["seed"], Calibration(**run["calibration"])))
        assert key == sidecar["config_hash"], path.name


def test_the_makefile_reads_the_rows_and_the_queue_runs_its_row(tmp_path):
    """make's include, written from the rows as loaded: each row's suffix and the notebook parameters that give its
    configuration; the Makefile itself names no row's suffix."""
    import argparse

    from marlinkit.commands import ablation_rows

    ablation_rows.command(argparse.Namespace(out=tmp_path / "rows.mk"))
    made = dict(line.split(" := ", 1) for line in (tmp_path / "rows.mk").read_text().splitlines()[1:])
    makefile = (paths.REPO_ROOT / "Makefile").read_text()
    assert made["ABLATION_ROWS"].split() == list(settings.ablation_rows())
    for name, row in settings.ablation_rows().items():
        cfg = presets.ablation_config("paper", record=False, **row.overrides())
        assert made[f"ROW_SUFFIX_{name}"] == ablation.setting_suffix(cfg) and made[f"ROW_SUFFIX_{name}"] not in makefile
        given = dict(re.findall(r"-p (\S+) (\S+)", made[f"ROW_ARGS_{name}"]))
        chosen = presets.ablation_config("paper", record=False, **reference_queue.overrides(
            given.get("ARCHITECT"), given.get("MADDPG"), given.get("CURRICULUM")))
        assert dataclasses.replace(chosen, ablations=cfg.ablations) == cfg, name
        assert int(made[f"ROW_ALL_{name}"]) == len(chosen.ablations) * len(chosen.seeds)
    with pytest.raises(ValueError, match="the notebooks choose a curriculum target with the reference architect only"):
        ablation_rows.make_row("bad", settings.AblationRow("a row", curriculum="paper"))
    assert reference_queue.SETTINGS == settings.ablation_rows()[settings.queue().row].overrides()
    assert reference_queue.overrides("reference", "shared5", "paper") == {
        **settings.ablation_rows()["reference_architect_shared5"].overrides(), "ablations": ("A0", "A2", "A7", "A8")}


def test_the_presets_load_as_resolved_and_ship_with_the_package():
    assert presets.load() == {**presets.PRESETS, presets.WORKSHOP_PRESET: {"workshop": presets._WORKSHOP_CLASS}}
    assert presets.PRESETS["paper"]["ablation"]["maddpg"] == settings.paper_maddpg()  # maddpg = "paper": by name
    with open(paths.REPO_ROOT / "pyproject.toml", "rb") as handle:
        shipped = tomllib.load(handle)["tool"]["setuptools"]["package-data"]["marlinkit.settings"]
    files = sorted(path.name for path in settings.SETTINGS_DIR.iterdir() if path.suffix == ".toml")
    assert shipped == ["*.toml"] and files == ["ablation_rows.toml", "curricula.toml", "maddpg_settings.toml",
                                               "presets.toml"]


# ----- a file that does not fit ---------------------------------------------------------------------------------

def write(tmp_path: Path, name: str, source: Path, old: str, new: str) -> Path:
    """``source``'s text with ``old`` (once) replaced by ``new``, written to ``tmp_path / name``."""
    text = source.read_text()
    assert text.count(old) == 1, old
    path = tmp_path / name
    path.write_text(text.replace(old, new))
    return path


def refused(load, path: Path, table: str, key: str, words: str) -> None:
    with pytest.raises(SettingsError, match=words) as error:
        load(path)
    assert (error.value.path, error.value.table, error.value.key) == (path, table, key)
    assert str(path) in str(error.value) and f"[{table}]" in str(error.value)


@pytest.mark.parametrize("old, new, table, key, words", [
    ("[ue25]\n", "[ue25]\nupdate_every = 25\n", "ue25", "update_every", "unknown key; known: description"),
    ("{ tau = 0.05 }", "{ tau = 0.05, tua = 0.1 }", "ue25_tau0.05.maddpg", "tua", "unknown key"),
    ("gamma = 0.9791483623609768", "gamma = 1", "shared1.maddpg", "gamma", r"must be a float \(write 1.0, not 1\)"),
    ("{ update_every = 100 }", "{ update_every = 100.0 }", "paper.maddpg", "update_every", "must be an integer"),
    ('base = "shared5"', 'base = "shared7"', "shared1", "base", "names no MADDPG setting above it 'shared7'"),
    ("train_difficulty = 0.4", 'train_difficulty = "0.4"', "paper_context0.4", "train_difficulty", "must be a float"),
])
def test_a_bad_maddpg_settings_file_is_refused_by_file_table_and_key(tmp_path, old, new, table, key, words):
    refused(settings.maddpg_settings, write(tmp_path, "maddpg.toml", settings.MADDPG_FILE, old, new), table, key, words)


def test_a_bad_curricula_file_is_refused_by_file_table_and_key(tmp_path):
    path = write(tmp_path, "curricula.toml", settings.CURRICULA_FILE, "target = 81.57", "target = 81")
    refused(settings.curricula, path, "measured", "target", "must be a float")
    path = write(tmp_path, "curricula.toml", settings.CURRICULA_FILE, "d_initial = 0.4", "d_start = 0.4")
    refused(settings.curricula, path, "measured", "d_start", "unknown key")


@pytest.mark.parametrize("old, new, table, key, words", [
    ('maddpg_setting = "shared5"', 'maddpg_setting = "shared6"', "rows.reference_architect_shared5",
     "maddpg_setting", "names no MADDPG setting on the real flow 'shared6'"),
    ('maddpg_setting = "shared5"', 'maddpg_setting = "paper_context0.3"', "rows.reference_architect_shared5",
     "maddpg_setting", "names no MADDPG setting on the real flow"),
    ('curriculum = "plain_maddpg"', 'curriculum = "plain"', "rows.reference_architect", "curriculum",
     "names no curriculum setting 'plain'"),
    ('engine = "cityflow"\ncurriculum = "paper"', 'engine = "cityflow"\ncurriculum = "paper"\nseeds = [200]',
     "rows.reference_architect_shared5", "seeds", "unknown key"),
])
def test_a_row_naming_an_unknown_setting_is_refused_by_file_table_and_key(tmp_path, old, new, table, key, words):
    refused(settings.ablation_rows, write(tmp_path, "rows.toml", settings.ROWS_FILE, old, new), table, key, words)


def test_a_bad_queue_is_refused_by_file_table_and_key(tmp_path):
    path = write(tmp_path, "rows.toml", settings.ROWS_FILE, 'row = "reference_architect"', 'row = "reference"')
    refused(settings.queue, path, "queue", "row", "names no row 'reference'")
    path = write(tmp_path, "rows.toml", settings.ROWS_FILE, "paper_seeds = [200,", 'paper_seeds = ["200",')
    refused(settings.queue, path, "queue", "paper_seeds", "must be an integer")


@pytest.mark.parametrize("old, new, table, key, words", [
    ('maddpg = "paper"', 'maddpg = "papers"', "presets.paper.ablation", "maddpg", "names no MADDPG setting 'papers'"),
    ('include = ["smoke_grid"]\nseeds = [0]\nepisodes = 6', 'include = ["smoke_grids"]\nseeds = [0]\nepisodes = 6',
     "presets.smoke.fig5_hardware", "include", "names no fragment 'smoke_grids'"),
    ('include = ["scenarios", "grid"]\nseeds = [0, 1, 2]\n', 'include = ["scenarios", "grid", "smoke_grid"]\n'
     'seeds = [0, 1, 2]\n', "presets.quick.fig3_training", "executor", "set by two of its fragments"),
    ("[presets.paper.paper_audit]", "[presets.paper.paper_audits]", "presets.paper", "paper_audit",
     "every preset has the sections of 'quick'"),
    ("[presets.paper.paper_audit]", "[presets.fast.paper_audit]", "presets", "fast", "names no preset the package"),
])
def test_a_bad_presets_file_is_refused_by_file_table_and_key(tmp_path, old, new, table, key, words):
    refused(presets.load, write(tmp_path, "presets.toml", settings.PRESETS_FILE, old, new), table, key, words)


def test_a_preset_key_its_experiment_lacks_is_refused_by_file_table_and_key(tmp_path):
    path = write(tmp_path, "presets.toml", settings.PRESETS_FILE, "rounding_samples = 20\n", "rounding_sample = 20\n")
    values = presets.load(path)["smoke"]["paper_audit"]
    with pytest.raises(SettingsError, match="rounding_sample.*unknown key: marlinkit.paper_audit.Config") as error:
        presets.check_keys("smoke", "paper_audit", values, path)
    assert (error.value.path, error.value.table) == (path, "presets.smoke.paper_audit")


def test_a_file_that_is_not_toml_is_refused_by_name(tmp_path):
    path = tmp_path / "curricula.toml"
    path.write_text("[paper\n")
    with pytest.raises(SettingsError, match="curricula.toml: top level: not valid TOML"):
        settings.curricula(path)
