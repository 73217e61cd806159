"""marlinkit: reproduce, inspect and extend LLM-guided multi-agent RL (MARLIN, MAESTRO).

Layers (lower never imports upper): ``envs`` -> ``algos`` -> ``llm`` -> experiment runners
(``marlin``, ``maestro``) -> ``stats``/``plots`` -> notebooks.
"""

from marlinkit.repro import numerics as _numerics  # first: pins MKL/ATen/NumPy before they load

__version__ = "0.1.0"
