"""The reference architect (a surrogate, not an LLM) answering the MAESTRO architect's real prompts through the real
checks, and the A0 / reference-architect ablation on CityFlow at tiny size."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from marlinkit import paths, presets
from marlinkit.__main__ import main
from marlinkit.envs.traffic.context import context_for_difficulty
from marlinkit.envs.traffic.data import find_data_dir, load_network
from marlinkit.llm import config as llm_config
from marlinkit.llm.base import GenerationSettings
from marlinkit.maestro import (ablation, architect as arch, curriculum, curriculum_env, reference_architect as ref,
                               sandbox)
from marlinkit.maestro import reference_queue, report
from marlinkit.maestro.results import AblationResults

LEVELS = curriculum.difficulty_levels()


@pytest.fixture(scope="module")
def network():
    return load_network(find_data_dir())


def _stats(i: int, target: float = 67.46) -> dict:
    """Statistics as the dual loop's prompts carry them, spread over what training sees."""
    return {"episode": i, f"window mean score (target {target:g})": float(-40 + 13 * i),
            "last score": float(-30 + 11 * i), "throughput": 90.0 + 10 * i, "avg delay s": 25.0 + 4 * i,
            "avg queue": 5.0 + 2 * i}


@pytest.mark.slow
def test_reward_programs_pass_the_three_stage_sandbox_and_shape_honestly():
    """At least 90 % of its reward programs pass validate() (here: every one of 12 prompts over d and statistics), and
    every accepted program pays for throughput and charges for queues, waits and pressure, never the reverse."""
    log = arch.GenerationLog()
    synth = arch.RewardSynthesizer(ref.ReferenceArchitect(), arch.ArchitectConfig(), log)
    for i in range(12):
        synth.attempt(LEVELS[i % len(LEVELS)], _stats(i), i, 1000 + i, 0)
    calls, accepted = log.counts("reward")
    assert calls == 12 and accepted / calls >= 0.9
    sources = [r["source"] for r in log.records if r["accepted"]]
    assert len(set(sources)) == len(sources)  # coefficients move with d, the statistics and the seed
    base = {f.name: np.full(5, (f.low + f.high) / 4) for f in sandbox.REWARD_FIELDS}
    with_terms = 0
    for source in sources:
        with sandbox.RewardWorker(source) as worker:
            for name, sign in (("queue_length", -1), ("waiting_time", -1), ("pressure", -1), ("throughput", 1)):
                rising = {**base,
                          name: np.linspace(0.0, [f.high for f in sandbox.REWARD_FIELDS if f.name == name][0], 5)}
                values = worker.evaluate(rising, 0.6)
                assert np.all(sign * np.diff(values) >= 0), (name, source)
                with_terms += bool(np.any(np.diff(values) != 0))
    assert with_terms >= 2 * len(sources)  # throughput and queue at least, in every program
    assert all(r["mode"] == "llm_reward" and r["verdict"]["accepted"] for r in log.records)
    measured = ref.pass_share(prompts=6, seed=3)  # the measurement's own function (200 prompts: 200 accepted)
    assert measured["prompts"] == 6 and measured["share"] >= 0.9


def test_contexts_pass_the_llm_checks_and_the_less_constrained_mode_spreads_wider(network):
    """Both modes' replies go through read_reply and check (schema, traffic, and the +-25 % load check of
    llm_adaptive); A8's mode varies the load and the asymmetry far more, as stated."""
    spread = {}
    for mode in arch.MODES:
        log = arch.GenerationLog()
        architect = arch.CurriculumArchitect(ref.ReferenceArchitect(), network, arch.ArchitectConfig(mode=mode), log)
        loads, asymmetry = [], []
        for i in range(30):
            d = LEVELS[i % len(LEVELS)]
            context, from_architect = architect.propose(d, _stats(i % 10), i, 7 * i)
            assert from_architect
            loads.append(arch.expected_vehicles(context, network) /
                         arch.expected_vehicles(context_for_difficulty(d, 7 * i), network))
            asymmetry.append(context.asymmetry)
        assert log.counts("context") == (30, 30)
        spread[mode] = (np.ptp(loads), np.std(asymmetry), {c["context"]["major_axis"] for c in log.records})
    assert max(abs(np.array(loads) - 1)) > 0.25  # A8 (the last mode) leaves the adaptive band
    assert spread["llm_adaptive"][0] <= 0.5 and spread["llm"][0] > spread["llm_adaptive"][0]
    assert spread["llm"][1] > 1.5 * spread["llm_adaptive"][1]
    assert spread["llm_adaptive"][2] == {"EW", "NS"}


