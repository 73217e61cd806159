"""The A2/A7/A8 runner on the real Hangzhou network (SUMO) with the scripted architect and tiny episodes."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from marlinkit import paths, presets
from marlinkit.algos.maddpg_overrides import MADDPGOverrides
from marlinkit.maestro import architect, curriculum, curriculum_env
from marlinkit.maestro import ablation
from marlinkit.envs.traffic.context import context_for_difficulty
from marlinkit.maestro.sandbox import reward_example
from marlinkit.runs import ResultStore
from marlinkit.settings import paper_maddpg

TINY = {"seeds": [200], "ablations": ["A2", "A7"], "episodes": 2, "episode_seconds": 120, "final_window": 2,
        "llm": "scripted", "maddpg": {"batch_size": 32, "learning_starts": 32, "update_every": 30}}
TIMING = list(ablation.TIMING_COLUMNS)


def run_smoke(root, **overrides):
    """The smoke preset's ablation with ``overrides``, in ``root``."""
    return ablation.run(presets.ablation_config("smoke", **overrides, root=root, progress=False))


@pytest.fixture(scope="module")
def smoke_ablation(tmp_path_factory):
    root = tmp_path_factory.mktemp("maestro")
    return run_smoke(root, **TINY), root


@pytest.mark.slow
def test_runs_write_tables_sidecars_and_generation_logs(smoke_ablation):
    results, root = smoke_ablation
    store = ResultStore(root)
    for name in ("A2__seed200", "A7__seed200"):
        sidecar = store.load_sidecar(name)
        assert sidecar["config"]["seed"] == 200 and sidecar["engine"] == "sumo" and "scripted" in sidecar["llm"]
        assert (root / f"{name}.generations.jsonl").stat().st_size > 0
        assert sidecar["engine_version"].startswith("SUMO 1.")  # read from the running simulation, not before it
    assert store.load_sidecar("ablation_calibration")["engine_version"].startswith("SUMO 1.")
    df = results.episodes
    assert len(df) == 4 and set(df["ablation"]) == {"A2", "A7"}
    for policy in ("stochastic", "greedy"):  # both policies evaluated after every eval_every-th episode
        column = f"eval_return_{policy}"
        assert df.loc[df["episode"] == 1, column].notna().all() and df.loc[df["episode"] == 0, column].isna().all()
        assert (df[f"eval_vehicles_{policy}"].dropna() > 0).all()  # evaluation runs the real flow
        np.testing.assert_allclose(df[f"eval_score_{policy}"].dropna(), results.calibration.score(df[column].dropna()))
    evaluated = df.dropna(subset=["eval_return_greedy"])
    assert not np.allclose(evaluated["eval_return_greedy"], evaluated["eval_return_stochastic"])
    kinds = results.generations.groupby(["ablation", "kind"]).size().to_dict()
    assert kinds == {("A2", "context"): 1, ("A7", "context"): 1, ("A7", "reward"): 1}
    # each training row is calibrated on its own episode's traffic: fixed-time and max-pressure differ by context/seed
    expected = (165.0 * (df["env_return"] - df["fixed_time_return"])
                / (df["max_pressure_return"] - df["fixed_time_return"]))
    np.testing.assert_allclose(df["score"], expected)
    assert (df.groupby("ablation")["fixed_time_return"].nunique() == 2).all()  # the seed changes per episode


def test_a7_trains_on_the_combined_reward_and_a2_on_the_env_reward(smoke_ablation):
    df = smoke_ablation[0].episodes.set_index(["ablation", "episode"])
    assert (df.loc["A7", "reward_source"] == "llm").all() and np.allclose(df.loc["A7", "w_d"], 0.1)
    np.testing.assert_allclose(df.loc["A2", "train_return"], df.loc["A2", "env_return"], rtol=1e-5)  # float32 sums
    assert not np.allclose(df.loc["A7", "train_return"], df.loc["A7", "env_return"])


