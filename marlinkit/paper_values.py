"""Numbers printed in the two papers (../shared/papers), transcribed once, with table citations.

Only what the papers print; nothing here is computed. The paper audit
(:mod:`marlinkit.paper_audit`, ``notebooks/maestro/paper_audit.ipynb``) recomputes the derived
numbers from the raw ones and compares.
"""

from __future__ import annotations

# --- MAESTRO -----------------------------------------------------------------------------------

MAESTRO_SEEDS = (200, 300, 400, 500)

#: Table 3: per-seed mean episode return over episodes 180-199 (A7: seeds 400/500 incomplete, "-").
MAESTRO_TABLE3_SEEDS: dict[str, dict[int, float]] = {
    "A2": {200: 158.84, 300: 156.75, 400: 159.42, 500: 152.69},
    "A7": {200: 159.61, 300: 157.92},
    "A8": {200: 161.18, 300: 158.95, 400: 166.08, 500: 154.72},
}
#: Table 3: the Mean, SD and Range columns.
MAESTRO_TABLE3_SUMMARY: dict[str, dict[str, float]] = {
    "A2": {"mean": 156.93, "sd": 3.05, "range": 6.73},
    "A7": {"mean": 158.76, "sd": 1.20, "range": 1.69},
    "A8": {"mean": 160.23, "sd": 4.73, "range": 11.36},
}
#: Table 3: the "Per-Seed Range" row (max - min over conditions, per seed).
MAESTRO_TABLE3_PER_SEED_RANGE: dict[int, float] = {200: 2.34, 300: 2.20, 400: 6.66, 500: 2.03}

#: Table 2: ablation summary, episodes 180-199 (CV in %, SR = (mean - A2 mean) / SD).
MAESTRO_TABLE2: dict[str, dict[str, float | None]] = {
    "A2": {"mean": 157.04, "sd": 2.66, "cv_pct": 1.69, "sharpe": None, "best": 159.63, "worst": 152.82},
    "A7": {"mean": 158.87, "sd": 1.04, "cv_pct": 0.65, "sharpe": 1.76, "best": 160.15, "worst": 157.76},
    "A8": {"mean": 160.35, "sd": 4.08, "cv_pct": 2.55, "sharpe": 0.81, "best": 166.05, "worst": 154.77},
}

#: Table 4: pairwise Mann-Whitney U tests on seed-level returns, Cohen's d and its label.
MAESTRO_TABLE4: dict[tuple[str, str], dict[str, float | str]] = {
    ("A2", "A7"): {"U": 1.0, "p": 0.476, "cohens_d": 0.81, "effect": "Large"},
    ("A2", "A8"): {"U": 2.0, "p": 0.343, "cohens_d": 0.89, "effect": "Large"},
    ("A7", "A8"): {"U": 0.5, "p": 0.381, "cohens_d": 0.43, "effect": "Medium"},
}
#: Appendix A.3, text under Table 4: seeds per condition for 80 % power at alpha = 0.05.
MAESTRO_POWER_SEEDS: dict[tuple[str, str], int] = {("A2", "A7"): 12, ("A2", "A8"): 10, ("A7", "A8"): 20}

#: Table 7: risk metrics (A2 is the baseline: no Sharpe/Sortino); success rate as a fraction.
MAESTRO_TABLE7: dict[str, dict[str, float | None]] = {
    "A2": {"sharpe": None, "sortino": None, "var_5": 152.69, "max_drawdown": 4.24, "success_rate": 0.75},
    "A7": {"sharpe": 1.53, "sortino": 2.16, "var_5": 157.92, "max_drawdown": 0.85, "success_rate": 1.00},
    "A8": {"sharpe": 0.70, "sortino": 1.12, "var_5": 154.72, "max_drawdown": 5.51, "success_rate": 0.75},
}

#: Curriculum target return (Section 4.2); 0.95 x target is the lower difficulty threshold.
MAESTRO_TARGET_RETURN = 165.0

#: Claims in the abstract and Sections 1, 6, 7 and Appendix A.1 about the same per-seed numbers.
MAESTRO_TEXT_CLAIMS: dict[str, float] = {
    "abstract: A7 mean return": 163.26,
    "abstract: A7 improvement over A2 (%)": 4.0,
    "abstract/A.3: A7 Sharpe": 1.53,
    "abstract/A.3: A8 Sharpe": 0.70,
    "6.2/7.1: A7 Sharpe": 1.76,
    "6.2: A8 Sharpe": 0.81,
    "Fig. 5: A8 gain over A2": 3.31,
    "A.1: A8 range": 11.36,
    "A.1: A7 range": 1.69,
    "A.1: A7 max deviation": 0.85,
    "A.1: A8 max deviation": 5.85,
    "A.1: A2 max deviation": 4.24,
    "A.1: A7 worst minus A2 mean": 0.99,
    "A.1: A2 mean minus A8 worst": 2.21,
}

