# proofbench: `make run` measures the quick profile end to end; `make test` runs the test suite.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
PROFILE ?= quick

.PHONY: run test install install-test report evaluate-detect render-benchmark clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# torch is pinned to the CPU build on disk; GPU users: see README ("GPU machines").
$(VENV)/.installed: pyproject.toml $(BIN)/python
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e ".[postgres]"
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(BIN)/python -m pip install -q -e ".[test]"
	touch $@

install: $(VENV)/.installed

install-test: $(VENV)/.installed-test

run: install
	$(BIN)/proofbench run --profile $(PROFILE)

report: install
	$(BIN)/proofbench report

test: install-test
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

# Benchmark scripts (not tests): the detector on synthetic histories, the report at scale.
evaluate-detect: install
	$(BIN)/python -m tools.detect_evaluation

render-benchmark: install
	$(BIN)/python -m tools.render_benchmark

clean:
	rm -rf .asv reports/site db/proofbench.sqlite*