def test_replies_are_a_function_of_the_chat_and_its_seed_and_it_is_named_a_surrogate(network):
    backend = ref.ReferenceArchitect()
    synth = arch.RewardSynthesizer(backend)
    messages = synth.messages(0.45, {"episode": 3, "window mean score (target 67.46)": 12.5, "avg delay s": 48.0})
    settings = GenerationSettings(temperature=0.2, max_new_tokens=320, seed=11, stop=("\n```\n",))
    one, two = backend.chat(messages, settings).text, backend.chat(messages, settings).text
    assert one == two and "def compute_reward(metrics, difficulty):" in one
    assert backend.chat(messages, dataclasses.replace(settings, seed=12)).text != one
    assert ref.prompt_statistics(messages[-1]["content"]) == {"window_mean": 12.5, "target": 67.46, "avg_delay_s": 48.0}
    context = arch.CurriculumArchitect(backend, network)
    reply = backend.chat(context.messages(0.5, {"episode": 1}, 360), settings).text
    assert set(json.loads(reply)) == set(arch.EXAMPLE_FIELDS)
    made = ablation.architect_backend(presets.ablation_config("smoke", llm="reference"))
    assert (isinstance(made, ref.ReferenceArchitect)
            and ablation.architect_backend(presets.ablation_config("smoke")) is None)
    assert llm_config.label(made) == "reference-architect (surrogate-not-an-LLM-v1)"
    assert "reference-architect__surrogate-not-an-LLM-v1" in llm_config.transcript_path("x", made).name
    with pytest.raises(ValueError, match="unknown LLM setting"):  # an LLM setting it is not
        llm_config.make_backend("reference")


def test_the_queue_runs_the_papers_seeds_first_and_names_its_folder_apart():
    cfg = presets.ablation_config("paper", record=True, **reference_queue.settings())
    order = reference_queue.queue(cfg.seeds)
    assert order[:16] == [(a, s) for s in (200, 300, 400, 500) for a in ("A2", "A0", "A8", "A7")]
    assert len(order) == 48 and len(set(order)) == 48
    assert (cfg.llm, cfg.engine, cfg.curriculum, cfg.episodes, cfg.episode_seconds, len(cfg.seeds)) == \
        ("reference", "cityflow", "plain_maddpg", 200, 360, 12)
    assert cfg.maddpg.given() == {"update_every": 25, "products": "openblas"}
    assert ablation.results_root("paper", cfg) == paths.results_dir("maestro", "paper") / \
        "reference_architect_cityflow_plain_maddpg_curriculum_ue25_openblas_maddpg"
    assert ablation.shared_transcripts(cfg, "A0", 200) == ()
    # what the notebooks run: the preset's LLM (a MADDPG setting or none), or this ablation in the tables' order
    assert reference_queue.overrides(None, "ue25_openblas") == {"maddpg_setting": "ue25_openblas"}
    assert reference_queue.overrides("reference")["ablations"] == ("A0", "A2", "A7", "A8")
    with pytest.raises(ValueError, match="architect must be None"):
        reference_queue.overrides("smollm2")
    shared5 = presets.ablation_config("paper", record=False,
                                      **reference_queue.overrides("reference", "shared5", "paper"))
    assert (shared5.llm, shared5.curriculum, shared5.maddpg_setting) == ("reference", "paper", "shared5")
    assert ablation.results_root("paper", shared5).name == "reference_architect_cityflow_shared5_maddpg"
    with pytest.raises(ValueError, match="reference architect only"):
        reference_queue.overrides(None, "shared5", "paper")
    assert ablation.run_config(cfg, "A0", 200, curriculum_env.Calibration(1.0, 0.0))["architect"] is None


def test_two_queues_can_split_a_seed_but_a7_never_runs_beside_its_a2(monkeypatch):
    assert reference_queue.pick() == reference_queue.ORDER
    assert reference_queue.pick(("A7", "A0")) == ("A0", "A7")  # the queue's order, whatever the command line's
    with pytest.raises(ValueError, match="unknown configuration.*A9"):
        reference_queue.pick(("A0", "A9"))
    done = ["A2__seed1100", "A0__seed1100"]
    assert reference_queue.a7_waiting((1100, 1300), ("A7",), done) == [1300]
    assert reference_queue.a7_waiting((1100, 1300), ("A2", "A7"), []) == []  # A2 runs first in the same queue
    assert reference_queue.a7_waiting((1300,), ("A0", "A8"), []) == []
    # refused before any run (no committed A2 for a seed outside the preset), and a typo is the parser's error
    cfg = presets.ablation_config("paper", record=True, **reference_queue.settings())
    monkeypatch.setattr(ablation, "run", lambda *args: pytest.fail("a run started"))  # a refusal that failed stops here
    with pytest.raises(ValueError, match="A7 of seed.s. 12345 copies its seed's A2 replies"):
        reference_queue.work_through(cfg, (12345,), ("A0", "A7"))
    with pytest.raises(SystemExit):
        main(["reference-queue", "run", "--seeds", "1300", "--ablations", "A9"])


