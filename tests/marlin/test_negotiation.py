"""MARLIN negotiation protocol with scripted robots: agreement, critique, limits, corrections, feedback."""

from __future__ import annotations

import numpy as np
import pytest

from marlinkit.envs.corridor import core
from marlinkit.envs.corridor.layouts import LAYOUT_NAMES, get_layout
from marlinkit.llm.base import LLMError
from marlinkit.marlin.negotiation import (
    CORRECTION, Negotiation, NegotiationConfig, greedy_robots, parse_reply, render_grid, system_prompt, task_prompt,
)
from marlinkit.llm.backends.scripted import ScriptedBackend

SLOT = get_layout("single_slot")
STARTS = np.array(SLOT.starts)


def proposal(a: str, b: str) -> str:
    return f"TLP: move on.\nAlice: {a} - reason.\nBob: {b} - reason."


def agreement(a: str, b: str) -> str:
    return f"Agreed Alice Action: {a}\nAgreed Bob Action: {b}\n@AGREE ~AGREE"


def plan(script, steps=1, **config):
    backend = ScriptedBackend(script)
    return Negotiation(backend, NegotiationConfig(**config)).make_plan(SLOT, STARTS, steps, seed=0), backend


def test_parser_reads_the_format_and_its_common_variants():
    assert parse_reply(agreement("@NORTH", "@WAIT")) == {"kind": "agreement", "actions": [1, 0], "tlp": ""}
    assert parse_reply(proposal("@EAST", "@SOUTH"))["actions"] == [4, 2]
    loose = "**TLP:** go\n* **Alice**: @forward - up\n- bob:  left because"
    assert parse_reply(loose) == {"kind": "proposal", "actions": [1, 3], "tlp": "go"}
    assert parse_reply("agreed alice action: north\n agreed BOB action - @backward")["actions"] == [1, 2]
    # One robot's action missing, or no action word: malformed, never a guess.
    assert parse_reply("Alice: @NORTH - go")["kind"] == "malformed"
    assert parse_reply("Alice: I think so\nBob: sure")["kind"] == "malformed"
    assert parse_reply("")["kind"] == "malformed"


def test_agreement_after_one_proposal_moves_both_robots():
    result, backend = plan([proposal("@NORTH", "@SOUTH"), agreement("@NORTH", "@SOUTH")])
    assert result.actions.tolist() == [[1, 2]]
    assert result.stats["llm_calls"] == 2 and result.stats["agreements"] == 1
    assert [e["kind"] for e in result.transcript] == ["system_prompt", "task", "proposal", "agreement", "simulated"]
    assert result.transcript[2]["speaker"] == "Bob" and result.transcript[3]["speaker"] == "Alice"  # leader decides
    # Performance is the corridor's own measure of the simulated end state.
    end, _ = core.rollout(core.layout_arrays(SLOT), result.actions)
    assert result.performance == pytest.approx(core.performance(core.layout_arrays(SLOT), end)[0])
    assert result.performance == pytest.approx(1 / 7)


def test_critique_then_agreement_uses_the_agreed_moves_and_shows_each_robot_the_other():
    seen = []

    def script(messages):
        seen.append(messages)
        return [proposal("@NORTH", "@SOUTH"), proposal("@NORTH", "@WAIT") + "\nBob should wait.",
                proposal("@NORTH", "@WAIT"), agreement("@NORTH", "@WAIT")][len(seen) - 1]

    result, _ = plan(script)
    assert result.actions.tolist() == [[1, 0]]
    assert result.stats["llm_calls"] == 4
    assert [e["kind"] for e in result.transcript[2:6]] == ["proposal", "critique", "critique", "agreement"]
    # The leader's first message holds the task and Bob's proposal; Bob then hears Alice's critique.
    assert "Task: Alice is at (1, 0)" in seen[1][-1]["content"] and "Bob says:" in seen[1][-1]["content"]
    assert seen[2][-1]["content"].startswith("Alice says:\n") and "Bob should wait." in seen[2][-1]["content"]
    # The worked example opens each chat as one earlier exchange, then the real turns follow.
    assert [m["role"] for m in seen[3]] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert seen[0][1]["content"].startswith("Task (an example") and seen[0][2]["content"].startswith("TLP:")
    assert seen[1][2]["content"].startswith("Agreed Alice Action: @WAIT")  # the leader's example is an agreement


