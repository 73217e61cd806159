"""Fig. 1: the five corridor layouts (``notebooks/marlin/fig1_scenarios``), drawn by ``envs.corridor.render``."""

from __future__ import annotations

from dataclasses import dataclass

from marlinkit.envs.corridor.layouts import LAYOUT_NAMES, get_layout, to_ascii


@dataclass(frozen=True)
class Config:
    """The ``fig1_scenarios`` section."""

    scenarios: tuple[str, ...] = tuple(LAYOUT_NAMES)
    """Layouts printed as text beside the figure, in this order."""

    def __post_init__(self):
        object.__setattr__(self, "scenarios", tuple(self.scenarios))
        unknown = sorted(set(self.scenarios) - set(LAYOUT_NAMES))
        if unknown:
            raise ValueError(f"unknown scenario(s) {unknown}; choose from {list(LAYOUT_NAMES)}")


def ascii_layouts(config: Config) -> str:
    """Each layout's title and its cells as text (``#`` wall, ``.`` free), as the notebook prints them."""
    return "".join(f"{get_layout(name).title}\n{to_ascii(get_layout(name))}\n\n" for name in config.scenarios)
