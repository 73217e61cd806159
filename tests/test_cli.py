"""The command line: one clear message per error, exit codes apart from 'rejected', help on every option."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from marlinkit import __main__ as cli
from marlinkit import paths

REWARD_EXAMPLE = paths.PACKAGE_DIR / "maestro" / "sandbox" / "reward_example.py"


def _run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    import os

    return subprocess.run([sys.executable, "-m", "marlinkit", *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})}, cwd=paths.REPO_ROOT)


@pytest.mark.parametrize("option, value", [("--samples", "2000000000"), ("--wall-seconds", "inf"),
                                           ("--cpu-seconds", "100000000000000000000"), ("--memory-mb", "0")])
def test_check_reward_limits_out_of_range_are_bad_arguments_not_rejections(option, value, capsys):
    code = cli.main(["check-reward", str(REWARD_EXAMPLE), option, value])
    err = capsys.readouterr().err
    assert code == cli.EXIT_BAD_INPUT != 1, "rc 1 means 'rejected'"
    assert option in err and "Traceback" not in err


def test_check_reward_still_accepts_the_example(capsys):
    assert cli.main(["check-reward", str(REWARD_EXAMPLE), "--json"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["accepted"] is True


def test_llm_failure_is_one_line_with_its_own_exit_code_and_debug_adds_the_traceback():
    args = ["bench", "negotiation", "--llm", "transformers:/nonexistent/model", "--moves", "1"]
    plain = _run(*args)
    assert plain.returncode == cli.EXIT_FAILED
    assert "does not exist" in plain.stderr and "Traceback" not in plain.stderr and "--debug" in plain.stderr
    debug = _run(*args, "--debug")
    assert debug.returncode == cli.EXIT_FAILED and "Traceback" in debug.stderr


def test_info_reports_a_nonsense_llm_setting_as_unavailable():
    result = _run("info", "--json", env={"MARLINKIT_LLM": "nonsense"})
    assert result.returncode == 0
    info = json.loads(result.stdout.splitlines()[-1])
    assert info["llm_backends"]["configured"]["available"] is False
    assert "unknown LLM setting" in info["llm_backends"]["configured"]["detail"]
    assert info["llm_threads"]["threads"] >= 1


def _subparsers(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield name, sub
                yield from ((f"{name} {n}", s) for n, s in _subparsers(sub))


def test_every_command_has_a_description_and_every_option_has_help():
    for name, sub in _subparsers(cli.build_parser()):
        assert sub.description, f"{name}: no description"
        for action in sub._actions:
            if action.option_strings and action.dest != "help":
                assert action.help, f"{name} {action.option_strings}: no help"


def test_cli_info_prints_one_json_object_last():
    done = _run("info", "--json")
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout.strip().splitlines()[-1])
    assert info["versions"]["torch"].startswith("2.13.0")
    assert info["device"]["torch_device"] in ("cpu", "cuda")
    assert set(info["llm_backends"]) >= {"scripted", "transformers", "smollm2", "openai"}
    assert "sumo" in info["traffic_engines"]
    from marlinkit.envs.traffic.cityflow_engine import compiled_reads

    expected = ("c++" if compiled_reads() is not None else "python") if info["traffic_engines"]["cityflow"] else None
    assert info["cityflow_reads"] == expected


def test_cli_rejects_an_unknown_preset_with_a_clear_error():
    done = _run("presets", "--check", "fast", "--json")
    assert done.returncode == 2
    assert "PRESET = 'fast': unknown preset" in json.loads(done.stdout.strip().splitlines()[-1])["error"]
