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


def test_a_missing_field_is_named(data):
    del entry(data, "marlin-ahead-at-100")["test"]
    assert "claim 'marlin-ahead-at-100': test: missing" in refused(data)


def test_an_unknown_field_is_named(data):
    entry(data, "marlin-ahead-at-100")["tset"] = "paired-t"
    assert "claim 'marlin-ahead-at-100': tset: unknown field" in refused(data)


def test_an_unknown_test_is_refused(data):
    entry(data, "maestro-a7-above-a2-mean")["test"] = "t-test-ish"
    problems = refused(data)
    assert any(p.startswith("claim 'maestro-a7-above-a2-mean': test: 't-test-ish' is not one of") for p in problems)


def test_a_paired_test_on_unpaired_data_is_refused(data):
    entry(data, "marlin-executed-ahead-at-100")["test"] = "paired-t"
    problems = refused(data)
    assert any("marlin-executed-ahead-at-100': test: 'paired-t' needs paired data" in p for p in problems)


def test_a_paired_test_under_the_authors_protocol_is_refused(data):
    del entry(data, "marlin-ahead-at-850")["protocol_tests"]
    problems = refused(data)
    assert any("marlin-ahead-at-850': test: 'paired-t' under 'authors-protocol' needs paired data, and the runs "
               "there are 'unpaired'" in p for p in problems)


def test_a_protocol_test_must_fit_the_claim(data):
    entry(data, "marlin-at-or-above-at-1600")["protocol_tests"] = {"authors-protocol": "welch-t"}
    assert any("protocol_tests: 'welch-t' is not a test for a non-inferiority claim" in p for p in refused(data))


def test_a_non_inferiority_claim_without_a_margin_is_refused(data):
    del entry(data, "marlin-at-or-above-at-1600")["margin"]
    problems = refused(data)
    assert any("marlin-at-or-above-at-1600': margin: a non-inferiority claim needs a declared margin" in p
               for p in problems)


def test_a_margin_without_its_reason_is_refused(data):
    del entry(data, "maestro-difficulty-range")["margin_reason"]
    assert any("maestro-difficulty-range': margin_unit, margin_reason" in p for p in refused(data))


def test_a_directional_claim_tested_two_sided_is_refused(data):
    entry(data, "maestro-a8-above-a2")["alternative"] = "two-sided"
    assert any("maestro-a8-above-a2': alternative: a directional" in p for p in refused(data))


def test_a_no_loss_claim_tested_for_superiority_is_refused(data):
    entry(data, "marlin-at-or-above-at-1600")["test"] = "paired-t"
    assert any("marlin-at-or-above-at-1600': test: a non-inferiority claim is tested with one of" in p
               for p in refused(data))


def test_a_rank_test_that_cannot_reach_significance_is_refused(data):
    entry(data, "marlin-ahead-at-100")["test"] = "wilcoxon-signed-rank"
    problems = refused(data)
    assert any("marlin-ahead-at-100': test: wilcoxon-signed-rank (greater) on n = 5 cannot go below p = 0.0312" in p
               and "family 'marlin-ahead-100' (5 tests)" in p for p in problems)


def test_a_stand_in_of_the_other_paper_is_refused(data):
    entry(data, "marlin-ahead-at-850")["stand_ins"] = ["reference-architect"]
    assert any("marlin-ahead-at-850': stand_ins: 'reference-architect' belongs to" in p for p in refused(data))


def test_a_learner_comparison_judged_on_training_traffic_is_refused(data):
    entry(data, "maestro-a8-highest-mean")["protocols"] = ["training-own", "greedy-heldout"]
    assert any("maestro-a8-highest-mean': protocols: a comparison of learners" in p for p in refused(data))


def test_a_learner_evaluation_without_the_random_gate_is_refused(data):
    entry(data, "maestro-a8-above-a2")["gates"] = []
    assert any("maestro-a8-above-a2': gates:" in p for p in refused(data))


def test_an_untestable_claim_names_its_experiment(data):
    del entry(data, "marlin-scalability")["experiment"]
    assert any("marlin-scalability': not_testable_reason, experiment" in p for p in refused(data))


def test_an_earlier_choice_points_at_an_existing_row(data):
    entry(data, "maestro-curriculum-raises-difficulty-target-67")["earlier_choice_of"] = "maestro-nothing"
    assert any("earlier_choice_of: 'maestro-nothing' is not another claim's id" in p for p in refused(data))


def test_an_undeclared_family_is_refused(data):
    entry(data, "maestro-a7-cv-lower")["family"] = "stability"
    assert any("maestro-a7-cv-lower': family: 'stability' is not declared" in p for p in refused(data))


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
    assert claims_plan.main([]) == 0
    assert "plan valid" in capsys.readouterr().out
    text = claims_plan.PLAN_PATH.read_text(encoding="utf-8")
    start = text.index('id = "marlin-ahead-at-100"')
    head, tail = text[:start], text[start:].replace('test = "paired-t"', 'test = "wilcoxon-signed-rank"', 1)
    bad = tmp_path / "claims.toml"
    bad.write_text(head + tail, encoding="utf-8")
    assert claims_plan.main(["--plan", str(bad)]) == 1
    assert "cannot go below p = 0.0312" in capsys.readouterr().out
