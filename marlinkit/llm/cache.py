"""Record and replay LLM calls: a JSONL transcript file around any backend.

Each call is keyed by backend name, model, the full messages and the generation settings
(seed included); a hit returns the recorded reply without loading the model. Records keep the
key, the last message and the reply (not the whole chat: the system prompt would repeat in
every line), so committed transcripts stay small.

Replay is strict by default: a miss raises :class:`TranscriptMiss`, naming the call, the
nearest recorded prompt with a diff of what changed, and how to record. Recording (a miss calls
the model and appends its reply) is an explicit choice: ``MARLINKIT_RECORD=1`` (``RECORD=1
make figures``) or ``record=True`` (:func:`marlinkit.llm.config.cached_backend`).

Transcript errors are not :class:`~marlinkit.llm.base.LLMError`: code that falls back on a
failed LLM call (the MAESTRO architect) must never fall back on a replay that cannot answer.
A half-written last line (one without its newline: an interrupted recording) is skipped with a
warning, and removed before the next record is appended, which then starts a line of its own; a
damaged line anywhere else (complete lines are written whole) is a :class:`TranscriptFileError`
naming ``file:line``.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import json
import os
import re
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path

from marlinkit import progress
from marlinkit.llm.base import ChatBackend, GenerationSettings, Reply

#: Fields every transcript record must carry to be replayed.
RECORD_FIELDS = {"key": str, "reply": str, "prompt_tokens": int, "completion_tokens": int,
                 "seconds": (int, float), "finish_reason": str}
#: How a miss tells the user to record (``<preset>`` is filled in by :func:`transcript_context` when known).
RECORD_HINT = ("To record it (this calls the model and appends the reply to the transcript), rerun with "
               "`RECORD=1 make figures PRESET=<preset>`, or set MARLINKIT_RECORD=1 in the environment of a notebook "
               "or script. Or restore the settings/code that made the recorded run.")
_DIFF_LINES = 14  # longest diff shown in a miss message
_TAIL_BYTES = 1 << 20  # how far back an append looks for the start of a cut-off last line
_PIECE = re.compile(r"(?<=[,.;:])\s+|\n")  # prompts are long lines: diff them clause by clause


class TranscriptError(RuntimeError):
    """A transcript cannot answer a call (a replay miss) or cannot be read; never a reason to fall back."""


class TranscriptMiss(TranscriptError):
    """A strictly replaying cache was asked for a call it has not recorded."""


class TranscriptFileError(TranscriptError):
    """A transcript file holds a damaged line; the message names ``file:line``."""


def call_key(backend: str, model: str, messages: list[dict[str, str]], settings: GenerationSettings) -> str:
    blob = json.dumps({"backend": backend, "model": model, "messages": messages, "settings": settings.to_dict()},
                      sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


def _check_record(record: object) -> str:
    """'' when ``record`` can be replayed, else what is wrong with it."""
    if not isinstance(record, dict):
        return f"a JSON {type(record).__name__}, not an object"
    for name, kind in RECORD_FIELDS.items():
        if name not in record:
            return f"no {name!r} field"
        if not isinstance(record[name], kind) or isinstance(record[name], bool):
            return f"field {name!r} is {type(record[name]).__name__}"
    return ""


def read_records(path: Path) -> dict[str, dict]:
    """The records of a transcript file by key; a cut-off last line is skipped with a warning.

    Raises :class:`TranscriptFileError` naming ``file:line`` for a damaged line that is not the last.
    """
    records: dict[str, dict] = {}
    if not path.exists():
        return records
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise TranscriptFileError(f"transcript {path} cannot be read: {error}") from error
    lines = text.split("\n")  # a complete file ends with "\n": the last piece is then ""
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            problem = _check_record(record)
        except json.JSONDecodeError as error:
            problem = f"not JSON ({error.msg} at column {error.colno})"
        if not problem:
            records[record["key"]] = record
        elif number == len(lines):  # the last line, without its newline: an interrupted append
            warnings.warn(f"{path}:{number}: unreadable last transcript line skipped (interrupted write?): {problem}",
                          stacklevel=3)
        else:
            raise TranscriptFileError(f"transcript {path}:{number} is damaged: {problem}. Restore the file (git "
                                      "checkout) or delete that line; its call is then a miss")
    return records


def _pieces(text: str) -> list[str]:
    return [piece for piece in _PIECE.split(text) if piece]


def _short(text: str, width: int = 160) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def nearest_prompt_diff(text: str, settings: dict, records: list[dict]) -> str:
    """The recorded call closest to a missed one, and a short unified diff of its last message."""
    candidates = [r for r in records if isinstance(r.get("last_message"), str)]
    if not candidates:
        return "The transcript holds no recorded prompt to compare with."

    def closeness(record: dict) -> tuple[float, bool]:
        matcher = difflib.SequenceMatcher(None, record["last_message"], text, autojunk=False)
        return (matcher.quick_ratio(), record.get("settings") == settings)

    shortlist = sorted(candidates, key=closeness, reverse=True)[:20]  # quick_ratio first, exact ratio on a few
    best = max(shortlist, key=lambda r: (difflib.SequenceMatcher(None, r["last_message"], text).ratio(),
                                         r.get("settings") == settings))
    notes = []
    changed = {k: (best.get("settings", {}).get(k), v) for k, v in settings.items()
               if best.get("settings", {}).get(k) != v}
    if changed:
        notes.append("settings differ: " + ", ".join(f"{k} {old!r} -> {new!r}" for k, (old, new) in changed.items()))
    if best["last_message"] == text:
        notes.append("its last message is identical, so an earlier message of the chat differs "
                     "(transcripts keep only the last one)" if not changed else "its last message is identical")
        return "Nearest recorded call: " + "; ".join(notes) + "."
    diff = list(difflib.unified_diff(_pieces(best["last_message"]), _pieces(text), "recorded", "this call",
                                     n=1, lineterm=""))
    shown = [_short(line) for line in diff[:_DIFF_LINES]]
    if len(diff) > _DIFF_LINES:
        shown.append(f"... ({len(diff) - _DIFF_LINES} more diff lines)")
    head = "Nearest recorded prompt (its last message, diffed clause by clause"
    head += f"; {notes[0]}):" if notes else "):"
    return head + "\n" + "\n".join(shown)


@contextlib.contextmanager
def transcript_context(run: str | None = None, preset: str | None = None) -> Iterator[None]:
    """Name the run (and the preset of the recording hint) in transcript errors raised inside.

    The error keeps its class (``TranscriptMiss`` or ``TranscriptFileError``), so a Ray-wrapped or
    pickled error from a worker is re-raised as ours.
    """
    try:
        yield
    except TranscriptError as error:
        cls = next(c for c in type(error).__mro__ if c.__module__ == __name__)
        message = str(error)
        if run and not message.startswith("run "):
            message = f"run {run}: {message}"
        if preset:
            message = message.replace("PRESET=<preset>", f"PRESET={preset}")
        raise cls(message) from error


def _replayed(record: dict) -> Reply:
    """A recorded call's reply, as the model gave it (``cached``: no model was called now)."""
    return Reply(record["reply"], record["prompt_tokens"], record["completion_tokens"], record["seconds"],
                 record["finish_reason"], cached=True)


