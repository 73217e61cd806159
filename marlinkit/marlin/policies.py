"""Trained MARL and MARLIN policies you can load and watch: one per corridor and system, committed under
``data/policies/``.

Each policy is the shared actor of one training (the actor of ``marlinkit.algos.mappo``: ``[x, y, goal_x, goal_y]`` -> 5
logits, ~270 KB as a float32 state dict) in ``<scenario>__<system>__seed<seed>.pt``, beside a JSON sidecar with
everything that rebuilds it: the scenario, system, seed, plan source and the ``TrainingConfig`` it trained with, and
its evaluation (the mean performance of ``eval_runs`` sampled episodes at the end).

Scale: small, so that all ten train in minutes on a laptop: :data:`SETTINGS` are the workshop's MARLIN sizes
(notebook 04: 4 copies x 100 episodes per copy, the authors' MAPPO hyperparameters; MARLIN's plans from the
calibrated surrogate planner, which is not an LLM, with the threshold of the authors' Llama 3.1 8B LLM-only
performance). The paper trains 15 copies x 1600 episodes, the quick preset 15 x 120. So these policies are young:
they show what 100 episodes teach, not the paper's converged policies. Rebuild them all with
``python -m marlinkit policies`` (about 20 CPU-s each).

:func:`play_episode` plays one episode of a policy on the corridor core; :func:`frames` draws it step by step and
:func:`save_gif` writes the frames as a GIF, which a notebook shows inline (``IPython.display.Image``). ``python -m
marlinkit policies --gif figures/policies --scenarios single_slot --systems MARLIN`` wrote the committed
``figures/policies/policy__single_slot__MARLIN.gif`` (``make verify`` leaves that folder to this command).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from marlinkit import paths
from marlinkit.algos import mappo
from marlinkit.algos.mappo_rollouts import sample_actions
from marlinkit.envs.corridor import core
from marlinkit.envs.corridor.layouts import LAYOUT_NAMES, get_layout
from marlinkit.marlin.systems import TrainingConfig, system_run

POLICIES_DIR = paths.DATA_DIR / "policies"
SYSTEMS = ("MARL", "MARLIN")
SEED = 0
#: The workshop preset's MARLIN training (notebook 04's sizes), one seed.
SETTINGS = TrainingConfig(episodes=100, n_envs=4, checkpoints=(100,), eval_runs=50)
PLAN_SOURCE = "calibrated surrogate planner (not an LLM)"
COMMAND = "python -m marlinkit policies"


#: The actor's entries of a saved state dict: ``nn.Linear`` layers 0, 2 and 4 of the tanh MLP.
ACTOR_KEYS = ("0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias")


class SavedActor:
    """A saved actor's layers, evaluated as MAPPO evaluates its own (:func:`marlinkit.algos.mappo.actor_logits`)."""

    def __init__(self, state: dict):
        self.params = [state[k][None] if k.endswith("weight") else state[k][None, None] for k in ACTOR_KEYS]

    def logits(self, observations: np.ndarray) -> np.ndarray:
        """Logits ``[..., 5]`` for observations ``[..., 4]``."""
        return mappo.actor_logits(self.params, observations)


@dataclass(frozen=True)
class Policy:
    """A trained actor and how it was made."""

    actor: SavedActor | mappo.RunPolicy
    """Anything with ``logits(observations)``: a saved actor, or a trained run's policy."""
    scenario: str
    system: str
    seed: int
    info: dict
    """The sidecar: settings, plan source, evaluation and the command that rebuilds the policy."""

    def act(self, observations: np.ndarray, uniforms: np.ndarray | None = None) -> np.ndarray:
        """Actions for observations ``[..., 4]``: sampled with ``uniforms`` (as evaluation samples), else greedy."""
        logits = self.actor.logits(observations)
        return logits.argmax(-1) if uniforms is None else sample_actions(logits, uniforms)


def policy_path(scenario: str, system: str, seed: int = SEED, root: Path | None = None) -> Path:
    return Path(root or POLICIES_DIR) / f"{scenario}__{system}__seed{seed}.pt"


def train(scenario: str, system: str, seed: int = SEED,
          settings: TrainingConfig = SETTINGS) -> tuple[mappo.RunPolicy, dict]:
    """Train one policy as Fig. 3's runner does (``systems.system_run``); the agent and its sidecar."""
    source = None
    if system == "MARLIN":
        from marlinkit.marlin.surrogate_planner import CalibratedSurrogatePlanner

        source = CalibratedSurrogatePlanner()
    run = system_run(scenario, system, seed, settings, source)
    agent = mappo.train(settings.mappo, run.layout_at, n_envs=settings.n_envs, episodes=settings.episodes, seed=seed,
                        generator=run.generator, on_episode_end=run.on_episode_end)
    _, evaluations = run.tables()
    info = {"scenario": scenario, "system": system, "seed": seed,
            "plan_source": PLAN_SOURCE if system == "MARLIN" else None,
            "settings": json.loads(json.dumps(dataclasses.asdict(settings), default=list)),
            "evaluation": {"episode": settings.episodes, "runs": settings.eval_runs,
                           "mean_performance": round(float(evaluations.performance.mean()), 4)},
            "actor": {"hidden": settings.mappo.actor_hidden, "dtype": "float32"},
            "rebuild": f"{COMMAND} --scenarios {scenario} --systems {system}"}
    return agent, info


