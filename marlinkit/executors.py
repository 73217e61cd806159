"""The executor seam: map one top-level function over job specs, on local processes or on Ray.

``run_jobs(fn, jobs)`` calls ``fn(*job)`` for every job and returns the results in job order,
whichever executor ran them. Runners hand their whole grid to it and stay unaware of where work
runs:

* ``"local"`` (default): a ``ProcessPoolExecutor`` of spawned processes; with ``workers=1`` the
  jobs run one after another in this process (no start-up cost, unpicklable arguments allowed).
* ``"ray"``: one Ray task per job (``num_cpus=1``), on the cluster at ``address`` (e.g.
  ``"auto"`` or ``"ray://head:10001"``) or on a local Ray instance started with ``workers`` CPUs.
  An already initialised Ray is reused; one started here is shut down at the end. Ray is the
  optional ``ray`` extra (``pip install -e '.[ray]'``).

Local worker processes never outlive the run: an exception here (Ctrl-C included) or SIGTERM stops them at once
instead of waiting for their jobs, and each worker exits by itself when this process dies (even by SIGKILL), so a
stopped run leaves no orphan computing on (a run resumes from its files and checkpoints).

Results travel back to the caller, so a runner that writes its files from ``on_result`` (called
in this process as each job finishes) needs no shared filesystem with a cluster's workers, and
keeps every finished job when a later one fails. Worker nodes of a remote cluster need marlinkit
installed (or ``runtime_env={"working_dir": ...}`` in ``ray.init``).
"""

from __future__ import annotations

import ast
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from typing import Any, Literal, get_args

#: Where jobs run: local processes, or Ray (the optional extra; the same numbers).
Executor = Literal["local", "ray"]
EXECUTORS = get_args(Executor)

OnResult = Callable[[int, Any], None]


def check_executor(executor: str, workers: int) -> None:
    """Fail before any compute on an executor setting that cannot run."""
    if executor not in EXECUTORS:
        raise ValueError(f"unknown executor {executor!r}; choose from {list(EXECUTORS)}")
    if int(workers) < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    if executor == "ray":
        _import_ray()


def _import_ray():
    try:
        import ray
    except ImportError as error:
        raise ImportError("executor='ray' needs Ray, the optional 'ray' extra: pip install -e '.[ray]' "
                          "(or ray==2.60.0); use executor='local' without it") from error
    return ray


def run_jobs(fn: Callable[..., Any], jobs: Sequence[tuple], executor: str = "local", workers: int = 1,
             address: str | None = None, progress: bool = True, desc: str | None = None,
             fresh_process: bool = False, on_result: OnResult | None = None) -> list[Any]:
    """``[fn(*job) for job in jobs]``, run by ``executor``; results in job order.

    ``fresh_process`` gives every job a process of its own (for libraries that hold one
    simulation per process, e.g. libsumo). ``on_result(index, result)`` runs here as each job
    finishes, in completion order.
    """
    check_executor(executor, workers)
    jobs = [tuple(job) for job in jobs]
    if not jobs:
        return []
    from marlinkit.progress import Progress

    bar = Progress(len(jobs), desc or getattr(fn, "__name__", "jobs"), enabled=progress, min_interval=0.0)
    results: list[Any] = [None] * len(jobs)

    def done(index: int, result: Any) -> None:
        results[index] = result
        if on_result is not None:
            on_result(index, result)
        bar.update()

    try:
        if executor == "ray":
            _run_ray(fn, jobs, workers, address, fresh_process, done)
        elif workers == 1 and not fresh_process:
            for index, job in enumerate(jobs):
                done(index, fn(*job))
        else:
            _check_spawn_safe()
            _run_local(fn, jobs, workers, fresh_process, done)
    finally:
        bar.close()
    return results


