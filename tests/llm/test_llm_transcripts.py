"""The committed transcripts replay the smoke preset's negotiation without loading any model."""

from __future__ import annotations

import numpy as np
import pytest

from marlinkit import presets
from marlinkit.envs.corridor.layouts import get_layout
from marlinkit.llm import config as llm_config
from marlinkit.marlin import llm_trials
from marlinkit.llm.cache import TranscriptCache
from marlinkit.marlin.negotiation import Negotiation
from marlinkit.llm.backends.smollm2 import MODEL_NAME


def test_smoke_negotiation_replays_from_committed_smollm2_transcripts():
    settings = presets.get("smoke", "llm_only")
    path = llm_config.transcript_path(llm_trials.TRANSCRIPT_PURPOSE,
                                      type("B", (), {"name": "smollm2", "model": MODEL_NAME}))
    if not path.exists():
        pytest.fail(f"{path} is missing: record it with `make build/quick/marlin/llm_only.ipynb PRESET=quick`")
    cache = TranscriptCache(None, path, replay_only=True, name="smollm2", model=MODEL_NAME)
    source = Negotiation(cache, settings.negotiation_config())
    for scenario in settings.scenarios:
        layout = get_layout(scenario)
        seed = llm_trials.trial_seed(settings.seed, scenario, 0)
        # A changed prompt, parser or seed scheme misses here: re-record the transcripts then.
        plan = source.make_plan(layout, np.array(layout.starts), 50, seed=seed)
        assert plan.stats["cached_calls"] == plan.stats["llm_calls"] > 0
        assert len(plan.actions) == settings.max_moves and 0 <= plan.performance <= 1
        replies = [e for e in plan.transcript if e["speaker"] in ("Alice", "Bob") and e["kind"] != "task"]
        assert replies and all(isinstance(e["text"], str) for e in replies)
