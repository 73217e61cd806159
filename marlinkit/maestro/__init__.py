"""MAESTRO: MADDPG traffic-signal control on the Hangzhou 4x4 network under an LLM-written curriculum and reward.

Where each part of the paper lives (read in this order):

====================  ==========================================================================
module                what
====================  ==========================================================================
curriculum            the difficulty and reward-regeneration rules (Sections 4.2, 4.3), pure functions
architect             the LLM architect: traffic contexts and reward code (Sections 4.2, 4.3)
sandbox/              validation and isolated execution of the LLM's reward code (Section 4.3)
curriculum_env        the environment MADDPG trains on (context, A7's shaped reward) and the calibrated score
ablation              A2/A7/A8 (Section 5.3); :func:`ablation.dual_loop` is the algorithm of one run
checkpoint            resumable checkpoints of one run
report / figures      Tables 1-7 / Figures 1-8 from the ablation's results
traffic_baselines     fixed-time and max-pressure, the difficulty pilot check (Section 4.2)
sweep                 plain MADDPG's settings measured on the real flow (no LLM)
====================  ==========================================================================
"""
