"""Language models behind one small interface, and MARLIN's inter-robot negotiation on top.

``base`` defines the interface (chat messages + settings -> reply with token counts and
latency); ``config.make_backend("smollm2")`` builds a backend from one setting string;
``cache.TranscriptCache`` records and replays any backend; ``negotiation`` is the protocol.
Hub downloads are off by default (HF_HUB_OFFLINE=1): weights come from local folders.
"""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
