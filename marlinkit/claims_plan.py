"""The pre-registered analysis plan: every empirical claim of both papers, as data (``docs/claims.toml``).

For each claim the plan names the paper's words and where they stand, the metric and its sources (committed CSVs
and their columns, or data still to come), the protocols and stand-ins it is judged under, the comparison and its
unit, the test, the Holm family, the margin where a "no loss" or "equivalent" claim needs one, the smallest n, what
to do where the test cannot reach significance, the verdict rule and, for MAESTRO, the gates a verdict must pass.
This module loads it into frozen dataclasses and refuses a malformed plan, naming the claim and the field:

* every field is present, typed and drawn from its vocabulary (:data:`TESTS`, :data:`KINDS`, :data:`STAND_INS`,
  :data:`PROTOCOLS`, :data:`GATES`, ...), and belongs to the claim's paper;
* the test fits the data (a paired test needs paired runs) and the claim (a non-inferiority or equivalence claim
  needs its test and a declared margin; a directional claim a one-sided test);
* an exact rank test can go below Holm's first threshold (alpha / family size) at the claim's smallest n;
* a row kept from a choice made after results were seen says so and points at the row that replaces it.

:func:`check_sources` checks that every committed source exists and has the columns the plan names;
:func:`uncovered` lists the ledger's claims no plan entry covers. The verdicts themselves are computed elsewhere.

Usage: ``python -m marlinkit claims-plan`` (validates the plan and its sources, prints the claims per paper).
"""

from __future__ import annotations

import csv
import gzip
import io
import math
import tomllib
from dataclasses import MISSING, dataclass, fields
from pathlib import Path
from typing import Any

from marlinkit import paths

PLAN_PATH = paths.REPO_ROOT / "docs" / "claims.toml"
PAPERS = ("MARLIN", "MAESTRO")
#: What a claim asserts: a direction, "not worse by more than the margin", "equal within the margin", a trend.
KINDS = ("superiority", "non-inferiority", "equivalence", "association", "not-testable")
PAIRINGS = ("paired", "unpaired", "one-sample", "association")
ALTERNATIVES = ("greater", "less", "two-sided")
UNITS = ("seed", "run", "corridor-seed", "trial", "difficulty-level")
#: How a claim's cells (corridors, metrics, flows) give its verdict: one test; every cell must agree (cells both ways
#: are mixed); every cell must hold and any contradicted cell contradicts; as all-cells, but a contradicted cell with
#: none holding contradicts; or the majority of cells decides.
AGGREGATES = ("single", "all-cells", "any-contradicts", "reversal-contradicts", "majority")
REGISTRATIONS = ("before-results", "after-results")
#: How a cell's effect is reported: the difference the test is run on (``x - y``, ``x - null``, the statistic), or the
#: relative change of the means, ``mean(x) / mean(y) - 1``, with its bootstrap CI (the test stays on the differences).
EFFECT_SCALES = ("difference", "relative")
#: What "holds" needs beyond the test: nothing, or every unit's difference in the paper's direction (the worst unit's
#: margin is reported, and a cell whose test holds while a unit falls short is inconclusive).
HOLDS_REQUIREMENTS = ("test", "every-unit")
VERDICTS = ("holds", "contradicted", "equivalent", "inconclusive", "not testable")
SUMMARY_VERDICTS = ("mixed", "depends on the stand-in")
#: Each test and the pairings it may be applied to.
TESTS: dict[str, tuple[str, ...]] = {
    "paired-t": ("paired",),
    "wilcoxon-signed-rank": ("paired", "one-sample"),
    "sign-test": ("paired", "one-sample"),
    "mcnemar-exact": ("paired",),
    "paired-bootstrap": ("paired",),
    "welch-t": ("unpaired",),
    "mann-whitney": ("unpaired",),
    "bootstrap": ("unpaired",),
    "one-sample-t": ("one-sample",),
    "noninferiority-paired-t": ("paired",),
    "noninferiority-welch-t": ("unpaired",),
    "tost-paired-t": ("paired",),
    "tost-welch-t": ("unpaired",),
    "tost-one-sample-t": ("one-sample",),
    "spearman": ("association",),
    "none": PAIRINGS,
}
#: The tests each kind of claim may use.
KIND_TESTS: dict[str, frozenset[str]] = {
    "superiority": frozenset({"paired-t", "wilcoxon-signed-rank", "sign-test", "mcnemar-exact", "paired-bootstrap",
                              "welch-t", "mann-whitney", "bootstrap", "one-sample-t"}),
    "non-inferiority": frozenset({"noninferiority-paired-t", "noninferiority-welch-t"}),
    "equivalence": frozenset({"tost-paired-t", "tost-welch-t", "tost-one-sample-t"}),
    "association": frozenset({"spearman"}),
    "not-testable": frozenset({"none"}),
}
#: Each stand-in for an LLM role and the papers it serves ("none": the claim involves no LLM role).
STAND_INS: dict[str, tuple[str, ...]] = {
    "calibrated-surrogate": ("MARLIN",), "exact-planner": ("MARLIN",), "smollm2": PAPERS,
    "reference-architect": ("MAESTRO",), "none": PAPERS}