@pytest.mark.slow
def test_a0_and_the_reference_architects_a2_and_a7_on_cityflow(tmp_path, monkeypatch):
    """Tiny runs in this process: A0 trains on the real flow with no architect; A2's contexts and A7's reward come
    from the reference architect through the transcript cache (recorded, named), and A7 trains on the shaped reward."""
    pytest.importorskip("cityflow")
    monkeypatch.setattr(paths, "TRANSCRIPTS_DIR", tmp_path / "transcripts")
    cfg = presets.ablation_config("smoke", record=True, llm="reference", engine="cityflow", curriculum="plain_maddpg",
                               seeds=[200], ablations=["A0", "A2", "A7"], episodes=2, episode_seconds=120,
                               final_window=2, maddpg={"batch_size": 32, "learning_starts": 32, "update_every": 30})
    measured = curriculum_env._calibration_job(cfg)
    calibration = curriculum_env.Calibration(measured["max-pressure"]["return"], measured["fixed-time"]["return"])
    runs = {a: ablation.dual_loop(cfg, a, 200, calibration, str(tmp_path)) for a in ("A0", "A2", "A7")}
    a0 = runs["A0"]["table"]
    assert a0["difficulty"].isna().all() and (a0["context"] == ablation.REAL_FLOW).all() and not a0["context_new"].any()
    assert np.isfinite(a0["score"]).all() and runs["A0"]["generations"] == ""
    a2, a7 = runs["A2"]["table"], runs["A7"]["table"]
    assert a2["context_from_llm"].all() and (a2["difficulty"] == 0.3).all()
    assert (a7["reward_source"] == "llm").all() and not np.allclose(a7["train_return"], a7["env_return"])
    assert (a2["reward_source"] == "env").all() and np.allclose(a2["train_return"], a2["env_return"])
    records = [json.loads(line) for line in runs["A7"]["generations"].splitlines()]
    assert [r["kind"] for r in records if r["accepted"]][:2] == ["context", "reward"]
    assert runs["A7"]["provenance"]["llm"] == "reference-architect (surrogate-not-an-LLM-v1)"
    transcripts = sorted(p.name for p in (tmp_path / "transcripts").glob("*.jsonl"))
    assert transcripts == [f"maestro_{a}_200_reference_architect_cityflow_plain_maddpg_curriculum__"
                           "reference-architect__surrogate-not-an-LLM-v1.jsonl" for a in ("A2", "A7")]
    assert pd.Series([runs[a]["provenance"]["engine"] for a in runs]).eq("cityflow").all()
    # the tables take A0 (not in the paper's ablation: its paper columns are blank)
    results = AblationResults.of(cfg, "smoke", pd.concat([runs[a]["table"] for a in runs], ignore_index=True),
                              pd.DataFrame(), {a: {"engine_version": "CityFlow", "llm": runs[a]["provenance"]["llm"]}
                                               for a in runs}, calibration, measured, tmp_path,
                              pd.DataFrame([{"controller": k, **v} for k, v in measured.items()
                                            if isinstance(v, dict)]))
    table2 = report.table2(results).set_index("Condition")
    assert list(table2.index) == [ablation.ABLATIONS[a].label for a in ("A0", "A2", "A7")]
    assert table2.loc[ablation.ABLATIONS["A0"].label, "paper Mean ± SD"] == "— ± —"
    assert report.table7(results)["paper success"].tolist() == ["—", "75%", "100%"]
    assert "A0" in report.table1(results, seed=200)["Condition"].iloc[-3]
    assert "cityflow run (seeds change nothing on it)" in results.scale_note and "SUMO" not in results.scale_note


def test_the_committed_runs_read_back_with_a0s_empty_generation_log():
    """A0 has no architect and logs nothing; read with the runs that do, the logs keep their boolean columns, so the
    acceptance table counts calls rather than failing on ``~`` of Python objects."""
    root = ablation.results_root("paper", presets.ablation_config("paper", record=False, **reference_queue.settings()))
    names = ["A0__seed200", "A2__seed200", "A7__seed200"]
    if not all((root / f"{n}.generations.jsonl").exists() for n in names):
        pytest.skip("the committed reference-architect runs of seed 200")
    assert (root / "A0__seed200.generations.jsonl").read_text() == ""
    generations = ablation.load_all_generations(root, names)
    assert generations["accepted"].dtype == bool and generations["fallback"].dtype == bool
    assert set(generations["ablation"]) == {"A2", "A7"} and generations["accepted"].all()
    counts = generations.groupby(["ablation", "kind"]).size().to_dict()
    assert counts == {("A2", "context"): 68, ("A7", "context"): 83, ("A7", "reward"): 22}
