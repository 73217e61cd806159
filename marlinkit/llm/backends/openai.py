"""Any OpenAI-compatible chat endpoint (vLLM, Ollama, hosted Llama 3.1) over plain HTTP.

Standard library only. Base URL, model and key come from arguments or the environment
(``MARLINKIT_OPENAI_BASE_URL``/``OPENAI_BASE_URL``, ``MARLINKIT_OPENAI_MODEL``,
``OPENAI_API_KEY``). Timeouts, HTTP 429/5xx and dropped connections are retried with
exponential backoff; other HTTP errors fail at once with the server's message.
"""

from __future__ import annotations

import json
import os
import socket
import time
import urllib.error
import urllib.request

from marlinkit.llm.base import GenerationSettings, LLMError, Reply, check_messages

RETRY_STATUS = (408, 409, 429, 500, 502, 503, 504)


class OpenAIBackend:
    """``POST {base_url}/chat/completions``; ``seed`` is sent (servers that honour it replay exactly)."""

    name = "openai"

    def __init__(self, base_url: str | None = None, model: str | None = None, api_key: str | None = None,
                 timeout: float = 120.0, retries: int = 3, backoff: float = 1.0):
        base_url = base_url or os.environ.get("MARLINKIT_OPENAI_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
        model = model or os.environ.get("MARLINKIT_OPENAI_MODEL")
        if not base_url:
            raise ValueError("the openai backend needs a base URL: openai:http://host:8000/v1#MODEL, "
                             "or set MARLINKIT_OPENAI_BASE_URL")
        if not model:
            raise ValueError("the openai backend needs a model name: openai:URL#MODEL, or set MARLINKIT_OPENAI_MODEL")
        if timeout <= 0 or retries < 0 or backoff < 0:
            raise ValueError("timeout must be > 0, retries and backoff >= 0")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY", "")
        self.timeout, self.retries, self.backoff = timeout, retries, backoff

    def _post(self, payload: dict) -> dict:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(f"{self.base_url}/chat/completions", json.dumps(payload).encode(), headers)
        problem = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    return json.loads(response.read())
            except urllib.error.HTTPError as error:
                body = error.read().decode(errors="replace")[:500]
                if error.code not in RETRY_STATUS:
                    raise LLMError(f"{self.base_url} answered HTTP {error.code}: {body}") from error
                problem = f"HTTP {error.code}: {body}"
            except (urllib.error.URLError, socket.timeout, TimeoutError, ConnectionError) as error:
                problem = f"{type(error).__name__}: {getattr(error, 'reason', error)}"
            except json.JSONDecodeError as error:
                raise LLMError(f"{self.base_url} did not answer JSON: {error}") from error
        raise LLMError(f"{self.base_url} failed {self.retries + 1} times (timeout {self.timeout} s); last: {problem}")

    def chat(self, messages: list[dict[str, str]], settings: GenerationSettings) -> Reply:
        payload = {"model": self.model, "messages": check_messages(messages), "temperature": settings.temperature,
                   "top_p": settings.top_p, "max_tokens": settings.max_new_tokens}
        if settings.seed is not None:
            payload["seed"] = settings.seed
        if settings.stop:
            payload["stop"] = list(settings.stop)[:4]  # the API accepts at most four
        start = time.perf_counter()
        data = self._post(payload)
        seconds = time.perf_counter() - start
        try:
            choice = data["choices"][0]
            text = choice["message"]["content"] or ""
        except (KeyError, IndexError, TypeError) as error:
            raise LLMError(f"{self.base_url} answered without choices[0].message.content: {str(data)[:300]}") from error
        usage = data.get("usage") or {}
        return Reply(text.strip(), int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)),
                     seconds, "length" if choice.get("finish_reason") == "length" else "stop")
