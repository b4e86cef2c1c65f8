"""End to end with a real ``transformers`` model (``make test-grammar``; skipped without torch or
xgrammar): ``generate()`` on CPU with a tiny randomly initialised Llama whose vocabulary is a BPE
tokenizer trained here, constrained by our structural tag through xgrammar's Hugging Face logits
processor, with ``tool_choice="required"`` (one call, no reasoning block: a random model writes free text for as
long as it may). The output must parse with the family's template into at
least one call of a declared tool with valid arguments.

A random model has no reason to stop, so a second logits processor (before the grammar's) adds the
stand-in model's pull towards ending and towards finishing the format's delimiters
(``grammar_harness.RandomBigramModel``); the grammar's mask is applied last, as in serving.
"""

from __future__ import annotations

import json
from typing import Any

import grammar_harness as gh
import pytest

torch = pytest.importorskip("torch")
xgr = pytest.importorskip("xgrammar")
transformers = pytest.importorskip("transformers")
from xgrammar.contrib.hf import LogitsProcessor as XgrLogitsProcessor  # noqa: E402

import response_templates as rt  # noqa: E402
from response_templates import grammar, library  # noqa: E402

#: The families whose format xgrammar also hand-writes, as far as ours compile (a CPU generate() per
#: family takes seconds).
FAMILIES = [
    f
    for f in (
        "qwen3",
        "qwen3-coder",
        "llama-3-json",
        "kimi-k2",
        "deepseek-r1",
        "deepseek-v3.1",
        "minimax-m2",
        "glm-4.7",
    )
    if grammar.coverage()[f].compiles
]
MAX_NEW_TOKENS = 600
#: Families where the random model does not reach EOS within the cap (a limit of the model: string
#: parameters end at a close tag it must spell with ordinary tokens among other tags it also favours).
MODEL_LIMIT = {
    "qwen3-coder": "string parameters end at </parameter>, rarely spelled by the random model in time",
    "minimax-m2": "string parameters end at </parameter>, rarely spelled by the random model in time",
}


class _Ending(transformers.LogitsProcessor):  # type: ignore[misc]
    def __init__(self, model: gh.RandomBigramModel, engine: gh.Engine, start: int) -> None:
        self.model, self.engine, self.start = model, engine, start

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        ids = [int(i) for i in input_ids[0, self.start :]]
        extra = (
            self.model.logits(ids, self.engine.decode(ids[-24:])) - self.model.table[ids[-1] if ids else 0]
        )
        return scores + torch.from_numpy(extra).to(scores.dtype)[: scores.shape[-1]]


def _tiny_llama(vocab_size: int) -> Any:
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=2048,
        bos_token_id=0,
        eos_token_id=0,
        pad_token_id=0,
    )
    return transformers.LlamaForCausalLM(config).eval()


@pytest.mark.parametrize(
    "family",
    [
        pytest.param(
            f, marks=[pytest.mark.xfail(reason=MODEL_LIMIT[f], strict=False)] if f in MODEL_LIMIT else []
        )
        for f in FAMILIES
    ],
)
def test_generate_with_required_tool_choice_yields_a_valid_call(family: str) -> None:
    fam = library.family(family)
    prompt = fam.generation_prompt
    # No reasoning and one call: a random model writes free text for as long as it is allowed to.
    g = grammar.build(
        family,
        tools=gh.WALK_TOOLS,
        tool_choice="required",
        parallel_tool_calls=False,
        reasoning="forbidden",
        prefix=prompt,
    )
    engine = gh.engine_for((), tuple(gh.delimiters_of_tag(g.structural_tag)))
    hf_tok = transformers.PreTrainedTokenizerFast(tokenizer_object=engine.tokenizer, eos_token=gh.EOS)
    info = xgr.TokenizerInfo.from_huggingface(
        hf_tok, vocab_size=engine.vocab_size, stop_token_ids=[engine.eos]
    )
    compiled = xgr.GrammarCompiler(info).compile_structural_tag(json.dumps(g.structural_tag))
    model = _tiny_llama(engine.vocab_size)
    prompt_ids = torch.tensor([engine.encode(prompt) or [engine.eos]])
    stand_in = gh.RandomBigramModel(engine, 0, delimiters=gh.delimiters_of_tag(g.structural_tag))
    with torch.no_grad():
        out = model.generate(
            prompt_ids,
            attention_mask=torch.ones_like(prompt_ids),
            max_new_tokens=MAX_NEW_TOKENS,
            do_sample=True,
            logits_processor=[
                _Ending(stand_in, engine, prompt_ids.shape[1]),
                XgrLogitsProcessor(compiled),
            ],
            eos_token_id=engine.eos,
            pad_token_id=engine.eos,
        )
    new = [int(i) for i in out[0, prompt_ids.shape[1] :]]
    assert new and new[-1] == engine.eos, f"generate() hit max_new_tokens: {engine.decode(new)[:300]!r}"
    text = engine.decode(new[:-1])
    message = rt.parse_response(text, fam.template(), prefix=prompt, tools=gh.WALK_TOOLS)
    assert message.get("tool_calls"), text
    problems = gh.check_message(message, gh.WALK_TOOLS, tool_choice="required", parallel_tool_calls=False)
    assert problems == [], text
