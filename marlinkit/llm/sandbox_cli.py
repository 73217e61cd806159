"""Vet a reward-function file with MAESTRO's three-stage validation (exit 1 when rejected)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, help="Python file defining compute_reward(metrics, difficulty)")
    parser.add_argument("--samples", type=int, default=64, help="synthetic sample rows to run (default 64)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the synthetic samples")
    parser.add_argument("--cpu-seconds", type=int, default=2, help="RLIMIT_CPU of the sandbox process")
    parser.add_argument("--memory-mb", type=int, default=256, help="RLIMIT_AS of the sandbox process")
    parser.add_argument("--wall-seconds", type=float, default=10.0, help="wall-clock timeout")
    parser.add_argument("--bound", type=float, default=1.0, help="accepted outputs lie in [-bound, bound]")


def run(args: argparse.Namespace) -> dict[str, Any]:
    from marlinkit.llm import sandbox

    if not args.file.is_file():
        raise FileNotFoundError(f"no reward file at {args.file}")
    limits = sandbox.SandboxLimits(
        cpu_seconds=args.cpu_seconds, memory_bytes=args.memory_mb * 2**20,
        wall_seconds=args.wall_seconds, bound=args.bound,
    )
    verdict = sandbox.validate(args.file.read_text(), sandbox.sample_rollouts(args.samples, args.seed), limits)
    return {"file": str(args.file), **verdict.to_dict(), "exit_code": 0 if verdict.accepted else 1}
