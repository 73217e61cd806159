"""Commands that run today's experiments through the reproducibility layer (:mod:`marlinkit.repro`).

``verify`` hands :mod:`marlinkit.repro.verify` each run kind's recompute functions; the experiment benchmarks build
an experiment's configuration from a preset and time it. They sit with the other entry points, above the experiments.
"""
