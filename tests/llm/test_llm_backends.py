"""LLM backends for real: a tiny random Llama 3.1 through transformers, a stub OpenAI server over HTTP."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from marlinkit.llm import config as llm_config
from marlinkit.llm.base import GenerationSettings, LLMError, check_messages
from marlinkit.llm.backends.openai import OpenAIBackend
from marlinkit.llm.backends.scripted import ScriptedBackend
from marlinkit.llm.backends.tiny import EOS_TOKENS, build_tiny_llama
from marlinkit.llm.backends.transformers import TransformersBackend, eos_ids, resolve_model_path

CHAT = [{"role": "system", "content": "You are Alice."}, {"role": "user", "content": "Bob is at (1, 7). Move?"}]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return TransformersBackend(str(build_tiny_llama(tmp_path_factory.mktemp("tiny") / "Tiny-Llama-3.1")))


def test_tiny_llama_goes_through_the_real_template_and_generate_path(tiny):
    tokenizer, model = tiny._loaded()
    assert tokenizer.pad_token is None  # like Llama 3.1: the backend must supply a pad id
    assert eos_ids(tokenizer, model) == [tokenizer.convert_tokens_to_ids(t) for t in EOS_TOKENS]
    ids = tokenizer.apply_chat_template(CHAT, add_generation_prompt=True, return_dict=True)["input_ids"]
    assert ids.count(tokenizer.bos_token_id) == 1  # one BOS: the template's, never a second from re-tokenising
    reply = tiny.chat(CHAT, GenerationSettings(seed=3, max_new_tokens=24))
    assert reply.prompt_tokens == len(ids) and 1 <= reply.completion_tokens <= 24
    assert reply.finish_reason in ("stop", "length") and reply.seconds > 0
    assert tiny.model == "Tiny-Llama-3.1"  # keys use the folder name: transcripts replay on other machines


def test_seeded_sampling_repeats_and_stop_strings_cut(tiny):
    settings = GenerationSettings(temperature=1.0, seed=7, max_new_tokens=32)
    first, again = tiny.chat(CHAT, settings), tiny.chat(CHAT, settings)
    assert first.text == again.text and first.completion_tokens == again.completion_tokens
    others = {tiny.chat(CHAT, GenerationSettings(temperature=1.0, seed=s, max_new_tokens=32)).text for s in range(4)}
    assert len(others) > 1
    # Stop on a piece of the unstopped text: the reply ends right before it, and generation stopped early.
    stop = next((first.text[i:i + 2] for i in range(4, len(first.text) - 2) if first.text[i:i + 2].strip()), None)
    if stop is None:
        pytest.skip("reply too short to pick a stop string")
    cut = tiny.chat(CHAT, GenerationSettings(temperature=1.0, seed=7, max_new_tokens=32, stop=(stop,)))
    assert stop not in cut.text and first.text.startswith(cut.text.strip()[:4])
    assert cut.completion_tokens < first.completion_tokens and cut.finish_reason == "stop"


def test_hub_id_without_local_copy_fails_fast_with_instructions():
    start = time.perf_counter()
    with pytest.raises(LLMError, match="HF_HUB_OFFLINE=1.*transformers:DIR"):
        resolve_model_path("meta-llama/Llama-3.1-8B-Instruct")
    assert time.perf_counter() - start < 2
    with pytest.raises(LLMError, match="does not exist"):
        resolve_model_path("/no/such/folder")


def test_setting_strings_build_the_named_backend(monkeypatch, tmp_path):
    assert isinstance(llm_config.make_backend("scripted", ["ok"]), ScriptedBackend)
    backend = llm_config.make_backend("transformers:/models/Llama-3.1-8B-Instruct")
    assert (backend.name, backend.model) == ("transformers", "Llama-3.1-8B-Instruct")
    remote = llm_config.make_backend("openai:http://localhost:8000/v1#meta-llama/Llama-3.1-8B-Instruct")
    assert (remote.base_url, remote.model) == ("http://localhost:8000/v1", "meta-llama/Llama-3.1-8B-Instruct")
    monkeypatch.setenv(llm_config.ENV_VAR, "scripted")
    assert llm_config.make_backend(None, ["ok"]).name == "scripted"
    with pytest.raises(ValueError, match="unknown LLM setting"):
        llm_config.make_backend("gpt5")
    for bad in ("gpt5", "smollm2:big", "scripted:x", "transformers"):  # refused before anything is built
        with pytest.raises(ValueError, match="unknown LLM setting"):
            llm_config.check(bad)
    assert llm_config.check("transformers:/m") == "transformers:/m" and llm_config.check(None) == "scripted"
    with pytest.raises(ValueError, match="model name"):
        llm_config.make_backend("openai:http://localhost:8000/v1")
    path = llm_config.transcript_path("llm_only", remote, tmp_path)
    assert path.name == "llm_only__openai__meta-llama-Llama-3.1-8B-Instruct.jsonl"


def test_an_experiment_script_plays_the_scripted_kind_uncached_and_leaves_the_others_to_the_cache(tmp_path):
    """MAESTRO's architect script: one factory for it and for every other backend (no second one in the runner)."""
    from marlinkit.llm.cache import TranscriptCache

    def echo(messages):
        return "reply to " + messages[-1]["content"]

    scripted = llm_config.cached_backend("scripted", "demo", record=False, root=tmp_path, script=echo, model="echo")
    assert isinstance(scripted, ScriptedBackend) and (scripted.script, scripted.model) == (echo, "echo")
    reply = scripted.chat([{"role": "user", "content": "hi"}], GenerationSettings())
    assert reply.text == "reply to hi" and not list(tmp_path.iterdir())  # the script is its own record
    assert llm_config.make_backend("scripted", echo, "echo").model == "echo"
    with pytest.raises(ValueError, match="plays a script"):  # each experiment passes its own protocol's script
        llm_config.make_backend("scripted")
    other = llm_config.cached_backend("transformers:/models/m", "demo", record=False, root=tmp_path, script=echo)
    assert isinstance(other, TranscriptCache) and other.replay_only  # a model setting ignores the script
    with pytest.raises(ValueError, match="plays a script"):
        llm_config.cached_backend("scripted", "demo", record=False, root=tmp_path)


