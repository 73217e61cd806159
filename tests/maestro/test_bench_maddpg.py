"""``python -m marlinkit bench maddpg`` through its real CLI entry point, tiny budget."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from marlinkit.__main__ import main


@pytest.mark.slow
def test_bench_maddpg_cli_reports_both_paths():
    out = subprocess.run([sys.executable, "-m", "marlinkit", "bench", "maddpg", "--json", "--updates", "2",
                          "--batch-size", "16", "--obs-dim", "7", "--threads", "1", "--episodes", "0",
                          "--batch-seeds", "0"],
                         capture_output=True, text=True, check=True, timeout=120)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["n_agents"] == 16 and result["n_actions"] == 4
    assert result["obs_dim"] == 7 and result["obs_dim_source"] == "--obs-dim" and result["batch_size"] == 16
    assert result["batched_updates_per_s"] > 0 and result["loop_updates_per_s"] > 0
    assert result["batched_cpu_s_per_update"] > 0 and result["loop_cpu_s_per_update"] > 0
    assert result["speedup"] == pytest.approx(result["batched_updates_per_s"] / result["loop_updates_per_s"])
    # the update's matrix products, counted by hand for 16 agents, obs 7, 4 actions, hidden 64, batch 16:
    # per agent and row, actor 7*64 + 64*64 + 64*4 = 4800 (4352 past the first layer), critic on the joint
    # 16 * (7 + 4) = 176 inputs 176*64 + 64*64 + 64 = 15424 (4160); an update runs the critics 4 times
    # (target, forward, weight grads, actor loss) plus 2 inner input-gradient passes, the actors 3 times plus 1
    per_row = 16 * (4 * 15424 + 2 * 4160 + 3 * 4800 + 4352)
    assert result["update_gflop"] == pytest.approx(2 * per_row * 16 / 1e9)
    assert result["batched_gflop_per_cpu_s"] == pytest.approx(result["update_gflop"] /
                                                              result["batched_cpu_s_per_update"])
    assert "ablation_12_seeds_updates_floor_h" not in result  # --obs-dim 7 is not the paper's update
    assert result["openblas_cpu_s_per_update"] > 0
    assert result["openblas_speedup"] == pytest.approx(result["batched_cpu_s_per_update"] /
                                                       result["openblas_cpu_s_per_update"])
    assert "episode_split_s" not in result  # --episodes 0: no MAESTRO run
    assert "batched_vs_alone_ratio" not in result  # --batch-seeds 0: no stacked seeds
    # the shared5 learner, obs 7, hidden 128, batch 128 x 16 rows: actor 7*128 + 128*128 + 128*4 = 17792 (16896
    # past the first layer), critic on 7 + 16 + 16*4 = 87 inputs 87*128 + 128*128 + 128 = 27648 (16512); the critic
    # runs 5 times plus 1 inner pass (target, forward, weight grads, actor loss forward and input grads), the actor
    # 3 times plus 1
    assert result["shared5_batch_size"] == 128
    assert result["shared5_update_gflop"] == pytest.approx(2 * (5 * 27648 + 16512 + 3 * 17792 + 16896) * 128 * 16 / 1e9)
    for route in ("torch", "openblas"):
        assert result[f"shared5_{route}_gflop_per_cpu_s"] == pytest.approx(
            result["shared5_update_gflop"] / result[f"shared5_{route}_cpu_s_per_update"])
    peaks = [result[f"gemm_{k}_gflop_per_cpu_s"] for k in ("openblas_pinned", "torch_pinned", "best_native")]
    assert result["gemm_size"] == 1024 and all(1 < peak < 1e4 for peak in peaks)


@pytest.mark.slow
def test_bench_maddpg_splits_a_real_maestro_episode():
    out = subprocess.run([sys.executable, "-m", "marlinkit", "bench", "maddpg", "--json", "--updates", "1",
                          "--batch-size", "16", "--obs-dim", "7", "--threads", "1", "--preset", "smoke",
                          "--episodes", "2", "--batch-seeds", "2", "--batch-episodes", "1", "--batch-seconds", "20"],
                         capture_output=True, text=True, check=True, timeout=300)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    split, columns = result["episode_split_s"], result["episode_columns_mean_s"]
    assert set(split) == {"simulation", "MADDPG training", "LLM curriculum calls", "LLM reward calls"}
    assert result["episode_total_s"] == pytest.approx(sum(split.values()))
    # Table 5's grouping of the run's own columns (rounded to 0.1 s over the 2 episodes)
    assert split["MADDPG training"] == pytest.approx(columns["train_s"], abs=0.03)
    assert split["simulation"] == pytest.approx(columns["sim_s"] + columns["eval_s"] + columns["baseline_s"], abs=0.03)
    assert split["LLM reward calls"] == pytest.approx(columns["llm_reward_s"] + columns["reward_eval_s"], abs=0.03)
    assert columns["sim_s"] > 0 and columns["eval_s"] > 0 and columns["reward_eval_s"] > 0  # A7 ran its LLM reward
    assert (result["episode_preset"] == "smoke" and result["episode_seconds"] == 120
            and min(result["episode_updates"]) > 0)
    assert result["paper_updates_per_run"] == 710  # steps 1100, 1200, ..., 72000 of 200 x 360
    assert result["paper_projection_h"] is None  # smoke episodes say nothing about paper-sized ones
    # part 3: two stacked seeds and the first alone, timed in this one run, and the 3 x 12-seed projection
    assert result["batch_seeds"] == [200, 300] and result["alone_wall_s"] > 0 and result["batched_wall_s"] > 0
    assert result["batched_vs_alone_ratio"] == pytest.approx(
        result["alone_wall_s"] / (result["batched_wall_s"] / 2))
    assert 0 < result["ablation_12_seeds_batched_h"] and 0 < result["ablation_12_seeds_alone_h"]
    assert 0 < result["ablation_12_seeds_alone_following_h"] < result["ablation_12_seeds_alone_h"]


def test_the_updates_floor_counts_every_update_of_the_36_paper_runs_on_the_presets_cores():
    from marlinkit.commands.bench_maddpg import paper_updates_per_run, updates_floor_h, updates_floor_note

    assert paper_updates_per_run() == 710
    floor = updates_floor_h(0.5)  # 3 configurations x 12 seeds x 710 updates x 0.5 s, 2 at a time
    assert floor == pytest.approx(36 * 710 * 0.5 / 2 / 3600)
    assert updates_floor_h(0.5, seeds_per_config=4) == pytest.approx(12 * 710 * 0.5 / 2 / 3600)
    assert updates_floor_note().startswith("36 runs x 710 updates") and "2 cores" in updates_floor_note()
    # A7 following A2 trains nothing: 24 runs train
    assert updates_floor_h(0.5, following=True) == pytest.approx(24 * 710 * 0.5 / 2 / 3600)
    assert "24 runs, A7 following A2" in updates_floor_note()


def test_bench_maddpg_rejects_a_bad_episode_setting_before_any_compute(capsys):
    # no evaluation in 1 episode
    assert main(["bench", "maddpg", "--json", "--preset", "smoke", "--episodes", "1"]) == 2
    assert "final_window" in json.loads(capsys.readouterr().out)["error"]


def test_bench_maddpg_rejects_bad_arguments(capsys):
    assert main(["bench", "maddpg", "--json", "--updates", "0"]) == 2
    assert "updates" in json.loads(capsys.readouterr().out)["error"]
