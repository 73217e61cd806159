"""Time the workshop notebooks as a participant meets them: Run All at a preset on fresh results, then each exercise
that a parameter expresses, on the results of that first run.

    .venv/bin/python tools/workshop_timings.py [--preset workshop] [--settle 60] [--out timings.md]

Each case is one ``papermill`` run in a child process. CPU is the user + system time of papermill and its kernel
(what a 2-core laptop with nothing else running needs); wall is the elapsed time; the 1-minute load average is read
before and after each case, so a time is never quoted without the load it was measured at. ``--settle`` waits that
many seconds before the first case so the load average reflects the machine as it is, not as it was.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKSHOP = ROOT / "notebooks" / "workshop"
#: (label, notebook, papermill parameters beyond PRESET, fresh results?) in a participant's order.
CASES = (
    ("Run All", "01_corridor_env", {}, True),
    ("Run All", "02_mappo_from_scratch", {}, True),
    ("Run All", "03_llm_negotiation", {}, True),
    ("Run All", "04_marlin_in_15_minutes", {}, True),
    ('exercise LLM = "scripted"', "04_marlin_in_15_minutes", {"LLM": "scripted"}, False),
    ("exercise PLAN_BUDGET = 8", "04_marlin_in_15_minutes", {"PLAN_BUDGET": 8}, False),
)


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_case(notebook: str, preset: str, parameters: dict, results: Path, scratch: Path) -> tuple[float, float]:
    """(wall s, CPU s) of one papermill run of ``notebook`` with ``parameters``, results under ``results``."""
    command = [sys.executable, "-m", "papermill", "--no-progress-bar", "-p", "PRESET", preset]
    for name, value in parameters.items():
        command += ["-p", name, str(value)]
    command += [str(WORKSHOP / f"{notebook}.ipynb"), str(scratch / f"{notebook}.out.ipynb")]
    env = {**os.environ, "MARLINKIT_RESULTS": str(results)}
    cpu0, wall0 = children_cpu_s(), time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode:
        sys.exit(f"{notebook} with {parameters or 'its defaults'} failed:\n" + "\n".join(done.stderr.splitlines()[-8:]))
    return time.perf_counter() - wall0, children_cpu_s() - cpu0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="workshop")
    parser.add_argument("--settle", type=float, default=60.0, help="seconds to wait before the first case")
    parser.add_argument("--out", type=Path, help="also write the table to this Markdown file")
    args = parser.parse_args()
    time.sleep(args.settle)
    rows = ["| notebook | case | wall | CPU | load before → after |", "|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as scratch:
        results = {}
        for label, notebook, parameters, fresh in CASES:
            if fresh or notebook not in results:
                results[notebook] = Path(scratch) / f"results-{notebook}"
            before = os.getloadavg()[0]
            wall, cpu = time_case(notebook, args.preset, parameters, results[notebook], Path(scratch))
            after = os.getloadavg()[0]
            rows.append(f"| {notebook} | {label} | {wall:.0f} s | {cpu:.0f} s | {before:.1f} → {after:.1f} |")
            print(rows[-1], flush=True)
    table = "\n".join(rows)
    print(f"\n{table}\n\nnproc {os.cpu_count()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    if args.out:
        args.out.write_text(table + "\n")


if __name__ == "__main__":
    main()