def test_settings_and_messages_are_validated():
    with pytest.raises(ValueError, match="temperature"):
        GenerationSettings(temperature=-0.1)
    with pytest.raises(ValueError, match="max_new_tokens"):
        GenerationSettings(max_new_tokens=0)
    with pytest.raises(ValueError, match="role"):
        check_messages([{"role": "robot", "content": "hi"}])
    with pytest.raises(ValueError, match="last message"):
        check_messages([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}])


# ----------------------------------------------------------------------------- OpenAI-compatible client

class StubServer:
    """An OpenAI-compatible endpoint on 127.0.0.1 that fails, stalls or answers as told."""

    def __init__(self):
        self.requests, self.plan = [], []  # plan: list of "ok" | "500" | "400" | "slow"
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
                action = stub.plan.pop(0) if stub.plan else "ok"
                if action == "slow":
                    time.sleep(0.6)
                if action in ("500", "400"):
                    self.send_response(int(action))
                    self.end_headers()
                    self.wfile.write(b'{"error": "stub says no"}')
                    return
                answer = {"choices": [{"message": {"role": "assistant",
                                                   "content": f" echo {body['messages'][-1]['content']} "},
                                       "finish_reason": "stop"}],
                          "usage": {"prompt_tokens": 11, "completion_tokens": 3}}
                data = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture()
def stub():
    server = StubServer()
    yield server
    server.server.shutdown()


def test_openai_client_sends_the_request_and_reads_the_reply(stub):
    backend = OpenAIBackend(stub.url, "llama3.1:8b", api_key="k123")
    reply = backend.chat(CHAT, GenerationSettings(temperature=0.8, max_new_tokens=50, seed=5, stop=("~AGREE",)))
    assert reply.text == "echo Bob is at (1, 7). Move?"
    assert (reply.prompt_tokens, reply.completion_tokens, reply.finish_reason) == (11, 3, "stop")
    request = stub.requests[0]
    assert request["path"] == "/v1/chat/completions" and request["auth"] == "Bearer k123"
    assert request["body"] == {"model": "llama3.1:8b", "messages": CHAT, "temperature": 0.8, "top_p": 1.0,
                               "max_tokens": 50, "seed": 5, "stop": ["~AGREE"]}


