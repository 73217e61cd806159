"""Language models behind one small interface: the plumbing both papers' protocols run on.

``base`` defines the interface (chat messages + settings -> reply with token counts and
latency); ``config.make_backend("smollm2")`` builds a backend from one setting string;
``cache.TranscriptCache`` records and replays any backend; ``backends/`` holds smollm2, transformers,
OpenAI-compatible HTTP and scripted. The protocols live with their papers (``marlin.negotiation``,
``maestro.architect``); nothing here imports them.
Hub downloads are off by default (HF_HUB_OFFLINE=1): weights come from local folders.
"""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
