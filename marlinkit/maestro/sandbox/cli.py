"""Vet a reward-function file with MAESTRO's three-stage validation (exit 1 when rejected, 2 on bad arguments)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

#: Accepted ranges of the limits: beyond them a run is not a reward check (RLIMITs overflow, samples fill memory).
RANGES = {"samples": (1, 100_000), "cpu_seconds": (1, 3600), "memory_mb": (128, 65_536), "wall_seconds": (0.1, 3600.0),
          "bound": (1e-12, 1e12)}


def check_limits(args: argparse.Namespace) -> None:
    """Raise ValueError naming the option whose value is out of range (or not finite)."""
    for name, (low, high) in RANGES.items():
        value = getattr(args, name)
        if not (math.isfinite(value) and low <= value <= high):
            raise ValueError(f"--{name.replace('_', '-')} must be a finite number in [{low:g}, {high:g}], got {value}")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, help="Python file defining compute_reward(metrics, difficulty)")
    parser.add_argument("--samples", type=int, default=64,
                        help="synthetic edge-case rows run after the recorded real episodes (default 64, at "
                             "most 100000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the synthetic samples")
    parser.add_argument("--cpu-seconds", type=int, default=10,
                        help="RLIMIT_CPU of the sandbox process, a backstop (1-3600, default 10)")
    parser.add_argument("--memory-mb", type=int, default=512,
                        help="RLIMIT_AS of the sandbox process (128-65536, default 512)")
    parser.add_argument("--wall-seconds", type=float, default=30.0,
                        help="wall-clock timeout per batch, a backstop (0.1-3600, default 30)")
    parser.add_argument("--bound", type=float, default=1.0, help="accepted outputs lie in [-bound, bound] (default 1)")
    parser.add_argument("--phase-terms", action="store_true",
                        help="allow a reward that depends on the phase or its timing (when the prompt asked for one)")


def command(args: argparse.Namespace) -> dict[str, Any]:
    from marlinkit.maestro import sandbox

    check_limits(args)
    if not args.file.is_file():
        raise FileNotFoundError(f"no reward file at {args.file}")
    limits = sandbox.SandboxLimits(
        cpu_seconds=args.cpu_seconds, memory_bytes=args.memory_mb * 2**20,
        wall_seconds=args.wall_seconds, bound=args.bound, phase_terms=args.phase_terms,
    )
    metrics, difficulty, n_real = sandbox.validation_rows(args.samples, args.seed)
    verdict = sandbox.validate(args.file.read_text(), (metrics, difficulty), limits, n_real=n_real)
    return {"file": str(args.file), **verdict.to_dict(), "exit_code": 0 if verdict.accepted else 1}
