PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test test-thorough test-torch test-grammar lint typecheck bench conformance clean

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
	$(BIN)/ruff check src tests benchmarks examples scripts conformance
	$(BIN)/ruff format --check src tests benchmarks examples scripts conformance

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

# The generate() streaming tests with a real model (tiny random Llama, torch CPU): torch is a large
# download, so it gets its own venv and stays out of `make test`.
test-torch:
	test -x .venv-torch/bin/python || $(PYTHON) -m venv .venv-torch
	.venv-torch/bin/python -m pip install -q -e '.[test,reference]' torch==2.13.0
	.venv-torch/bin/python -m pytest -p no:xdist -q tests/hf/test_hf_streamer_threads.py tests/hf/test_hf_streamer.py

# The grammar proofs that need xgrammar (which needs torch, CPU build): agreement of our structural tags
# with xgrammar's hand-written ones, generate() with a tiny random Llama under xgrammar's logits
# processor, and the llguidance proofs again beside them. Own venv, like test-torch.
test-grammar:
	test -x .venv-grammar/bin/python || $(PYTHON) -m venv .venv-grammar
	.venv-grammar/bin/python -m pip install -q -e '.[test,reference,grammar]' xgrammar torch==2.13.0
	.venv-grammar/bin/python -m pytest -p no:xdist -q tests/grammar

# The conformance suite as data (conformance/cases.json): in sync with tests/conformance, passed by ours;
# transformers 5.24's score is printed (its failures are expected: docs/conformance.md).
conformance: $(VENV)/.installed-test
	$(BIN)/python scripts/gen_conformance_json.py --check
	$(BIN)/python conformance/run.py --impl ours --all
	-$(BIN)/python conformance/run.py --impl transformers

clean:
	rm -rf $(VENV) .venv-torch .venv-grammar .pytest_cache .ruff_cache .hypothesis