#: Each protocol and its paper; MAESTRO's name the policy (greedy = the paper's deterministic evaluation) and traffic.
PROTOCOLS: dict[str, str] = {
    "equal-copies": "MARLIN", "authors-protocol": "MARLIN", "simulated-hardware": "MARLIN", "dynamic-layout": "MARLIN",
    "greedy-heldout": "MAESTRO", "greedy-real": "MAESTRO", "greedy-contexts": "MAESTRO",
    "stochastic-heldout": "MAESTRO", "stochastic-real": "MAESTRO", "training-own": "MAESTRO",
    "fixed-time-sweep": "MAESTRO", "run-accounting": "MAESTRO"}
#: Conditions a row must pass before it gets a verdict, and their paper.
GATES: dict[str, str] = {"beats-random-heldout": "MAESTRO", "a7-distinct": "MAESTRO"}
#: Protocols whose runs share no seeds: a claim paired elsewhere is unpaired there, and names its test for them.
UNPAIRED_PROTOCOLS = frozenset({"authors-protocol"})
#: The gate that makes a claim a comparison of learners' quality (its primary protocol must be an evaluation).
LEARNER_GATE = "beats-random-heldout"
#: Each configuration's score on its own curriculum traffic: never the primary protocol of a comparison of learners.
TRAINING_PROTOCOL = "training-own"
#: The learners' evaluations (MAESTRO): a claim judged primarily on one of these carries :data:`LEARNER_GATE`.
EVALUATION_PROTOCOLS = ("greedy-", "stochastic-")


