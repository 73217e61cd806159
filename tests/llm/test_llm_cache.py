"""Transcript cache: record then replay gives identical plans without the model; replay-only misses fail."""

from __future__ import annotations

import json

import numpy as np
import pytest

from marlinkit.envs.corridor.layouts import get_layout
from marlinkit.llm.base import GenerationSettings
from marlinkit.llm.cache import TranscriptCache, TranscriptMiss, call_key
from marlinkit.marlin.negotiation import Negotiation, NegotiationConfig
from marlinkit.llm.backends.scripted import ScriptedBackend

LAYOUT = get_layout("two_path")


class CountingRandomRobots(ScriptedBackend):
    """Seed-dependent replies, so a replay that mixed up calls would change the plan."""

    def __init__(self):
        super().__init__(self.reply, model="random-robots")
        self.calls = 0

    def reply(self, messages):
        raise AssertionError("replaced per call")

    def chat(self, messages, settings):
        self.calls += 1
        rng = np.random.default_rng(settings.seed)
        a, b = rng.choice(["@NORTH", "@SOUTH", "@EAST", "@WEST", "@WAIT"], 2)
        self.script = lambda m: (f"Agreed Alice Action: {a}\nAgreed Bob Action: {b}\n@AGREE" if rng.random() < 0.5
                                 else f"TLP: go\nAlice: {a} - x\nBob: {b} - y")
        return super().chat(messages, settings)


def negotiate(backend, seed=3):
    return Negotiation(backend, NegotiationConfig(max_rounds=2)).make_plan(LAYOUT, np.array(LAYOUT.starts), 6,
                                                                           seed=seed)


def test_record_then_replay_returns_identical_plans_without_the_model(tmp_path):
    path = tmp_path / "t.jsonl"
    robots = CountingRandomRobots()
    recorded = negotiate(TranscriptCache(robots, path, replay_only=False))
    assert robots.calls == recorded.stats["llm_calls"] > 6 and recorded.stats["cached_calls"] == 0
    replay = TranscriptCache(None, path, replay_only=True, name="scripted", model="random-robots")
    replayed = negotiate(replay)
    assert replayed.actions.tolist() == recorded.actions.tolist() and replayed.performance == recorded.performance
    assert [e["text"] for e in replayed.transcript] == [e["text"] for e in recorded.transcript]
    assert replayed.stats["cached_calls"] == replayed.stats["llm_calls"] == robots.calls
    assert replayed.stats["llm_seconds"] == pytest.approx(recorded.stats["llm_seconds"], abs=1e-3)
    assert replay.hits == robots.calls and replay.misses == 0
    # Another seed is another set of calls: a clear miss, never a wrong reply.
    with pytest.raises(TranscriptMiss, match="strict replay: .*t.jsonl"):
        negotiate(replay, seed=4)


def test_a_recording_cache_fills_only_its_misses(tmp_path):
    path = tmp_path / "t.jsonl"
    negotiate(TranscriptCache(CountingRandomRobots(), path, replay_only=False), seed=1)
    lines = path.read_text().splitlines()
    robots = CountingRandomRobots()
    cache = TranscriptCache(robots, path, replay_only=False)
    negotiate(cache, seed=1)
    negotiate(cache, seed=2)
    assert robots.calls == cache.misses == len(path.read_text().splitlines()) - len(lines)
    record = json.loads(lines[0])
    assert {"key", "backend", "model", "settings", "last_message", "reply", "seconds"} <= set(record)
    assert "You are" not in record["last_message"]  # the system prompt is not repeated in every line


def test_a_recording_cache_copies_a_shared_transcripts_record_instead_of_calling_the_model(tmp_path):
    """MAESTRO's A7 asks A2's architect questions: a call another run recorded is copied, not made again, and the
    copy makes this transcript complete for strict replay on its own; a call nobody recorded still goes to the model."""
    other, own = tmp_path / "A2.jsonl", tmp_path / "A7.jsonl"
    recorded = negotiate(TranscriptCache(CountingRandomRobots(), other, replay_only=False), seed=1)
    robots = CountingRandomRobots()
    cache = TranscriptCache(robots, own, replay_only=False, shared=[other, tmp_path / "not-yet.jsonl"])
    copied = negotiate(cache, seed=1)
    assert robots.calls == cache.misses == 0 and cache.copied == recorded.stats["llm_calls"]
    assert copied.actions.tolist() == recorded.actions.tolist()
    assert sorted(own.read_text().splitlines()) == sorted(other.read_text().splitlines())
    negotiate(cache, seed=2)  # recorded nowhere: the model answers, and only here
    assert robots.calls == cache.misses > 0 and len(other.read_text().splitlines()) == cache.copied
    replay = TranscriptCache(None, own, replay_only=True, name="scripted", model="random-robots")
    assert negotiate(replay, seed=1).actions.tolist() == recorded.actions.tolist()
    # strict replay never reads another run's transcript: its own must hold every call
    with pytest.raises(TranscriptMiss):
        negotiate(TranscriptCache(None, tmp_path / "empty.jsonl", replay_only=True, name="scripted",
                                  model="random-robots", shared=[other]), seed=1)


def test_key_covers_backend_model_messages_and_every_setting():
    chat = [{"role": "user", "content": "hi"}]
    base = call_key("smollm2", "m", chat, GenerationSettings(seed=1))
    assert base == call_key("smollm2", "m", [dict(chat[0])], GenerationSettings(seed=1))
    variants = [call_key("openai", "m", chat, GenerationSettings(seed=1)),
                call_key("smollm2", "m2", chat, GenerationSettings(seed=1)),
                call_key("smollm2", "m", [{"role": "user", "content": "hi!"}], GenerationSettings(seed=1)),
                call_key("smollm2", "m", chat, GenerationSettings(seed=2)),
                call_key("smollm2", "m", chat, GenerationSettings(seed=1, temperature=0.7)),
                call_key("smollm2", "m", chat, GenerationSettings(seed=1, stop=("~AGREE",)))]
    assert base not in variants and len(set(variants)) == len(variants)


def test_an_interrupted_last_line_is_skipped_with_a_warning(tmp_path):
    path = tmp_path / "t.jsonl"
    negotiate(TranscriptCache(CountingRandomRobots(), path, replay_only=False))
    complete = len(path.read_text().splitlines())
    with path.open("a") as handle:
        handle.write('{"key": "abc", "reply": "half')
    with pytest.warns(UserWarning, match="unreadable last transcript line"):
        cache = TranscriptCache(None, path, replay_only=True, name="scripted", model="random-robots")
    assert len(cache) == complete


def test_recording_needs_a_backend(tmp_path):
    with pytest.raises(ValueError, match="recording needs a backend"):
        TranscriptCache(None, tmp_path / "t.jsonl", replay_only=False)