class TranscriptCache:
    """A ``ChatBackend`` that answers from ``path`` and, only when recording, calls ``backend`` on a miss.

    ``backend`` may be None in replay-only mode; ``name``/``model`` then say whose calls to replay.
    ``hits`` counts replayed calls, ``misses`` calls that went to the model (live calls).

    ``shared``: other transcripts of the same backend whose runs make some of the same calls (e.g. MAESTRO's A7
    asks A2's architect questions while its reward is the environment's). When recording, a miss here that one of
    them has recorded is copied into ``path`` instead of calling the model (``copied`` counts them): the same key is
    the same call, and ``path`` stays complete on its own for strict replay. They are re-read on a miss, since a
    run beside this one may be recording them.
    """

    def __init__(self, backend: ChatBackend | None, path: str | os.PathLike, replay_only: bool = True,
                 name: str | None = None, model: str | None = None, shared: Sequence[str | os.PathLike] = ()):
        if backend is None and not replay_only:
            raise ValueError("recording needs a backend; pass one or set replay_only=True")
        self.backend = backend
        self.path = Path(path)
        self.replay_only = replay_only
        self.name = name or backend.name
        self.model = model or backend.model
        self.shared = [Path(p) for p in shared if Path(p) != self.path]
        self.hits = self.misses = self.copied = 0
        self._live_seconds = 0.0  # the model's time in this session's live calls
        self._records = read_records(self.path)

    def _live_call_text(self) -> str:
        """What a notebook shows while a live call runs (:func:`marlinkit.progress.waiting`)."""
        done = self.misses - 1
        pace = (f"the {done} before took ~{self._live_seconds / done:.0f} s each" if done else
                "the first one also loads the model")
        return f"{self.name}: live call {self.misses} (its reply is not in the transcript; {pace})"

    def __len__(self) -> int:
        return len(self._records)

    def chat(self, messages: list[dict[str, str]], settings: GenerationSettings) -> Reply:
        key = call_key(self.name, self.model, messages, settings)
        record = self._records.get(key)
        if record is not None:
            self.hits += 1
            return _replayed(record)
        if self.replay_only or self.backend is None:
            raise self._miss(messages, settings, key)
        record = self._shared_record(key)
        if record is not None:
            self.copied += 1
            reply = _replayed(record)
        else:
            self.misses += 1
            with progress.waiting(self._live_call_text()):
                reply = self.backend.chat(messages, settings)
            self._live_seconds += reply.seconds
            record = {"key": key, "backend": self.name, "model": self.model, "settings": settings.to_dict(),
                      "n_messages": len(messages), "last_message": messages[-1]["content"], "reply": reply.text,
                      "prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
                      "seconds": round(reply.seconds, 4), "finish_reason": reply.finish_reason}
        self._append(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
        self._records[key] = record
        return reply

    def _shared_record(self, key: str) -> dict | None:
        """The record of ``key`` in a shared transcript (read now: its run may be recording beside this one)."""
        for path in self.shared:
            if path.exists():
                with warnings.catch_warnings():  # a line its own run is appending now reads as cut off: skipped
                    warnings.simplefilter("ignore")
                    record = read_records(path).get(key)
                if record is not None:
                    return record
        return None

    def _append(self, line: str) -> None:
        """Append one record on a line of its own.

        A cut-off last line (an interrupted append) is removed first, with a warning: the new record
        would otherwise land on it and be lost too, or leave a damaged line in the middle of the file.
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a+b") as handle:  # one write per line: appends stay whole
            size = handle.seek(0, os.SEEK_END)
            if size:
                start = max(size - _TAIL_BYTES, 0)
                handle.seek(start)
                tail = handle.read()
                if not tail.endswith(b"\n"):
                    cut = tail.rfind(b"\n") + 1  # 0: no newline in the tail
                    try:
                        problem = _check_record(json.loads(tail[cut:]))
                    except (json.JSONDecodeError, UnicodeDecodeError):
                        problem = "not JSON"
                    if problem and (cut or start == 0):
                        warnings.warn(f"{self.path}: removing the cut-off last line ({problem}) before recording",
                                      stacklevel=3)
                        handle.truncate(start + cut)
                    else:
                        line = "\n" + line
            handle.write(line.encode("utf-8"))

    def _miss(self, messages: list[dict[str, str]], settings: GenerationSettings, key: str) -> TranscriptMiss:
        calls = self.hits + self.misses + 1
        sampling = settings.to_dict()
        nearest = nearest_prompt_diff(messages[-1]["content"], sampling, list(self._records.values()))
        return TranscriptMiss(
            f"transcript miss in strict replay: {self.path} ({len(self._records)} recorded calls) has no reply for "
            f"call {calls} of this run to {self.name}:{self.model} (key {key}, {len(messages)} messages, seed "
            f"{settings.seed}, temperature {settings.temperature}, max_new_tokens {settings.max_new_tokens}); its last "
            f"message begins {_short(messages[-1]['content'], 120)!r}.\n{nearest}\n{RECORD_HINT}")
