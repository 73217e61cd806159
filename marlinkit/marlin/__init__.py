"""MARLIN: MAPPO with a centralised critic whose training switches between its own samples and plans
negotiated in natural language by two LLM robots (Algorithm 1), in five narrow-corridor grid worlds.

Where each part of the paper lives (read in this order):

====================  ==========================================================================
module                what
====================  ==========================================================================
algorithm1            Algorithm 1: the generator switch, per copy, and the plan cache (Section III)
negotiation           the two-robot negotiation protocol (Section III-B), its prompts and parser
surrogate_planner     the calibrated surrogate planner: exact plans corrupted to the authors' Llama
                      3.1 8B LLM-only performance (not an LLM; a CPU plan source for Fig. 3)
systems               one training of MARL or MARLIN, and the plan source alone (LLM-only)
grid, batched         the runner over scenarios x systems x seeds (cached, resumable; one run at a
                      time or many as one stacked computation)
llm_only, fig2_...    the LLM-only trials (Fig. 3 boxes, Algorithm 1's threshold) and Fig. 2's dialogue
fig1_scenarios        Fig. 1 (the five layouts)
fig3_training         Fig. 3 and Table I
fig5_hardware         Fig. 5 in simulation (actuation noise, not robots); ``hardware``: wheel commands
dynamic_env           the authors' extension: the layout changes during training
fig6_scalability      Fig. 6: many walkers in a corridor network, conflicts negotiated
fidelity              our MARL curves against the paper's at matched sample counts
workshop              the teaching track's runners (notebooks/workshop)
====================  ==========================================================================

Every experiment module has the same face: a frozen ``Config`` dataclass (its preset section, named as the module;
a docstring per field, nested settings as dataclasses too, switches as ``Literal`` types checked when it is built),
``run(cfg) -> Result`` (``cfg.preset``, a label that is no part of any run's key, names the results folder its runs
are saved in), and its own figure and table functions. No experiment reads the presets or calls another experiment's
``run``: the notebooks, the command line and the Makefile resolve ``presets.get(preset, section)`` and hand the
``Config`` in; pieces two experiments share sit a layer below them (``grid``, ``llm_trials``).
"""
