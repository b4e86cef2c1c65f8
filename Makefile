PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test test-thorough test-torch test-engines test-vllm test-sglang test-install test-grammar test-mypyc test-mypyc-quick wheel-mypyc bench-peers-mypyc lint typecheck bench bench-peers bench-derive-llamacpp conformance clean

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
	$(BIN)/ruff check setup.py src tests benchmarks examples scripts conformance
	$(BIN)/ruff format --check setup.py src tests benchmarks examples scripts conformance

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

# Ours against the peers (transformers 5.25, openai-harmony) on the same outputs, interleaved in one run.
# openai-harmony needs the o200k_base vocabulary, rebuilt from the ranks in the npm package js-tiktoken.
JS_TIKTOKEN := .cache/js-tiktoken/package/dist/ranks/o200k_base.js
$(JS_TIKTOKEN):
	mkdir -p .cache/js-tiktoken
	cd .cache/js-tiktoken && npm pack -q js-tiktoken@1.0.21 && tar xzf js-tiktoken-1.0.21.tgz

bench-peers: $(VENV)/.installed-test $(JS_TIKTOKEN)
	$(BIN)/python -m pip install -q 'openai-harmony==0.0.8'
	$(BIN)/python benchmarks/bench_peers.py --vocab-from $(JS_TIKTOKEN)

# The derivation benchmark beside llama.cpp's chat parsing (docs/derive.md, "Beside llama.cpp's autoparser"):
# llama.cpp as vendored in the llama-cpp-python sdist, its common library built for the CPU with no server,
# tools or tests, and our driver (benchmarks/llamacpp/) linked against it, all in .cache/llamacpp/.
LLAMACPP_VERSION := 0.3.36
LLAMACPP_CACHE := .cache/llamacpp
LLAMACPP_SRC := $(LLAMACPP_CACHE)/llama_cpp_python-$(LLAMACPP_VERSION)/vendor/llama.cpp
LLAMACPP_DRIVER := $(LLAMACPP_CACHE)/build/derive_driver
$(LLAMACPP_SRC)/CMakeLists.txt: | $(BIN)/python
	mkdir -p $(LLAMACPP_CACHE)
	$(BIN)/python -m pip download -q --no-deps --no-binary :all: -d $(LLAMACPP_CACHE) 'llama-cpp-python==$(LLAMACPP_VERSION)'
	tar xzf $(LLAMACPP_CACHE)/llama_cpp_python-$(LLAMACPP_VERSION).tar.gz -C $(LLAMACPP_CACHE)
	touch $@

$(LLAMACPP_DRIVER): $(LLAMACPP_SRC)/CMakeLists.txt benchmarks/llamacpp/CMakeLists.txt benchmarks/llamacpp/derive_driver.cpp
	nice -n 10 cmake -S benchmarks/llamacpp -B $(LLAMACPP_CACHE)/build -DCMAKE_BUILD_TYPE=Release \
	  -DLLAMA_CPP_DIR=$(abspath $(LLAMACPP_SRC))
	nice -n 10 cmake --build $(LLAMACPP_CACHE)/build --target derive_driver -j2

bench-derive-llamacpp: $(VENV)/.installed-test $(LLAMACPP_DRIVER)
	$(BIN)/python benchmarks/bench_derive.py --llamacpp $(LLAMACPP_DRIVER)

# The generate() streaming tests with a real model (tiny random Llama, torch CPU): torch is a large
# download, so it gets its own venv and stays out of `make test`.
test-torch:
	test -x .venv-torch/bin/python || $(PYTHON) -m venv .venv-torch
	.venv-torch/bin/python -m pip install -q -e '.[test,reference]' torch==2.13.0
	.venv-torch/bin/python -m pytest -p no:xdist -q tests/hf/test_hf_streamer_threads.py tests/hf/test_hf_streamer.py

# The engine plugins (docs/engines.md) tested in the engines' own OpenAI serving code: vLLM 0.34 in .venv-vllm
# and SGLang 0.5.23 in .venv-sglang, each with its own pins (transformers < 5.23, torch from PyPI: its CUDA
# libraries install, no GPU is used). vLLM goes in without its GPU kernels (tests/engines/requirements-vllm.txt).
# Several GB each: not part of `make test`, whose run skips these tests.
ENGINE_SOURCES := pyproject.toml tests/engines/requirements-vllm.txt
.venv-vllm/.installed: $(ENGINE_SOURCES)
	test -x .venv-vllm/bin/python || $(PYTHON) -m venv .venv-vllm
	.venv-vllm/bin/python -m pip install -q --upgrade pip
	.venv-vllm/bin/python -m pip install -q --no-deps 'vllm==0.34.0'
	.venv-vllm/bin/python -m pip install -q -r tests/engines/requirements-vllm.txt
	.venv-vllm/bin/python -m pip install -q --no-deps -e .
	touch $@

