"""Child side of the reward sandbox: evaluates one checked reward program, nothing else.

Started by ``marlinkit.maestro.sandbox`` as ``python -I -c <this file's text> CPU MEM PARENT LANGUAGE``
(isolated mode: no environment variables, no user site, no current folder on the path). Before it reads any
untrusted byte it imports everything it will ever need (NumPy, and the reward language from the file
``LANGUAGE``) and locks itself in, in this order:

1. resource limits, hard = soft so they cannot be raised again: RLIMIT_CPU (the process's whole
   life: one validation or one training episode), RLIMIT_AS, no file size, no core, no new process;
2. Landlock, when the kernel has it (ABI >= 1): no file may be opened, read, written or created,
   anywhere; ABI >= 4 also refuses TCP bind/connect; ABI >= 6 scopes signals and abstract UNIX
   sockets to the process itself, so it cannot signal its siblings or its parent;
3. when started as root: its own uid and gid, ``UID_BASE + pid`` (unique among live processes, so
   no two workers share one and neither can signal the other), no supplementary groups;
4. ``PR_SET_PDEATHSIG``: SIGKILL when the parent dies (set after the uid change, which clears it),
   and an exit if the parent is already gone;
5. RLIMIT_NOFILE = 3 (hard = soft): stdin, stdout, stderr and nothing else.

The reward is never executed as Python: the language module checks it and compiles it into NumPy operations
(``marlinkit.maestro.sandbox.language``), the first layer; this process is the second.

Protocol on stdin/stdout: frames of a 4-byte big-endian length and a payload. First a JSON frame
``{"source", "fields", "max_source_chars"}`` -> ``{"ok": true, "isolation": {...}, "size": nodes}`` or
``{"ok": false, "error"}``. Then per batch one binary frame of float64: n rows of the fields, then n
difficulties -> ``{"ok": true}`` and a binary frame of n float64, or ``{"ok": false, "error", "row"}`` (``row``:
the first row that failed, when one did).
"""

import ctypes
import importlib.util
import json
import os
import resource
import signal
import struct
import sys

import numpy as np

MAX_ERROR_CHARS = 300
UID_BASE = 0x60000000  # + pid: a uid no account uses, one per live worker
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
LANDLOCK_CREATE_RULESET, LANDLOCK_RESTRICT_SELF = 444, 446  # the same on x86-64 and arm64

_libc = ctypes.CDLL(None, use_errno=True)


def _landlock():
    """Deny every file-system access (and TCP, signals outside, where the ABI has them); the ABI or 0."""
    abi = _libc.syscall(LANDLOCK_CREATE_RULESET, None, 0, 1)  # LANDLOCK_CREATE_RULESET_VERSION
    if abi < 1:
        return 0
    fs = (1 << 13) - 1 | (1 << 13 if abi >= 2 else 0) | (1 << 14 if abi >= 3 else 0) | (1 << 15 if abi >= 5 else 0)
    fields = [fs] + ([3] if abi >= 4 else []) + ([3] if abi >= 6 else [])  # net: bind+connect; scope: unix+signal
    attr = (ctypes.c_uint64 * len(fields))(*fields)
    fd = _libc.syscall(LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.sizeof(attr), 0)
    if fd < 0:
        return 0
    try:
        if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or _libc.syscall(LANDLOCK_RESTRICT_SELF, fd, 0) != 0:
            return 0
    finally:
        os.close(fd)
    return abi


def _lock_in(cpu_seconds, memory_bytes, parent):
    for limit, value in ((resource.RLIMIT_CPU, cpu_seconds), (resource.RLIMIT_AS, memory_bytes),
                         (resource.RLIMIT_FSIZE, 0), (resource.RLIMIT_CORE, 0)):
        hard = resource.getrlimit(limit)[1]
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(limit, (value, value))
    os.chdir("/")
    landlock = _landlock()
    own_uid = os.geteuid() == 0
    if own_uid:  # no root powers left for the untrusted code, and no uid shared with a sibling
        uid = UID_BASE + os.getpid()
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the line above: nobody to serve
        os._exit(1)
    resource.setrlimit(resource.RLIMIT_NOFILE, (3, 3))  # stdin/stdout/stderr only
    # what the machine gave, not the uid itself (it follows the pid: logs must repeat byte for byte)
    return {"own_uid": own_uid, "landlock_abi": landlock, "signal_scope": landlock >= 6, "pdeathsig": True}


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


def _language(path):
    spec = importlib.util.spec_from_file_location("reward_language", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["reward_language"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def _evaluate(program, fields, payload):
    data = np.frombuffer(payload, dtype=np.float64)
    k = len(fields)
    n = len(data) // (k + 1)
    rows = data[:n * k].reshape(n, k)
    return program({name: rows[:, i] for i, name in enumerate(fields)}, data[n * k:n * (k + 1)])


def main():
    cpu_seconds, memory_bytes, parent = (int(v) for v in sys.argv[1:4])
    language = _language(sys.argv[4])
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    isolation = _lock_in(cpu_seconds, memory_bytes, parent)
    init = json.loads(_read(stdin))
    fields = tuple(init["fields"])
    try:
        program = language.load(init["source"], fields, init["max_source_chars"])
    except BaseException as error:  # the code is untrusted: every failure is a verdict
        _write_json(stdout, _error(error))
        return
    _write_json(stdout, {"ok": True, "isolation": isolation, "size": program.size})
    while (payload := _read(stdin)) is not None:
        try:
            values = _evaluate(program, fields, payload)
        except BaseException as error:
            _write_json(stdout, {**_error(error), "row": getattr(error, "row", None)})
            continue
        _write_json(stdout, {"ok": True})
        _write(stdout, values.astype(np.float64).tobytes())


if __name__ == "__main__":
    main()
