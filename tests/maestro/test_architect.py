"""The MAESTRO architect with scripted replies: contexts validated, retried, fallen back; rewards sandboxed."""

from __future__ import annotations

import json

import pytest

from marlinkit.maestro import curriculum
from marlinkit.envs.traffic.context import TrafficContext, context_for_difficulty
from marlinkit.envs.traffic.data import find_data_dir, load_network
from marlinkit.maestro import architect as arch
from marlinkit.maestro import sandbox
from marlinkit.llm.backends.scripted import ScriptedBackend

LIMITS = sandbox.SandboxLimits(cpu_seconds=5, memory_bytes=128 * 2**20, wall_seconds=30.0)


@pytest.fixture(scope="module")
def network():
    return load_network(find_data_dir())


def recording(replies):
    """A script that answers in order and keeps every chat it was sent."""
    seen = []

    def script(messages):
        seen.append(messages)
        return replies[len(seen) - 1]
    return script, seen


def example_json(d: float) -> str:
    return json.dumps({k: v for k, v in context_for_difficulty(d).to_dict().items() if k not in arch.RUNNER_FIELDS})


def test_valid_context_is_accepted_with_runner_seed_and_duration(network):
    log = arch.GenerationLog()
    architect = arch.CurriculumArchitect(ScriptedBackend(arch.scripted_architect_replies()), network, log=log)
    context, from_llm = architect.propose(0.45, {"last score": 120.0}, episode=3, seed=7, duration_s=180)
    assert from_llm
    assert context == context_for_difficulty(0.45, seed=7, duration_s=180)
    (record,) = log.records
    assert record["accepted"] and record["kind"] == "context" and record["episode"] == 3
    assert TrafficContext.from_dict(record["context"]) == context


def test_malformed_then_out_of_schema_then_valid_is_retried_with_feedback(network):
    script, seen = recording(["Sure! Here is the traffic: demand high", '{"demand_level": 9.0}',
                              "```json\n" + example_json(0.5) + "\n```"])
    log = arch.GenerationLog()
    context, from_llm = arch.CurriculumArchitect(ScriptedBackend(script), network, log=log).propose(0.5, {}, 0, 1)
    assert from_llm and context.demand_level == context_for_difficulty(0.5).demand_level
    assert [r["accepted"] for r in log.records] == [False, False, True]
    assert "no JSON object" in log.records[0]["reason"] and "demand_level" in log.records[1]["reason"]
    assert "demand_level" in seen[2][-1]["content"]  # the schema error is fed back to the model
    assert [r["attempt"] for r in log.records] == [0, 1, 2]


def test_three_bad_replies_fall_back_to_the_deterministic_context(network):
    script, _ = recording(["{not json", '{"route_mix": {"through": 0.1, "left": 0.45, "right": 0.45}}', '["a list"]'])
    log = arch.GenerationLog()
    context, from_llm = arch.CurriculumArchitect(ScriptedBackend(script), network, log=log).propose(0.6, {}, 4, 9, 360)
    assert not from_llm
    assert context == context_for_difficulty(0.6, seed=9, duration_s=360)
    assert [r["fallback"] for r in log.records] == [False, False, False, True]
    assert log.counts("context") == (4, 0)


def test_adaptive_mode_rejects_a_load_far_from_the_difficulty_but_llm_mode_accepts_it(network):
    heavy = example_json(1.0)  # about four times the vehicles of d = 0.3
    for mode, accepted in (("llm_adaptive", False), ("llm", True)):
        log = arch.GenerationLog()
        cfg = arch.ArchitectConfig(mode=mode, max_attempts=1)
        _, from_llm = arch.CurriculumArchitect(ScriptedBackend([heavy]), network, cfg, log).propose(0.3, {}, 0, 0)
        assert from_llm is accepted
        assert accepted or log.records[0]["reason"].startswith("load:")


