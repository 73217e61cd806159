"""Any chat model transformers can load from a local folder (the paper's Llama 3.1 8B Instruct).

bf16 with ``device_map="auto"`` when a GPU is present, fp32 on CPU. The chat template is
applied once and its token ids go straight to ``generate`` (never re-tokenised: that doubles
the BOS). Llama 3.1 has no pad token and three EOS ids; both are passed explicitly.
"""

from __future__ import annotations

import copy
import functools
import os
import time
from contextlib import contextmanager
from pathlib import Path

from marlinkit.llm.base import GenerationSettings, LLMError, Reply, check_messages, cut_at_stop


#: Environment variable overriding ``GENERATION_THREADS``.
THREADS_ENV = "MARLINKIT_LLM_THREADS"
#: Torch intra-op threads while a local model generates (smollm2 included). One, deliberately: on a machine
#: whose cores are busy (training workers, other users), more threads than free cores make generation an order
#: of magnitude slower (measured: smollm2, 60 tokens on 2 busy cores: 84-86 s with 2 threads, 7.5 s with 1),
#: while on an idle machine a 135M model gains little from more; and one fixed count gives the same reduction
#: order, so the same recorded replies, on every machine. ``python -m marlinkit info`` reports it.
GENERATION_THREADS = 1


def generation_threads() -> int:
    """The thread count ``generate`` runs with: ``$MARLINKIT_LLM_THREADS``, else ``GENERATION_THREADS``."""
    value = os.environ.get(THREADS_ENV)
    if not value:
        return GENERATION_THREADS
    if not value.isdigit() or int(value) < 1:
        raise LLMError(f"{THREADS_ENV}={value!r}: expected a whole number of threads >= 1")
    return int(value)


@contextmanager
def threads_for_generation():
    """Run the block with ``generation_threads()`` torch threads; the caller's count is restored after."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(generation_threads())
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def resolve_model_path(model: str) -> str:
    """A local folder, or a hub id already in the local cache; otherwise fail at once, saying what to do."""
    if Path(model).expanduser().is_dir():
        return str(Path(model).expanduser().resolve())
    if Path(model).expanduser().exists() or model.startswith((".", "/", "~")):
        raise LLMError(f"model folder {model!r} does not exist")
    from huggingface_hub import try_to_load_from_cache

    if isinstance(try_to_load_from_cache(model, "config.json"), str):
        return model
    if os.environ.get("HF_HUB_OFFLINE", "1") not in ("0", "false", "False"):
        raise LLMError(
            f"{model!r} is neither a local folder nor in the Hugging Face cache, and downloads are off "
            "(HF_HUB_OFFLINE=1). Download the weights elsewhere (e.g. `huggingface-cli download "
            f"{model} --local-dir DIR`), then use `transformers:DIR`; or set HF_HUB_OFFLINE=0 to download."
        )
    return model


def quiet_transformers():
    """Import transformers without the text it writes into a notebook: tqdm's "IProgress not found" warning (its
    notebook bars need ipywidgets, which the project does not install) and the weight-loading bars. A load is announced
    by the caller's own progress line instead (``marlinkit.progress``). Returns the ``transformers`` module."""
    import warnings

    from tqdm import TqdmWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TqdmWarning)
        import tqdm.auto  # noqa: F401  (imported once here, where its warning is ignored)
        import transformers
    transformers.utils.logging.disable_progress_bar()
    try:
        from huggingface_hub.utils import disable_progress_bars
    except ImportError:  # pragma: no cover - transformers requires huggingface_hub
        pass
    else:
        disable_progress_bars()
    return transformers


@functools.lru_cache(maxsize=2)
def load_model(path: str, device_map: str | None = None):
    """Tokenizer and model for ``path``, loaded once per process (loading dominates short runs)."""
    import torch

    quiet_transformers()
    from transformers import AutoModelForCausalLM, AutoTokenizer

    cuda = torch.cuda.is_available()
    if device_map is None and cuda:
        device_map = "auto"
    try:
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(
            path, dtype=torch.bfloat16 if cuda else torch.float32, device_map=device_map
        )
    except OSError as error:
        raise LLMError(f"could not load a chat model from {path!r}: {error}") from error
    if tokenizer.chat_template is None:
        raise LLMError(f"{path!r} has no chat template; use an instruct/chat model")
    model.eval()
    return tokenizer, model


