"""The reproducibility layer: pinned numerics, the code that made a run, result keys, verify and bench.

It sits under the experiments: ``algos``, ``marlin`` and ``maestro`` import it, and it imports no experiment. What
must call an experiment (recomputing a run of one of its families, a benchmark built on an experiment's
configuration) lives above both, in :mod:`marlinkit.commands`, and is handed in as plain functions.
"""