def test_a_context_without_traffic_is_rejected_in_both_modes(network):
    # A8's smollm2 wrote 1 veh/h per road (ue25 seed 600, episode 160: 0.8 expected vehicles): nothing to control, no
    # score
    empty = json.loads(example_json(0.3))
    empty["approach_rates_vph"] = {side: 0.0 for side in empty["approach_rates_vph"]}
    for mode in ("llm_adaptive", "llm"):
        log = arch.GenerationLog()
        cfg = arch.ArchitectConfig(mode=mode, max_attempts=2)
        replies = [json.dumps(empty), example_json(0.3)]
        context, from_llm = arch.CurriculumArchitect(ScriptedBackend(replies), network, cfg, log).propose(0.3, {}, 0, 0)
        assert from_llm and arch.expected_vehicles(context, network) > 100
        assert [r["accepted"] for r in log.records] == [False, True] and log.records[0]["reason"].startswith("empty:")


def test_good_reward_is_accepted_and_starts_the_llm_reward():
    synth = arch.RewardSynthesizer(ScriptedBackend(arch.scripted_architect_replies()), limits=LIMITS)
    state = curriculum.RewardState(pending=True, trigger="initial")
    state, source = arch.run_reward_event(synth, state, 0.3, {"last score": 100.0}, 0, 200)
    assert state.source == "llm" and not state.pending and source is not None
    assert "def compute_reward" in source
    (record,) = synth.log.records
    assert record["accepted"] and record["verdict"]["accepted"] and record["trigger"] == "initial"


@pytest.mark.parametrize("body, stage", [
    ("import os\ndef compute_reward(metrics, difficulty):\n    return 0.0\n", "syntax"),
    ("def compute_reward(metrics, difficulty):\n    return open('/etc/passwd').read()\n", "syntax"),
    ("def compute_reward(metrics, difficulty):\n    return 5.0 + 0.0 * metrics['delay']\n", "safety"),
])
def test_hostile_reward_three_failures_revert_to_the_environment_reward(body, stage):
    synth = arch.RewardSynthesizer(
        ScriptedBackend(arch.scripted_architect_replies(reward_reply=f"```python\n{body}```")), limits=LIMITS)
    state = curriculum.RewardState(source="llm", pending=True, trigger="difficulty")  # an older reward was active
    state, source = arch.run_reward_event(synth, state, 0.5, {}, 12, 300)
    assert source is None and state.source == "env" and not state.pending and state.failures == 3
    assert curriculum.training_reward([1.0, 2.0], None, 0.5, state).tolist() == [1.0, 2.0]
    rejected = [r for r in synth.log.records if not r["fallback"]]
    assert len(rejected) == 3 and all(r["stage"] == stage and not r["accepted"] for r in rejected)
    assert synth.log.records[-1]["fallback"] and "environment reward" in synth.log.records[-1]["reason"]


def test_extract_code_prefers_the_fenced_function():
    text = ("Here:\n```text\nnot code\n```\n```python\ndef compute_reward(metrics, difficulty):\n"
            "    return 0.1\n```\nBye")
    assert arch.extract_code(text) == "def compute_reward(metrics, difficulty):\n    return 0.1\n"


def test_a_context_followed_by_runaway_keys_keeps_the_context_and_logs_what_was_dropped(network):
    """SmolLM2's usual failure (from a recorded reply): a whole context, then copies of the statistics until the cap."""
    context_text = example_json(0.5)[:-1]
    runaway = context_text + ', "throughput": 5.0, "avg_queue": 4.4, "avg_delay": 20.4, "avg_queue": 4.4, "avg_de'
    log = arch.GenerationLog()
    architect = arch.CurriculumArchitect(ScriptedBackend(lambda messages: runaway), network, log=log)
    context, from_llm = architect.propose(0.5, {}, episode=0, seed=1)
    assert from_llm and context == context_for_difficulty(0.5, seed=1)
    (record,) = log.records
    assert record["accepted"] and record["reply"] == runaway
    assert ("repeated key 'avg_queue'" in record["reason"]
            and "['throughput', 'avg_queue', 'avg_delay']" in record["reason"])


