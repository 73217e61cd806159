"""Vet a reward-function file with MAESTRO's three-stage validation (exit 1 when rejected)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, help="Python file defining compute_reward(metrics, difficulty)")
    parser.add_argument("--samples", type=int, default=64,
                        help="synthetic edge-case rows run after the recorded real episode (default 64)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the synthetic samples")
    parser.add_argument("--cpu-seconds", type=int, default=30, help="RLIMIT_CPU of the sandbox process (backstop)")
    parser.add_argument("--memory-mb", type=int, default=256, help="RLIMIT_AS of the sandbox process")
    parser.add_argument("--wall-seconds", type=float, default=60.0, help="wall-clock timeout per batch (backstop)")
    parser.add_argument("--bound", type=float, default=1.0, help="accepted outputs lie in [-bound, bound]")


def run(args: argparse.Namespace) -> dict[str, Any]:
    from marlinkit.llm import sandbox

    if not args.file.is_file():
        raise FileNotFoundError(f"no reward file at {args.file}")
    limits = sandbox.SandboxLimits(
        cpu_seconds=args.cpu_seconds, memory_bytes=args.memory_mb * 2**20,
        wall_seconds=args.wall_seconds, bound=args.bound,
    )
    metrics, difficulty, n_real = sandbox.validation_rows(args.samples, args.seed)
    verdict = sandbox.validate(args.file.read_text(), (metrics, difficulty), limits, n_real=n_real)
    return {"file": str(args.file), **verdict.to_dict(), "exit_code": 0 if verdict.accepted else 1}
