"""Strict replay and transcripts that cannot rot: misses and damaged lines are named errors, never a fallback.

Every transcript here is recorded by the test itself (the scripted architect behind a recording
cache), so nothing depends on the committed transcripts.
"""

from __future__ import annotations

import dataclasses

import json
import logging
import warnings

import pandas as pd
import pytest

from marlinkit import presets
from marlinkit.maestro import curriculum, curriculum_env
from marlinkit.maestro import ablation
from marlinkit.envs.traffic.data import find_data_dir, load_network
from marlinkit.maestro import architect as arch
from marlinkit.llm import config as llm_config
from marlinkit.llm.base import GenerationSettings
from marlinkit.llm.cache import TranscriptCache, TranscriptFileError, TranscriptMiss, transcript_context
from marlinkit.llm.backends.scripted import ScriptedBackend
from marlinkit.runs import ResultStore
from marlinkit.files import ResultFileError

STATS = {"episode": 3, "window mean score (target 165)": 44.7, "last score": 40.2}


@pytest.fixture(scope="module")
def network():
    return load_network(find_data_dir())


def architect_backend():
    return ScriptedBackend(arch.scripted_architect_replies(), model="maestro-architect")


def replay(path):
    return TranscriptCache(None, path, name="scripted", model="maestro-architect")


def record_a7_event(path, network):
    """A context and a reward event of an A7 run, recorded: returns what they produced."""
    cache = TranscriptCache(architect_backend(), path, replay_only=False)
    context, from_llm = arch.CurriculumArchitect(cache, network).propose(0.3, STATS, 3, seed=7, duration_s=120)
    state = curriculum.initial_reward_state(curriculum.initial_difficulty(curriculum.CurriculumConfig()))
    state, source = arch.run_reward_event(arch.RewardSynthesizer(cache), state, 0.3, STATS, 3, seed=7)
    assert from_llm and source is not None and cache.misses == 2
    return context, source


def test_a_strict_replay_reproduces_the_recorded_architect_without_the_model(tmp_path, network):
    path = tmp_path / "maestro_A7.jsonl"
    context, source = record_a7_event(path, network)
    cache = replay(path)
    again, from_llm = arch.CurriculumArchitect(cache, network).propose(0.3, STATS, 3, seed=7, duration_s=120)
    state = curriculum.initial_reward_state(curriculum.initial_difficulty(curriculum.CurriculumConfig()))
    _, replayed = arch.run_reward_event(arch.RewardSynthesizer(cache), state, 0.3, STATS, 3, seed=7)
    assert (again, from_llm, replayed) == (context, True, source) and cache.hits == 2 and cache.misses == 0


def test_a_replay_miss_propagates_out_of_the_architect_instead_of_falling_back(tmp_path, network):
    path = tmp_path / "maestro_A7.jsonl"
    record_a7_event(path, network)
    changed = {**STATS, "window mean score (target 165)": 39.8}  # training diverged: the prompt changed
    log = arch.GenerationLog()
    with pytest.raises(TranscriptMiss) as miss:
        arch.CurriculumArchitect(replay(path), network, log=log).propose(0.3, changed, 3, seed=7, duration_s=120)
    assert log.records == []  # no fallback context was logged or used
    message = str(miss.value)
    assert str(path) in message and "call 1 " in message and "seed 7063" in message  # the call: seed 7 * 1009
    assert "\n-window mean score (target 165) 44.7,\n+window mean score (target 165) 39.8,\n" in message
    assert "RECORD=1 make figures PRESET=<preset>" in message and "MARLINKIT_RECORD=1" in message
    # A7's reward event: a miss must not end in "environment reward after 3 failures".
    state = curriculum.initial_reward_state(curriculum.initial_difficulty(curriculum.CurriculumConfig()))
    with pytest.raises(TranscriptMiss, match="Nearest recorded prompt"):
        arch.run_reward_event(arch.RewardSynthesizer(replay(path)), state, 0.3, changed, 3, seed=7)


