"""Run a baseline signal controller on the Hangzhou network and print its traffic metrics."""

from __future__ import annotations

import argparse

#: The measured reference (documentation, "Sources and measured facts", traffic engines): real flow, 3600 s, fixed-time
#: 30 s cycling of the 4 phases, no yellow.
REFERENCE = {
    "sumo": {"avg_travel_time_s": 471.0, "throughput": 2621, "avg_queue": 116.0},
    "cityflow": {"avg_travel_time_s": 506.0, "throughput": 2530, "avg_queue": 162.0},
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--controller", choices=("fixed-time", "max-pressure"), default="fixed-time",
                        help="signal controller: fixed-time cycles the 4 phases, max-pressure picks the phase with "
                             "the largest queue difference (default fixed-time)")
    parser.add_argument("--seconds", type=int, default=360, help="simulated seconds (3600: the full hour)")
    parser.add_argument("--engine", choices=("sumo", "cityflow"), default="sumo",
                        help="traffic simulator (default sumo; cityflow, the paper's, needs it installed)")
    parser.add_argument("--flow", default="real", help="data-set flow: real, real_5816 or real_5734")
    parser.add_argument("--difficulty", type=float, default=None,
                        help="use the curriculum context of this difficulty instead")
    parser.add_argument("--yellow", type=int, default=0, help="yellow seconds between phases (reference: 0)")
    parser.add_argument("--min-green", type=int, default=0, help="minimum green seconds")
    parser.add_argument("--green", type=int, default=30, help="fixed-time green per phase (reference: 30)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the simulation and of the --difficulty context (default 0)")
    parser.add_argument("--data-dir", default=None,
                        help="Hangzhou data folder (default: MARLINKIT_DATA, then data/, ../shared/data/)")


def reference_check(result: dict) -> dict:
    """Compare with the measured reference when the run is the reference configuration; else empty."""
    ref = REFERENCE.get(result["engine"])
    is_reference = (result["controller"] == "fixed-time" and result["flow"] == "real" and result["seconds"] == 3600
                    and result["yellow_s"] == 0 and result["green_s"] == 30)
    if not (ref and is_reference):
        return {}
    error = result["avg_travel_time_s"] / ref["avg_travel_time_s"] - 1
    return {"reference_avg_travel_time_s": ref["avg_travel_time_s"], "reference_throughput": ref["throughput"],
            "reference_avg_queue": ref["avg_queue"], "travel_time_rel_error": error, "within_10pct": abs(error) <= 0.10}


def command(args: argparse.Namespace) -> dict:
    from marlinkit.envs.traffic.controllers import run_episode

    if not 1 <= args.seconds <= 14400:
        raise ValueError(f"--seconds must be in [1, 14400], got {args.seconds}")
    result = run_episode(controller=args.controller, seconds=args.seconds, engine=args.engine, flow=args.flow,
                         difficulty=args.difficulty, yellow_s=args.yellow, min_green_s=args.min_green,
                         green_s=args.green, seed=args.seed, data_dir=args.data_dir)
    return {**result, **reference_check(result)}
