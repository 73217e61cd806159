"""``python -m marlinkit maestro-sweep``: plain MADDPG on the real Hangzhou flow, a measured sweep of its settings.

Why MADDPG learns slowly on the Hangzhou network is a question about the learner, so the sweep
leaves MAESTRO's LLM curriculum and reward out: each run trains MADDPG (the template reward, no
LLM) on the first ``--episode-seconds`` of the real flow, training episode k reset with SUMO seed
``seed + k``, and every ``--eval-every`` episodes evaluates both policies (greedy argmax and
stochastic Gumbel-softmax samples, see :data:`marlinkit.algos.maddpg.EVAL_POLICIES`) on the
evaluation episode of the ablation (real flow, SUMO seed ``--eval-seed``). Before training, the
run measures fixed-time (30 s) and max-pressure on that same evaluation episode, so every
evaluation row carries its calibrated score (0 = fixed-time, 165 = max-pressure on that traffic)
and its delay change against fixed-time.

Settings are named (:data:`SETTINGS`, from ``marlinkit/settings/maddpg_settings.toml``): ``paper`` is Lowe et
al.'s defaults as MAESTRO runs them (lr 0.01, an update every 100 steps); the others change one or two fields of it,
each described by its :class:`~marlinkit.settings.MADDPGSetting`. ``ue25`` (an update every 25 steps) is
:class:`~marlinkit.algos.maddpg.MADDPGConfig`'s default, chosen by this sweep at the paper's length
(``data/maestro_sweep/README.md``). Each
(setting, seed) runs in a fresh process (libsumo: one simulation per process) and rewrites its tidy
CSV ``<out>/<setting>__seed<seed>.csv`` atomically after every episode, and every
``--checkpoint-every`` episodes a resumable checkpoint beside it (:mod:`marlinkit.maestro.checkpoint`,
as the ablation's runs). A rerun skips runs whose CSV holds every episode and continues an interrupted
one from its last checkpoint, with the numbers an uninterrupted run gives (a 200-episode run is
~1-2 hours on a busy core); without a checkpoint of the same configuration it starts over.
:func:`load` concatenates the runs.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from marlinkit import paths
from marlinkit.envs.traffic.context import context_for_difficulty
from marlinkit.maestro import checkpoint
from marlinkit.maestro.curriculum import CurriculumConfig
from marlinkit.maestro.curriculum_env import BASELINE_METRICS, CurriculumEnv, baseline_episodes, calibrated_score
from marlinkit.settings import MADDPGSetting, maddpg_settings

#: The named settings, by name (the name is in every run's file name and sidecar): ``maddpg_settings.toml``.
SETTINGS: dict[str, MADDPGSetting] = maddpg_settings()
DEFAULT_OUT = paths.DATA_DIR / "maestro_sweep"
#: Episodes between a run's checkpoints (``--checkpoint-every``; 0: none).
CHECKPOINT_EVERY = 10
#: Traffic metrics each row records (training, evaluation and baseline episodes): MAESTRO's primary ones.
METRICS = BASELINE_METRICS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--settings", nargs="+", default=["paper", "ue25", "lr1e-3", "ue25_lr1e-3"],
                        help=f"named settings to run (known: {', '.join(SETTINGS)})")
    parser.add_argument("--seeds", nargs="+", type=int, default=[200], help="MADDPG seeds (default: 200)")
    parser.add_argument("--episodes", type=int, default=100, help="training episodes per run (paper: 200)")
    parser.add_argument("--episode-seconds", type=int, default=360, help="1-s steps per episode (paper: 360)")
    parser.add_argument("--eval-every", type=int, default=5, help="episodes between evaluations (default: 5)")
    parser.add_argument("--eval-seed", type=int, default=1_000_000, help="SUMO seed of the evaluation episode")
    parser.add_argument("--workers", type=int, default=1, help="runs in parallel, one process each")
    parser.add_argument("--checkpoint-every", type=int, default=CHECKPOINT_EVERY,
                        help=f"episodes between resumable checkpoints (default: {CHECKPOINT_EVERY}; 0: none)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"folder of the per-run CSVs (default: {DEFAULT_OUT})")


def run_path(out: Path, setting: str, seed: int) -> Path:
    return Path(out) / f"{setting}__seed{seed}.csv"


def _complete(path: Path, episodes: int) -> bool:
    import pandas as pd

    return path.exists() and len(pd.read_csv(path)) == episodes


def checkpoint_path(out: Path, setting: str, seed: int) -> Path:
    return Path(out) / f"{setting}__seed{seed}.checkpoint.pt"


def maddpg_config(setting: str, seed: int, episodes: int, episode_seconds: int, eval_every: int):
    """The :class:`~marlinkit.algos.maddpg.MADDPGConfig` a (setting, seed) run trains with: the setting's overrides
    of the defaults, the buffer cut to the run's steps (never below one batch)."""
    from marlinkit.algos.maddpg import MADDPGConfig

    settings = {**MADDPGConfig().__dict__, **SETTINGS[setting].maddpg.given()}
    buffer_size = max(min(settings["buffer_size"], episodes * episode_seconds), settings["batch_size"])
    return MADDPGConfig(**{**settings, "seed": seed, "eval_every": eval_every, "buffer_size": buffer_size})


