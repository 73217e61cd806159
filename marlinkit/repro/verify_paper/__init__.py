"""``make verify PRESET=paper``: recompute a prefix of committed paper runs and compare it with the committed rows.

The paper preset's runs took days to train, so they are checked by their beginning: training is deterministic
and its settings never depend on how far a run has got, so the first episodes of a run recomputed today with
the committed run's full configuration (stopped early by the runner's ``stop_after``, never a shorter
configuration) must equal the committed table's first rows, byte for byte.

* **Which runs.** Every committed run is found by its sidecar, under ``data/results/<paper>/paper/`` and in the
  MAESTRO sweep's folder, and sorted into *families*: its folder and its name less scenario and seed (one MARLIN
  plan source, switch rule or variant; MARL; the plan source alone; one MAESTRO ablation under one MADDPG setting;
  one sweep setting). A new family is checked as soon as its runs are committed. From each family one run is
  chosen: member ``(seed choice + a digest of the family's name) mod members`` in name order. The seed choice
  defaults to today's UTC day number, so the chosen runs rotate from day to day; it is printed, and
  ``--seed-choice N`` repeats a choice.
* **How.** MARLIN: ``systems.train_system``/``batched.train_systems`` with the run's configuration rebuilt from its
  sidecar (its configuration hash must come out equal, else the run is reported as not rebuildable), first
  ``--episodes`` episodes (default 30: five MAPPO updates, Algorithm 1's forced plan episodes 6-10 and its first
  switches); the plan source alone plays all its trials (milliseconds). MAESTRO: the ablation's calibration is
  recomputed and compared whole, then ``ablation.dual_loop`` plays the first ``--maestro-episodes`` (default 8:
  the first MADDPG updates from episode 3, the first difficulty events from episode 4, A8's first context
  regeneration at 5, A7's initial reward event, four evaluations) and the sweep's ``sweep_run`` the same. Every LLM call
  replays strictly from the transcripts: a missing record fails that run, by name.
* **Compared.** The recomputed table's CSV text against the committed table's first rows: the header and every
  row line byte for byte, except the measured wall-time columns (:data:`TIMING_COLUMNS`), where both cells need
  only be numbers. The first differing row and column are named. A MAESTRO run's generation log is compared
  record by record over the prefix (less its timing fields), and the committed table's SHA-256 against its sidecar.
* **Code age.** For every committed run: whether its sidecar records the code that made it (a hash of its
  numerics path's sources, :mod:`marlinkit.repro.provenance`) and whether that is today's code; for a run without the
  record, whether its file was last committed before the last change to its numerics path (git history).

The exit code is 1 on any difference, any run that could not be recomputed, any committed run of a kind this
check does not know, or any live LLM call.

Modules: :mod:`.runs` (the committed runs, their families, the choice and the prefix comparison), :mod:`.epochs`
(runs of closed numerics epochs, recomputed by the commit that made them), :mod:`.check` (the check and the code
age). Recomputing a run needs today's experiments: the command (:mod:`marlinkit.commands.verify`) hands them in as
:class:`~marlinkit.repro.hooks.ExperimentHooks`.
"""

from marlinkit.repro.verify_paper.check import add_arguments, code_age, verify_prefixes
from marlinkit.repro.verify_paper.runs import (MAESTRO_EPISODES, MARLIN_EPISODES, NOT_RECOMPUTED, PRESET,
                                               TIMING_COLUMNS, CommittedRun, choose, committed_table, compare_prefix,
                                               default_seed_choice, discover, folder_suffix, repo_relative)

__all__ = ["MAESTRO_EPISODES", "MARLIN_EPISODES", "NOT_RECOMPUTED", "PRESET", "TIMING_COLUMNS", "CommittedRun",
           "add_arguments", "choose", "code_age", "committed_table", "compare_prefix", "default_seed_choice",
           "discover", "folder_suffix", "repo_relative", "verify_prefixes"]
