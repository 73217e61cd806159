"""Command line: ``python -m marlinkit <command> [--json]``.

Every command prints a human summary, or with ``--json`` one JSON object as its last line.
Commands live in their own modules and are imported only when called, so ``info`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import Any, Callable

#: Top-level commands and bench targets -> module exposing ``run(args) -> dict`` and optionally
#: ``add_arguments(parser)``. Modules keep heavy imports inside ``run`` so the CLI starts fast.
COMMANDS = {
    "traffic-baseline": "marlinkit.envs.traffic.cli",
    "check-reward": "marlinkit.llm.sandbox_cli",
    "maestro-sweep": "marlinkit.maestro_sweep",
}
BENCHMARKS = {
    "corridor": "marlinkit.bench.corridor",
    "mappo": "marlinkit.bench.mappo",
    "negotiation": "marlinkit.bench.negotiation",
    "traffic": "marlinkit.bench.traffic",
    "maddpg": "marlinkit.bench.maddpg",
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
        presets.check_preset(args.check)
    return {"presets": list(presets.PRESET_NAMES), "default": presets.DEFAULT_PRESET}


def _module_runner(module_name: str) -> Callable[[argparse.Namespace], dict[str, Any]]:
    return lambda args: importlib.import_module(module_name).run(args)


def _add_module_commands(subparsers, registry: dict[str, str]) -> None:
    for name, module_name in registry.items():
        module = importlib.import_module(module_name)
        sub = subparsers.add_parser(name, help=(module.__doc__ or name).strip().splitlines()[0])
        sub.add_argument("--json", action="store_true", help="print one JSON object as the last line")
        if hasattr(module, "add_arguments"):
            module.add_arguments(sub)
        sub.set_defaults(handler=_module_runner(module_name))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m marlinkit", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    def command(name: str, handler, help_text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text)
        sub.add_argument("--json", action="store_true", help="print one JSON object as the last line")
        sub.set_defaults(handler=handler)
        return sub

    command("info", _cmd_info, "versions, device, data folders and LLM backends found")
    presets_cmd = command("presets", _cmd_presets, "list the run presets (or --check NAME)")
    presets_cmd.add_argument("--check", metavar="NAME", help="exit non-zero unless NAME is a preset")

    _add_module_commands(commands, COMMANDS)
    bench = commands.add_parser("bench", help="speed benchmarks that print numbers")
    _add_module_commands(bench.add_subparsers(dest="target", required=True), BENCHMARKS)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        result = args.handler(args)
    except (ValueError, FileNotFoundError) as error:
        if args.json:
            print(json.dumps({"error": str(error)}))
        else:
            print(f"error: {error}", file=sys.stderr)
        return 2
    _print_result(result, args.json)
    return int(result.get("exit_code", 0)) if isinstance(result, dict) else 0


if __name__ == "__main__":
    sys.exit(main())