@pytest.mark.parametrize("text,members,note", [
    ('ok {"a": 1, "b": {"c": [1, 2]}} bye', {"a": 1, "b": {"c": [1, 2]}}, ""),
    ('{"a": 1, "b": 2', {"a": 1, "b": 2}, "not closed"),
    ('{"a": 1, "b": {"c": 1', {"a": 1}, "after 1 member(s)"),
    ('{"a": 1, "a": 2}', {"a": 1}, "repeated key 'a'"),
    ('{"a": 1 "b": 2}', {"a": 1}, "Expecting ','"),
])
def test_read_json_object_keeps_the_members_before_the_first_bad_one(text, members, note):
    got, got_note = arch.read_json_object(text)
    assert got == members
    assert (note in got_note) if note else got_note == ""


@pytest.mark.parametrize("text", ["no json here", '{"a" 1}', "{", '{"a": }'])
def test_read_json_object_rejects_a_reply_with_no_readable_member(text):
    with pytest.raises(ValueError, match="no JSON object|invalid JSON"):
        arch.read_json_object(text)


def test_dropping_keys_never_lets_an_out_of_schema_value_through(network):
    bad = json.loads(example_json(0.5))
    bad["route_mix"] = {"through": 0.1, "left": 0.1, "right": 0.8}  # through < 0.2
    log = arch.GenerationLog()
    architect = arch.CurriculumArchitect(ScriptedBackend(lambda m: json.dumps(bad)), network, log=log)
    context, from_llm = architect.propose(0.5, {}, 0, 1)
    assert not from_llm and not any(r["accepted"] for r in log.records) and log.records[-1]["fallback"]


def test_reward_reply_stops_at_the_closing_fence_and_its_code_is_read():
    seen_settings = []

    class Recording(ScriptedBackend):
        def chat(self, messages, settings):
            seen_settings.append(settings)
            return super().chat(messages, settings)

    code = "def compute_reward(metrics, difficulty):\n    return -min(metrics['queue_length'] / 60.0, 1.0)\n"
    reply = f"```python\n{code}```\n\nThis function is simple and efficient. ```python\nbroken(\n```\n"
    synth = arch.RewardSynthesizer(Recording(lambda m: reply), limits=LIMITS)
    source, reason = synth.attempt(0.5, {}, episode=0, seed=1, number=0)
    assert seen_settings[0].stop == arch.ArchitectConfig().reward_stop
    assert source == code and reason == "accepted"
    # cut at the fence, as a live model stops there
    assert synth.log.records[0]["reply"] == f"```python\n{code.rstrip()}"
    assert arch.extract_code("```python\n" + code) == code  # an unclosed block runs to the end of the reply


def test_a_reply_cut_off_before_the_context_was_complete_is_rejected(network):
    """A recorded A8 reply: one good member, then a runaway nested object. Defaults must not fill the rest."""
    cut = '{"demand_level": 0.5, "approach_rates_vph": {"N": 1.1, "E": 1.1, "S": 1.1, "W": 1.1, "S": 1.1, "E": 1'
    log = arch.GenerationLog()
    architect = arch.CurriculumArchitect(ScriptedBackend(lambda m: cut), network, arch.ArchitectConfig(mode="llm"), log)
    _, from_llm = architect.propose(0.5, {}, 0, 1)
    assert not from_llm
    assert ("cut off before the context was complete" in log.records[0]["reason"]
            and "'route_mix'" in log.records[0]["reason"])
    whole = '{"demand_level": 0.5}'  # a closed object may leave fields to their defaults, as before
    context, from_llm = arch.CurriculumArchitect(ScriptedBackend(lambda m: whole), network,
                                                 arch.ArchitectConfig(mode="llm")).propose(0.5, {}, 0, 1)
    assert from_llm and context.demand_level == 0.5
