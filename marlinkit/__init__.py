"""marlinkit: reproduce, inspect and extend LLM-guided multi-agent RL (MARLIN, MAESTRO).

Layers, bottom up (docs/operations.md, "Architecture"): the shared base, the reproducibility layer ``repro``
(pinned numerics, provenance, result keys, verify, bench), ``envs`` / ``algos`` / ``llm``, the papers ``marlin`` and
``maestro``, then the entry points (``presets``, ``commands``, the command line) and the notebooks.
"""

from marlinkit.repro import numerics as _numerics  # first: pins MKL/ATen/NumPy before they load

__version__ = "0.2.0"