def test_a_miss_names_the_run_and_preset_and_a_changed_setting(tmp_path, network):
    path = tmp_path / "maestro_A7.jsonl"
    record_a7_event(path, network)
    with pytest.raises(TranscriptMiss) as miss, transcript_context(preset="quick"):
        with transcript_context(run="MAESTRO A7__seed200"):
            arch.CurriculumArchitect(replay(path), network).propose(0.3, STATS, 3, seed=8, duration_s=120)
    message = str(miss.value)
    assert message.startswith("run MAESTRO A7__seed200: transcript miss") and "PRESET=quick" in message
    assert "its last message is identical" in message and "settings differ: seed 7063 -> 8072" in message


def test_a_genuine_llm_failure_while_recording_is_the_papers_fallback_and_is_logged(tmp_path, network, caplog):
    cache = TranscriptCache(ScriptedBackend([], model="down"), tmp_path / "t.jsonl", replay_only=False)
    log = arch.GenerationLog()
    with caplog.at_level(logging.WARNING, logger="marlinkit.maestro.architect"):
        context, from_llm = arch.CurriculumArchitect(cache, network, log=log).propose(0.3, STATS, 3, seed=7,
                                                                                      duration_s=120)
    assert not from_llm and log.records[-1]["fallback"] and "LLM call failed" in log.records[0]["reason"]
    assert sum("LLM call failed" in r.message for r in caplog.records) == 3  # every failed attempt is logged


def test_a_damaged_line_in_the_middle_is_an_error_naming_file_and_line(tmp_path, network):
    path = tmp_path / "maestro_A7.jsonl"
    record_a7_event(path, network)
    lines = path.read_text().splitlines(keepends=True)
    path.write_text(lines[0][:40] + "\n" + "".join(lines[1:]))
    with pytest.raises(TranscriptFileError, match=rf"transcript {path}:1 is damaged: not JSON"):
        replay(path)
    record = json.loads(lines[0])
    del record["reply"]
    path.write_text(json.dumps(record) + "\n" + "".join(lines[1:]))
    with pytest.raises(TranscriptFileError, match=rf"{path}:1 is damaged: no 'reply' field"):
        replay(path)


def test_a_damaged_transcript_fails_a_maestro_run_and_names_it(tmp_path, network, monkeypatch):
    """The runner's own path: the A7 run stops with the named error instead of training on the env reward."""
    path = tmp_path / "maestro_A7_7__smollm2__SmolLM2-135M-Instruct.Q4-1.jsonl"
    path.write_text('{"key": "a", "reply": "x", "prompt_tokens": 1, "completion_tokens": 1, "seconds": 0.1, '
                    '"finish_reason": "stop"}\n{"key": "b", "re\n{"key": "c", "reply": "y", "prompt_tokens": 1, '
                    '"completion_tokens": 1, "seconds": 0.1, "finish_reason": "stop"}\n')
    monkeypatch.setattr(llm_config.paths, "TRANSCRIPTS_DIR", tmp_path)
    cfg = presets.ablation_config("smoke", seeds=[7], ablations=["A7"], llm="smollm2", workers=1)
    assert cfg.record is False  # strict replay unless MARLINKIT_RECORD=1
    with pytest.raises(TranscriptFileError, match=r"run MAESTRO A7__seed7: transcript .*Q4-1.jsonl:2 is damaged"):
        ablation.run_job(cfg, "A7", 7, curriculum_env.Calibration(1.0, 0.0), str(tmp_path))