def _evaluations(env, base_env, learner, eval_seed: int, due: bool) -> dict:
    """An episode's evaluation columns: both policies' return and traffic metrics on the real flow where an
    evaluation is ``due``, else NaN."""
    import numpy as np

    from marlinkit.algos.maddpg import EVAL_POLICIES, evaluate

    row = {}
    for policy in EVAL_POLICIES:
        if not due:
            row.update({f"eval_return_{policy}": np.nan, f"eval_avg_delay_s_{policy}": np.nan,
                        f"eval_avg_queue_{policy}": np.nan, f"eval_throughput_{policy}": np.nan})
            continue
        env.context = None  # evaluations run the real flow
        ret = evaluate(env, learner, eval_seed, policy=policy)
        row.update({f"eval_return_{policy}": ret, **{f"eval_{k}_{policy}": base_env.last_metrics[k] for k in METRICS}})
    return row


def sweep_run(setting: str, seed: int, episodes: int, episode_seconds: int, eval_every: int, eval_seed: int,
              out: str, checkpoint_every: int = CHECKPOINT_EVERY, stop_after: int | None = None) -> str:
    """Train one (setting, seed) in this process, rewriting its CSV after every episode and checkpointing every
    ``checkpoint_every`` episodes; an interrupted run of the same configuration continues from its checkpoint.
    ``stop_after``: only the first episodes of the ``episodes``-long run (``make verify PRESET=paper``).
    Returns the CSV's path."""
    import numpy as np
    import pandas as pd
    import torch

    from marlinkit.repro import numerics, provenance
    from marlinkit.algos.maddpg import env_dims, make_learner, run_episode, seed_everything
    from marlinkit.algos.replay_buffer import ReplayBuffer
    from marlinkit.envs.traffic.env import TrafficEnvConfig, TrafficSignalEnv
    from marlinkit.files import atomic_write_text
    from marlinkit.repro.keys import config_hash, maddpg_key

    torch.set_num_threads(1)
    config = maddpg_config(setting, seed, episodes, episode_seconds, eval_every)
    train_difficulty = SETTINGS[setting].train_difficulty
    base_env = TrafficSignalEnv(TrafficEnvConfig(engine="sumo", episode_seconds=episode_seconds))
    env = CurriculumEnv(base_env, CurriculumConfig())  # resets onto env.context (None: the real flow), env reward
    training = None if train_difficulty is None else context_for_difficulty(train_difficulty, seed, episode_seconds)
    path = run_path(Path(out), setting, seed)
    sidecar = {"setting": setting, "maddpg": maddpg_key(config), "episodes": episodes,
               "episode_seconds": episode_seconds,
               "training_traffic": "real flow" if training is None else training.to_dict(),
               "eval_seed": eval_seed, "engine_version": base_env.engine.version, "numerics": numerics.state(),
               "torch": torch.__version__, "numpy": np.__version__}
    hashed = config_hash(sidecar)  # the sidecar holds everything the numbers depend on (the code record is provenance)
    atomic_write_text(path.with_suffix(".json"), json.dumps({**sidecar, "code": provenance.code_record((__name__,))},
                                                            indent=1, sort_keys=True, default=str))
    saving = checkpoint_path(Path(out), setting, seed)
    try:
        base = baseline_episodes(base_env, eval_seed, {"context": None})
        seed_everything(seed)
        agents, obs_dim, n_actions = env_dims(env)
        learner = make_learner(len(agents), obs_dim, n_actions, config)
        buffer = ReplayBuffer(config.buffer_size, len(agents), obs_dim)
        saved = checkpoint.resume(saving, learner, buffer, hashed) if checkpoint_every else None
        rows, steps = (saved["rows"], saved["steps"]) if saved is not None else ([], 0)
        for episode in range(len(rows), episodes if stop_after is None else min(episodes, stop_after)):
            started = time.perf_counter()
            env.context = training
            train = run_episode(env, learner, seed + episode, True, buffer, steps)
            steps += train["steps"]
            row = {"setting": setting, "seed": seed, "episode": episode, "episode_seconds": episode_seconds,
                   "train_return": train["return"], **{f"train_{k}": base_env.last_metrics[k] for k in METRICS},
                   "updates": train["updates"], "sim_s": train["sim_s"], "train_s": train["train_s"]}
            row.update(_evaluations(env, base_env, learner, eval_seed, due=(episode + 1) % eval_every == 0))
            row.update(base, wall_s=time.perf_counter() - started)
            rows.append(row)
            atomic_write_text(path, pd.DataFrame(rows).to_csv(index=False))
            if checkpoint_every and (episode + 1) % checkpoint_every == 0 and episode + 1 < episodes:
                checkpoint.save(saving, learner, buffer, hashed, rows=rows, steps=steps)
    finally:
        env.close()
    checkpoint.remove(saving)
    return str(path)


