"""Child side of the reward sandbox: runs one LLM-written reward function, nothing else.

Started by ``marlinkit.llm.sandbox`` as ``python -I -S -c <this file's text> CPU MEM RECURSION``
(isolated mode, no site-packages, no file read of its own). Standard library only. Before it reads
any untrusted byte it sets its resource limits, imports everything it will ever need, and (when
started as root) drops to the ``nobody`` user. The reward code then runs with a handful of
whitelisted builtins and a ``math`` namespace of pure functions; ``open``, ``__import__``, ``exec``,
``getattr`` and friends simply do not exist in its namespace.

Protocol on stdin/stdout: frames of a 4-byte big-endian length and a payload. First a JSON frame
``{"code", "function", "fields", "builtins", "math"}`` (the last two: allowed names, defined once
in ``sandbox.py``) -> ``{"ok": true}`` or ``{"ok": false, "error"}``. Then per batch
one binary frame of float64: n rows of the fields, then n difficulties -> ``{"ok": true}`` and a
binary frame of n float64 values, or an error frame. (Binary because JSON float formatting cost
more than the reward code itself.) The CPU budget is re-armed before every batch, so a long-lived
worker never accumulates a CPU debt.
"""

import array
import builtins
import json
import math
import os
import resource
import struct
import sys
import types

MAX_ERROR_CHARS = 300
NOBODY = 65534


def _cap(limit, value):
    hard = resource.getrlimit(limit)[1]
    return value if hard == resource.RLIM_INFINITY else min(value, hard)


def _limit(cpu_seconds, memory_bytes):
    memory_bytes = _cap(resource.RLIMIT_AS, memory_bytes)
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    _rearm_cpu(cpu_seconds)
    for limit in (resource.RLIMIT_FSIZE, resource.RLIMIT_CORE, resource.RLIMIT_NPROC):
        resource.setrlimit(limit, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (3, 3))  # stdin/stdout/stderr only
    os.chdir("/")
    if os.geteuid() == 0:  # no root powers left for the untrusted code, even if it escaped
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)


def _rearm_cpu(cpu_seconds):
    """Allow about ``cpu_seconds`` more CPU (whole seconds, as the kernel counts); the hard limit is
    left as inherited so the soft one can be raised again for the next batch."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    soft = _cap(resource.RLIMIT_CPU, round(usage.ru_utime + usage.ru_stime + cpu_seconds))
    resource.setrlimit(resource.RLIMIT_CPU, (soft, resource.getrlimit(resource.RLIMIT_CPU)[1]))


def _read(stream):
    header = stream.read(4)
    if len(header) < 4:
        return None
    (size,) = struct.unpack(">I", header)
    return stream.read(size)


def _write(stream, payload):
    stream.write(struct.pack(">I", len(payload)) + payload)
    stream.flush()


def _write_json(stream, message):
    _write(stream, json.dumps(message).encode())


def _error(error):
    text = str(error)[:MAX_ERROR_CHARS]
    return {"ok": False, "error": f"{type(error).__name__}: {text}" if text else type(error).__name__}


def _evaluate(function, fields, payload):
    data = array.array("d")
    data.frombytes(payload)
    k = len(fields)
    n = len(data) // (k + 1)
    values = array.array("d")
    for i in range(n):
        value = function(dict(zip(fields, data[i * k:(i + 1) * k])), data[n * k + i])
        if type(value) not in (float, int, bool):
            raise TypeError(f"returned {type(value).__name__}, expected a number")
        values.append(value)  # OverflowError for a huge int is reported as an error
    return values


def main():
    cpu_seconds, memory_bytes, recursion_limit = (int(v) for v in sys.argv[1:4])
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    _limit(cpu_seconds, memory_bytes)
    sys.setrecursionlimit(recursion_limit)
    init = json.loads(_read(stdin))
    fields = init["fields"]
    namespace = {
        "__builtins__": {name: getattr(builtins, name) for name in init["builtins"]},
        "math": types.SimpleNamespace(**{name: getattr(math, name) for name in init["math"]}),
    }
    try:
        exec(compile(init["code"], "<reward>", "exec"), namespace)
        function = namespace[init["function"]]
    except BaseException as error:  # the code is untrusted: every failure is a verdict
        _write_json(stdout, _error(error))
        return
    _write_json(stdout, {"ok": True})
    while (payload := _read(stdin)) is not None:
        _rearm_cpu(cpu_seconds)
        try:
            values = _evaluate(function, fields, payload)
        except BaseException as error:
            _write_json(stdout, _error(error))
            continue
        _write_json(stdout, {"ok": True})
        _write(stdout, values.tobytes())


if __name__ == "__main__":
    main()
