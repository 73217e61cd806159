"""Figure 2 from a real transcript: the negotiation drawn as a dialogue between the two robots."""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt

#: Box colours per transcript entry kind.
STYLE = {
    "system_prompt": "#e8e8e8", "task": "#dde8f7", "proposal": "#fff3cd", "critique": "#fde2c8",
    "correction_request": "#eeeeee", "correction": "#fde2c8", "forced_query": "#eeeeee", "final": "#fde2c8",
    "agreement": "#d4edda", "fallback": "#f8d7da", "simulated": "#ffffff", "stalled": "#f8d7da",
}
LABEL = {"system_prompt": "shared system prompt", "task": "task", "proposal": "proposal (TLP + moves)",
         "critique": "critique", "correction_request": "format correction", "correction": "corrected reply",
         "forced_query": "forced final query", "final": "final reply", "agreement": "agreement",
         "fallback": "fallback", "simulated": "moves simulated", "stalled": "stopped"}


def _snippet(text: str, width: int, lines: int) -> str:
    wrapped = []
    for paragraph in text.strip().splitlines():
        wrapped += textwrap.wrap(paragraph, width) or [""]
    return "\n".join(wrapped[:lines] + (["..."] if len(wrapped) > lines else []))


def draw_dialogue(transcript: list[dict], names=("Alice", "Bob"), moves: int = 2, width: int = 46, lines: int = 5):
    """Boxes down the page: robot 0 on the left, robot 1 on the right, system and environment centred."""
    entries = [e for e in transcript if e["move"] < moves]
    if entries and entries[0]["kind"] == "system_prompt":
        entries[0] = {**entries[0], "text": "\n".join(entries[0]["text"].splitlines()[:3]) + "\n(actions, rules, grid, scenario, format)"}
    heights = [min(lines + 1, len(_snippet(e["text"], width, lines).splitlines())) + 1.6 for e in entries]
    total = sum(heights) + 1
    fig, ax = plt.subplots(figsize=(9, max(3.0, 0.16 * total)))
    ax.set_xlim(0, 1)
    ax.set_ylim(0, total)
    ax.axis("off")
    ax.text(0.2, total - 0.3, names[0], ha="center", va="top", fontsize=11, weight="bold")
    ax.text(0.8, total - 0.3, names[1], ha="center", va="top", fontsize=11, weight="bold")
    y = total - 1.2
    for entry, height in zip(entries, heights):
        speaker = entry["speaker"]
        x = 0.27 if speaker == names[0] else 0.73 if speaker == names[1] else 0.5
        label = LABEL.get(entry["kind"], entry["kind"])
        head = f"move {entry['move'] + 1} · {speaker} · {label}" if entry["kind"] != "system_prompt" else label
        ax.text(x, y, f"{head}\n{_snippet(entry['text'], width, lines)}", ha="center", va="top", fontsize=6.5, multialignment="left",
                family="monospace", bbox={"boxstyle": "round,pad=0.4", "fc": STYLE.get(entry["kind"], "#ffffff"),
                                          "ec": "#888888", "lw": 0.6})
        y -= height
    return fig