def load(out: Path = DEFAULT_OUT):
    """All runs of a sweep folder in one tidy table, with calibrated scores and delay change vs fixed-time."""
    import pandas as pd

    files = sorted(Path(out).glob("*__seed*.csv"))
    if not files:
        raise FileNotFoundError(f"no sweep runs (<setting>__seed<seed>.csv) in {out}")
    df = pd.concat([pd.read_csv(f) for f in files], ignore_index=True)
    for policy in ("stochastic", "greedy"):
        df[f"eval_score_{policy}"] = calibrated_score(df[f"eval_return_{policy}"], df["fixed_time_return"],
                                                      df["max_pressure_return"])
        df[f"eval_delay_vs_fixed_pct_{policy}"] = 100 * (df[f"eval_avg_delay_s_{policy}"]
                                                         / df["fixed_time_avg_delay_s"] - 1)
    return df


def learner_levels(out: Path = DEFAULT_OUT, setting: str = "ue25", last: int = 20) -> dict[str, float]:
    """Where plain MADDPG of ``setting`` stands on its training traffic (the real flow): the training score of every
    episode (its return calibrated on the evaluation episode's fixed-time and max-pressure returns, the same real
    flow) averaged per seed, then over the seeds: ``mean`` over every episode, ``final`` over the last ``last``
    (rounded to 2 decimals). The curriculum's measured targets (``curriculum.PLAIN_MADDPG_SCORE``) are these."""
    import pandas as pd

    df = load(out)
    runs = df[df["setting"] == setting]
    if runs.empty:
        raise ValueError(f"no runs of setting {setting!r} in {out}")
    score = pd.Series(calibrated_score(runs["train_return"], runs["fixed_time_return"], runs["max_pressure_return"]),
                      index=runs.index)
    final = runs["episode"] >= runs.groupby("seed")["episode"].transform("max") + 1 - last
    return {"mean": round(float(score.groupby(runs["seed"]).mean().mean()), 2),
            "final": round(float(score[final].groupby(runs.loc[final, "seed"]).mean().mean()), 2)}


#: The figure's marker per setting (in the order of the settings drawn), beside a colour of the qualitative tab10
#: palette.
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")


def learning_figure(axes, df) -> None:
    """Left: evaluation score per setting (stochastic solid, greedy dashed; 0 = fixed-time, 165 =
    max-pressure on the evaluation episode). Right: average delay of the training episodes. Each setting has its own
    colour and marker; its seeds share them."""
    import matplotlib.pyplot as plt

    order = [name for name in SETTINGS if name in set(df["setting"])] + sorted(set(df["setting"]) - set(SETTINGS))
    palette = plt.get_cmap("tab10").colors
    style = {name: (palette[i % len(palette)], MARKERS[i % len(MARKERS)]) for i, name in enumerate(order)}
    labelled: set[str] = set()  # one legend entry per setting
    for (setting, seed), run in df.groupby(["setting", "seed"]):
        color, marker = style[setting]
        evaluated = run.dropna(subset=["eval_score_stochastic"])
        seeds = sorted(df.loc[df["setting"] == setting, "seed"].unique())
        label = (None if setting in labelled
                 else f"{setting} (seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))})")
        labelled.add(setting)
        for policy, line in (("stochastic", "-"), ("greedy", "--")):
            axes[0].plot(evaluated["episode"], evaluated[f"eval_score_{policy}"], line, marker=marker, ms=3,
                         color=color,
                         lw=1.0, label=label if policy == "stochastic" else None)
        axes[1].plot(run["episode"], run["train_avg_delay_s"], color=color, lw=0.8, marker=marker, ms=3, markevery=10,
                     label=label)
    axes[0].axhline(165, color="k", ls=":", lw=1)
    axes[0].axhline(0, color="grey", ls=":", lw=1)
    axes[0].set_ylabel("evaluation score\n(0 fixed-time, 165 max-pressure)")
    axes[1].axhline(df["fixed_time_avg_delay_s"].iloc[0], color="grey", ls=":", lw=1, label="fixed-time (eval episode)")
    axes[1].axhline(df["max_pressure_avg_delay_s"].iloc[0], color="k", ls=":", lw=1,
                    label="max-pressure (eval episode)")
    axes[1].set_ylabel("avg delay (s) of the training episode\n(its own traffic)")
    for ax in axes:
        ax.set_xlabel("training episode")
        ax.legend(fontsize=7, loc="lower right" if ax is axes[0] else "upper right")