def save(agent: mappo.RunPolicy, info: dict, root: Path | None = None) -> Path:
    """Write the actor's state dict and its JSON sidecar; returns the ``.pt`` path."""
    import torch

    path = policy_path(info["scenario"], info["system"], info["seed"], root)
    path.parent.mkdir(parents=True, exist_ok=True)
    actor = {name.removeprefix("actor."): tensor for name, tensor in agent.state_dict().items()
             if name.startswith("actor.")}
    torch.save({name: actor[name].detach().clone().contiguous() for name in ACTOR_KEYS}, path)
    path.with_suffix(".json").write_text(json.dumps(info, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


def load(scenario: str, system: str, seed: int = SEED, root: Path | None = None) -> Policy:
    """A committed policy (see :data:`POLICIES_DIR`)."""
    import torch

    path = policy_path(scenario, system, seed, root)
    if not path.is_file():
        raise FileNotFoundError(f"no trained {system} policy for {scenario} (seed {seed}) at {path}; "
                                f"`{COMMAND}` trains them")
    info = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    state = torch.load(path, weights_only=True)
    if sorted(state) != sorted(ACTOR_KEYS) or state["0.weight"].shape[0] != info["actor"]["hidden"]:
        raise ValueError(f"{path} is not a saved actor of {info['actor']['hidden']} hidden units "
                         f"(entries {sorted(state)})")
    return Policy(SavedActor(state), scenario, system, seed, info)


def play_episode(policy: Policy, seed: int = 0, greedy: bool = False) -> tuple[np.ndarray, float]:
    """One episode of ``policy`` on its corridor: both robots' cells at every step, int[51, 2, 2], and its
    performance. Actions are sampled from the policy, as its evaluation samples them (``greedy``: the likeliest)."""
    arrays = core.layout_arrays(get_layout(policy.scenario))
    uniforms = np.random.default_rng(seed).random((core.EPISODE_STEPS, 1, core.N_AGENTS))
    state = core.reset(arrays, 1)
    cells = [state.pos[0].copy()]
    for t in range(core.EPISODE_STEPS):
        actions = policy.act(core.observe(arrays, state), None if greedy else uniforms[t])
        state = core.step(arrays, state, actions).state
        cells.append(state.pos[0].copy())
    return np.stack(cells), float(core.performance(arrays, state)[0])


def frames(policy: Policy, cells: np.ndarray, performance: float, dpi: int = 72) -> list:
    """The episode ``cells`` (from :func:`play_episode`) as one image per step (Pillow images): the corridor drawn
    once by matplotlib (``render.draw_layout``), both robots and the step painted on it per frame."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from PIL import Image, ImageDraw

    from marlinkit.envs.corridor.render import ROBOT_COLORS, draw_layout

    layout = get_layout(policy.scenario)
    fig = Figure(figsize=(0.5 * layout.width + 1.2, 0.42 * layout.height + 1.1), dpi=dpi)
    ax = fig.subplots()
    draw_layout(layout, ax, title=f"{policy.system}, {layout.name}\n")
    fig.tight_layout()
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    background = Image.fromarray(np.asarray(canvas.buffer_rgba())[..., :3].copy())
    height = background.height
    radius = abs(ax.transData.transform((0.3, 0))[0] - ax.transData.transform((0, 0))[0])
    images = []
    for t, step_cells in enumerate(cells):
        image = background.copy()
        draw = ImageDraw.Draw(image)
        for (x, y), color in zip(step_cells, ROBOT_COLORS):
            px, py = ax.transData.transform((x, y))
            py = height - py
            draw.ellipse((px - radius, py - radius, px + radius, py + radius), fill=color, outline="black", width=2)
        caption = f"step {t}/{len(cells) - 1}" + (f", performance {performance:.2f}" if t == len(cells) - 1 else "")
        draw.text((6, height - 14), caption, fill="black")
        images.append(image)
    return images


def save_gif(images: list, path: str | Path, frame_ms: int = 200, last_ms: int = 1500) -> Path:
    """Write ``images`` (from :func:`frames`) as a looping GIF; the last frame stays ``last_ms``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    durations = [frame_ms] * (len(images) - 1) + [last_ms]
    images[0].save(path, save_all=True, append_images=images[1:], duration=durations, loop=0, optimize=True)
    return path


def write_gifs(scenarios, systems, folder: Path, root: Path = POLICIES_DIR) -> list[Path]:
    """Play one episode of each saved policy and write it as ``folder/policy__<scenario>__<system>.gif`` (no
    training)."""
    written = []
    for scenario in scenarios:
        for system in systems:
            policy = load(scenario, system, root=root)
            cells, performance = play_episode(policy)
            written.append(save_gif(frames(policy, cells, performance), folder / f"policy__{scenario}__{system}.gif"))
    return written


def train_all(scenarios, systems, root: Path = POLICIES_DIR, log=print) -> list[Path]:
    """Train and save the policy of every scenario and system (one torch thread), logging each one's evaluation."""
    import time

    import torch

    torch.set_num_threads(1)
    written = []
    for scenario in scenarios:
        for system in systems:
            start = time.perf_counter()
            agent, info = train(scenario, system)
            written.append(save(agent, info, root))
            log(f"{written[-1]}: evaluation {info['evaluation']['mean_performance']:.3f}, "
                f"{time.perf_counter() - start:.0f} s")
    return written
