"""The reference architect: a rule-based surrogate for MAESTRO's LLM architect. NOT an LLM.

It answers the very chats the LLM gets (:meth:`marlinkit.maestro.architect.CurriculumArchitect.messages` and
:meth:`marlinkit.maestro.architect.RewardSynthesizer.messages`) as a chat backend (the ablation's ``llm="reference"``,
:func:`marlinkit.maestro.ablation.architect_backend`),
so its replies go through the same reading, schema, load and three-stage sandbox checks, the same transcript
cache, generation log and acceptance table as an LLM's, under its own name (:data:`NAME`, :data:`MODEL`). It
reads only what the prompt holds: the difficulty, the training statistics and the worked example. Its replies
are a function of the chat and the call's sampling seed (the same chat and seed: the same reply).

* **Curriculum contexts.** It starts from the prompt's worked example (the deterministic context for d,
  :func:`marlinkit.envs.traffic.context.context_for_difficulty`) and varies the pattern as the prompt asks,
  drawn from a generator seeded with the call's seed and d: with ``llm_adaptive`` prompts (A2, A7) the major
  axis (either), the asymmetry (+-0.2), the left-turn share (+-0.05), the peak's time (+-25 % of the episode)
  and height (+-0.2), and the demand level set so that the expected vehicle count is 0.9-1.1 x the example's
  (the checker allows +-25 %). With the less constrained ``llm`` prompts (A8) every draw is wider: each side's
  base rate 150-250 veh/h, asymmetry 0-1.5, left 10-35 %, right 10-25 %, a constant profile 30 % of the time,
  else a peak x1-2.5 anywhere in the middle 60 % of the episode, and 0.6-1.4 x the example's vehicles.
* **Reward programs.** Python source of ``compute_reward(metrics, difficulty)`` from a small family of the
  shaping terms traffic-signal rewards use: throughput (rewarded), queue length, mean waiting time and
  |pressure| (penalised), in the environment reward's units (vehicles) divided by the combined reward's 170.0,
  so that ``170.0 * r`` is on the template reward's scale. Throughput and queue are always in; waiting time and
  pressure each 75 % of the time (seeded). Coefficients depend on d (queue and waiting weigh more at higher d,
  the waiting weight also on the ``difficulty`` argument at run time) and on the prompt's statistics (behind the
  target: more weight on throughput; long average delay: more on waiting), each jittered +-15 % (seeded).
  Every term is monotone: the reward never rises with a queue, a wait or a pressure, never falls with
  throughput.
"""

from __future__ import annotations

import json
import re
import time

import numpy as np

from marlinkit.llm.base import GenerationSettings, LLMError, Reply, check_messages, cut_at_stop

NAME = "reference-architect"
#: Names the backend as a surrogate in transcripts, generation logs and figure footers.
MODEL = "surrogate-not-an-LLM-v1"
#: The combined reward's fixed factor (``CurriculumConfig.llm_scale``), which the programs divide by.
LLM_SCALE = 170.0
_NUMBER = r"-?[0-9]+(?:\.[0-9]+)?"
_D = re.compile(rf"d = ({_NUMBER})")
_STAT = re.compile(rf"(window mean score \(target ({_NUMBER})\)|last score|throughput|avg delay s|avg "
                   rf"queue) ({_NUMBER})")


def prompt_statistics(text: str) -> dict[str, float]:
    """The numbers of a prompt's "Recent training" / "Training statistics" line that the architect uses."""
    out: dict[str, float] = {}
    for match in _STAT.finditer(text):
        key = match.group(1)
        if key.startswith("window mean score"):
            out["window_mean"], out["target"] = float(match.group(3)), float(match.group(2))
        else:
            out[key.replace(" ", "_")] = float(match.group(3))
    return out


def _rng(settings: GenerationSettings, difficulty: float, role: int) -> np.random.Generator:
    return np.random.default_rng([int(settings.seed or 0), int(round(difficulty * 1000)), role])


def _profile_sum(profile: dict, duration_s: int) -> float:
    t = np.arange(duration_s, dtype=float)
    if profile.get("kind", "constant") == "constant":
        return float(duration_s)
    factor = 1.0 + (profile["peak_factor"] - 1.0) * np.exp(-0.5 * ((t - profile["peak_time_s"])
                                                                   / profile["peak_width_s"]) ** 2)
    return float(factor.sum())


