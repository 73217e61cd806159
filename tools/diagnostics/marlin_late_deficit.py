"""MARLIN's late deficit: one paper-protocol MARLIN training with one part of Algorithm 1 changed.

    python tools/diagnostics/marlin_late_deficit.py VARIANT

    no-toggle        Algorithm 1's mid-episode toggle off
    mask-actor       the actor learns nothing from plan-driven steps
    separate         ... nor the critic, and no return crosses into a plan
    separate-critic  actor and critic only (returns still cross)
    separate-trace   actor and the cut trace only (critic learns plans)

Each trains single-slot, seed 1 (or ``SCENARIO`` and ``SEED`` from the environment), 15 copies x 1600 episodes
with the calibrated surrogate planner (the committed paper runs' settings, batched trainer) and prints the checkpoint
evaluations; the episode and evaluation tables go to ``OUT`` (default /tmp). About 9-13 min on one core. A research
script, not part of the package: it changes behaviour by patching two functions, so its runs are never cached with
the real ones.

``mask-actor`` records, at every step, which agents' actions came from the plan rather than the policy's sample,
and sets those agent-steps' advantages to the mean of the others, so that after the batch standardisation they are
exactly 0: no policy gradient from them (the critic still learns their returns).

``separate`` also keeps plan segments out of everything the policy's own steps learn from: a plan-driven step's value
target is its current value (no critic gradient), and the GAE trace stops where a plan segment starts (the policy's
last step before it bootstraps from V there instead of being credited with the plan's rewards). It is now the MAPPO
setting ``generated_steps="separate"`` (``marlinkit.algos.mappo``), which this script sets; the two halves of it,
``separate-critic`` and ``separate-trace``, stay patches here.
"""

from __future__ import annotations

import os
import sys
import time
from collections import deque

import numpy as np
import torch

from marlinkit import presets
from marlinkit.algos import mappo
from marlinkit.marlin import algorithm1, batched, grid

VARIANTS = ("no-toggle", "mask-actor", "separate", "separate-critic", "separate-trace")


def _record_each_step(flag) -> deque:
    """Wrap Algorithm 1's generator so each call appends ``flag(generator, actions, sampled)``; the queue it fills."""
    recorded: deque = deque()
    call = algorithm1.Algorithm1.__call__

    def recording_call(self, state, sampled):
        actions = call(self, state, sampled)
        recorded.append(flag(self, actions, sampled))
        return actions

    algorithm1.Algorithm1.__call__ = recording_call
    return recorded


def _no_policy_gradient(advantages: np.ndarray, mask: np.ndarray) -> None:
    """Set the masked rows of one run to the others' mean: after the batch standardisation they are exactly 0."""
    if mask.any() and (~mask).any():
        advantages[mask] = advantages[~mask].mean()


def main(variant: str, out: str, scenario: str = "single_slot", seed: int = 1) -> None:
    torch.set_num_threads(1)
    if variant == "no-toggle":
        from marlinkit.marlin import systems

        systems.TrainingConfig.switch_config = lambda self: algorithm1.SwitchConfig(rule=self.switch_rule,
                                                                                    toggle_probability=0.0)
    elif variant in ("separate-critic", "separate-trace"):  # "separate" itself is the MAPPO setting, below
        cut_trace, critic_out = variant == "separate-trace", variant == "separate-critic"
        # [B]: the copy's step is plan-driven
        on_plan = _record_each_step(
            lambda alg, actions, sampled: np.array([g == algorithm1.PLAN for g in alg.generator]))

        def separated_gae(rewards, values, dones, next_value, gamma, lam):
            T = len(rewards)
            plan = np.stack([on_plan.popleft() for _ in range(T)])[:, None, :, None]  # [T, 1, B, 1]
            # the next window's first step
            plan_after = on_plan[0][None, :, None] if on_plan else np.zeros_like(plan[0], bool)
            advantages, last = np.zeros_like(values), np.zeros_like(next_value)
            for t in reversed(range(T)):
                following = next_value if t == T - 1 else values[t + 1]
                live = 1.0 - dones[t]
                next_is_plan = plan_after if t == T - 1 else plan[t + 1]
                delta = rewards[t] + gamma * following * live - values[t]
                last = delta + gamma * lam * live * (np.where(next_is_plan, 0.0, last) if cut_trace else last)
                advantages[t] = last
            returns = advantages + values
            plan_rows = np.broadcast_to(plan, advantages.shape)
            if critic_out:
                returns[plan_rows] = values[plan_rows]  # no value-loss gradient from plan-driven steps
            _no_policy_gradient(advantages[:, 0], plan_rows[:, 0])  # one run
            return advantages, returns

        mappo.compute_gae = separated_gae
    elif variant == "mask-actor":
        # [B, 2]: the agent's action came from the plan
        masks = _record_each_step(lambda alg, actions, sampled: np.asarray(actions) != np.asarray(sampled))
        gae = mappo.compute_gae

        def masked_gae(rewards, values, dones, next_value, gamma, lam):
            advantages, returns = gae(rewards, values, dones, next_value, gamma, lam)
            outside = np.stack([masks.popleft() for _ in range(advantages.shape[0])])  # [T, B, 2], one run
            _no_policy_gradient(advantages[:, 0], outside)
            return advantages, returns

        mappo.compute_gae = masked_gae
    mappo_settings = {"generated_steps": "separate"} if variant == "separate" else {}
    config, source, _ = grid.with_plan_source(presets.get("paper", "fig3_training", scenarios=[scenario], seeds=[seed],
                                                          mappo=mappo_settings))
    started = time.time()
    [(episodes, evaluations)] = batched.train_systems([(scenario, "MARLIN", seed)], config, source)
    name = f"{variant}_{scenario}_seed{seed}"
    episodes.to_csv(os.path.join(out, f"episodes_{name}.csv.gz"), index=False)
    evaluations.to_csv(os.path.join(out, f"eval_{name}.csv"), index=False)
    print(name, f"{time.time() - started:.0f} s",
          evaluations.groupby("checkpoint").performance.mean().round(3).to_dict())


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in VARIANTS:
        sys.exit(f"usage: {sys.argv[0]} {{{'|'.join(VARIANTS)}}}")
    main(sys.argv[1], os.environ.get("OUT", "/tmp"), os.environ.get("SCENARIO", "single_slot"),
         int(os.environ.get("SEED", "1")))
