"""Pinned numerics: the same code and seed give the same bytes on any x86-64 machine with AVX2.

Floating-point results depend on which kernels the numerical libraries pick, and they pick by
processor. Measured here: a 30-episode MAPPO training hashes differently under
``MKL_ENABLE_INSTRUCTIONS=AVX2`` than under the AVX-512 default, and differently again under
``ATEN_CPU_CAPABILITY=default``; on an AMD processor MKL's default branch differs from both.
With one seed and chaotic training that moves table cells by 0.06 and flips p-values.

``import marlinkit`` pins every library that shapes results, before torch or NumPy load:

=====================  ===========================  ==========================================
library                setting                      why
=====================  ===========================  ==========================================
MKL (torch's BLAS)     ``MKL_CBWR=COMPATIBLE``      conditional numerical reproducibility; the
                                                    only branch MKL documents as identical on
                                                    Intel *and* non-Intel processors (``AVX2``
                                                    falls back to ``AUTO`` on AMD: measured)
ATen (torch kernels)   ``ATEN_CPU_CAPABILITY=avx2`` the vectorised kernels (tanh, sigmoid, exp)
oneDNN                 ``ONEDNN_MAX_CPU_ISA=AVX2``  used by torch for some ops
NumPy                  ``NPY_DISABLE_CPU_FEATURES`` no AVX-512 dispatch (x86-simd-sort, exp/log)
OpenBLAS (NumPy/SciPy) ``OPENBLAS_CORETYPE=Haswell`` the AVX2 kernels on every processor
threads                ``OMP_NUM_THREADS=1``,       one intra-op thread: MKL's reductions are
                       ``MKL_NUM_THREADS=1``        reproducible only at a fixed thread count
=====================  ===========================  ==========================================

No variable pins MKL's vector maths (torch's ``log`` and ``sqrt`` of CPU tensors): it picks its code by the
processor's vendor whatever ``MKL_CBWR`` says, so code whose bytes must match across vendors avoids those operations
(:mod:`marlinkit.algos.portable_math`, which MADDPG uses). NumPy's OpenBLAS reads ``OPENBLAS_CORETYPE`` when it
loads: :func:`state` asks the library which core it runs (``openblas_core``), and a core other than the pinned one
makes ``pinned`` false.

If torch was imported before marlinkit, the MKL branch is still set through MKL's own
``mkl_cbwr_set`` when no MKL routine has run yet; :func:`state` reports what actually holds, and
every result sidecar records it. ``MARLINKIT_NUMERICS=native`` switches the pinning off (faster on
some processors, but results are then only reproducible on the same kind of machine): the sidecars
say so. The measured speed cost of pinning is in the README.
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys
import warnings
from pathlib import Path
from typing import Any

#: The environment that pins the numerical libraries (set before they load).
PINNED_ENVIRONMENT = {
    "MKL_CBWR": "COMPATIBLE",
    "ATEN_CPU_CAPABILITY": "avx2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR",
    "OPENBLAS_CORETYPE": "Haswell",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}
#: MKL's branch constants (mkl_cbwr.h): what ``mkl_cbwr_get(MKL_CBWR_BRANCH)`` returns.
_MKL_BRANCHES = {1: "OFF", 2: "AUTO", 3: "COMPATIBLE", 4: "SSE2", 6: "SSE4_2", 7: "AVX", 8: "AVX2", 9: "AVX512_MIC",
                 10: "AVX512"}
_MKL_CBWR_COMPATIBLE = 3
_MKL_CBWR_BRANCH = 1

MODE = os.environ.get("MARLINKIT_NUMERICS", "pinned")
if MODE not in ("pinned", "native"):
    raise ValueError(f"MARLINKIT_NUMERICS must be 'pinned' or 'native', got {MODE!r}")


def _cpu_flags() -> set[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _cpuinfo(field: str) -> str | None:
    """The first ``field`` line of ``/proc/cpuinfo``, or None."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(field):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def cpu_model() -> str:
    """This processor's model name (``/proc/cpuinfo``), as every result sidecar records it."""
    return _cpuinfo("model name") or platform.processor() or platform.machine()