def test_a_cut_off_last_line_is_skipped_and_the_next_record_lands_on_a_line_of_its_own(tmp_path, network):
    path = tmp_path / "maestro_A7.jsonl"
    record_a7_event(path, network)
    lines = path.read_text().splitlines(keepends=True)
    path.write_text(lines[0] + lines[1][: len(lines[1]) // 2])  # an interrupted append
    with pytest.warns(UserWarning, match=r":2: unreadable last transcript line"):
        assert len(replay(path)) == 1
    # Recording again: the lost call is re-recorded on its own line, the cut-off fragment is gone.
    with pytest.warns(UserWarning):
        record_a7_event_again = TranscriptCache(architect_backend(), path, replay_only=False)
    state = curriculum.initial_reward_state(curriculum.initial_difficulty(curriculum.CurriculumConfig()))
    with pytest.warns(UserWarning, match="removing the cut-off last line"):
        arch.run_reward_event(arch.RewardSynthesizer(record_a7_event_again), state, 0.3, STATS, 3, seed=7)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        reloaded = replay(path)
    kept = path.read_text().splitlines()
    assert len(reloaded) == 2 and kept[0] == lines[0].rstrip("\n")
    assert [json.loads(line)["key"] for line in kept] == [json.loads(line)["key"] for line in lines]


def test_a_record_lands_on_a_new_line_after_a_complete_record_without_newline(tmp_path):
    path = tmp_path / "t.jsonl"
    cache = TranscriptCache(ScriptedBackend(["one", "two"], model="m"), path, replay_only=False)
    cache.chat([{"role": "user", "content": "a"}], GenerationSettings())
    path.write_text(path.read_text().rstrip("\n"))  # a hand-edited file without its final newline
    cache.chat([{"role": "user", "content": "b"}], GenerationSettings())
    assert [json.loads(line)["reply"] for line in path.read_text().splitlines()] == ["one", "two"]


def test_recording_is_an_explicit_choice(tmp_path, monkeypatch):
    monkeypatch.delenv(llm_config.RECORD_VAR, raising=False)
    assert llm_config.cached_backend("smollm2", "t", root=tmp_path).replay_only
    assert not llm_config.cached_backend("smollm2", "t", record=True, root=tmp_path).replay_only
    monkeypatch.setenv(llm_config.RECORD_VAR, "1")
    assert not llm_config.cached_backend("smollm2", "t", root=tmp_path).replay_only
    assert presets.ablation_config("smoke").record
    monkeypatch.setenv(llm_config.RECORD_VAR, "maybe")
    with pytest.raises(ValueError, match="MARLINKIT_RECORD='maybe'"):
        llm_config.recording()


def test_a_generation_log_or_calibration_table_that_is_damaged_names_its_file(tmp_path):
    log = tmp_path / "A7__seed200.generations.jsonl"
    log.write_text('{"kind": "context"}\n{"kind": "rew\n')
    with pytest.raises(ResultFileError, match=rf"{log}:2 is damaged"):
        ablation.load_generations(log, "A7__seed200")
    cfg = presets.ablation_config("smoke")
    store = ResultStore(tmp_path)
    store.save("ablation_calibration", pd.DataFrame({"controller": ["max-pressure"], "return": [1.0]}),
               curriculum_env.calibration_config(cfg), engine_version="x", context="c")
    with pytest.raises(ResultFileError, match=r"calibration table .*ablation_calibration.csv does not hold"):
        curriculum_env.calibrate(cfg, store)


def test_a_marlin_training_miss_names_the_run_and_the_preset(tmp_path, monkeypatch):
    from marlinkit.marlin import grid
    from marlinkit.marlin import llm_trials

    monkeypatch.setattr(llm_config.paths, "TRANSCRIPTS_DIR", tmp_path / "transcripts")  # nothing recorded there
    monkeypatch.delenv(llm_config.RECORD_VAR, raising=False)
    settings = presets.get("smoke", "fig3_training", scenarios=["single_slot"], workers=1,
                           llm_only_performance={"single_slot": 0.99})  # a high threshold: Algorithm 1 asks for a plan
    source = llm_trials.negotiator(presets.get("smoke", "llm_only"), "smollm2", purpose="marlin_training")
    with pytest.raises(TranscriptMiss, match=r"(?s)^run MARLIN single_slot__marlin-\S+__seed0: transcript miss "
                                             r"in strict replay: .*marlin_training__smollm2__.*PRESET=smoke"):
        grid.run_grid(dataclasses.replace(settings, systems=("MARLIN",)), "smoke", source, root=tmp_path / "results",
                      progress=False)
    assert not (tmp_path / "transcripts").exists()  # strict replay never writes a transcript
