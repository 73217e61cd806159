"""The pre-registered analysis plan (``docs/claims.toml``): it loads, its sources and columns exist, it covers every
claim of the ledger, and a malformed plan is refused with the claim and the field named."""

from __future__ import annotations

import copy
import tomllib

import pytest

from marlinkit import claims_plan
from marlinkit.claims_plan import PlanError, check_sources, ledger_claims, load, parse, smallest_p, uncovered


@pytest.fixture(scope="module")
def committed() -> dict:
    with open(claims_plan.PLAN_PATH, "rb") as f:
        return tomllib.load(f)


@pytest.fixture
def data(committed) -> dict:
    return copy.deepcopy(committed)


def entry(data: dict, claim_id: str) -> dict:
    return next(c for c in data["claim"] if c["id"] == claim_id)


def refused(data: dict) -> list[str]:
    with pytest.raises(PlanError) as error:
        parse(data)
    return error.value.problems


def test_the_committed_plan_loads_with_claims_of_both_papers():
    plan = load()
    papers = {c.paper for c in plan.claims}
    assert papers == {"MARLIN", "MAESTRO"}
    assert len(plan.claims) >= 30
    assert len({c.id for c in plan.claims}) == len(plan.claims)
    assert plan.settings.alpha == 0.05 and plan.settings.correction == "holm"


def test_every_committed_source_exists_with_the_columns_the_plan_names():
    assert check_sources(load()) == []


def test_every_claim_of_the_ledger_has_a_plan_entry():
    claims = ledger_claims()
    assert len(claims) >= 14
    assert uncovered(load(), claims) == []


def test_an_uncovered_ledger_claim_is_reported():
    assert uncovered(load(), ["a claim nobody planned"]) == ["a claim nobody planned"]


def test_maestro_claims_on_learners_carry_the_random_gate():
    for c in load().claims:
        if c.paper == "MAESTRO" and c.protocols[0].startswith(("greedy-", "stochastic-")):
            assert "beats-random-heldout" in c.gates, c.id


def test_the_earlier_curriculum_target_is_kept_as_its_own_row():
    plan = load()
    earlier = [c for c in plan.claims if c.earlier_choice_of]
    assert [c.earlier_choice_of for c in earlier] == ["maestro-curriculum-raises-difficulty"]
    assert earlier[0].registered == "after-results" and "67.46" in earlier[0].claim


@pytest.mark.parametrize(("test", "n", "alternative", "expected"), [
    ("wilcoxon-signed-rank", 5, "two-sided", 0.0625),
    ("wilcoxon-signed-rank", 5, "greater", 0.03125),
    ("wilcoxon-signed-rank", 12, "greater", 1 / 4096),
    ("mann-whitney", 3, "greater", 0.05),
    ("sign-test", 4, "less", 0.0625),
    ("paired-t", 5, "greater", None),
])
def test_smallest_attainable_p(test, n, alternative, expected):
    floor = smallest_p(test, n, alternative)
    assert floor == (None if expected is None else pytest.approx(expected))


DELETE = object()