class PlanError(ValueError):
    """A malformed plan; ``problems`` lists each as "claim '<id>': <field>: <what is wrong>"."""

    def __init__(self, problems: list[str]):
        super().__init__("the analysis plan is malformed:\n  " + "\n  ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class Source:
    """One file a claim's numbers come from."""

    path: str
    """Relative to the repository root; may hold a glob pattern (``*``) over runs."""
    columns: tuple[str, ...]
    """The columns the metric reads."""
    committed: bool = True
    """False for data that does not exist yet (the plan names the columns it will have)."""


@dataclass(frozen=True)
class Claim:
    """One empirical claim of a paper and how it is judged."""

    id: str
    """``marlin-...`` or ``maestro-...``, unique."""
    paper: str
    """One of :data:`PAPERS`."""
    claim: str
    """The claim in the paper's words."""
    location: str
    """Where the paper makes it: section, table, figure."""
    kind: str
    """One of :data:`KINDS`."""
    metric: str
    """What is measured, per unit."""
    sources: tuple[Source, ...]
    """The files the metric is read from."""
    comparison: str
    """What is set against what (the effect's sign follows the paper's direction)."""
    protocols: tuple[str, ...]
    """The protocols it is judged under (:data:`PROTOCOLS`); the first gives the summary verdict."""
    stand_ins: tuple[str, ...]
    """The stand-ins it is judged under, one row each (:data:`STAND_INS`)."""
    unit: str
    """The unit of analysis (:data:`UNITS`)."""
    pairing: str
    """Whether the compared values share seeds (:data:`PAIRINGS`)."""
    test: str
    """One of :data:`TESTS`."""
    alternative: str
    """The test's alternative in the paper's direction (:data:`ALTERNATIVES`)."""
    family: str
    """The Holm family (a key of the plan's ``families``)."""
    cells: int
    """How many tests one row holds (corridors, metrics, flows)."""
    aggregate: str
    """How the cells give the claim's verdict (:data:`AGGREGATES`)."""
    min_n: int
    """The smallest n per group the test is run with."""
    low_n: str
    """What happens where the test cannot reach significance at the available n."""
    gates: tuple[str, ...]
    """Conditions before a verdict (:data:`GATES`)."""
    verdict_rule: str
    """How the verdict follows from the test."""
    registered: str
    """Whether the plan was fixed before or after the results it governs were seen (:data:`REGISTRATIONS`)."""
    registration_note: str
    """What was seen when, in a sentence or two."""
    margin: float | None = None
    """The equivalence, non-inferiority or superiority margin, in ``margin_unit``."""
    margin_unit: str = ""
    margin_reason: str = ""
    not_testable_reason: str = ""
    """Why no run here can test it (kind ``not-testable``)."""
    experiment: str = ""
    """The experiment that would test it (kind ``not-testable``)."""
    earlier_choice_of: str = ""
    """The id of the row that replaces this one, where this row keeps a choice made after results were seen."""
    departure: str = ""
    """Where the plan departs from an earlier measurement of the claim, and why."""
    ledger: tuple[str, ...] = ()
    """The claims ledger's rows this entry governs, by their text."""
    protocol_tests: tuple[tuple[str, str], ...] = ()
    """(protocol, test) where a protocol other than the primary one needs another test (e.g. no shared seeds)."""
    effect_scale: str = "difference"
    """How the effect is reported (:data:`EFFECT_SCALES`)."""
    holds_requires: str = "test"
    """What "holds" needs beyond the test (:data:`HOLDS_REQUIREMENTS`)."""

    def test_for(self, protocol: str) -> str:
        """The test a row under ``protocol`` is judged with."""
        return dict(self.protocol_tests).get(protocol, self.test)

    def pairing_for(self, protocol: str) -> str:
        """The pairing of the runs under ``protocol``: paired claims are unpaired under :data:`UNPAIRED_PROTOCOLS`."""
        return "unpaired" if protocol in UNPAIRED_PROTOCOLS and self.pairing == "paired" else self.pairing


@dataclass(frozen=True)
class Settings:
    """The plan's global settings."""

    alpha: float
    power: float
    correction: str
    bootstrap_resamples: int
    ci_level: float
    effect_ci: str
    holm_scope: str
    directional_tests: str
    not_reachable: str


@dataclass(frozen=True)
class Plan:
    """The whole plan: settings, the vocabularies' descriptions and the claims."""

    settings: Settings
    verdicts: dict[str, str]
    summary_verdicts: dict[str, str]
    stand_ins: dict[str, str]
    protocols: dict[str, str]
    gates: dict[str, str]
    families: dict[str, str]
    claims: tuple[Claim, ...]

    def by_id(self, claim_id: str) -> Claim:
        return next(c for c in self.claims if c.id == claim_id)

    def family_size(self, family: str) -> int:
        """The tests one stand-in and protocol holds in ``family``: the sum of its claims' cells."""
        return sum(c.cells for c in self.claims if c.family == family)


# ----- loading --------------------------------------------------------------------------------------------------

_REQUIRED = tuple(f.name for f in fields(Claim) if f.default is MISSING and f.default_factory is MISSING)
_LISTS = frozenset({"protocols", "stand_ins", "gates", "ledger"})
_INTS = frozenset({"cells", "min_n"})
_SOURCE_KEYS = frozenset({"path", "columns", "committed"})


def _strings(value: Any) -> tuple[str, ...] | None:
    if isinstance(value, list) and all(isinstance(v, str) and v for v in value):
        return tuple(value)
    return None


def _source(value: Any) -> tuple[Source | None, str]:
    if not isinstance(value, dict):
        return None, "each source is a table {path, columns, committed}"
    if set(value) - _SOURCE_KEYS or not {"path", "columns"} <= set(value):
        return None, f"a source has exactly the keys path, columns and optionally committed, not {sorted(value)}"
    columns = _strings(value["columns"])
    if not isinstance(value["path"], str) or not value["path"] or not columns:
        return None, f"source {value.get('path')!r}: a non-empty path and a non-empty list of column names"
    committed = value.get("committed", True)
    if not isinstance(committed, bool):
        return None, f"source {value['path']!r}: committed is true or false"
    return Source(value["path"], columns, committed), ""


def _typed(key: str, value: Any) -> tuple[Any, str]:
    """``value`` as the type of the claim's field ``key``, or a problem."""
    if key == "sources":
        if not isinstance(value, list):
            return None, "a list of source tables"
        parsed = [_source(v) for v in value]
        problem = next((p for _, p in parsed if p), "")
        return (tuple(s for s, _ in parsed), "") if not problem else (None, problem)
    if key == "protocol_tests":
        ok = isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
        return (tuple(value.items()), "") if ok else (None, "a table of protocol = test")
    if key in _LISTS:
        strings = _strings(value)
        return (strings, "") if strings is not None else (None, "a list of non-empty strings")
    if key in _INTS:
        ok = isinstance(value, int) and not isinstance(value, bool)
        return (value, "") if ok else (None, f"an integer, not {value!r}")
    if key == "margin":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return (float(value), "") if ok else (None, f"a number, not {value!r}")
    if not isinstance(value, str):
        return None, f"a string, not {value!r}"
    return value.strip(), ""


def _claim(raw: dict[str, Any], defaults: dict[str, dict[str, Any]], problems: list[str]) -> Claim | None:
    """One claim from its table, the paper's defaults filled in; None (and problems) where it cannot be built."""
    where = f"claim {raw.get('id', '<no id>')!r}"
    paper = raw.get("paper")
    merged = {**defaults.get(paper, {}), **raw} if isinstance(paper, str) else dict(raw)
    known = {f.name for f in fields(Claim)}
    count = len(problems)
    problems += [f"{where}: {key}: unknown field" for key in sorted(set(merged) - known)]
    problems += [f"{where}: {key}: missing" for key in _REQUIRED if key not in merged]
    values = {}
    for key in sorted(known & set(merged)):
        value, problem = _typed(key, merged[key])
        if problem:
            problems.append(f"{where}: {key}: {problem}")
        values[key] = value
    return Claim(**values) if len(problems) == count else None


def _settings(raw: Any, problems: list[str]) -> Settings | None:
    names = [f.name for f in fields(Settings)]
    if not isinstance(raw, dict) or set(raw) != set(names):
        problems.append(f"settings: the keys are exactly {names}")
        return None
    settings = Settings(**raw)
    if not (isinstance(settings.alpha, float) and 0 < settings.alpha < 1):
        problems.append(f"settings: alpha: a number between 0 and 1, not {settings.alpha!r}")
    if not (isinstance(settings.power, float) and 0 < settings.power < 1):
        problems.append(f"settings: power: a number between 0 and 1, not {settings.power!r}")
    if not (isinstance(settings.bootstrap_resamples, int) and settings.bootstrap_resamples >= 1000):
        problems.append(f"settings: bootstrap_resamples: an integer >= 1000, not {settings.bootstrap_resamples!r}")
    if settings.correction != "holm":
        problems.append(f"settings: correction: 'holm', not {settings.correction!r}")
    return settings


#: The vocabularies whose entries the plan describes with their paper ("both" for a name serving both).
_PAPER_OF = {"stand_ins": {k: v[0] if len(v) == 1 else "both" for k, v in STAND_INS.items()},
             "protocols": PROTOCOLS, "gates": GATES}


def _descriptions(raw: dict[str, Any], table: str, problems: list[str]) -> dict[str, str]:
    """A table of names -> descriptions (``[stand_ins.<name>] description = ...`` or ``[verdicts] name = ...``); a
    stand-in's, protocol's or gate's ``paper`` is the one the code gives it."""
    out = {}
    for name, value in raw.get(table, {}).items():
        text = value.get("description") if isinstance(value, dict) else value
        if not isinstance(text, str) or not text.strip():
            problems.append(f"{table}: {name}: a description")
        expected = _PAPER_OF.get(table, {}).get(name)
        if expected and (not isinstance(value, dict) or value.get("paper") != expected):
            problems.append(f"{table}: {name}: paper is {expected!r}")
        out[name] = text if isinstance(text, str) else ""
    return out


def parse(data: dict[str, Any]) -> Plan:
    """The plan from its parsed TOML, validated (:class:`PlanError` lists every problem)."""
    problems: list[str] = []
    if data.get("schema") != 1:
        problems.append(f"schema: 1, not {data.get('schema')!r}")
    settings = _settings(data.get("settings"), problems)
    tables = {t: _descriptions(data, t, problems)
              for t in ("verdicts", "summary_verdicts", "stand_ins", "protocols", "gates", "families")}
    defaults = data.get("defaults", {})
    raw_claims = data.get("claim", [])
    if not raw_claims:
        problems.append("claim: the plan has no claims")
    claims = [_claim(raw, defaults, problems) for raw in raw_claims]
    if problems or settings is None:
        raise PlanError(problems)
    plan = Plan(settings, claims=tuple(c for c in claims if c is not None), **tables)
    problems = validate(plan)
    if problems:
        raise PlanError(problems)
    return plan


def load(path: Path = PLAN_PATH) -> Plan:
    """The plan in ``path`` (default ``docs/claims.toml``), validated."""
    with open(path, "rb") as f:
        return parse(tomllib.load(f))


# ----- validation -----------------------------------------------------------------------------------------------

def smallest_p(test: str, n: int, alternative: str) -> float | None:
    """The smallest p an exact rank test can give with ``n`` per group (None for tests with no floor): a one-sided
    Wilcoxon signed-rank, sign or exact McNemar test on ``n`` pairs gives 2^-n at best, a Mann-Whitney U on ``n``
    against ``n`` 1 / C(2n, n), Spearman's rho over ``n`` levels 1 / n!; two-sided, twice that."""
    floors = {"wilcoxon-signed-rank": 0.5 ** n, "sign-test": 0.5 ** n, "mcnemar-exact": 0.5 ** n,
              "mann-whitney": 1 / math.comb(2 * n, n), "spearman": 1 / math.factorial(n)}
    if test not in floors:
        return None
    return min(1.0, floors[test] * (2 if alternative == "two-sided" else 1))


def _vocabulary_problems(c: Claim) -> list[str]:
    where, out = f"claim {c.id!r}", []
    choices = {"paper": PAPERS, "kind": KINDS, "pairing": PAIRINGS, "alternative": ALTERNATIVES, "unit": UNITS,
               "aggregate": AGGREGATES, "registered": REGISTRATIONS, "test": tuple(TESTS),
               "effect_scale": EFFECT_SCALES, "holds_requires": HOLDS_REQUIREMENTS}
    for name, allowed in choices.items():
        if getattr(c, name) not in allowed:
            out.append(f"{where}: {name}: {getattr(c, name)!r} is not one of {list(allowed)}")
    if not c.id.startswith(f"{c.paper.lower()}-"):
        out.append(f"{where}: id: starts with '{c.paper.lower()}-' (the claim's paper)")
    for name, vocabulary in (("stand_ins", STAND_INS), ("protocols", PROTOCOLS), ("gates", GATES)):
        for value in getattr(c, name):
            papers = vocabulary.get(value)
            if papers is None:
                out.append(f"{where}: {name}: unknown {value!r} (known: {sorted(vocabulary)})")
            elif c.paper not in papers:
                out.append(f"{where}: {name}: {value!r} belongs to {papers}, not {c.paper}")
    if not c.stand_ins or not c.protocols:
        out.append(f"{where}: stand_ins, protocols: at least one each")
    if "none" in c.stand_ins and len(c.stand_ins) > 1:
        out.append(f"{where}: stand_ins: 'none' (no LLM role) excludes every stand-in")
    for name in ("claim", "location", "metric", "comparison", "low_n", "verdict_rule", "registration_note"):
        if not getattr(c, name):
            out.append(f"{where}: {name}: empty")
    return out


def _test_problems(c: Claim) -> list[str]:
    where, out = f"claim {c.id!r}", []
    if c.test in TESTS and c.pairing not in TESTS[c.test]:
        out.append(f"{where}: test: {c.test!r} needs {' or '.join(TESTS[c.test])} data, and the claim's pairing is "
                   f"{c.pairing!r}")
    if c.kind in KIND_TESTS and c.test not in KIND_TESTS[c.kind]:
        out.append(f"{where}: test: a {c.kind} claim is tested with one of {sorted(KIND_TESTS[c.kind])}, "
                   f"not {c.test!r}")
    out += _protocol_test_problems(c) + _scale_problems(c)
    one_sided = c.kind in ("superiority", "non-inferiority", "association")
    if one_sided and c.alternative == "two-sided":
        out.append(f"{where}: alternative: a directional ({c.kind}) claim is tested one-sided in the paper's "
                   f"direction ('greater' or 'less')")
    if c.kind == "equivalence" and c.alternative != "two-sided":
        out.append(f"{where}: alternative: an equivalence claim (TOST) is 'two-sided'")
    if c.min_n < 2:
        out.append(f"{where}: min_n: at least 2, not {c.min_n}")
    if c.cells < 1 or (c.aggregate == "single") != (c.cells == 1):
        out.append(f"{where}: cells, aggregate: one cell is 'single', several are another aggregate "
                   f"(cells {c.cells}, aggregate {c.aggregate!r})")
    primary = c.protocols[0] if c.protocols else ""
    if LEARNER_GATE in c.gates and primary == TRAINING_PROTOCOL:
        out.append(f"{where}: protocols: a comparison of learners is judged primarily on an evaluation, not on "
                   f"'{TRAINING_PROTOCOL}' (each configuration's own training traffic)")
    if primary.startswith(EVALUATION_PROTOCOLS) and LEARNER_GATE not in c.gates:
        out.append(f"{where}: gates: a claim judged on the learners' evaluation ({primary!r}) carries the gate "
                   f"{LEARNER_GATE!r}")
    return out


def _protocol_test_problems(c: Claim) -> list[str]:
    """The tests of the protocols other than the primary one: known, fit for the claim, fit for those runs."""
    where, out = f"claim {c.id!r}", []
    for protocol, test in c.protocol_tests:
        if protocol not in c.protocols[1:]:
            out.append(f"{where}: protocol_tests: {protocol!r} is not one of the claim's other protocols")
        if test not in TESTS or (c.kind in KIND_TESTS and test not in KIND_TESTS[c.kind]):
            out.append(f"{where}: protocol_tests: {test!r} is not a test for a {c.kind} claim")
    for protocol in c.protocols[1:]:
        test, pairing = c.test_for(protocol), c.pairing_for(protocol)
        if test in TESTS and pairing not in TESTS[test]:
            out.append(f"{where}: test: {test!r} under {protocol!r} needs {' or '.join(TESTS[test])} data, and the "
                       f"runs there are {pairing!r}: name its test in protocol_tests")
    return out


def _scale_problems(c: Claim) -> list[str]:
    """A relative effect needs two groups of values; "every unit" needs one difference per unit."""
    where, out = f"claim {c.id!r}", []
    tests = {c.test, *(t for _, t in c.protocol_tests)}
    if c.effect_scale == "relative" and (c.pairing not in ("paired", "unpaired") or "paired-bootstrap" in tests):
        out.append(f"{where}: effect_scale: 'relative' compares two groups' means (paired or unpaired values, not "
                   f"{c.pairing!r} or a bootstrap statistic)")
    if c.holds_requires == "every-unit" and c.pairing not in ("paired", "one-sample"):
        out.append(f"{where}: holds_requires: 'every-unit' needs one difference per unit (paired or one-sample), "
                   f"not {c.pairing!r}")
    return out


def _margin_problems(c: Claim) -> list[str]:
    where, out = f"claim {c.id!r}", []
    if c.kind in ("non-inferiority", "equivalence") and c.margin is None:
        out.append(f"{where}: margin: a {c.kind} claim needs a declared margin (with margin_unit and margin_reason)")
    if c.margin is not None:
        if not (math.isfinite(c.margin) and c.margin > 0):
            out.append(f"{where}: margin: a positive number, not {c.margin!r}")
        if not c.margin_unit or not c.margin_reason:
            out.append(f"{where}: margin_unit, margin_reason: a margin states its unit and its reason")
    return out


def _testability_problems(c: Claim) -> list[str]:
    where, out = f"claim {c.id!r}", []
    if c.kind == "not-testable":
        if not c.not_testable_reason or not c.experiment:
            out.append(f"{where}: not_testable_reason, experiment: an untestable claim says why and which "
                       f"experiment would test it")
    else:
        if c.not_testable_reason:
            out.append(f"{where}: not_testable_reason: only for kind 'not-testable'")
        if not c.sources:
            out.append(f"{where}: sources: a testable claim names where its numbers come from")
    if c.registered == "after-results" and not c.registration_note:
        out.append(f"{where}: registration_note: a row fixed after its results were seen says so")
    return out


def _attainability_problems(plan: Plan, c: Claim) -> list[str]:
    """An exact rank test that cannot go below Holm's first threshold at the claim's smallest n."""
    floor = smallest_p(c.test, c.min_n, c.alternative)
    threshold = plan.settings.alpha / max(1, plan.family_size(c.family))
    if floor is None or floor <= threshold:
        return []
    return [f"claim {c.id!r}: test: {c.test} ({c.alternative}) on n = {c.min_n} cannot go below p = {floor:.3g}, "
            f"above Holm's first threshold {threshold:.3g} in family {c.family!r} "
            f"({plan.family_size(c.family)} tests): pick a test that can, or raise min_n"]


def _plan_problems(plan: Plan) -> list[str]:
    out = []
    ids = [c.id for c in plan.claims]
    out += [f"claim {i!r}: id: used more than once" for i in sorted({i for i in ids if ids.count(i) > 1})]
    for table, expected in (("verdicts", VERDICTS), ("summary_verdicts", SUMMARY_VERDICTS),
                            ("stand_ins", tuple(STAND_INS)), ("protocols", tuple(PROTOCOLS)),
                            ("gates", tuple(GATES))):
        if set(getattr(plan, table)) != set(expected):
            out.append(f"{table}: describes exactly {sorted(expected)}, not {sorted(getattr(plan, table))}")
    used = {c.family for c in plan.claims}
    out += [f"claim {c.id!r}: family: {c.family!r} is not declared under [families]"
            for c in plan.claims if c.family not in plan.families]
    out += [f"families: {f!r} is declared but no claim uses it" for f in sorted(set(plan.families) - used)]
    for c in plan.claims:
        if c.earlier_choice_of:
            if c.earlier_choice_of not in ids or c.earlier_choice_of == c.id:
                out.append(f"claim {c.id!r}: earlier_choice_of: {c.earlier_choice_of!r} is not another claim's id")
            if c.registered != "after-results":
                out.append(f"claim {c.id!r}: registered: a row kept from an earlier choice is 'after-results'")
    return out


def validate(plan: Plan) -> list[str]:
    """Every problem of the plan, each naming its claim (or table) and field; empty when it is well formed."""
    out = _plan_problems(plan)
    for c in plan.claims:
        out += _vocabulary_problems(c) + _test_problems(c) + _margin_problems(c) + _testability_problems(c)
        if c.family in plan.families:
            out += _attainability_problems(plan, c)
    return out


# ----- the plan against the repository ----------------------------------------------------------------------------

#: The ledger's tables whose claims (``claim_id``, else ``claim``) the plan must cover.
LEDGER_TABLES = (paths.FIGURES_DIR / "claims.csv",)


def _header(path: Path) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", newline="") as f:
        return next(csv.reader(io.StringIO(f.readline())), [])


def check_sources(plan: Plan, root: Path = paths.REPO_ROOT) -> list[str]:
    """Each committed source that is missing or lacks a column the plan names (the first file a pattern matches
    is read); sources marked ``committed = false`` are not looked for."""
    out = []
    for c in plan.claims:
        for s in c.sources:
            if not s.committed:
                continue
            matches = sorted(root.glob(s.path))
            if not matches:
                out.append(f"claim {c.id!r}: sources: {s.path} matches no committed file")
                continue
            missing = [col for col in s.columns if col not in _header(matches[0])]
            if missing:
                out.append(f"claim {c.id!r}: sources: {matches[0].relative_to(root)} has no column {missing}")
    return out


def ledger_claims(tables: tuple[Path, ...] = LEDGER_TABLES) -> list[str]:
    """The claims the ledger's tables hold, in order, once each (by id where a table has a ``claim_id`` column)."""
    seen: dict[str, None] = {}
    for table in tables:
        with open(table, encoding="utf-8", newline="") as f:
            seen.update((row.get("claim_id") or row["claim"], None) for row in csv.DictReader(f))
    return list(seen)


def uncovered(plan: Plan, claims: list[str]) -> list[str]:
    """The ledger claims (``claims``) that no plan entry lists in its ``ledger`` field or names by its id."""
    covered = {text for c in plan.claims for text in c.ledger} | {c.id for c in plan.claims}
    return [text for text in claims if text not in covered]


def markdown(plan: Plan) -> str:
    """The plan's claims as a Markdown table (the docs site renders it under the plan's page)."""
    def cell(text: object) -> str:
        return " ".join(str(text).split()).replace("|", "\\|")

    lines = ["| Claim | Paper's words | Where | Kind | Protocols | Stand-ins | Test | Family | Margin | Registered |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for c in plan.claims:
        margin = f"{c.margin:g} {c.margin_unit}" if c.margin is not None else "—"
        tests = c.test + "".join(f"; {p}: {t}" for p, t in c.protocol_tests)
        lines.append(f"| `{c.id}` | {cell(c.claim)} | {cell(c.location)} | {c.kind} | {', '.join(c.protocols)} | "
                     f"{', '.join(c.stand_ins)} | {tests} | {c.family} | {cell(margin)} | {c.registered} |")
    return "\n".join(lines)


def check(plan_path: Path = PLAN_PATH) -> tuple[list[str], list[str]]:
    """The claims per paper with their test and family (lines to print), and the problems found: a plan that does not
    load, a committed source it does not cover, a ledger claim without a plan entry."""
    try:
        plan = load(plan_path)
    except PlanError as error:
        return [], [str(error)]
    problems = check_sources(plan) + [f"ledger claim without a plan entry: {text!r}"
                                      for text in uncovered(plan, ledger_claims())]
    lines = []
    for paper in PAPERS:
        claims = [c for c in plan.claims if c.paper == paper]
        untestable = sum(c.kind == "not-testable" for c in claims)
        lines.append(f"{paper}: {len(claims)} claims ({untestable} not testable here)")
        lines.extend(f"  {c.id}: {c.test}, family {c.family}" for c in claims)
    return lines, problems
