"""Figure 2 from a real transcript: the negotiation drawn as a dialogue between the two robots."""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt

#: Box colours per transcript entry kind.
STYLE = {
    "system_prompt": "#e8e8e8", "task": "#dde8f7", "proposal": "#fff3cd", "critique": "#fde2c8",
    "correction_request": "#f4f4f4", "correction": "#e8dcf5", "forced_query": "#d0d0d0", "final": "#cdeff2",
    "agreement": "#d4edda", "fallback": "#f8d7da", "simulated": "#ffffff", "stalled": "#f3b6bc",
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


def draw_dialogue(transcript: list[dict], names=("Alice", "Bob"), moves: int = 2, width: int = 52, lines: int = 3):
    """One column per move, boxes down the column: robot 0 left, robot 1 right, system and environment centred.

    The shared system prompt heads the figure. Each box shows the first ``lines`` wrapped lines of its
    entry (the transcript files hold the whole text); a legend names the colour of each kind of entry.
    """
    from matplotlib.patches import Patch

    entries = [e for e in transcript if e["move"] < moves]
    prompt = [e for e in entries if e["kind"] == "system_prompt"][:1]
    entries = [e for e in entries if e["kind"] != "system_prompt"]
    columns = sorted({e["move"] for e in entries}) or [0]

    def height(entry) -> float:
        return min(lines + 1, len(_snippet(entry["text"], width, lines).splitlines())) + 1.7

    column_heights = [sum(height(e) for e in entries if e["move"] == m) for m in columns]
    head = 8.0 if prompt else 1.5
    total = max(column_heights) + head
    fig, ax = plt.subplots(figsize=(4.7 * len(columns), 0.15 * total + 1.2))
    ax.set_xlim(0, len(columns))
    ax.set_ylim(0, total)
    ax.axis("off")
    box = {"boxstyle": "round,pad=0.4", "ec": "#888888", "lw": 0.6}
    if prompt:
        text = "\n".join(prompt[0]["text"].splitlines()[:2]) + "\n(actions, rules, grid, scenario, format)"
        ax.text(len(columns) / 2, total - 0.2,
                f"{LABEL['system_prompt']} (both robots)\n{_snippet(text, 2 * width, 3)}",
                ha="center", va="top", fontsize=6.5, family="monospace", multialignment="left",
                bbox={**box, "fc": STYLE["system_prompt"]})
    for c, move in enumerate(columns):
        ax.text(c + 0.5, total - head + 1.2, f"move {move + 1}", ha="center", va="top", fontsize=10, weight="bold")
        ax.text(c + 0.12, total - head + 1.2, names[0], ha="center", va="top", fontsize=9, weight="bold")
        ax.text(c + 0.88, total - head + 1.2, names[1], ha="center", va="top", fontsize=9, weight="bold")
        y = total - head
        for entry in (e for e in entries if e["move"] == move):
            speaker = entry["speaker"]
            x = c + (0.3 if speaker == names[0] else 0.7 if speaker == names[1] else 0.5)
            label = LABEL.get(entry["kind"], entry["kind"])
            ax.text(x, y, f"{speaker} · {label}\n{_snippet(entry['text'], width, lines)}", ha="center", va="top",
                    fontsize=6, multialignment="left", family="monospace",
                    bbox={**box, "fc": STYLE.get(entry["kind"], "#ffffff")})
            y -= height(entry)
    kinds = list(dict.fromkeys(e["kind"] for e in prompt + entries))
    handles = [Patch(fc=STYLE.get(k, "#ffffff"), ec="#888888", lw=0.6, label=LABEL.get(k, k)) for k in kinds]
    legend_rows = -(-len(handles) // 6)
    fig.legend(handles=handles, loc="lower center", ncol=min(6, max(1, len(handles))), fontsize=7, frameon=False,
               title="box colour: kind of entry", title_fontsize=7, bbox_to_anchor=(0.5, 0.03))
    fig.tight_layout(rect=(0, (0.35 + 0.16 * legend_rows) / fig.get_figheight(), 1, 1))
    return fig
