PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test test-thorough test-torch test-install test-grammar lint typecheck bench bench-peers conformance clean

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
	$(BIN)/python benchmarks/bench_batch.py --records 20000

# Ours against the peers (transformers 5.24, openai-harmony) on the same outputs, interleaved in one run.
# openai-harmony needs the o200k_base vocabulary, rebuilt from the ranks in the npm package js-tiktoken.
JS_TIKTOKEN := .cache/js-tiktoken/package/dist/ranks/o200k_base.js
$(JS_TIKTOKEN):
	mkdir -p .cache/js-tiktoken
	cd .cache/js-tiktoken && npm pack -q js-tiktoken@1.0.21 && tar xzf js-tiktoken-1.0.21.tgz

bench-peers: $(VENV)/.installed-test $(JS_TIKTOKEN)
	$(BIN)/python -m pip install -q 'openai-harmony==0.0.8'
	$(BIN)/python benchmarks/bench_peers.py --vocab-from $(JS_TIKTOKEN)

# The generate() streaming tests with a real model (tiny random Llama, torch CPU): torch is a large
# download, so it gets its own venv and stays out of `make test`.
test-torch:
	test -x .venv-torch/bin/python || $(PYTHON) -m venv .venv-torch
	.venv-torch/bin/python -m pip install -q -e '.[test,reference]' torch==2.13.0
	.venv-torch/bin/python -m pytest -p no:xdist -q tests/hf/test_hf_streamer_threads.py tests/hf/test_hf_streamer.py

# The wheel, installed with each extra into a fresh venv (.venv-install/EXTRA), runs the docs pages and
# examples that name that extra (tests/doc_runner.py); tests/test_install_extras.py checks the same in
# the suite without installing. Downloads transformers and its dependencies: not part of `make test`.
INSTALL_EXTRAS := core hf verify transformers serve datasets
test-install:
	rm -rf .venv-install && $(PYTHON) -m pip wheel -q --no-deps -w .venv-install/dist .
	for extra in $(INSTALL_EXTRAS); do \
	  wheel=$$(ls .venv-install/dist/*.whl); \
	  $(PYTHON) -m venv .venv-install/$$extra && \
	  .venv-install/$$extra/bin/python -m pip install -q "$$wheel$$(test $$extra = core || echo "[$$extra]")" && \
	  .venv-install/$$extra/bin/python tests/doc_runner.py --extra $$extra || exit 1; \
	done

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
	rm -rf $(VENV) .venv-torch .venv-install .venv-grammar .pytest_cache .ruff_cache .hypothesis