def cpu_vendor() -> str:
    """This processor's vendor string (``GenuineIntel``, ``AuthenticAMD``; ``/proc/cpuinfo``), or "unknown"."""
    return _cpuinfo("vendor_id") or "unknown"


def openblas_core() -> str | None:
    """The kernel family NumPy's OpenBLAS actually runs, as the library itself reports it (``Haswell`` when
    pinned), or None where NumPy carries no OpenBLAS of its own."""
    import numpy

    libs = Path(numpy.__file__).parent.parent / "numpy.libs"
    for lib in sorted(libs.glob("libscipy_openblas*.so*")):
        try:
            handle = ctypes.CDLL(str(lib))
        except OSError:
            continue
        for name in ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename", "openblas_get_corename"):
            if hasattr(handle, name):
                function = getattr(handle, name)
                function.restype = ctypes.c_char_p
                return function().decode()
    return None


def _pin_environment() -> None:
    """Set the pinned variables, overriding any inherited value (a pin that yields is no pin)."""
    if MODE != "pinned" or platform.machine() not in ("x86_64", "AMD64"):
        return
    if "avx2" not in _cpu_flags():
        warnings.warn("this processor has no AVX2: marlinkit's results will not match other machines' bytes",
                      RuntimeWarning, stacklevel=3)
        return
    os.environ.update(PINNED_ENVIRONMENT)
    if "torch" in sys.modules:  # too late for the variables torch read at load; set what can still be set
        _mkl_call("mkl_serv_cbwr_set", _MKL_CBWR_COMPATIBLE)
        sys.modules["torch"].set_num_threads(1)


def _torch_library() -> ctypes.CDLL | None:
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    lib = Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"
    try:
        return ctypes.CDLL(str(lib)) if lib.exists() else None
    except OSError:
        return None


def _mkl_call(name: str, *args: int) -> int | None:
    lib = _torch_library()
    if lib is None or not hasattr(lib, name):
        return None
    return getattr(lib, name)(*args)


def mkl_branch() -> str | None:
    """The code branch MKL runs (``COMPATIBLE`` when pinned), or None without torch's MKL."""
    code = _mkl_call("mkl_serv_cbwr_get", _MKL_CBWR_BRANCH)
    return None if code is None else _MKL_BRANCHES.get(code, str(code))


def state() -> dict[str, Any]:
    """What holds now: recorded in every result sidecar. ``pinned`` is True only if every pin took."""
    import torch  # noqa: PLC0415 (after the pins)

    capability = torch.backends.cpu.get_cpu_capability()
    branch = mkl_branch()
    threads = torch.get_num_threads()
    pinned = MODE == "pinned" and branch in ("COMPATIBLE", None) and capability == "AVX2" and threads == 1
    core = openblas_core()
    if MODE == "pinned" and core is not None and core.lower() != PINNED_ENVIRONMENT["OPENBLAS_CORETYPE"].lower():
        pinned = False
    return {
        "mode": MODE,
        "pinned": pinned,
        "mkl_branch": branch,
        "openblas_core": core,
        "aten_cpu_capability": capability,
        "torch_threads": threads,
        "environment": {key: os.environ.get(key) for key in PINNED_ENVIRONMENT},
        "cpu": cpu_model(),
        "vendor": cpu_vendor(),
        "machine": platform.machine(),
    }


def check_pinned() -> dict[str, Any]:
    """Raise if pinning was asked for but did not take (e.g. an MKL routine ran before marlinkit)."""
    now = state()
    if MODE == "pinned" and not now["pinned"]:
        raise RuntimeError(
            f"marlinkit could not pin the numerical libraries (MKL branch {now['mkl_branch']}, ATen "
            f"{now['aten_cpu_capability']}, {now['torch_threads']} threads): import marlinkit before torch "
            "or numpy and leave torch at one thread, or set "
            "MARLINKIT_NUMERICS=native to run unpinned (results then match only machines like this one)")
    return now


_pin_environment()
