# proofbench: `make run` measures the quick profile end to end; `make test` runs the test suite.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
PROFILE ?= quick

.PHONY: run example test install install-test install-evaluate install-edivisive report evaluate-detect \
	simulate-nightly detect-timing render-benchmark suite-evidence evaluate-noise clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# torch is pinned to the CPU build on disk; GPU users: see README ("GPU machines").
$(VENV)/.deps: pyproject.toml $(BIN)/python
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q ".[postgres]"
	touch $@

$(VENV)/.deps-test: $(VENV)/.deps
	$(BIN)/python -m pip install -q ".[postgres,test]"
	touch $@

# proofbench itself, installed as a user gets it (a regular install, no editable hooks), and
# installed again whenever a source file changes; build/ is cleared so a removed module goes too.
SOURCES := $(shell git ls-files -co --exclude-standard -- harness db reports subjects pyproject.toml 2>/dev/null)
$(VENV)/.installed: $(VENV)/.deps $(SOURCES)
	rm -rf build
	$(BIN)/python -m pip install -q --no-deps --force-reinstall .
	touch $@

install: $(VENV)/.installed

install-test: $(VENV)/.deps-test $(VENV)/.installed

run: install
	$(BIN)/proofbench run --profile $(PROFILE)

# The worked example (examples/wordcount): copied out, made a git repository, measured, reported.
EXAMPLE ?= .proofbench/example
example: install
	rm -rf $(EXAMPLE) && mkdir -p $(dir $(EXAMPLE)) && cp -r examples/wordcount $(EXAMPLE)
	cd $(EXAMPLE) && git init -q -b main && $(abspath $(BIN))/proofbench generate && git add -A && \
		git -c user.name=example -c user.email=example@example.invalid commit -q -m "wordcount, set up for proofbench"
	cd $(EXAMPLE) && $(abspath $(BIN))/proofbench run --profile $(PROFILE)

report: install
	$(BIN)/proofbench report

test: install-test
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

$(VENV)/.installed-evaluate: $(VENV)/.installed
	$(BIN)/python -m pip install -q ".[evaluate]"
	touch $@

install-evaluate: $(VENV)/.installed-evaluate

# MongoDB's e-divisive in its own environment (its pins clash with torch's); Python 3.11.
EDIVISIVE_PYTHON ?= python3.11
.venv-edivisive/bin/python:
	$(EDIVISIVE_PYTHON) -m venv .venv-edivisive
	.venv-edivisive/bin/python -m pip install -q "signal-processing-algorithms==2.1.6"

install-edivisive: .venv-edivisive/bin/python

# Benchmark scripts (not tests): the detector and its anchors on synthetic and real histories
# (about 2 minutes on 2 cores; QUICK=1 for a smaller suite), the nightly check simulated with
# re-measurement (ANCHORS=1: also asv's step detection, Otava and e-divisive as the nightly check),
# detect() timed over 300 x 1000 points, the report at scale.
evaluate-detect: install-evaluate install-edivisive
	$(BIN)/python -m tools.detect_evaluation $(if $(QUICK),--quick)

# Do speedups repeat? Five quick runs of the checkout in hand and one beside a busy process that
# comes and goes (about 30 minutes on 2 cores; QUICK=1: three subjects, three runs). Run it on a
# quiet machine: each run's other-process load is printed beside its figures.
evaluate-noise: install
	$(BIN)/python -m tools.noise_evaluation $(if $(QUICK),--quick)

simulate-nightly: install $(if $(ANCHORS),install-evaluate install-edivisive)
	$(BIN)/python -m tools.nightly_simulation $(if $(QUICK),--quick) $(if $(ANCHORS),--anchors)

detect-timing: install
	$(BIN)/python -m tools.detect_timing

render-benchmark: install
	$(BIN)/python -m tools.render_benchmark

# ingest, check and report timed on OpenMathLib's published BLAS results; check beside asv's step detection
suite-evidence: install
	$(BIN)/python -m tools.suite_evidence

clean:
	rm -rf .asv .proofbench build reports/site db/proofbench.sqlite*
