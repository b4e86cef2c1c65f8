PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test test-thorough lint typecheck bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q -e .
	touch $@

$(VENV)/.installed-test: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q -e '.[test,reference]'
	touch $@ $(VENV)/.installed

demo: $(VENV)/.installed
	$(BIN)/python -m response_templates demo

lint: $(VENV)/.installed-test
	$(BIN)/ruff check src tests benchmarks examples scripts
	$(BIN)/ruff format --check src tests benchmarks examples scripts

typecheck: $(VENV)/.installed-test
	$(BIN)/mypy

# pytest runs on every core (pytest-xdist); hypothesis uses the `ci` profile (tests/hypothesis_profiles.py).
PYTEST := $(BIN)/python -m pytest -n auto --dist worksteal

test: $(VENV)/.installed-test lint typecheck
	$(PYTEST)

# The same suite with ten times the hypothesis examples: for local runs, not CI.
test-thorough: $(VENV)/.installed-test
	HYPOTHESIS_PROFILE=thorough $(PYTEST)

bench: $(VENV)/.installed-test
	$(BIN)/python benchmarks/bench_streaming.py
	$(BIN)/python benchmarks/bench_tokens.py
	$(BIN)/python benchmarks/bench_tool_streaming.py
	$(BIN)/python benchmarks/bench_families.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
