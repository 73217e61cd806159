"""MAESTRO's A2/A7/A8 ablation (Sections 4.1, 5.3, Appendix A.8) on the Hangzhou network.

==========  ===============  ==================================================================
config      curriculum mode  reward MADDPG trains on
==========  ===============  ==================================================================
A0          none             environment template reward, on the real flow (plain MADDPG)
A2          llm_adaptive     environment template reward (flow + wait + pressure)
A7          llm_adaptive     (1 - w(d)) r_env + w(d) * 170.0 * r_LLM while a generated reward is active
A8          llm              environment template reward
==========  ===============  ==================================================================

A0 has no curriculum and no architect: every training episode is the real Hangzhou flow (its difficulty is
NaN), the fairest baseline for what the curriculum adds. The architect is an LLM (``llm``, e.g. SmolLM2) or
the reference architect (``llm="reference"``: a rule-based surrogate, not an LLM,
:mod:`marlinkit.maestro.reference_architect`), which answers the same prompts through the same checks.

One run = one (config, seed): ``episodes`` training episodes of ``episode_seconds`` 1-s steps
with exploring policies, and after every ``eval_every``-th one two evaluation episodes on the same
traffic: the *stochastic* policy (actions sampled from the Gumbel-softmax policy, temperature 1,
the policy the actor loss optimises and the critic values; noise from a generator seeded with
``eval_seed`` alone, so the training noise stream is untouched) and the *greedy* one (argmax of
the logits). Both are stored (``eval_*_stochastic``, ``eval_*_greedy``); ``eval_policy`` (default
stochastic) names the one tables and figures report. The choice is deliberate: the actor of a
1-s decision loop learns a distribution over phases, and its argmax, asked every second, can keep
one phase and starve the other approaches (untrained: greedy return -205 against stochastic -55 on
the 360-s evaluation episode), so the greedy policy is not the policy that was trained.

The paper's algorithm is :func:`dual_loop`: one run, the outer curriculum/architect loop around
the inner MADDPG episodes (:mod:`.loop`; its inner loop's two strategies, training and following, in
:mod:`.inner`; the row an episode writes and the loop's state in :mod:`.records`; the settings in
:mod:`.config`; a run's settings, environment and architect in :mod:`.parts`; the runs of a ``Config`` in
:mod:`.runner`). Each run executes in a fresh process of its own (libsumo holds one simulation per process), on local
processes or Ray (``executor``, see :mod:`marlinkit.executors`), and hands its tables back: this process writes them as
each run finishes. Runs resume per completed run (a run
whose sidecar exists with the same configuration is loaded, not recomputed) and, with
``checkpoint_every``, from the last checkpoint of an interrupted run (learner, optimisers, replay
buffer, random states, curriculum and reward schedule, generation log): the resumed run gives the
numbers an uninterrupted one would.

A7 *follows* A2: while no generated reward is active, A7's shaped reward is the environment's and it
trains, to the bit, as A2 of the same seed does (the same contexts, updates and evaluations). So when
A2's run of that seed is finished, :func:`run` runs A7 as its outer loop alone over A2's
episodes (its architect replays A2's replies; its reward events ask the LLM and the sandbox as a full
run does), and trains A7 in full only from the first generated reward the sandbox accepts: the run
it writes is the one a full run writes, every column but the wall times (tested at smoke scale).

Every episode's return is reported as a *score*, calibrated on the traffic it was measured on
(165 = max-pressure, 0 = fixed-time; see :mod:`marlinkit.maestro.curriculum_env`). Training rows:
the run measures both controllers on each training episode's context and seed
(``fixed_time_return``, ``max_pressure_return``), and the difficulty rules of Section 4.2 run on
that score. Evaluation rows: :func:`~marlinkit.maestro.curriculum_env.calibrate` measures both once
on the evaluation episode (real flow, ``eval_seed``). Tables report both score and raw return.

Other readings (also in the notebooks): the evaluation episodes run on the first
``episode_seconds`` of the real Hangzhou flow (the target domain; the same traffic for every
config and evaluation, so learning curves compare policies, not curricula); final performance is
the mean score of the last ``final_window`` training episodes (the paper: episodes 180-199 of
"training rewards extracted from simulation logs"); traffic metrics come from the evaluation
episodes in that window. r_LLM is evaluated per intersection and second from
:class:`~marlinkit.maestro.sandbox.limits.RewardInputs`, whose waiting-time and delay fields are estimates (see there).
"""

from marlinkit.maestro.ablation.config import (ABLATIONS, EVAL_POLICIES, PAPER, REFERENCE_LLM, Ablation, Config,
                                               architect_backend, architect_config, leader_of,
                                               maddpg_config, output_suffix, results_root, rule_config, run_config,
                                               setting_suffix, shared_transcripts, transcript_name)
from marlinkit.maestro.ablation.inner import FollowLeader, Leader, LeaderLeft, TrainMADDPG
from marlinkit.maestro.ablation.loop import dual_loop
from marlinkit.maestro.ablation.parts import RunParts
from marlinkit.maestro.ablation.records import (FOLLOWER_COLUMNS, NO_SCORE, REAL_FLOW, TIMING_COLUMNS, EpisodeRecord,
                                                LoopState, Timer, prompt_stats)
from marlinkit.maestro.ablation.runner import (find_leader, load_all_generations, load_generations, run, run_job,
                                              save_run)
from marlinkit.maestro.results import AblationResults
from marlinkit.runs import run_name

__all__ = ["ABLATIONS", "EVAL_POLICIES", "FOLLOWER_COLUMNS", "NO_SCORE", "PAPER", "REAL_FLOW", "REFERENCE_LLM",
           "TIMING_COLUMNS", "Ablation", "AblationResults", "Config", "EpisodeRecord", "FollowLeader", "Leader",
           "LeaderLeft", "LoopState", "RunParts", "Timer", "TrainMADDPG", "architect_backend", "architect_config",
           "dual_loop", "find_leader", "leader_of", "load_all_generations", "load_generations", "maddpg_config",
           "output_suffix", "prompt_stats", "results_root", "rule_config", "run", "run_config", "run_job", "run_name",
           "save_run", "setting_suffix", "shared_transcripts", "transcript_name"]
