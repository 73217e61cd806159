"""Command line: ``python -m marlinkit <command> [--json] [--debug]``.

Every command prints a human summary, or with ``--json`` one JSON object as its last line.
Commands live in their own modules and are imported only when called, so ``info`` stays fast.

Exit codes: 0 done; 1 the command's own negative verdict (``check-reward``: rejected); 2 bad
arguments or input files; 3 a failure while running (LLM backend unreachable or missing weights,
simulator error, out of memory); 4 a bug (an unexpected exception). Errors print one clear
message; ``--debug`` adds the traceback.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import traceback
from typing import Any, Callable

EXIT_BAD_INPUT, EXIT_FAILED, EXIT_BUG = 2, 3, 4

#: Top-level commands and bench targets -> module exposing ``command(args) -> dict`` and optionally
#: ``add_arguments(parser)``. Modules keep heavy imports inside ``command`` so the CLI starts fast.
COMMANDS = {
    "traffic-baseline": "marlinkit.envs.traffic.cli",
    "check-reward": "marlinkit.maestro.sandbox.cli",
    "data": "marlinkit.envs.traffic.fetch",
    "verify": "marlinkit.commands.verify",
    "maestro-sweep": "marlinkit.maestro.sweep",
    "numerics-trace": "marlinkit.repro.numerics_trace",
    "heldout": "marlinkit.maestro.heldout",
    "ablation-rows": "marlinkit.commands.ablation_rows",
}
BENCHMARKS = {
    "corridor": "marlinkit.repro.bench.corridor",
    "mappo": "marlinkit.repro.bench.mappo",
    "negotiation": "marlinkit.commands.bench_negotiation",
    "traffic": "marlinkit.repro.bench.traffic",
    "maddpg": "marlinkit.commands.bench_maddpg",
    "numerics": "marlinkit.repro.bench.numerics",
    "marlin-grid": "marlinkit.commands.bench_marlin_grid",
}


def _print_result(result: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(result, sort_keys=True, default=str))
        return
    width = max((len(k) for k in result), default=0)
    for key, value in result.items():
        if isinstance(value, float):
            value = f"{value:,.4g}"
        elif isinstance(value, (dict, list)):
            value = json.dumps(value, default=str)
        print(f"{key:<{width}}  {value}")


def _cmd_info(args: argparse.Namespace) -> dict[str, Any]:
    from marlinkit import info

    return info.collect()


def _cmd_presets(args: argparse.Namespace) -> dict[str, Any]:
    from marlinkit import presets

    if args.check:
        for section in presets.PRESETS[presets.check_preset(args.check)]:  # every experiment's Config checks its values
            presets.get(args.check, section)
    return {"presets": list(presets.PRESET_NAMES), "default": presets.DEFAULT_PRESET}


def _cmd_claims(args: argparse.Namespace) -> dict[str, Any]:
    from marlinkit import claims

    table = claims.write_all(args.out, args.readme)
    return {"rows": len(table), "claims": int(table.claim_id.nunique()), "ledger": str(args.out)}


def _cmd_claims_plan(args: argparse.Namespace) -> dict[str, Any]:
    from marlinkit import claims_plan

    lines, problems = claims_plan.check(args.plan)
    if not args.json:
        print("\n".join(lines + (problems or ["plan valid; every committed source and ledger claim covered"])))
    return {"plan": str(args.plan), "problems": problems, "exit_code": int(bool(problems))}


def _cmd_tiny_llm(args: argparse.Namespace) -> dict[str, Any]:
    from marlinkit.llm.backends.tiny import build_tiny_llama

    return {"model": str(build_tiny_llama(args.out))}


def _cmd_reference_architect(args: argparse.Namespace) -> dict[str, Any]:
    from marlinkit.maestro.reference_architect import pass_share

    return pass_share(args.prompts, args.seed)


def _cmd_reward_rows(args: argparse.Namespace) -> dict[str, Any]:
    from marlinkit.maestro.sandbox import reward_rows

    reward_rows.save(reward_rows.record())
    return {"rows": str(reward_rows.PATH), "bytes": reward_rows.PATH.stat().st_size}


def _cmd_policies(args: argparse.Namespace) -> dict[str, Any]:
    from marlinkit.marlin import policies

    if args.gif:
        written = policies.write_gifs(args.scenarios, args.systems, args.gif, root=args.root)
    else:
        written = policies.train_all(args.scenarios, args.systems, args.root, log=lambda line: print(line, flush=True))
    return {"written": [str(path) for path in written]}


def _cmd_calibrate_surrogate(args: argparse.Namespace) -> dict[str, Any]:
    from marlinkit.marlin import surrogate_planner

    rows = surrogate_planner.ZERO_SHARE_ROWS if args.rows is None else args.rows
    out = surrogate_planner.calibrate_file(args.trials, args.seed, args.kind, args.out, args.scenarios, rows,
                                           log=lambda line: print(line, flush=True))
    return {"rates": str(out)}


def _cmd_notebook_save(args: argparse.Namespace) -> dict[str, Any]:
    from marlinkit import notebook_save

    return {"jupyter_config": str(notebook_save.install())}


def _cmd_authors_queue(args: argparse.Namespace) -> dict[str, Any]:
    import dataclasses
    import time

    from marlinkit import presets
    from marlinkit.marlin import authors_protocol

    log = lambda line: print(line, flush=True)  # noqa: E731
    config = presets.get(args.preset, "authors_protocol")
    if args.zero_share_rows is None:
        limit_s = None if args.limit_hours is None else args.limit_hours * 3600
        trained = authors_protocol.queue(config, args.preset, limit_s, log=log)
        log(f"{time.strftime('%H:%M:%S')} queue done: {trained} runs trained")
        return {"trained": trained}
    config = dataclasses.replace(config, scenarios=tuple(args.scenarios or config.scenarios),
                                 plan_sources=("surrogate_llama",))
    table = authors_protocol.zero_share_sensitivity(config, args.preset, args.zero_share_rows, log=log)
    out = authors_protocol.sensitivity_root(args.preset, args.zero_share_rows) / "executed_vs_policy.csv"
    table.to_csv(out, index=False, float_format="%.6g")
    if not args.json:
        print(table.to_string(index=False))
    return {"written": str(out)}


def _cmd_reference_queue(args: argparse.Namespace) -> dict[str, Any]:
    from marlinkit import presets
    from marlinkit.maestro import reference_queue as rq

    if args.action == "timing":
        configs = {engine: presets.ablation_config(rq.PRESET, None, **rq.timing_settings(engine, args.episodes))
                   for engine in ("sumo", "cityflow")}
        return rq.timing(configs)
    cfg = presets.ablation_config(rq.PRESET, True, **rq.settings(maddpg_setting=args.maddpg_setting,
                                                                 curriculum=args.curriculum))
    if args.action == "run":
        rq.work_through(cfg, tuple(args.seeds) if args.seeds else None,
                        tuple(args.ablations) if args.ablations else None)
    done = rq.finished(cfg)
    return {"finished": done, "runs": len(rq.queue(cfg.seeds)), "in_progress": rq.in_progress(cfg)}


def _add_scripts(command) -> None:
    """The commands that write package data, the claims ledger, trained policies and the long run queues."""
    from pathlib import Path

    from marlinkit import paths
    from marlinkit.envs.corridor.layouts import LAYOUT_NAMES

    claims = command("claims", _cmd_claims, "Write the claims ledger and its cells; with --readme, render the "
                                            "README's claims block")
    claims.add_argument("--out", type=Path, default=paths.FIGURES_DIR / "claims.csv",
                        help="the ledger (default figures/claims.csv)")
    claims.add_argument("--readme", type=Path, default=None, help="a README whose claims block is rewritten")
    plan = command("claims-plan", _cmd_claims_plan,
                   "Validate the claims plan and its sources; list the claims per paper")
    plan.add_argument("--plan", type=Path, default=paths.REPO_ROOT / "docs" / "claims.toml",
                      help="the plan (default docs/claims.toml)")
    command("tiny-llm", _cmd_tiny_llm, "Build a tiny random-weight Llama 3.1 in OUT (for trying transformers:OUT)"
            ).add_argument("out", type=Path, metavar="OUT", help="folder to write the model to")
    architect = command("reference-architect", _cmd_reference_architect,
                        "Share of the reference architect's reward programs the sandbox accepts")
    architect.add_argument("--prompts", type=int, default=200, help="reward prompts (default 200)")
    architect.add_argument("--seed", type=int, default=0, help="seed of the prompts' statistics (default 0)")
    command("reward-rows", _cmd_reward_rows, "Record the reward sandbox's real-flow reward rows (SUMO)")
    policies = command("policies", _cmd_policies, "Train and save the policies of data/policies/ (workshop scale), "
                                                  "or with --gif play them")
    policies.add_argument("--scenarios", nargs="+", default=list(LAYOUT_NAMES), choices=LAYOUT_NAMES, help="corridors")
    policies.add_argument("--systems", nargs="+", default=["MARL", "MARLIN"], choices=("MARL", "MARLIN"),
                          help="systems")
    policies.add_argument("--root", type=Path, default=paths.DATA_DIR / "policies",
                          help="policies folder (default data/policies)")
    policies.add_argument("--gif", type=Path, metavar="FOLDER", help="play one episode of each saved policy and write "
                          "it as FOLDER/policy__<scenario>__<system>.gif (no training)")
    _add_calibrate_surrogate(command("calibrate-surrogate", _cmd_calibrate_surrogate,
                                     "Calibrate the surrogate planner's corruption rates (writes the package data)"))
    command("notebook-save", _cmd_notebook_save, "Make this environment's JupyterLab save tracked notebooks without "
                                                 "outputs")
    _add_authors_queue(command("authors-queue", _cmd_authors_queue, "Train the authors'-protocol MARLIN and MARL runs "
                                                                    "(resumes; one run at a time)"))
    _add_reference_queue(command("reference-queue", _cmd_reference_queue, "The reference-architect ablation at the "
                                                                          "paper's length: run, status or timing"))


def _add_calibrate_surrogate(sub: argparse.ArgumentParser) -> None:
    from marlinkit.envs.corridor.layouts import LAYOUT_NAMES

    sub.add_argument("--trials", type=int, default=400, help="LLM-only trials per rate tried (default 400)")
    sub.add_argument("--seed", type=int, default=0, help="seed of the calibration trials (default 0)")
    sub.add_argument("--kind", choices=("mean", "llama"), default="mean",
                     help="mean: the calibrated surrogate (LLM-only mean); llama: surrogate_llama (mean and "
                          "perfect share)")
    sub.add_argument("--out", type=str, default=None, help="default: the package data file of --kind")
    sub.add_argument("--scenarios", nargs="+", choices=LAYOUT_NAMES, default=list(LAYOUT_NAMES),
                     help="calibrate these (default: all); the others keep their records in --out, made with the same "
                          "trials and seed (a calibration depends on its own corridor's target alone)")
    sub.add_argument("--rows", type=int, default=None,
                     help="llama: rows behind a perfect-plan share of 0 (default surrogate_planner.ZERO_SHARE_ROWS)")


def _add_authors_queue(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--preset", default="paper", help="the preset whose authors_protocol section runs (default paper)")
    sub.add_argument("--limit-hours", type=float, default=None, help="start no new run after this many hours")
    sub.add_argument("--zero-share-rows", type=int, default=None,
                     help="instead: the sensitivity check of surrogate_llama's shares of 0 at this many rows "
                          "(zero_share_sensitivity; MARLIN of --scenarios only), its table written beside its runs")
    sub.add_argument("--scenarios", nargs="+", default=None, help="with --zero-share-rows: these corridors only")


def _add_reference_queue(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("action", choices=("run", "status", "timing"), help="run the queue (resumable), list the finished "
                     "runs, or time an episode on SUMO and on CityFlow")
    sub.add_argument("--seeds", nargs="+", type=int, default=None, help="run: seeds (default: the preset's 12)")
    sub.add_argument("--ablations", nargs="+", choices=("A2", "A0", "A8", "A7"), default=None,
                     help="run: configurations (default: all four); two queues can split a seed, A7 after its A2")
    sub.add_argument("--maddpg-setting", default="ue25_openblas",
                     help="MADDPG setting (marlinkit.maestro.sweep.SETTINGS; default ue25_openblas)")
    sub.add_argument("--curriculum", default="plain_maddpg",
                     help="curriculum target (marlinkit.maestro.curriculum.SETTINGS; default plain_maddpg)")
    sub.add_argument("--episodes", type=int, default=4, help="timing: episodes per engine (default 4)")


def _add_common(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    sub.add_argument("--debug", action="store_true", help="on an error, print the full traceback too")


def _module_runner(module_name: str) -> Callable[[argparse.Namespace], dict[str, Any]]:
    return lambda args: importlib.import_module(module_name).command(args)


def _add_module_commands(subparsers, registry: dict[str, str]) -> None:
    for name, module_name in registry.items():
        module = importlib.import_module(module_name)
        summary = (module.__doc__ or name).strip().splitlines()[0]
        sub = subparsers.add_parser(name, help=summary, description=summary)
        _add_common(sub)
        if hasattr(module, "add_arguments"):
            module.add_arguments(sub)
        sub.set_defaults(handler=_module_runner(module_name))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m marlinkit", description="marlinkit's command line: environment report, presets, traffic "
        "baselines, reward vetting and speed benchmarks.",
        epilog="exit codes: 0 done, 1 rejected (check-reward), 2 bad arguments or input, 3 failed while running "
               "(e.g. LLM unreachable), 4 bug. Add --debug after a command for tracebacks.")
    commands = parser.add_subparsers(dest="command", required=True)

    def command(name: str, handler, help_text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        _add_common(sub)
        sub.set_defaults(handler=handler)
        return sub

    command("info", _cmd_info, "Versions, compute device and threads, data folders, LLM backends and traffic engines "
                               "found here; checks $MARLINKIT_LLM")
    presets_cmd = command("presets", _cmd_presets, "List the run presets (smoke, quick, paper), or --check NAME")
    presets_cmd.add_argument("--check", metavar="NAME", help="exit non-zero unless NAME is a preset")

    _add_module_commands(commands, COMMANDS)
    _add_scripts(command)
    bench = commands.add_parser("bench", help="speed benchmarks that print numbers",
                                description="Speed benchmarks that print numbers (one JSON line each with --json)")
    _add_module_commands(bench.add_subparsers(dest="target", required=True), BENCHMARKS)
    return parser


def _exit_code(error: BaseException) -> int:
    """Which kind of failure ``error`` is (see the module docstring)."""
    from marlinkit.llm.base import LLMError

    if isinstance(error, (ValueError, FileNotFoundError, NotADirectoryError, KeyError)):
        return EXIT_BAD_INPUT
    if isinstance(error, (LLMError, OSError, MemoryError, RuntimeError)):
        return EXIT_FAILED
    return EXIT_BUG


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        result = args.handler(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as error:  # noqa: BLE001 - every failure becomes one message and an exit code
        code = _exit_code(error)
        kind = "bug: " if code == EXIT_BUG else ""
        message = f"{kind}{type(error).__name__}: {error}" if code == EXIT_BUG else str(error) or type(error).__name__
        if args.debug:
            traceback.print_exc()
        if args.json:
            print(json.dumps({"error": message, "exit_code": code}))
        else:
            hint = "" if args.debug or code == EXIT_BAD_INPUT else " (run with --debug for the traceback)"
            print(f"error: {message}{hint}", file=sys.stderr)
        return code
    _print_result(result, args.json)
    return int(result.get("exit_code", 0)) if isinstance(result, dict) else 0


if __name__ == "__main__":
    sys.exit(main())