def test_openai_client_retries_server_errors_and_timeouts_then_gives_up(stub, monkeypatch):
    monkeypatch.setenv("MARLINKIT_OPENAI_BASE_URL", stub.url)
    monkeypatch.setenv("MARLINKIT_OPENAI_MODEL", "m")
    backend = OpenAIBackend(timeout=0.3, retries=2, backoff=0.01)
    stub.plan = ["500", "slow"]
    assert backend.chat(CHAT, GenerationSettings()).text.startswith("echo")
    assert len(stub.requests) == 3  # 500, then a timeout, then the answer
    stub.plan = ["500"] * 3
    with pytest.raises(LLMError, match="failed 3 times.*HTTP 500"):
        backend.chat(CHAT, GenerationSettings())
    stub.requests.clear()
    stub.plan = ["400"]
    with pytest.raises(LLMError, match="HTTP 400.*stub says no"):
        backend.chat(CHAT, GenerationSettings())
    assert len(stub.requests) == 1  # a client error is not retried


def test_openai_client_reports_an_unreachable_endpoint():
    backend = OpenAIBackend("http://127.0.0.1:9/v1", "m", timeout=0.5, retries=1, backoff=0.01)
    with pytest.raises(LLMError, match="failed 2 times"):
        backend.chat(CHAT, GenerationSettings())


def test_system_prompt_kv_cache_gives_the_same_greedy_reply(tiny):
    chat = [{"role": "system", "content": "You are Alice, a robot in a corridor. " * 10}, CHAT[1]]
    greedy = GenerationSettings(temperature=0, max_new_tokens=20)
    tiny._prefixes.clear()
    cached = tiny.chat(chat, greedy)
    assert len(tiny._prefixes) == 1  # the system prompt's keys and values are kept for the next call
    again = tiny.chat(chat, greedy)
    plain = TransformersBackend(tiny.model_path)
    plain._prefix_cache = lambda *args: None  # the uncached path, for reference
    assert cached.text == again.text == plain.chat(chat, greedy).text
    assert cached.prompt_tokens == plain.chat(chat, greedy).prompt_tokens


def test_local_models_generate_with_the_fixed_thread_count_and_restore_the_callers(monkeypatch):
    import torch

    from marlinkit.llm.backends import transformers as tb
    from marlinkit.llm.base import LLMError

    before = torch.get_num_threads()
    monkeypatch.setenv(tb.THREADS_ENV, "2")
    with tb.threads_for_generation():
        assert torch.get_num_threads() == 2
    assert torch.get_num_threads() == before
    monkeypatch.delenv(tb.THREADS_ENV)
    assert tb.generation_threads() == tb.GENERATION_THREADS == 1
    monkeypatch.setenv(tb.THREADS_ENV, "many")
    with pytest.raises(LLMError, match=tb.THREADS_ENV):
        tb.generation_threads()


def test_replay_only_runs_say_that_marlinkit_llm_is_not_used(monkeypatch, tmp_path):
    from marlinkit.llm import config as llm_config

    monkeypatch.setenv(llm_config.ENV_VAR, "openai:http://127.0.0.1:9/v1#m")
    with pytest.warns(UserWarning, match="is not used here"):
        llm_config.cached_backend("smollm2", "demo", record=False, root=tmp_path)


@pytest.mark.slow
def test_two_processes_building_the_smollm2_copy_at_once_both_load_it(tmp_path):
    """The MAESTRO ablation's two workers may both find no local SmolLM2 copy: each builds its own and the first
    rename wins; neither removes the other's finished copy while it loads (a loader once failed on a vanished
    tokenizer.json). Real GGUF, two real processes, then a third call finds the copy and builds nothing."""
    import subprocess
    import sys

    from marlinkit.llm.backends.smollm2 import gguf_path

    gguf_path()  # `make setup` installs the model's package: its absence is a failure here, not a skip
    script = ("import sys, marlinkit; from pathlib import Path; from transformers import AutoTokenizer; "
              "from marlinkit.llm.backends.smollm2 import local_copy; "
              "AutoTokenizer.from_pretrained(local_copy(Path(sys.argv[1]))); print('ok')")
    runs = [subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], stdout=subprocess.PIPE, text=True)
            for _ in range(2)]
    assert [run.communicate(timeout=600)[0].strip() for run in runs] == ["ok", "ok"]
    from marlinkit.llm.backends.smollm2 import local_copy

    made = (tmp_path / "smollm2-135m-instruct-q4_1" / "model.safetensors").stat().st_mtime_ns
    assert local_copy(tmp_path) == tmp_path / "smollm2-135m-instruct-q4_1"
    assert (tmp_path / "smollm2-135m-instruct-q4_1" / "model.safetensors").stat().st_mtime_ns == made
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".smollm2-")]  # no staging folder left behind