def test_resume_does_no_work(smoke_ablation):
    results, root = smoke_ablation
    stamps = {p.name: p.stat().st_mtime_ns for p in root.iterdir()}
    started = time.perf_counter()
    again = run_smoke(root, **TINY)
    assert time.perf_counter() - started < 5.0
    assert {p.name: p.stat().st_mtime_ns for p in root.iterdir()} == stamps
    pd.testing.assert_frame_equal(again.episodes, results.episodes)


def test_same_seed_same_numbers(smoke_ablation, tmp_path):
    results, root = smoke_ablation
    cfg = presets.ablation_config("smoke", **TINY)
    name = ablation.save_run(ResultStore(tmp_path),
                             ablation.run_job(cfg, "A7", 200, results.calibration, str(tmp_path)))
    rerun, first = ResultStore(tmp_path).load(name), ResultStore(root).load(name)
    pd.testing.assert_frame_equal(rerun.drop(columns=TIMING), first.drop(columns=TIMING))


def test_curriculum_env_applies_the_combined_reward_per_agent():
    """Each step's reward is (1 - w) r_env + w * 170 * r_LLM with r_LLM from the sandboxed function."""
    from marlinkit.envs.traffic.env import TrafficEnvConfig, TrafficSignalEnv

    config = curriculum.CurriculumConfig()
    base = TrafficSignalEnv(TrafficEnvConfig(context=context_for_difficulty(1.0, seed=3), episode_seconds=150))
    env = curriculum_env.CurriculumEnv(base, config)
    env.context, env.shaping, env.difficulty = base.context, True, 0.65
    env.reward_state = curriculum.RewardState(source="llm")
    env.set_reward(Path(reward_example.__file__).read_text())
    shadow = curriculum_env.RewardInputs(16)
    try:
        env.reset(seed=1)
        w = curriculum.weight(0.65, config)
        checked = 0
        while env.agents:
            obs, rewards, _, _, infos = env.step({a: (base.time // 20) % 4 for a in env.possible_agents})
            agents = env.possible_agents
            metrics = shadow.update(np.stack([obs[a] for a in agents]), infos, agents, base.current_phases)
            r_llm = np.array(
                [reward_example.compute_reward({k: v[i] for k, v in metrics.items()}, 0.65) for i in range(16)])
            r_env = np.array([i["outflow"] - 0.1 * i["queue"] - 0.05 * abs(i["pressure"]) for i in infos.values()])
            np.testing.assert_allclose([rewards[a] for a in agents], (1 - w) * r_env + w * 170.0 * r_llm, atol=1e-9)
            checked += np.abs(r_llm).max() > 0
        assert checked > 50 and env.env_return != 0
    finally:
        env.close()


@pytest.mark.slow
def test_an_interrupted_run_resumes_from_its_checkpoint(smoke_ablation, tmp_path):
    """Kill a run right after its first checkpoint; the resumed run matches the uninterrupted one."""
    import dataclasses
    import multiprocessing

    import torch

    results, root = smoke_ablation
    cfg = dataclasses.replace(presets.ablation_config("smoke", **TINY), checkpoint_every=1)
    checkpoint = tmp_path / "A7__seed200.checkpoint.pt"
    process = multiprocessing.get_context("spawn").Process(
        target=ablation.run_job, args=(cfg, "A7", 200, results.calibration, str(tmp_path)))
    process.start()
    deadline = time.monotonic() + 300
    while not checkpoint.exists() and process.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    process.kill()
    process.join()
    assert checkpoint.exists() and not (tmp_path / "A7__seed200.json").exists()
    saved_first_row = torch.load(checkpoint, weights_only=False)["loop"].rows[0]
    ablation.save_run(ResultStore(tmp_path), ablation.run_job(cfg, "A7", 200, results.calibration, str(tmp_path)))
    resumed, reference = ResultStore(tmp_path).load("A7__seed200"), ResultStore(root).load("A7__seed200")
    assert not checkpoint.exists()
    assert resumed.loc[0, "sim_s"] == pytest.approx(saved_first_row["sim_s"], rel=1e-12)  # episode 0 was not rerun
    pd.testing.assert_frame_equal(resumed.drop(columns=TIMING), reference.drop(columns=TIMING))


def test_a_reward_that_fails_in_training_is_retired_and_logged():
    """A row without a finite value, reached only in training, and a reward the checker now refuses (a resumed
    run): each retired at a deterministic step, the reason in runtime_failure and the generation log."""
    from marlinkit.envs.traffic.env import TrafficEnvConfig, TrafficSignalEnv
    from marlinkit.maestro import architect as arch
    from marlinkit.llm.backends.scripted import ScriptedBackend

    # no value once a phase has been held 5 s (the validation rows reach it: an attacker's reward would hide it
    # better, which is what the training path must survive)
    source = "def compute_reward(metrics, difficulty):\n    t = metrics['phase_duration']\n" \
             "    return -metrics['queue_length'] / 120.0 if t < 5 else 1.0 / (t - t)\n"
    config = curriculum.CurriculumConfig()
    base = TrafficSignalEnv(TrafficEnvConfig(context=context_for_difficulty(0.5, seed=3), episode_seconds=30))
    env = curriculum_env.CurriculumEnv(base, config)
    env.context, env.shaping, env.difficulty = base.context, True, 0.5
    failures = []
    try:
        for refusal in (None, None, "safety: the reward rises with queue_length"):
            env.reward_state = curriculum.RewardState(source="llm")
            env.set_reward(source, refusal)
            env.reset(seed=1)
            env.runtime_failure, steps = None, 0
            while env.agents and env.runtime_failure is None:
                env.step({a: 0 for a in env.possible_agents})
                steps += 1
            failures.append((steps, env.runtime_failure))
            assert env.reward_state.source == "env" and env.reward_source is None and env.worker is None
    finally:
        env.close()
    assert failures[0] == failures[1] and 1 < failures[0][0] < 30
    assert failures[0][1].startswith("execution: EvaluationError: division by zero (line 3)")
    assert failures[2] == (1, "syntax: the checker refuses this reward now: safety: the reward rises with queue_length")
    synth = arch.RewardSynthesizer(ScriptedBackend(arch.scripted_architect_replies()))
    synth.retire(source, failures[0][1], episode=3, difficulty=0.5)
    (record,) = synth.log.records
    assert record["kind"] == "retire" and not record["accepted"] and "division by zero" in record["reason"]
    assert synth.refusal(source).startswith("execution: EvaluationError: division by zero")


def test_a_checkpoint_restores_learner_buffer_and_random_states_and_ignores_another_layout(tmp_path):
    """checkpoint.resume gives back exactly what save held; a stale layout or configuration restores nothing."""
    import torch

    from marlinkit.algos.maddpg import MADDPG, MADDPGConfig
    from marlinkit.algos.replay_buffer import ReplayBuffer
    from marlinkit.maestro import checkpoint

    def learner_and_buffer(seed):
        learner, buffer = MADDPG(2, 3, 4, MADDPGConfig(seed=seed, hidden=8)), ReplayBuffer(5, 2, 3)
        for step in range(seed + 2):
            buffer.add(np.full((2, 3), step), [1, 2], [0.5, -0.5], np.ones((2, 3)), [0.0, 0.0])
        return learner, buffer

    path = tmp_path / "run.checkpoint.pt"
    learner, buffer = learner_and_buffer(1)
    checkpoint.save(path, learner, buffer, "hash-a", loop={"episode": 3})
    expected = (torch.rand(3), np.random.random(), learner.rng.random())  # what the random streams give next
    fresh, fresh_buffer = learner_and_buffer(2)
    assert checkpoint.resume(path, fresh, fresh_buffer, "hash-b") is None  # another configuration
    assert not torch.equal(next(fresh.actor.parameters()), next(learner.actor.parameters()))  # nothing restored
    saved = checkpoint.resume(path, fresh, fresh_buffer, "hash-a")
    assert saved["loop"] == {"episode": 3}
    for mine, theirs in zip(learner.actor.parameters(), fresh.actor.parameters()):
        assert torch.equal(mine, theirs)
    assert (fresh_buffer.size, fresh_buffer.pos) == (buffer.size, buffer.pos)
    np.testing.assert_array_equal(fresh_buffer.obs[: buffer.size], buffer.obs[: buffer.size])
    again = (torch.rand(3), np.random.random(), fresh.rng.random())
    assert torch.equal(again[0], expected[0]) and again[1:] == expected[1:]
    stale = torch.load(path, weights_only=False)
    stale.pop("format")  # a checkpoint written before the LoopState layout
    torch.save(stale, path)
    assert checkpoint.resume(path, fresh, fresh_buffer, "hash-a") is None


@pytest.mark.slow
def test_a_checkpoint_streams_the_buffer_to_disk_and_resumes_checkpoints_saved_with_arrays(tmp_path):
    """A paper-length buffer is ~1.8 GB: saving must not build copies of it in memory (a run once reached 11 GB
    and was killed), and a checkpoint written before the buffer was saved as tensors still resumes."""
    import tracemalloc

    import torch

    from marlinkit.algos.maddpg import MADDPG, MADDPGConfig
    from marlinkit.algos.replay_buffer import ReplayBuffer
    from marlinkit.maestro import checkpoint

    learner, buffer = MADDPG(2, 3, 4, MADDPGConfig(seed=1, hidden=8)), ReplayBuffer(40_000, 16, 50)  # 2 x 128 MB
    rng = np.random.default_rng(0)
    buffer.size = buffer.pos = 30_000  # 30,000 rows filled (at once, rather than by 30,000 adds)
    buffer.obs[:30_000] = rng.random((30_000, 16, 50), dtype=np.float32)
    path = tmp_path / "run.checkpoint.pt"
    tracemalloc.start()
    checkpoint.save(path, learner, buffer, "hash")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    filled = buffer.obs[:30_000].nbytes  # 96 MB each for obs and next_obs
    rows = path.with_name(f"{path.name}.rows-0-30000")
    assert rows.stat().st_size > 2 * filled  # both arrays are in the row file ...
    assert peak < filled / 10  # ... and were never copied in memory on the way (the old save held ~3 copies)
    fresh = ReplayBuffer(40_000, 16, 50)
    checkpoint.resume(path, MADDPG(2, 3, 4, MADDPGConfig(seed=1, hidden=8)), fresh, "hash")
    np.testing.assert_array_equal(fresh.obs[:30_000], buffer.obs[:30_000])
    assert (fresh.size, fresh.pos) == (buffer.size, buffer.pos)
    for format in (2, 3):  # earlier formats: other layouts, or a learner of other numerics, are never resumed
        older = torch.load(path, weights_only=False)
        older["format"] = format
        older_path = tmp_path / f"older{format}.checkpoint.pt"
        torch.save(older, older_path)
        again = ReplayBuffer(40_000, 16, 50)
        assert checkpoint.resume(older_path, MADDPG(2, 3, 4, MADDPGConfig(seed=1, hidden=8)), again, "hash") is None
        assert again.size == 0


def test_a_checkpoint_writes_only_the_rows_added_since_the_last_one_and_refuses_damaged_rows(tmp_path):
    """A paper run saves 19 checkpoints of a buffer growing to ~1.8 GB: each save writes the new rows only
    (~17 GB written per run before, ~1.8 GB now). Resume reads all row files back; a damaged or missing one
    is a clear error, never a silently different buffer; a full ring is rewritten whole."""
    import torch

    from marlinkit.algos.maddpg import MADDPG, MADDPGConfig
    from marlinkit.algos.replay_buffer import ReplayBuffer
    from marlinkit.maestro import checkpoint

    def learner():
        return MADDPG(2, 3, 4, MADDPGConfig(seed=1, hidden=8))

    rng = np.random.default_rng(0)
    buffer, path = ReplayBuffer(10, 2, 3), tmp_path / "run.checkpoint.pt"

    def add(n):
        for _ in range(n):
            buffer.add(rng.random((2, 3)), rng.integers(4, size=2), rng.random(2), rng.random((2, 3)), [0.0, 1.0])

    def row_files():
        return sorted(p.name.rsplit(".", 1)[-1] for p in tmp_path.glob("run.checkpoint.pt.rows-*"))

    add(3)
    checkpoint.save(path, learner(), buffer, "hash")
    first = path.with_name("run.checkpoint.pt.rows-0-3").read_bytes()
    add(4)
    checkpoint.save(path, learner(), buffer, "hash", loop={"episode": 2})
    checkpoint.save(path, learner(), buffer, "hash", loop={"episode": 2})  # nothing new: no new row file
    assert row_files() == ["rows-0-3", "rows-3-7"]
    assert path.with_name("run.checkpoint.pt.rows-0-3").read_bytes() == first  # earlier rows are not rewritten
    fresh = ReplayBuffer(10, 2, 3)
    assert checkpoint.resume(path, learner(), fresh, "hash")["loop"] == {"episode": 2}
    for k in ("obs", "next_obs", "actions", "rewards", "terminated"):
        np.testing.assert_array_equal(getattr(fresh, k), getattr(buffer, k))
    assert (fresh.size, fresh.pos) == (7, 7)
    checkpoint.save(path, learner(), buffer, "other-hash")  # another configuration: its rows from the start
    assert row_files() == ["rows-0-7"]
    checkpoint.save(path, learner(), buffer, "hash")
    add(5)  # the ring wraps: rows 0-1 are overwritten, so the whole buffer is written again, alone
    checkpoint.save(path, learner(), buffer, "hash")
    assert row_files() == ["rows-0-10"]
    fresh = ReplayBuffer(10, 2, 3)
    checkpoint.resume(path, learner(), fresh, "hash")
    np.testing.assert_array_equal(fresh.obs, buffer.obs)
    assert (fresh.size, fresh.pos) == (10, 2)
    rows = path.with_name("run.checkpoint.pt.rows-0-10")
    damaged = bytearray(rows.read_bytes())
    damaged[len(damaged) // 2] ^= 1
    rows.write_bytes(bytes(damaged))
    with pytest.raises(checkpoint.CheckpointError, match="rows-0-10 are damaged"):
        checkpoint.resume(path, learner(), ReplayBuffer(10, 2, 3), "hash")
    rows.unlink()
    with pytest.raises(checkpoint.CheckpointError, match="which are missing: delete run.checkpoint.pt"):
        checkpoint.resume(path, learner(), ReplayBuffer(10, 2, 3), "hash")
    checkpoint.save(path, learner(), buffer, "hash-3")
    checkpoint.remove(path)
    assert not list(tmp_path.glob("run.checkpoint.pt*"))
    assert torch.get_num_threads() >= 1


@pytest.mark.slow
def test_the_curriculum_setting_moves_target_and_start_and_keeps_the_paper_runs_keys(tmp_path):
    paper = presets.ablation_config("smoke", **TINY)
    calibration = curriculum_env.Calibration(1.0, 0.0)
    # the paper setting hashes exactly as before the setting existed (the committed runs are not recomputed)
    assert (ablation.run_config(paper, "A2", 200, calibration)["curriculum"]
            == asdict(curriculum.CurriculumConfig(target=165.0)))
    assert "window mean score (target 165)" in ablation.prompt_stats([1.0], None, 3, ablation.rule_config(paper).target)
    measured = dataclasses.replace(paper, curriculum="measured")  # named apart: own folder, own transcripts
    assert ablation.transcript_name(paper, "A2", 200) == "maestro_A2_200"
    assert ablation.transcript_name(measured, "A2", 200) == "maestro_A2_200_measured_curriculum"
    assert ablation.results_root("paper", paper) == paths.results_dir("maestro", "paper")
    assert ablation.results_root("paper", measured) == paths.results_dir("maestro", "paper") / "measured_curriculum"
    with pytest.raises(ValueError, match="unknown curriculum setting"):
        presets.ablation_config("smoke", **TINY, curriculum="easy")
    results = run_smoke(tmp_path, **{**TINY, "ablations": ["A2"]}, curriculum="measured")
    assert results.episodes["difficulty"].iloc[0] == 0.4  # starts at the real flow's load, not the easiest level
    rule = ResultStore(tmp_path).load_sidecar("A2__seed200")["config"]["curriculum"]
    assert rule["target"] == curriculum.rule_config("measured").target and rule["d_initial"] == 0.4


def test_the_architects_statistics_skip_an_episode_without_a_score_and_name_it():
    nan = float("nan")
    key = "window mean score (target 165)"
    scored = [10.0, 20.0, 30.0, 40.0, 50.0, 60.0]
    assert ablation.prompt_stats(scored, None, 6, 165.0) == {"episode": 6, key: 40.0, "last score": 60.0}
    # the window holds the last five scored episodes, as the difficulty rule's does
    stats = ablation.prompt_stats(scored[:2] + [nan] + scored[2:] + [nan], None, 8, 165.0)
    assert stats == {"episode": 8, key: 40.0, "last score": ablation.NO_SCORE}
    assert ablation.prompt_stats([nan], None, 1, 165.0) == {"episode": 1, "last score": ablation.NO_SCORE}
    assert "last score none (max-pressure did no better" in architect.summary_text(stats)


def test_the_committed_paper_runs_hash_as_the_paper_preset_resolves_today():
    """MADDPGConfig's defaults may move (the sweep chose update_every 25); the paper preset pins Lowe et al.'s, so every
    committed paper-scale run still hashes to what the preset asks for and is loaded, not recomputed."""
    from marlinkit.repro.keys import config_hash

    cfg = presets.ablation_config("paper")
    assert ablation.maddpg_config(cfg, 200).update_every == 100
    ue25 = presets.ablation_config("paper", maddpg_setting="ue25_openblas")  # the ablation under the chosen cadence
    assert ablation.maddpg_config(ue25, 200).update_every == 25
    for config, least in ((cfg, 36), (ue25, 12)):
        store = ResultStore(ablation.results_root("paper", config))
        sidecars = sorted(store.root.glob("A*__seed*.json"))
        assert len(sidecars) >= least, store.root
        for path in sidecars:
            sidecar = store.load_sidecar(path.stem)
            run = sidecar["config"]
            calibration = curriculum_env.Calibration(**run["calibration"])
            assert (config_hash(ablation.run_config(config, run["ablation"], run["seed"], calibration))
                    == sidecar["config_hash"]), path.name


def test_a_runs_serialized_configuration_is_the_committed_runs_to_the_byte():
    """The configuration a run records (its sidecar's ``config``, which its hash covers) comes out of today's typed
    ``Config`` exactly as the committed runs recorded it, for the paper preset's own MADDPG and a named setting:
    the same JSON text, keys, values and nesting."""
    import json

    for setting, run in ((None, "A7__seed300"), ("ue25_openblas", "A2__seed200")):
        config = presets.ablation_config("paper", record=False, maddpg_setting=setting)
        store = ResultStore(ablation.results_root("paper", config))
        recorded = store.load_sidecar(run)["config"]
        calibration = curriculum_env.Calibration(**recorded["calibration"])
        today = ablation.run_config(config, recorded["ablation"], recorded["seed"], calibration)
        assert json.dumps(today, sort_keys=True, default=str) == json.dumps(recorded, sort_keys=True), run
    config = presets.ablation_config("paper", record=False)
    assert config.maddpg == paper_maddpg() and config.maddpg.given() == {"update_every": 100}
    assert presets.ablation_config("smoke", maddpg={"batch_size": 32}).maddpg == MADDPGOverrides(batch_size=32)


def test_episode_records_write_the_committed_tables_columns_in_their_order():
    """A trained episode's :class:`EpisodeRecord` rows (one without an evaluation, then one with) make the committed
    paper table's header, column for column; the Timer fills the wall-time columns by name and refuses another."""
    header = (ablation.results_root("paper", presets.ablation_config("paper", record=False)) /
              "A2__seed200.csv").read_text(encoding="utf-8").splitlines()[0].split(",")
    metrics = ("throughput", "avg_travel_time_s", "avg_delay_s", "total_delay_h", "avg_wait_s", "avg_queue",
               "avg_queue_per_lane", "vehicles", "seconds")
    baselines = {f"{c}_{k}": 1.0 for c in ("fixed_time", "max_pressure")
                 for k in ("return", *curriculum_env.BASELINE_METRICS)}

    def record(episode, evaluation):
        timer = ablation.Timer()
        timer.add("sim_s", 2.0)
        if evaluation:
            with timer("eval_s"):
                pass
        return ablation.EpisodeRecord("A2", 200, episode, 0.3, True, episode == 0, "context", "env", None, None, 0.0,
                                     -5.0, -5.0, 10.0, baselines, dict.fromkeys(metrics, 1.0), 0, timer,
                                     evaluation=evaluation)

    evaluation = {f"eval_{k}_{p}": 1.0 for p in ablation.EVAL_POLICIES for k in ("return", "score", *metrics)}
    rows = [record(0, {}).row(), record(1, evaluation).row()]
    assert list(pd.DataFrame(rows).columns) == header
    assert rows[0]["sim_s"] == 2.0 and rows[0]["eval_s"] == 0.0 and rows[1]["eval_s"] >= 0.0
    with pytest.raises(KeyError, match="not a timing column"):
        ablation.Timer().add("wall_s", 1.0)


def test_a_named_maddpg_setting_trains_by_it_under_names_of_its_own_and_the_presets_own_is_the_preset():
    """``maddpg_setting`` (the sweep's named settings): "ue25" runs an update every 25 steps with its own folder,
    transcripts and output suffix, so it never overwrites or replays the paper-default runs; naming the preset's own
    setting is the preset; a setting that is not a MADDPG setting, or one given beside explicit ``maddpg`` overrides,
    is refused by name, before any compute."""
    from marlinkit.maestro.sweep import SETTINGS

    paper = presets.ablation_config("paper")
    ue25 = presets.ablation_config("paper", maddpg_setting="ue25")
    assert (ablation.maddpg_config(ue25, 200).update_every == 25
            and ablation.maddpg_config(paper, 200).update_every == 100)
    assert ue25.maddpg == SETTINGS["ue25"].maddpg
    calibration = curriculum_env.Calibration(1.0, 0.0)
    assert (ablation.run_config(ue25, "A2", 200, calibration)["maddpg"]
            != ablation.run_config(paper, "A2", 200, calibration)["maddpg"])
    assert ablation.transcript_name(ue25, "A2", 200) == "maestro_A2_200_ue25_maddpg"
    assert ablation.results_root("paper", ue25) == paths.results_dir("maestro", "paper") / "ue25_maddpg"
    assert ablation.output_suffix(ue25) == "__ue25_maddpg" and ablation.output_suffix(paper) == ""
    both = dataclasses.replace(ue25, curriculum="measured")
    assert ablation.transcript_name(both, "A7", 300) == "maestro_A7_300_measured_curriculum_ue25_maddpg"
    # replace keeps the setting's overrides
    assert dataclasses.replace(ue25, episodes=100).maddpg == SETTINGS["ue25"].maddpg
    as_preset = presets.ablation_config("paper", maddpg_setting="paper")
    assert as_preset == paper and ablation.results_root("paper", as_preset) == paths.results_dir("maestro", "paper")
    for bad in ("fast", "paper_context0.3"):
        with pytest.raises(ValueError, match=f"unknown MADDPG setting '{bad}'.*ue25"):
            presets.ablation_config("paper", maddpg_setting=bad)
    with pytest.raises(ValueError, match="not both"):  # the setting would silently replace the explicit override
        presets.ablation_config("paper", maddpg_setting="ue25", maddpg={"batch_size": 256})


def test_a2_and_a7_share_their_architects_recorded_replies_and_a8_shares_none():
    """A7 trains as A2 does while its reward is the environment's, so its architect asks A2's questions: a recording
    run copies the other's recorded replies (marlinkit.llm.cache.TranscriptCache's ``shared``), within one seed and
    one setting; A8's architect (another mode) asks other questions."""
    cfg = presets.ablation_config("paper")
    assert ablation.shared_transcripts(cfg, "A7", 300) == ("maestro_A2_300",)
    assert ablation.shared_transcripts(cfg, "A2", 300) == ("maestro_A7_300",)
    assert ablation.shared_transcripts(cfg, "A8", 300) == ()
    ue25 = presets.ablation_config("paper", maddpg_setting="ue25")
    assert ablation.shared_transcripts(ue25, "A7", 200) == ("maestro_A2_200_ue25_maddpg",)


def _without_timing(records: list[dict]) -> list[dict]:
    """Generation records without their wall times (and whether the reply was replayed)."""
    return [{k: {**v, "timings": None} if k == "verdict" and v else v for k, v in r.items()
             if k not in ("llm_seconds", "wall_seconds", "cached")} for r in records]


def test_a7_follows_a2_while_no_generated_reward_is_accepted_and_writes_what_a_full_run_writes(smoke_ablation, tmp_path,
                                                                                                 monkeypatch):
    """With every reward reply refused by the sandbox, A7 trains as A2 does: following A2's finished table (its outer
    loop alone) gives the table and generation log that training A7 in full gives, every column but the wall times;
    it differs from A2's own table only in the columns it owns."""
    import json

    from marlinkit.maestro import architect as arch

    results, root = smoke_ablation
    scripted = arch.scripted_architect_replies
    monkeypatch.setattr(arch, "scripted_architect_replies", lambda: scripted(reward_reply="I cannot write that code."))
    cfg = presets.ablation_config("smoke", **TINY)
    store = ResultStore(root)
    leader = ablation.find_leader(store, cfg, "A7", 200, results.calibration)
    assert ablation.find_leader(store, cfg, "A2", 200, results.calibration) is None and ablation.leader_of("A8") is None
    pd.testing.assert_frame_equal(leader.table, store.load("A2__seed200"))
    runs = {}
    for how, given in (("full", None), ("followed", leader)):
        run = ablation.run_job(cfg, "A7", 200, results.calibration, str(tmp_path), leader=given)
        assert run["provenance"]["followed"] == (None if given is None else "A2__seed200")
        assert run["provenance"]["engine_version"] == store.load_sidecar("A2__seed200")["engine_version"] != "SUMO"
        run_store = ResultStore(tmp_path / how)
        run_store.root.mkdir()
        ablation.save_run(run_store, run)
        runs[how] = run_store.load("A7__seed200"), [json.loads(line) for line in run["generations"].splitlines()]
    (full, full_log), (followed, followed_log) = runs["full"], runs["followed"]
    assert (full["reward_source"] == "env").all() and full_log[-1]["kind"] == "reward" and not full_log[-1]["accepted"]
    pd.testing.assert_frame_equal(followed.drop(columns=TIMING), full.drop(columns=TIMING))
    assert _without_timing(followed_log) == _without_timing(full_log)
    a2 = store.load("A2__seed200")
    differs = [c for c in a2.columns if not a2[c].equals(followed[c])]
    assert set(differs) <= set(ablation.FOLLOWER_COLUMNS) | set(TIMING) and "w_d" in differs


def test_a7_trains_in_full_from_its_first_accepted_reward(smoke_ablation, tmp_path):
    """The scripted architect's reward passes the sandbox at episode 0: the follower leaves A2 there and trains in
    full, giving the run the ablation trained."""
    results, root = smoke_ablation
    cfg = presets.ablation_config("smoke", **TINY)
    leader = ablation.find_leader(ResultStore(root), cfg, "A7", 200, results.calibration)
    run = ablation.run_job(cfg, "A7", 200, results.calibration, str(tmp_path), leader=leader)
    assert run["provenance"]["followed"] is None
    ablation.save_run(ResultStore(tmp_path), run)
    pd.testing.assert_frame_equal(ResultStore(tmp_path).load("A7__seed200").drop(columns=TIMING),
                                  ResultStore(root).load("A7__seed200").drop(columns=TIMING))
