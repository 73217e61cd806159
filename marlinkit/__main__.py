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

#: Top-level commands and bench targets -> module exposing ``run(args) -> dict`` and optionally
#: ``add_arguments(parser)``. Modules keep heavy imports inside ``run`` so the CLI starts fast.
COMMANDS = {
    "traffic-baseline": "marlinkit.envs.traffic.cli",
    "check-reward": "marlinkit.maestro.sandbox.cli",
    "data": "marlinkit.envs.traffic.fetch",
    "verify": "marlinkit.commands.verify",
    "maestro-sweep": "marlinkit.maestro.sweep",
    "numerics-trace": "marlinkit.repro.numerics_trace",
    "heldout": "marlinkit.maestro.heldout",
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


def _add_common(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    sub.add_argument("--debug", action="store_true", help="on an error, print the full traceback too")


def _module_runner(module_name: str) -> Callable[[argparse.Namespace], dict[str, Any]]:
    return lambda args: importlib.import_module(module_name).run(args)


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