def test_message_limit_ends_in_a_forced_final_query():
    script = [proposal("@NORTH", "@WAIT")] * 4 + [agreement("@WAIT", "@SOUTH")]
    result, _ = plan(script, max_rounds=2)
    assert result.stats["llm_calls"] == 5 and result.stats["forced_queries"] == 1
    assert result.actions.tolist() == [[0, 2]]
    kinds = [e["kind"] for e in result.transcript]
    assert kinds[kinds.index("forced_query") + 1] == "agreement"


def test_malformed_replies_get_one_correction_then_fall_back_to_wait():
    garbage = "I like corridors."
    result, _ = plan([garbage] * 6, max_rounds=1)
    # Each of the two turns and the forced query: reply + one correction = 6 calls, never more.
    assert result.stats["llm_calls"] == 6
    assert result.stats["corrections"] == 3 and result.stats["parse_failures"] == 6
    assert result.stats["fallbacks"] == 1 and result.actions.tolist() == [[0, 0]]
    requests = [e for e in result.transcript if e["kind"] == "correction_request"]
    assert len(requests) == 3 and requests[0]["text"] == CORRECTION.format(a="Alice", b="Bob")


def test_a_correction_that_works_is_used():
    result, _ = plan(["nonsense", proposal("@NORTH", "@SOUTH"), agreement("@NORTH", "@SOUTH")])
    assert result.actions.tolist() == [[1, 2]]
    assert result.stats["corrections"] == 1 and result.stats["parse_failures"] == 1
    assert result.stats["format_ok"] == 1 and result.stats["replies"] == 2


def test_blocked_moves_are_fed_back_as_error_text_at_the_next_move():
    tasks = []

    def script(messages):
        if "says:" not in messages[-1]["content"]:
            tasks.append(messages[-1]["content"])
            return proposal("@WEST", "@SOUTH")
        return agreement("@WEST", "@SOUTH") if len(tasks) == 1 else agreement("@NORTH", "@SOUTH")

    result, _ = plan(script, steps=2)
    assert result.stats["invalid_moves"] == 1
    assert result.actions.tolist() == [[3, 2], [1, 2]]
    assert ("Alice cannot take action @WEST from (1, 0)" in tasks[1]
            and "Last move: Alice @WEST, Bob @SOUTH." in tasks[1])
    assert "error" not in tasks[0]
    assert result.transcript[-1]["positions"] == [[1, 1], [1, 5]]


def test_collision_error_names_the_other_robot():
    near = np.array([[1, 2], [1, 3]])
    result = Negotiation(ScriptedBackend([proposal("@NORTH", "@SOUTH"), agreement("@NORTH", "@SOUTH")]),
                         ).make_plan(SLOT, near, 1, seed=0)
    sim = result.transcript[-1]
    assert "Alice cannot take action @NORTH from (1, 2) when Bob is at (1, 3)" in sim["text"]
    assert "Bob cannot take action @SOUTH from (1, 3) when Alice is at (1, 2)" in sim["text"]
    assert sim["positions"] == [[1, 2], [1, 3]] and result.stats["invalid_moves"] == 2


@pytest.mark.parametrize("junk",
                         ["", "\x00\ufffd" * 50, "Agreed Alice Action:", "@AGREE ~AGREE", "Alice: @NORTH\n" * 40])
def test_nothing_the_model_writes_crashes_a_plan(junk):
    result, _ = plan(lambda messages: junk, steps=3, max_rounds=1)
    assert result.actions.shape[1] == 2 and set(result.actions.ravel()) <= set(range(core.N_ACTIONS))
    assert 0.0 <= result.performance <= 1.0


