"""``python -m marlinkit bench negotiation``: the MARLIN trainer asks the negotiation for plans, the cache saves
calls."""

from __future__ import annotations

import json

from marlinkit.__main__ import main


def test_bench_negotiation_counts_plans_of_a_real_marlin_training(capsys):
    assert main(["bench", "negotiation", "--skip-live", "--episodes", "11", "--n-envs", "2", "--moves", "3",
                 "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["marlin_episodes"] == 22  # 11 episodes x 2 copies, counted per copy as in Fig. 3
    # Episodes 5-9 of each copy follow plans (Algorithm 1's initialisation), so plans were asked for and
    # the shared cache served most of them: far fewer plans than plan episodes.
    assert result["plan_episodes"] >= 10 and 1 <= result["marlin_plans_made"] < result["plan_episodes"]
    assert result["plans_per_1000_episodes"] == 1000 * result["marlin_plans_made"] / 22
    # The scripted robots keep the format: 2 calls per negotiated move, at most 3 moves per plan.
    assert 0 < result["scripted_llm_calls_per_1000_episodes"] <= 6 * result["plans_per_1000_episodes"]