def relative_load(context: dict, duration_s: int) -> float:
    """Expected vehicles up to a constant (every side has as many entry roads; no rate reaches 1 vehicle/s)."""
    major = ("E", "W") if context["major_axis"] == "EW" else ("N", "S")
    rates = sum(rate * (1.0 + context["asymmetry"] if side in major else 1.0)
                for side, rate in context["approach_rates_vph"].items())
    return context["demand_level"] * rates * _profile_sum(context["time_profile"], duration_s)


def context_reply(example: dict, difficulty: float, free: bool, rng: np.random.Generator) -> dict:
    """A context (the prompt's fields) varied from ``example``; ``free``: the less constrained mode (A8)."""
    duration = int(round(2 * example["time_profile"]["peak_time_s"])) or 360
    out = json.loads(json.dumps(example))
    out["major_axis"] = str(rng.choice(["EW", "NS"]))
    right = example["route_mix"]["right"]
    if free:
        out["approach_rates_vph"] = {side: round(float(rng.uniform(150.0, 250.0)), 1)
                                     for side in example["approach_rates_vph"]}
        out["asymmetry"] = round(float(rng.uniform(0.0, 1.5)), 3)
        left, right = float(rng.uniform(0.10, 0.35)), float(rng.uniform(0.10, 0.25))
        if rng.random() < 0.3:
            out["time_profile"] = {"kind": "constant", "peak_time_s": duration / 2, "peak_width_s": duration / 4,
                                   "peak_factor": 1.0}
        else:
            out["time_profile"] = {"kind": "peak", "peak_time_s": round(float(rng.uniform(0.2, 0.8)) * duration, 1),
                                   "peak_width_s": round(float(rng.uniform(0.1, 0.4)) * duration, 1),
                                   "peak_factor": round(float(rng.uniform(1.0, 2.5)), 3)}
        load = float(rng.uniform(0.6, 1.4))
    else:
        out["asymmetry"] = round(float(np.clip(example["asymmetry"] + rng.uniform(-0.2, 0.2), 0.0, 2.0)), 3)
        left = float(np.clip(example["route_mix"]["left"] + rng.uniform(-0.05, 0.05), 0.05, 0.4))
        profile = dict(example["time_profile"])
        profile["peak_time_s"] = round(profile["peak_time_s"] + float(rng.uniform(-0.25, 0.25)) * duration, 1)
        profile["peak_factor"] = round(float(np.clip(profile["peak_factor"] + rng.uniform(-0.2, 0.2), 1.0, 4.0)), 3)
        out["time_profile"] = profile
        load = float(rng.uniform(0.9, 1.1))
    left, right = round(left, 3), round(right, 3)
    out["route_mix"] = {"through": round(1.0 - left - right, 3), "left": left, "right": right}
    out["demand_level"] = 1.0
    demand = load * relative_load(example, duration) / relative_load(out, duration)
    out["demand_level"] = round(float(np.clip(demand, 0.01, 5.0)), 4)
    return out


def reward_coefficients(difficulty: float, stats: dict[str, float], rng: np.random.Generator) -> dict[str, float]:
    """The program's coefficients (per vehicle, per waiting second, per vehicle of imbalance; 0: term left out)."""
    target, window = stats.get("target"), stats.get("window_mean")
    behind = 0.5 if target is None or window is None or target <= 0 else float(np.clip(1.0 - window / target, 0.0, 1.0))
    slow = float(np.clip(stats.get("avg_delay_s", 40.0) / 60.0, 0.0, 1.5))
    jitter = lambda: float(rng.uniform(0.85, 1.15))  # noqa: E731
    coefficients = {
        "throughput": round((0.8 + 0.4 * behind) * jitter(), 4),
        "queue": round(0.1 * (0.7 + 0.6 * difficulty) * jitter(), 4),
        "waiting": round(0.004 * (0.5 + slow) * jitter(), 5),
        "waiting_d": round(0.006 * jitter(), 5),
        "pressure": round(0.05 * (0.6 + 0.4 * difficulty) * jitter(), 4),
    }
    if rng.random() >= 0.75:
        coefficients["waiting"] = coefficients["waiting_d"] = 0.0
    if rng.random() >= 0.75:
        coefficients["pressure"] = 0.0
    return coefficients