@pytest.mark.parametrize(("claim_id", "field", "value", "expected"), [
    pytest.param("marlin-ahead-at-100", "test", DELETE, "claim 'marlin-ahead-at-100': test: missing",
                 id="missing field"),
    pytest.param("marlin-ahead-at-100", "tset", "paired-t", "claim 'marlin-ahead-at-100': tset: unknown field",
                 id="unknown field"),
    pytest.param("maestro-a7-above-a2-mean", "test", "t-test-ish",
                 "claim 'maestro-a7-above-a2-mean': test: 't-test-ish' is not one of", id="unknown test"),
    pytest.param("marlin-executed-ahead-at-100", "test", "paired-t",
                 "claim 'marlin-executed-ahead-at-100': test: 'paired-t' needs paired data", id="paired on unpaired"),
    pytest.param("marlin-ahead-at-850", "protocol_tests", DELETE,
                 "claim 'marlin-ahead-at-850': test: 'paired-t' under 'authors-protocol' needs paired data, and the "
                 "runs there are 'unpaired'", id="paired under the authors' protocol"),
    pytest.param("marlin-at-or-above-at-1600", "protocol_tests", {"authors-protocol": "welch-t"},
                 "protocol_tests: 'welch-t' is not a test for a non-inferiority claim", id="protocol test kind"),
    pytest.param("marlin-at-or-above-at-1600", "margin", DELETE,
                 "claim 'marlin-at-or-above-at-1600': margin: a non-inferiority claim needs a declared margin",
                 id="no-loss claim without a margin"),
    pytest.param("maestro-difficulty-range", "margin_reason", DELETE,
                 "claim 'maestro-difficulty-range': margin_unit, margin_reason", id="margin without its reason"),
    pytest.param("maestro-a8-above-a2", "alternative", "two-sided",
                 "claim 'maestro-a8-above-a2': alternative: a directional", id="directional claim two-sided"),
    pytest.param("marlin-at-or-above-at-1600", "test", "paired-t",
                 "claim 'marlin-at-or-above-at-1600': test: a non-inferiority claim is tested with one of",
                 id="no-loss claim tested for superiority"),
    pytest.param("marlin-ahead-at-100", "test", "wilcoxon-signed-rank",
                 "claim 'marlin-ahead-at-100': test: wilcoxon-signed-rank (greater) on n = 5 cannot go below "
                 "p = 0.0312, above Holm's first threshold 0.01 in family 'marlin-ahead-100' (5 tests)",
                 id="rank test that cannot reach significance"),
    pytest.param("marlin-ahead-at-850", "stand_ins", ["reference-architect"],
                 "claim 'marlin-ahead-at-850': stand_ins: 'reference-architect' belongs to",
                 id="other paper's stand-in"),
    pytest.param("maestro-a8-highest-mean", "protocols", ["training-own", "greedy-heldout"],
                 "claim 'maestro-a8-highest-mean': protocols: a comparison of learners", id="training traffic first"),
    pytest.param("maestro-a8-above-a2", "gates", [], "claim 'maestro-a8-above-a2': gates:", id="no random gate"),
    pytest.param("marlin-scalability", "experiment", DELETE,
                 "claim 'marlin-scalability': not_testable_reason, experiment", id="untestable without experiment"),
    pytest.param("maestro-curriculum-raises-difficulty-target-67", "earlier_choice_of", "maestro-nothing",
                 "earlier_choice_of: 'maestro-nothing' is not another claim's id", id="earlier choice of nothing"),
    pytest.param("maestro-a7-cv-lower", "family", "stability",
                 "claim 'maestro-a7-cv-lower': family: 'stability' is not declared", id="undeclared family"),
    pytest.param("maestro-a7-traffic", "effect_scale", "percent",
                 "claim 'maestro-a7-traffic': effect_scale: 'percent' is not one of", id="unknown effect scale"),
    pytest.param("maestro-a7-worst-seed", "effect_scale", "relative",
                 "claim 'maestro-a7-worst-seed': effect_scale: 'relative' compares two groups' means",
                 id="relative effect of one sample"),
    pytest.param("maestro-a7-cv-lower", "effect_scale", "relative",
                 "claim 'maestro-a7-cv-lower': effect_scale: 'relative' compares", id="relative bootstrap statistic"),
    pytest.param("maestro-difficulty-monotone", "holds_requires", "every-unit",
                 "claim 'maestro-difficulty-monotone': holds_requires: 'every-unit' needs one difference per unit",
                 id="every unit of an association"),
])
def test_a_malformed_claim_is_refused_naming_claim_and_field(data, claim_id, field, value, expected):
    claim = entry(data, claim_id)
    if value is DELETE:
        del claim[field]
    else:
        claim[field] = value
    problems = refused(data)
    assert any(expected in p for p in problems), problems


def test_a_duplicate_id_is_refused(data):
    data["claim"].append(copy.deepcopy(entry(data, "marlin-hardware")))
    assert "claim 'marlin-hardware': id: used more than once" in refused(data)


def test_a_missing_source_or_column_is_reported(data):
    entry(data, "marlin-hardware")["sources"] = [
        {"path": "figures/paper/marlin/fig5_hardware_simulated.csv", "columns": ["system", "no_such_column"]},
        {"path": "figures/paper/marlin/no_such_file.csv", "columns": ["x"]},
        {"path": "figures/paper/marlin/later.csv", "columns": ["x"], "committed": False}]
    problems = check_sources(parse(data))
    assert problems == [
        "claim 'marlin-hardware': sources: figures/paper/marlin/fig5_hardware_simulated.csv has no column "
        "['no_such_column']",
        "claim 'marlin-hardware': sources: figures/paper/marlin/no_such_file.csv matches no committed file"]


def test_the_command_line_validates_the_plan(tmp_path, capsys):
    from marlinkit.__main__ import main

    assert main(["claims-plan"]) == 0
    assert "plan valid" in capsys.readouterr().out
    text = claims_plan.PLAN_PATH.read_text(encoding="utf-8")
    start = text.index('id = "marlin-ahead-at-100"')
    head, tail = text[:start], text[start:].replace('test = "paired-t"', 'test = "wilcoxon-signed-rank"', 1)
    bad = tmp_path / "claims.toml"
    bad.write_text(head + tail, encoding="utf-8")
    assert main(["claims-plan", "--plan", str(bad)]) == 1
    assert "cannot go below p = 0.0312" in capsys.readouterr().out


def test_a_vocabulary_entry_keeps_the_paper_the_code_gives_it(data):
    data["stand_ins"]["smollm2"]["paper"] = "MARLIN"
    assert "stand_ins: smollm2: paper is 'both'" in refused(data)


def test_every_vocabulary_entry_is_described(data):
    del data["protocols"]["greedy-real"]
    assert any(p.startswith("protocols: describes exactly") for p in refused(data))


def test_the_plan_encodes_the_rules_beyond_the_test():
    """The worst-seed claim holds only with every seed above A2's mean; the traffic claims report relative changes."""
    plan = load()
    assert plan.by_id("maestro-a7-worst-seed").holds_requires == "every-unit"
    assert {plan.by_id(i).effect_scale for i in ("maestro-a7-traffic", "maestro-a8-traffic")} == {"relative"}
    encoded = ("maestro-a7-worst-seed", "maestro-a7-traffic", "maestro-a8-traffic")
    others = [c for c in plan.claims if c.id not in encoded]
    assert {(c.effect_scale, c.holds_requires) for c in others} == {("difference", "test")}
