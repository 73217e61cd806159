"""Negotiation cost: seconds and tokens per plan with a live LLM, and LLM calls per 1000 MARLIN episodes.

Part 1 negotiates one plan with the configured backend (default smollm2) without any cache, so
the seconds are real. Part 2 trains MARLIN (``marlinkit.marlin.systems.train_system``) with the same
negotiation protocol on the scripted robots (no model, the same calls per move when the format is
kept) and counts the plans Algorithm 1 asks for without a plan budget: the plan cache at work. LLM calls per 1000
episodes = plans per 1000 episodes x the live backend's calls per plan.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--llm", default=None, help="LLM setting (default: $MARLINKIT_LLM or smollm2)")
    parser.add_argument("--scenario", default="single_slot", help="corridor layout (default: single_slot)")
    parser.add_argument("--moves", type=int, default=2, help="moves negotiated in the live plan (default: 2)")
    parser.add_argument("--max-rounds", type=int, default=1, help="rounds per move (default 1; the paper: 5)")
    parser.add_argument("--max-new-tokens", type=int, default=80, help="reply cap (default 80; the paper: 300)")
    parser.add_argument("--episodes", type=int, default=30, help="MARLIN training episodes per copy for part 2")
    parser.add_argument("--n-envs", type=int, default=15, help="environment copies in part 2 (default 15, the paper's)")
    parser.add_argument("--skip-live", action="store_true", help="only part 2 (no model call)")


class _Counting:
    """A plan source that counts the plans asked of it (Algorithm 1's cache misses)."""

    def __init__(self, source):
        self.source, self.name, self.plans, self.calls = source, source.name, 0, 0

    def make_plan(self, layout, positions, steps_left, seed=None):
        plan = self.source.make_plan(layout, positions, steps_left, seed)
        self.plans += 1
        self.calls += plan.stats["llm_calls"]
        return plan


def command(args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np

    from marlinkit import presets
    from marlinkit.marlin import algorithm1, systems
    from marlinkit.envs.corridor.layouts import get_layout
    from marlinkit.llm import config as llm_config
    from marlinkit.marlin.negotiation import Negotiation, NegotiationConfig, greedy_robots
    from marlinkit.llm.backends.scripted import ScriptedBackend

    layout = get_layout(args.scenario)
    config = NegotiationConfig(max_rounds=args.max_rounds, max_new_tokens=args.max_new_tokens, max_moves=args.moves)
    result: dict[str, Any] = {"scenario": args.scenario, "negotiation": {"max_rounds": args.max_rounds,
                              "max_new_tokens": args.max_new_tokens, "moves": args.moves}}
    calls_per_plan = None
    if not args.skip_live:
        backend = llm_config.make_backend(args.llm)
        plan = Negotiation(backend, config).make_plan(layout, np.array(layout.starts), args.moves, seed=0)
        s = plan.stats
        calls_per_plan = s["llm_calls"]
        result.update(llm=llm_config.label(backend), seconds_per_plan=s["seconds"], llm_calls_per_plan=s["llm_calls"],
                      seconds_per_call=s["llm_seconds"] / max(1, s["llm_calls"]),
                      prompt_tokens_per_plan=s["prompt_tokens"], completion_tokens_per_plan=s["completion_tokens"],
                      completion_tokens_per_second=s["completion_tokens"] / max(1e-9, s["llm_seconds"]),
                      format_kept=s["format_ok"] / max(1, s["replies"]), fallbacks=s["fallbacks"],
                      plan_performance=plan.performance, note_live="includes the first call's model load")
    training = presets.get("quick", "fig3_training", episodes=args.episodes, checkpoints=[args.episodes], eval_runs=1,
                           n_envs=args.n_envs)
    # the paper's unlimited re-planning: count what the cache alone saves
    training = dataclasses.replace(training, plan_budget=None)
    counting = _Counting(Negotiation(ScriptedBackend(greedy_robots, "greedy-robots"), config))
    episodes, _ = systems.train_system(args.scenario, "MARLIN", 0, training, source=counting)
    copy_episodes = len(episodes)
    per_1000 = 1000 * counting.plans / copy_episodes
    result.update(marlin_episodes=copy_episodes, marlin_plans_made=counting.plans,
                  plan_episodes=int((episodes.generator == algorithm1.PLAN).sum()),
                  plans_per_1000_episodes=per_1000,
                  scripted_llm_calls_per_1000_episodes=1000 * counting.calls / copy_episodes,
                  episodes_counted_as="per environment copy (n_envs copies per training episode, as Fig. 3)")
    if calls_per_plan is not None:
        result["llm_calls_per_1000_episodes"] = per_1000 * calls_per_plan
    return result