#: Tables 1 and 6 (the same numbers, seed 200, late training): throughput (veh/ep), avg travel
#: time, avg delay, avg wait time (s).
MAESTRO_TRAFFIC: dict[str, tuple[int, int, int, int]] = {
    "A2": (1973, 793, 472, 502), "A7": (2090, 739, 378, 422), "A8": (2155, 708, 341, 383)}
#: Table 1: the change vs A2 in parentheses, as printed (the paper's own rounding: it prints -6.9 %
#: for travel time where (739 - 793) / 793 from the rounded integers gives -6.8 %).
MAESTRO_TRAFFIC_CHANGE: dict[str, tuple[str, str, str, str]] = {
    "A7": ("+5.9%", "-6.9%", "-19.9%", "-15.8%"), "A8": ("+9.2%", "-10.8%", "-27.8%", "-23.6%")}
#: Table 5: hours per 200-episode run by component (single RTX-class GPU).
MAESTRO_COST_HOURS: dict[str, float] = {"simulation": 2.8, "MADDPG training": 0.65,
                                        "LLM curriculum calls": 2.5 / 60, "LLM reward calls": 1.0 / 60}

# --- MARLIN ------------------------------------------------------------------------------------

MARLIN_CHECKPOINTS = (100, 850, 1600)
#: Table I: average performance (MARL, MARLIN) at episodes 100 / 850 / 1600, as the paper prints
#: them (four decimals, trailing zeros kept: "0.9700", "1.0000"; ``float()`` for arithmetic); bold
#: (significant at p < 0.001, 50-run paired t-test) is lost in the text version, and per-run values
#: are not given.
MARLIN_TABLE1: dict[str, dict[int, tuple[str, str]]] = {
    "asymmetrical_two_slot": {100: ("0.8543", "1.0000"), 850: ("0.9814", "0.9957"), 1600: ("0.9843", "0.9929")},
    "maze_like": {100: ("0.4300", "0.4271"), 850: ("0.8529", "0.9643"), 1600: ("0.8214", "1.0000")},
    "single_slot": {100: ("0.7157", "0.9071"), 850: ("0.9329", "0.9943"), 1600: ("0.9700", "1.0000")},
    "symmetrical_two_slot": {100: ("0.8671", "0.9714"), 850: ("0.9929", "1.0000"), 1600: ("0.9857", "0.9952")},
    "two_path": {100: ("0.7771", "0.9271"), 850: ("0.9929", "1.0000"), 1600: ("1.0000", "0.9667")},
}
#: Table I caption: runs behind each average.
MARLIN_TABLE1_RUNS = 50
#: LLM-only performance of Llama 3.1 8B Instruct hard-coded in the authors' public code: Algorithm 1's
#: threshold when no measured value is given, the reference marks of the LLM-only boxes, and the
#: calibration target of the surrogate planner (``marlinkit.marlin.surrogate_planner``).
AUTHORS_LLM_ONLY: dict[str, float] = {"asymmetrical_two_slot": 0.821, "single_slot": 0.429,
                                      "symmetrical_two_slot": 0.429,
                                      "two_path": 0.357, "maze_like": 0.333}
#: How often the authors' Llama 3.1 8B plans were perfect: the share of rows at performance 1.0 among the forced plan
#: episodes 5-9 of their published MARLIN training logs. With the LLM-only mean above, the two calibration targets of
#: the ``surrogate_llama`` plan source (``marlinkit.marlin.surrogate_planner.LlamaSurrogatePlanner``).
AUTHORS_PERFECT_PLAN_SHARE: dict[str, float] = {"asymmetrical_two_slot": 0.55, "symmetrical_two_slot": 0.33,
                                                "single_slot": 0.12,
                                                "two_path": 0.09, "maze_like": 0.0}
#: Rows per episode that the authors' published MARLIN training logs pool in a corridor (runs x copies): 2 to 12. With
#: the five forced plan episodes, the bounds on the number of rows behind each share above.
AUTHORS_MARLIN_ROWS_PER_EPISODE: tuple[int, int] = (2, 12)
