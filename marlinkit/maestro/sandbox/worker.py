"""Child side of the reward sandbox: runs one LLM-written reward function, nothing else.

Started by ``marlinkit.maestro.sandbox`` as ``python -I -S -c <this file's text> CPU MEM RECURSION PARENT``
(isolated mode, no site-packages, no file read of its own). Standard library only. Before it reads
any untrusted byte it imports everything it will ever need and locks itself in, in this order:

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

The reward code then runs with a handful of whitelisted builtins (the sequence-walking ones wrapped
to charge the meter) and a read-only ``math`` namespace; ``open``, ``__import__``, ``exec``,
``getattr`` and friends do not exist in its namespace. The meter counts deterministic *ticks*
(see ``marlinkit.maestro.sandbox.static_check``): a call above ``call_ticks`` or a process above
``total_ticks`` ends in ``TickBudgetExceeded``, which the code cannot catch (no ``try``).

Protocol on stdin/stdout: frames of a 4-byte big-endian length and a payload. First a JSON frame
``{"code", "function", "fields", "builtins", "math", "call_ticks", "total_ticks"}`` -> ``{"ok":
true, "isolation": {...}}`` or ``{"ok": false, "error"}``. Then per batch one binary frame of
float64: n rows of the fields, then n difficulties -> ``{"ok": true}`` and a binary frame of 2n
float64 (n values, then the ticks each call used), or an error frame.
"""

import array
import builtins
import ctypes
import json
import math
import operator
import os
import resource
import signal
import struct
import sys
import types

MAX_ERROR_CHARS = 300
UID_BASE = 0x60000000  # + pid: a uid no account uses, one per live worker
MAX_INT_BITS = 4096  # as marlinkit.maestro.sandbox.static_check.MAX_INT_BITS
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
LANDLOCK_CREATE_RULESET, LANDLOCK_RESTRICT_SELF = 444, 446  # the same on x86-64 and arm64
SEQUENCES = (list, tuple, str)
KEYS = type({}.keys())
VIEWS = (type({}.values()), type({}.items()))
SIZED = (list, tuple, dict, str, range, KEYS) + VIEWS
INTEGERS = (int, bool)
NUMBERS = (int, bool, float)
SCALARS = (int, bool, float, type(None))  # (strings: weighed by their length)
HASH_MODULUS = 2**61 - 1  # integers hash modulo this (64-bit builds): larger keys can share a hash
ARITHMETIC = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
              "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "<<": operator.lshift}
COMPARISONS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
               ">=": operator.ge, "is": operator.is_, "is not": operator.is_not}

_libc = ctypes.CDLL(None, use_errno=True)


class TickBudgetExceeded(BaseException):
    """The deterministic cost budget ran out (a BaseException: nothing the reward writes catches it)."""


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