def summary(df, last: int = 20):
    """Per (setting, seed): mean of the evaluations in the last ``last`` episodes, both policies."""
    late = df[df["episode"] >= df.groupby(["setting", "seed"])["episode"].transform("max") + 1 - last]
    columns = [c for c in df.columns if c.startswith("eval_") and not c.startswith("eval_return")]
    out = late.groupby(["setting", "seed"])[columns].mean()
    out["episodes"] = df.groupby(["setting", "seed"])["episode"].max() + 1
    out["wall_s_per_episode"] = df.groupby(["setting", "seed"])["wall_s"].mean()
    return out.reset_index()


def over_seeds(df, last: int = 20, goal_pct: float = -25.0):
    """Per setting, over its seeds: the stochastic policy's real-flow delay in the last ``last`` episodes of each run
    (mean and SD over seeds, worst seed), its change against fixed-time, and whether every seed is ``goal_pct`` % or
    more ahead of fixed-time (the sweep's bar: -25 %).

    A setting's seeds are compared at the same length: when one of its runs is partial, every run of that setting
    is cut to the shortest one's episodes (``episodes``); ``longest`` says how far its longest run went.
    """
    length = df.groupby(["setting", "seed"])["episode"].transform("max").groupby(df["setting"]).transform("min")
    per_run = summary(df[df["episode"] <= length], last)
    longest = df.groupby("setting")["episode"].max() + 1
    grouped = per_run.groupby("setting")
    out = grouped.agg(seeds=("seed", "size"), episodes=("episodes", "min"),
                      delay_mean=("eval_avg_delay_s_stochastic", "mean"),
                      delay_sd=("eval_avg_delay_s_stochastic", "std"),
                      delay_worst=("eval_avg_delay_s_stochastic", "max"),
                      vs_fixed_pct_mean=("eval_delay_vs_fixed_pct_stochastic", "mean"),
                      vs_fixed_pct_worst=("eval_delay_vs_fixed_pct_stochastic", "max"),
                      greedy_delay_mean=("eval_avg_delay_s_greedy", "mean"))
    out[f"every seed <= {goal_pct:g} %"] = out["vs_fixed_pct_worst"] <= goal_pct
    out.insert(2, "longest", longest.reindex(out.index))
    return out.reset_index()


def chosen_default(table, seeds: int = 4, episodes: int = 200, goal_pct: float = -25.0) -> str | None:
    """The rule that picks :class:`~marlinkit.algos.maddpg.MADDPGConfig`'s default from :func:`over_seeds`'s table:
    among the settings run over at least ``seeds`` seeds for ``episodes`` episodes (the paper's 4 seeds at its
    length) whose every seed is ``goal_pct`` % or more ahead of fixed-time, the one with the lowest mean delay
    (None when no setting qualifies)."""
    full = table[(table["seeds"] >= seeds) & (table["episodes"] >= episodes)
                 & (table["vs_fixed_pct_worst"] <= goal_pct)]
    return None if full.empty else str(full.loc[full["delay_mean"].idxmin(), "setting"])


def command(args: argparse.Namespace) -> dict[str, Any]:
    from marlinkit import executors

    unknown = sorted(set(args.settings) - set(SETTINGS))
    if unknown:
        raise ValueError(f"unknown sweep setting(s) {unknown}; known: {', '.join(SETTINGS)}")
    for name in ("episodes", "episode_seconds", "eval_every", "workers"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    every = getattr(args, "checkpoint_every", CHECKPOINT_EVERY)
    if every < 0:
        raise ValueError(f"--checkpoint-every must be >= 0, got {every}")
    args.out.mkdir(parents=True, exist_ok=True)
    jobs = [(s, seed, args.episodes, args.episode_seconds, args.eval_every, args.eval_seed, str(args.out), every)
            for s in args.settings for seed in args.seeds
            if not _complete(run_path(args.out, s, seed), args.episodes)]
    started = time.perf_counter()
    executors.run_jobs(sweep_run, jobs, "local", max(1, min(args.workers, len(jobs))), progress=False,
                       fresh_process=True)
    table = summary(load(args.out))
    return {"out": str(args.out), "runs_done_now": len(jobs), "wall_s": time.perf_counter() - started,
            "summary": table.round(2).to_dict(orient="records")}