def _run_local(fn, jobs, workers, fresh_process, done) -> None:
    """The jobs on a pool of spawned processes; on any exception or SIGTERM the workers are killed, not awaited."""
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(max_workers=min(workers, max(len(jobs), 1)), mp_context=context,
                               max_tasks_per_child=1 if fresh_process else None,
                               initializer=_exit_with_parent, initargs=(os.getpid(),))
    with _sigterm_raises():
        try:
            futures = {pool.submit(fn, *job): index for index, job in enumerate(jobs)}
            for future in as_completed(futures):
                done(futures[future], future.result())
        except BaseException:
            workers_now = list((pool._processes or {}).values())  # noqa: SLF001 (no public handle on the workers)
            pool.shutdown(wait=False, cancel_futures=True)
            for process in workers_now:
                process.kill()
            raise
        pool.shutdown(wait=True)


@contextmanager
def _sigterm_raises() -> Iterator[None]:
    """SIGTERM raises SystemExit here (so the pool's clean-up runs); only in the main thread, where handlers live."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _exit_with_parent(parent: int) -> None:
    """Worker initializer: a daemon thread ends this worker once the process that started it is gone."""
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="exit-with-parent").start()


def unguarded_script_line() -> int | None:
    """The line of the running script that called us from top-level code outside ``if __name__ == "__main__":``.

    Spawned worker processes import the script again; top-level code that starts workers then runs once more in
    every worker and Python stops with its "bootstrapping phase" RuntimeError. None when the caller is guarded,
    a notebook, an interactive session or anything else that is not a script file.
    """
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    frame = sys._getframe(1)
    while frame is not None and not (frame.f_code.co_name == "<module>"
                                     and frame.f_globals.get("__name__") == "__main__"):
        frame = frame.f_back
    if frame is None or not path or frame.f_code.co_filename != path:
        return None
    try:
        tree = ast.parse(open(path, encoding="utf-8").read())
    except (OSError, SyntaxError, ValueError):
        return None
    line = frame.f_lineno

    def is_main_guard(node) -> bool:
        return (isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and
                {ast.unparse(node.test.left), *(ast.unparse(c) for c in node.test.comparators)} ==
                {"__name__", "'__main__'"})

    guarded = any(is_main_guard(node) and node.lineno <= line <= (node.end_lineno or line) for node in ast.walk(tree))
    return None if guarded else line


def _check_spawn_safe() -> None:
    line = unguarded_script_line()
    if line is not None:
        script = sys.modules["__main__"].__file__
        raise RuntimeError(
            f"{script}, line {line}, starts worker processes from top-level code. Worker processes import your script "
            "again, so that code would run once more in each of them. Put it under a main guard:\n\n"
            "    if __name__ == \"__main__\":\n        <your calls>\n\n"
            "or run the grid in this process with workers=1 (the preset's 'workers' setting), or in a notebook.")


@contextmanager
def session(executor: str, workers: int = 1, address: str | None = None) -> Iterator[None]:
    """Keep one Ray connection for several ``run_jobs`` calls (each would otherwise start and stop
    its own: tens of seconds for a local instance). A no-op for ``"local"`` or an initialised Ray."""
    check_executor(executor, workers)
    ray = _import_ray() if executor == "ray" else None
    started_here = ray is not None and not ray.is_initialized()
    if started_here:  # a cluster brings its own CPUs; a local instance gets ``workers`` of them
        ray.init(address=address, log_to_driver=False) if address else ray.init(num_cpus=workers, log_to_driver=False)
    try:
        yield
    finally:
        if started_here:
            ray.shutdown()


def _run_ray(fn, jobs, workers, address, fresh_process, done) -> None:
    ray = _import_ray()
    with session("ray", workers, address):
        task = ray.remote(num_cpus=1, max_calls=1 if fresh_process else 0)(fn)
        pending = {task.remote(*job): index for index, job in enumerate(jobs)}
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                index = pending.pop(ready[0])
                done(index, ray.get(ready[0]))
        except BaseException:
            for ref in pending:  # a failed job stops the grid, as in the local pool
                ray.cancel(ref)
            raise