def reward_source(difficulty: float, coefficients: dict[str, float]) -> str:
    """The program for ``coefficients`` (see :func:`reward_coefficients`), as the architect writes it."""
    c = coefficients
    terms = [f"{c['throughput']:g} * served", f"- {c['queue']:g} * queue"]
    lines = ["    served = min(max(metrics[\"throughput\"], 0.0), 6.0)",
             "    queue = min(max(metrics[\"queue_length\"], 0.0), 120.0)"]
    names = ["throughput", "queue length"]
    if c["waiting"] > 0:
        lines.append("    waiting = min(max(metrics[\"waiting_time\"], 0.0), 300.0)")
        lines.append(f"    wait_weight = {c['waiting']:g} + {c['waiting_d']:g} * difficulty")
        terms.append("- wait_weight * waiting")
        names.append("waiting time")
    if c["pressure"] > 0:
        lines.append("    pressure = min(abs(metrics[\"pressure\"]), 60.0)")
        terms.append(f"- {c['pressure']:g} * pressure")
        names.append("pressure")
    doc = (f"    \"\"\"Reference architect (a surrogate, not an LLM), d = {difficulty:.2f}: rewards throughput, "
           f"penalises {', '.join(names[1:])}; vehicle units / {LLM_SCALE:g}.\"\"\"")
    return "\n".join([f"def compute_reward(metrics, difficulty):", doc, *lines,
                      f"    value = {' '.join(terms)}",
                      f"    return max(-1.0, min(1.0, value / {LLM_SCALE:g}))"]) + "\n"


class ReferenceArchitect:
    """Chat backend (LLM setting ``reference``) answering the MAESTRO architect's two prompts. Not an LLM."""

    name = NAME
    model = MODEL

    def chat(self, messages: list[dict[str, str]], settings: GenerationSettings) -> Reply:
        from marlinkit.maestro.architect import CurriculumArchitect, RewardSynthesizer

        start = time.perf_counter()
        check_messages(messages)
        system, request = messages[0]["content"], messages[-1]["content"]
        found = _D.search(request) or _D.search(messages[1]["content"])
        if found is None:
            raise LLMError("the reference architect found no difficulty 'd = ...' in the prompt")
        difficulty = float(found.group(1))
        stats = prompt_statistics(request)
        if system == RewardSynthesizer.SYSTEM:
            coefficients = reward_coefficients(difficulty, stats, _rng(settings, difficulty, 1))
            text = f"```python\n{reward_source(difficulty, coefficients)}```\n"
        elif system.startswith(CurriculumArchitect.SYSTEM):
            example = json.loads(messages[2]["content"])
            free = "keep the total demand" not in request
            text = json.dumps(context_reply(example, difficulty, free, _rng(settings, difficulty, 2 if free else 0)))
        else:
            raise LLMError("the reference architect answers MAESTRO's curriculum and reward prompts only")
        text, _ = cut_at_stop(text, settings.stop)
        prompt = sum(len(m["content"].split()) for m in messages)  # words stand in for tokens
        return Reply(text, prompt, len(text.split()), time.perf_counter() - start)


def pass_share(prompts: int = 200, seed: int = 0, target: float = 67.46) -> dict[str, float]:
    """The share of its reward programs that pass :func:`marlinkit.maestro.sandbox.validate`, over ``prompts`` reward
    prompts of the dual loop's form: difficulty drawn from the rule's levels, statistics from the ranges training
    shows (window mean score -60..130 against ``target``, delay 20-80 s, queue 2-40, throughput 50-200), sampling
    seeds as a run's. ``python -m marlinkit reference-architect --prompts 200`` prints it."""
    from marlinkit.maestro.architect import ArchitectConfig, GenerationLog, RewardSynthesizer
    from marlinkit.maestro.curriculum import difficulty_levels

    rng = np.random.default_rng(seed)
    levels = difficulty_levels()
    log = GenerationLog()
    synth = RewardSynthesizer(ReferenceArchitect(), ArchitectConfig(), log)
    for i in range(prompts):
        window = float(rng.uniform(-60.0, 130.0))
        stats = {"episode": int(rng.integers(0, 200)), f"window mean score (target {target:g})": window,
                 "last score": window + float(rng.normal(0.0, 20.0)), "throughput": float(rng.uniform(50.0, 200.0)),
                 "avg delay s": float(rng.uniform(20.0, 80.0)), "avg queue": float(rng.uniform(2.0, 40.0))}
        synth.attempt(float(levels[rng.integers(len(levels))]), stats, stats["episode"], seed * 100_000 + i, 0)
    calls, accepted = log.counts("reward")
    reasons = sorted({r["reason"] for r in log.records if not r["accepted"]})
    return {"prompts": calls, "accepted": accepted, "share": accepted / calls, "rejections": reasons}