def eos_ids(tokenizer, model) -> list[int]:
    """Every id that ends a turn: the generation config's list (Llama 3.1 has three) plus the tokenizer's."""
    ids = model.generation_config.eos_token_id
    ids = [] if ids is None else [ids] if isinstance(ids, int) else list(ids)
    if tokenizer.eos_token_id is not None and tokenizer.eos_token_id not in ids:
        ids.append(tokenizer.eos_token_id)
    return ids


class TransformersBackend:
    """A local chat model; the weights load on the first call, so building the backend is free."""

    name = "transformers"

    def __init__(self, model_path: str, model_name: str | None = None, device_map: str | None = None):
        self.model_path = model_path
        self.device_map = device_map
        # Cache keys use the folder's name, not its absolute path, so transcripts replay on other machines.
        self.model = model_name or Path(model_path.rstrip("/")).name
        self._prefixes: dict[tuple[int, ...], object] = {}  # system-prompt token ids -> their KV cache

    def _prefix_cache(self, model, tokenizer, messages, input_ids):
        """A copy of the KV cache of the system prompt, when ``input_ids`` starts with it.

        Every negotiation call repeats one of a few long system prompts; computing their keys and
        values once roughly halves the CPU time of a call. Only sampling noise differs.
        """
        if len(messages) < 2 or messages[0]["role"] != "system":
            return None
        prefix = tokenizer.apply_chat_template(messages[:1], return_tensors="pt", return_dict=True)["input_ids"]
        key = tuple(prefix[0].tolist())
        n = len(key)
        if n >= input_ids.shape[1] or tuple(input_ids[0, :n].tolist()) != key:
            return None
        if key not in self._prefixes:
            import torch
            from transformers import DynamicCache

            cache = DynamicCache()
            with torch.inference_mode(), threads_for_generation():
                model(input_ids=prefix.to(model.device), cache=cache, use_cache=True)
            if len(self._prefixes) >= 8:
                self._prefixes.pop(next(iter(self._prefixes)))
            self._prefixes[key] = cache
        return copy.deepcopy(self._prefixes[key])

    def _loaded(self):
        return load_model(resolve_model_path(self.model_path), self.device_map)

    def chat(self, messages: list[dict[str, str]], settings: GenerationSettings) -> Reply:
        import torch

        tokenizer, model = self._loaded()
        batch = tokenizer.apply_chat_template(
            check_messages(messages), add_generation_prompt=True, return_tensors="pt", return_dict=True
        ).to(model.device)
        eos = eos_ids(tokenizer, model)
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos[0]
        sample = settings.temperature > 0
        kwargs = dict(
            max_new_tokens=settings.max_new_tokens, do_sample=sample, pad_token_id=pad, eos_token_id=eos,
        )
        if sample:
            kwargs.update(temperature=settings.temperature, top_p=settings.top_p, top_k=0)
        if settings.stop:
            kwargs.update(stop_strings=list(settings.stop), tokenizer=tokenizer)
        start = time.perf_counter()
        cache = self._prefix_cache(model, tokenizer, messages, batch["input_ids"])
        if cache is not None:
            kwargs["cache"] = cache
        if settings.seed is not None:
            torch.manual_seed(settings.seed)
        with torch.inference_mode(), threads_for_generation():
            output = model.generate(**batch, **kwargs)
        seconds = time.perf_counter() - start
        prompt_tokens = int(batch["input_ids"].shape[1])
        new = output[0, prompt_tokens:]
        hit_eos = bool(len(new)) and int(new[-1]) in eos
        text, hit_stop = cut_at_stop(tokenizer.decode(new, skip_special_tokens=True), settings.stop)
        finish = "stop" if (hit_eos or hit_stop or len(new) < settings.max_new_tokens) else "length"
        return Reply(text.strip(), prompt_tokens, int(len(new)), seconds, finish)