.venv-sglang/.installed: $(ENGINE_SOURCES)
	test -x .venv-sglang/bin/python || $(PYTHON) -m venv .venv-sglang
	.venv-sglang/bin/python -m pip install -q --upgrade pip
	.venv-sglang/bin/python -m pip install -q 'sglang==0.5.23' 'pytest>=8' 'hypothesis>=6.100'
	.venv-sglang/bin/python -m pip install -q --no-deps -e .
	touch $@

# (with the grammar's two forms judged on the recorded outputs: xgrammar is in this venv)
test-vllm: .venv-vllm/.installed
	.venv-vllm/bin/python -m pytest -p no:xdist -q tests/engines/test_engines_common.py tests/engines/test_vllm*.py \
	  tests/grammar/test_grammar_forms.py tests/export/test_export_literal.py \
	  tests/grammar/test_grammar_special_tokens.py tests/grammar/test_grammar_argument_values.py \
	  tests/grammar/test_grammar_structure.py tests/grammar/test_grammar_tag_holes.py

test-sglang: .venv-sglang/.installed
	.venv-sglang/bin/python -m pytest -p no:xdist -q tests/engines/test_sglang*.py \
	  tests/grammar/test_grammar_special_tokens.py tests/grammar/test_grammar_argument_values.py \
	  tests/grammar/test_grammar_structure.py tests/grammar/test_grammar_tag_holes.py

test-engines: test-vllm test-sglang

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

# The compiled build (docs/streaming.md, "The compiled build"): the hot modules of the streaming path
# compiled to C extensions by mypyc, from the same sources (setup.py, RESPONSE_TEMPLATES_MYPYC=1). The wheel
# is built in .venv (mypy, the test tools and a C compiler), then installed with the test tools into its
# own venv, .venv-mypyc, where test-mypyc runs the whole suite and bench-peers-mypyc the peers' benchmark.
# The wheel is rebuilt only when a source file changed since the last build.
MYPYC_VENV := .venv-mypyc
MYPYC_SOURCES := setup.py pyproject.toml $(shell find src -name '*.py' -o -name '*.json' 2>/dev/null)
wheel-mypyc: dist-mypyc/.built

dist-mypyc/.built: $(VENV)/.installed-test $(MYPYC_SOURCES)
	$(BIN)/python -m pip install -q 'setuptools>=77' wheel
	rm -rf build dist-mypyc
	RESPONSE_TEMPLATES_MYPYC=1 $(BIN)/python -m pip wheel -q --no-deps --no-build-isolation -w dist-mypyc .
	rm -rf build
	touch $@

$(MYPYC_VENV)/.installed: dist-mypyc/.built
	test -x $(MYPYC_VENV)/bin/python || $(PYTHON) -m venv $(MYPYC_VENV)
	$(MYPYC_VENV)/bin/python -m pip install -q --upgrade pip
	$(MYPYC_VENV)/bin/python -m pip install -q --force-reinstall --no-deps dist-mypyc/*.whl
	$(MYPYC_VENV)/bin/python -m pip install -q "$$(ls dist-mypyc/*.whl)[test,reference]"
	$(MYPYC_VENV)/bin/python -c "import response_templates.compiled as c, sys; sys.exit(not c.is_compiled())"
	touch $@

test-mypyc: $(MYPYC_VENV)/.installed
	RESPONSE_TEMPLATES_EXPECT_COMPILED=1 $(MYPYC_VENV)/bin/python -m pytest -n auto --dist worksteal

# What CI runs of it (.ci/run, after make test): the build, and the tests of the streaming path it compiles
# (about a minute of tests; the whole suite is test-mypyc).
MYPYC_QUICK_TESTS := tests/test_compiled.py tests/wire tests/toolstream tests/jsonlex tests/test_scan_order.py \
	tests/test_parser_chunking.py tests/test_matching.py tests/test_doctests.py
test-mypyc-quick: $(MYPYC_VENV)/.installed
	RESPONSE_TEMPLATES_EXPECT_COMPILED=1 $(MYPYC_VENV)/bin/python -m pytest -n auto --dist worksteal $(MYPYC_QUICK_TESTS)

bench-peers-mypyc: $(MYPYC_VENV)/.installed $(JS_TIKTOKEN)
	$(MYPYC_VENV)/bin/python -m pip install -q 'openai-harmony==0.0.8'
	$(MYPYC_VENV)/bin/python benchmarks/bench_peers.py --vocab-from $(JS_TIKTOKEN)

# The conformance suite as data (conformance/cases.json): in sync with tests/conformance, passed by ours;
# transformers 5.25's score is printed (its failures are expected: docs/conformance.md). Both runs include
# the token-id cases (parsed from ids with the suite's tokenizers; a transformers before 5.25 skips them).
conformance: $(VENV)/.installed-test
	$(BIN)/python scripts/gen_conformance_json.py --check
	$(BIN)/python conformance/run.py --impl ours --all
	-$(BIN)/python conformance/run.py --impl transformers

clean:
	rm -rf $(VENV) .venv-torch .venv-install .venv-grammar $(MYPYC_VENV) dist-mypyc .pytest_cache .ruff_cache .hypothesis