def _meter(call_ticks, total_ticks):
    """The tick counter and the ``_`` helpers the instrumented code calls (see static_check)."""
    used = [0, 0]  # this call, this process

    def charge(n=1):
        used[0] += n
        used[1] += n
        if used[0] > call_ticks:
            raise TickBudgetExceeded(f"a call used more than {call_ticks} ticks")
        if used[1] > total_ticks:
            raise TickBudgetExceeded(f"the budget of {total_ticks} ticks for this process is used up")

    def size(x):
        return len(x) if type(x) in SIZED else 0

    def words(n):
        return n.bit_length() // 64 + 1

    def big(value):
        if type(value) is int and value.bit_length() > MAX_INT_BITS:
            raise OverflowError(f"integer above {MAX_INT_BITS} bits")
        return value

    def flat(x):
        """Refuse a container holding containers (comparing or hashing it can cost far more than its
        length); return the extra weight of its strings (one tick per 64 characters)."""
        kind = type(x)
        if kind in (list, tuple, dict, KEYS):
            chars = 0
            for item in (x.values() if kind is dict else x):
                if type(item) is str:
                    chars += len(item)
                elif type(item) not in SCALARS:
                    raise TypeError("comparing, ordering or hashing a container that holds containers is not allowed")
            return chars // 64
        if kind in VIEWS:
            raise TypeError("comparing dict values or items views is not allowed")
        return 0

    def key(k):
        """A dict key or index: a number, a string, None or a flat tuple of them; integers below 2**61."""
        kind = type(k)
        if kind is int and not -HASH_MODULUS < k < HASH_MODULUS:
            raise TypeError("an integer used as a key must be below 2**61 in magnitude")
        if kind is tuple:
            charge(len(k) + flat(k))
            for item in k:
                if type(item) is int and not -HASH_MODULUS < item < HASH_MODULUS:
                    raise TypeError("an integer used as a key must be below 2**61 in magnitude")
        return k

    def each(iterable, weight=1):
        for item in iterable:
            charge(weight)
            yield item

    def arithmetic(symbol, a, b):
        if type(a) in INTEGERS and type(b) in INTEGERS:
            if symbol in ("*", "/", "//", "%"):
                charge(words(a) * words(b) // 16)  # schoolbook cost: 4,096 x 4,096 bits = 256 ticks
            elif symbol == "**" and b > 0:
                if a.bit_length() * b > MAX_INT_BITS:
                    raise OverflowError(f"integer above {MAX_INT_BITS} bits")
                charge(2 * (a.bit_length() * b // 64 + 1) ** 2 // 16)
            elif symbol == "<<" and b > 0 and a.bit_length() + b > MAX_INT_BITS:
                raise OverflowError(f"integer above {MAX_INT_BITS} bits")
        return big(ARITHMETIC[symbol](a, b))

    def op(symbol, a, b):
        if symbol == "+":
            if type(a) in SEQUENCES and type(b) in SEQUENCES:
                charge(1 + len(a) + len(b))
            return big(a + b)
        if symbol == "*":
            for seq, times in ((a, b), (b, a)):
                if type(seq) in SEQUENCES and type(times) in INTEGERS:
                    charge(1 + len(seq) * max(times, 0))
        if symbol == "%" and type(a) is str:
            raise TypeError("string formatting with % is not allowed")
        if symbol == "~":
            return big(~a)
        return arithmetic(symbol, a, b)

    def contains(item, container):
        kind = type(container)
        charge(1 + (size(container) if kind is not dict else 0))
        if kind in (dict, KEYS):
            key(item)
        elif kind is not str and type(item) in (list, tuple, dict, str):
            # the item is compared with each of the container's items
            per_item = len(item) // 64 if type(item) is str else len(item) + flat(item)
            charge(size(container) * per_item)
        return item in container

    def compare(symbol, a, b):
        charge(1 + size(a) + size(b))
        if symbol not in ("is", "is not"):
            charge(flat(a) + flat(b))
        return COMPARISONS[symbol](a, b)

    def chain(left, *rest):
        for i in range(0, len(rest), 2):
            right = rest[i + 1]()
            if not compare(rest[i], left, right):
                return False
            left = right
        return True

    def cut(value, lower, upper, step):
        charge(1 + size(value))
        return value[lower:upper:step]

    def walker(function):
        def walk(*args, **kwargs):
            charge(1 + sum(size(a) for a in args))
            return big(function(*args, **kwargs))
        return walk

    def builder(function):
        """list, tuple, sorted, dict: charged for what they walk and for what they build."""
        def build(*args, **kwargs):
            charge(1 + sum(size(a) for a in args))
            if function is dict and args and type(args[0]) is not dict:
                args = ([(key(k), v) for k, v in each(args[0])],)
            if function is sorted and args:
                args = (ordered_items(args[0], kwargs),)
            result = function(*args, **kwargs)
            charge(len(result))
            return result
        return build

    def ordered_items(items, kwargs):
        """The items min/max/sorted will order, each checked flat; a ``key`` function's results too."""
        items = list(items)
        by = kwargs.get("key")
        if by is None:
            charge(sum(flat(item) + size(item) for item in items if type(item) is not float and type(item) is not int))
        else:
            def checked(item):
                value = by(item)
                charge(flat(value) + size(value))
                return value
            kwargs["key"] = checked
        return items

    def extreme(function):
        def pick(*args, **kwargs):
            charge(1 + sum(size(a) for a in args))
            if len(args) == 1:
                args = (ordered_items(args[0], kwargs),)
            elif args:
                args = tuple(ordered_items(args, kwargs))
            return function(*args, **kwargs)
        return pick

    def total(*args, **kwargs):
        charge(1 + sum(size(a) for a in args))
        start = args[1] if len(args) > 1 else kwargs.get("start", 0)
        if type(start) not in NUMBERS:
            raise TypeError("sum() start must be a number (summing sequences costs more than its ticks)")
        return big(sum(*args, **kwargs))

    def counted_range(*args):
        r = range(*args)
        try:
            charge(1 + len(r))
        except OverflowError:
            raise TickBudgetExceeded(f"range of more than {sys.maxsize} items") from None
        return r

    def power(base, exponent, modulus=None):
        if modulus is None:
            return op("**", base, exponent)
        if type(base) in INTEGERS and type(exponent) in INTEGERS and type(modulus) in INTEGERS:
            # one squaring and one product per exponent bit, each reduced modulo the modulus
            charge(1 + exponent.bit_length() * 3 * words(modulus) ** 2 // 16 + words(base) * words(modulus) // 16)
        return big(pow(base, exponent, modulus))

    def to_int(*args, **kwargs):
        if args and type(args[0]) is str:
            charge(1 + len(args[0]) ** 2 // 4096)  # decimal to binary is quadratic in the digits
        return big(int(*args, **kwargs))

    def to_float(*args):
        if args and type(args[0]) is str:
            charge(1 + len(args[0]) // 16)
        return float(*args)

    def rounded(number, ndigits=None):
        if type(number) in INTEGERS and type(ndigits) in INTEGERS and ndigits < 0:
            bits = int(-ndigits * 3.33) + 1  # of 10 ** -ndigits, which round computes
            if bits > MAX_INT_BITS:
                raise OverflowError(f"integer above {MAX_INT_BITS} bits")
            charge(2 * (bits // 64 + 1) * words(number) // 16)
        return big(round(number, ndigits))

    helpers = {"_t": charge, "_each": each, "_op": op, "_in": contains, "_cmp": compare, "_chain": chain,
               "_slice": cut, "_k": key}
    replaced = {name: walker(getattr(builtins, name)) for name in ("all", "any", "enumerate", "zip")}
    replaced.update({name: builder(getattr(builtins, name)) for name in ("dict", "list", "sorted", "tuple")})
    replaced.update(max=extreme(max), min=extreme(min), sum=total, range=counted_range, pow=power, int=to_int,
                    float=to_float, round=rounded, fsum=walker(math.fsum))
    return used, helpers, replaced


class ReadOnlyNamespace(types.SimpleNamespace):
    """``math`` as the reward sees it: attributes to read, none to set (no state hidden in it)."""

    def __setattr__(self, name, value):
        raise AttributeError("math is read-only")

    def __delattr__(self, name):
        raise AttributeError("math is read-only")


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


def _evaluate(function, fields, payload, used):
    data = array.array("d")
    data.frombytes(payload)
    k = len(fields)
    n = len(data) // (k + 1)
    values, ticks = array.array("d"), array.array("d")
    for i in range(n):
        used[0] = 0
        value = function(dict(zip(fields, data[i * k:(i + 1) * k])), data[n * k + i])
        if type(value) not in (float, int, bool):
            raise TypeError(f"returned {type(value).__name__}, expected a number")
        values.append(value)  # OverflowError for a huge int is reported as an error
        ticks.append(used[0])
    return values + ticks


def main():
    cpu_seconds, memory_bytes, recursion_limit, parent = (int(v) for v in sys.argv[1:5])
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    isolation = _lock_in(cpu_seconds, memory_bytes, parent)
    sys.setrecursionlimit(recursion_limit)
    init = json.loads(_read(stdin))
    fields = init["fields"]
    used, helpers, replaced = _meter(init["call_ticks"], init["total_ticks"])
    namespace = {
        "__builtins__": {name: replaced.get(name, getattr(builtins, name)) for name in init["builtins"]},
        "math": ReadOnlyNamespace(**{name: replaced.get(name, getattr(math, name)) for name in init["math"]}),
        **helpers,
    }
    try:
        exec(compile(init["code"], "<reward>", "exec"), namespace)
        function = namespace[init["function"]]
    except BaseException as error:  # the code is untrusted: every failure is a verdict
        _write_json(stdout, _error(error))
        return
    _write_json(stdout, {"ok": True, "isolation": isolation})
    while (payload := _read(stdin)) is not None:
        try:
            values = _evaluate(function, fields, payload, used)
        except BaseException as error:
            _write_json(stdout, _error(error))
            continue
        _write_json(stdout, {"ok": True})
        _write(stdout, values.tobytes())


if __name__ == "__main__":
    main()