def test_greedy_script_plays_the_protocol_on_every_layout_and_stall_limit_stops_early():
    for name in LAYOUT_NAMES:
        layout = get_layout(name)
        result = Negotiation(ScriptedBackend(greedy_robots, "greedy-robots"),
                             NegotiationConfig(stall_limit=3)).make_plan(layout, np.array(layout.starts), 50, seed=0)
        assert result.stats["format_ok"] == result.stats["replies"] > 0
        assert result.stats["fallbacks"] == 0 and result.stats["invalid_moves"] == 0
        # Face to face in a corridor nobody moves: three still moves end the negotiation.
        assert result.transcript[-1]["kind"] == "stalled" and len(result.actions) < 50
        end, _ = core.rollout(core.layout_arrays(layout), result.actions)
        assert result.performance == pytest.approx(core.performance(core.layout_arrays(layout), end)[0])


def test_plan_stops_when_both_robots_reach_their_goals():
    goals = np.array(SLOT.goals)
    result = Negotiation(ScriptedBackend(greedy_robots, "greedy-robots")).make_plan(SLOT, goals, 50, seed=0)
    assert len(result.actions) == 0 and result.performance == 1.0 and result.stats["llm_calls"] == 0


def test_prompts_carry_grid_rules_scenario_and_optional_parts():
    config = NegotiationConfig(preferences="Alice goes first.")
    text = system_prompt(SLOT, me=1, leader=0, config=config)
    assert text.startswith("**Instructions**\nYou are Bob, a robot. Alice is the leader.")
    assert "@NORTH (x, y) -> (x, y+1)" in text and "single side slot at (0, 3)" in text
    assert "y=3   .   .   # " in render_grid(SLOT) and "Free cells: (1, 0), (1, 1), (1, 2), (0, 3)" in text
    assert text.endswith("**Operator preferences**\nAlice goes first.")
    task = task_prompt(STARTS, np.array(SLOT.goals), 0, None, ["E."])
    assert "Alice is at (1, 0) and Bob is at (1, 7)" in task and "The previous move resulted in an error. E." in task


def test_without_the_worked_example_chats_start_at_the_task():
    seen = []

    def script(messages):
        seen.append(messages)
        return agreement("@NORTH", "@WAIT")

    Negotiation(ScriptedBackend(script), NegotiationConfig(worked_example=False)).make_plan(SLOT, STARTS, 1)
    assert [m["role"] for m in seen[0]] == ["system", "user"] and seen[0][1]["content"].startswith("Task: Alice")


def test_invalid_inputs_fail_before_any_call():
    negotiation = Negotiation(ScriptedBackend([]))
    with pytest.raises(ValueError, match="not a free cell"):
        negotiation.make_plan(SLOT, np.array([[0, 0], [1, 7]]), 5)
    with pytest.raises(ValueError, match="steps_left"):
        negotiation.make_plan(SLOT, STARTS, 0)
    with pytest.raises(ValueError, match="leader"):
        NegotiationConfig(leader="bob")
    with pytest.raises(ValueError, match="temperature"):
        NegotiationConfig(temperature=-1)
    with pytest.raises(LLMError, match="only 0 replies"):
        negotiation.make_plan(SLOT, STARTS, 1)


def test_random_leader_is_seeded():
    def leaders(seed):
        result = (Negotiation(ScriptedBackend(greedy_robots, "greedy-robots"), NegotiationConfig(leader="random"))
                  .make_plan(get_layout("two_path"), np.array(get_layout("two_path").starts), 6, seed=seed))
        return [e["speaker"] for e in result.transcript if e["kind"] == "task"]

    assert leaders(1) == leaders(1)
    assert ({tuple(leaders(s)) for s in range(4)} != {tuple(leaders(0))}
            and set(sum(map(leaders, range(4)), [])) == {"Alice", "Bob"})
