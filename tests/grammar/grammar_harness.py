"""The machinery of the grammar proofs (docs/grammar.md, "Proofs"): a small real tokenizer, the
llguidance matcher driven token by token, random walks through a grammar's token masks, and the checks
a parsed message must pass against the request's tools.

Not a test module: ``test_grammar_*.py`` in this directory and ``benchmarks/bench_grammar.py`` import it.

* :func:`train_tokenizer` trains a byte-level BPE tokenizer (the ``tokenizers`` library) on a small
  corpus, with the family's special tokens added as special tokens, so that a grammar that writes a
  delimiter as a token (llguidance's ``<|tok|>`` syntax) meets the token the model would emit, and every
  other delimiter is spelled with ordinary BPE tokens as a real model spells text.
* :class:`Engine` wraps the llguidance tokenizer built from it; :meth:`Engine.accepts` feeds a text's
  tokens to an ``LLMatcher`` and says whether the grammar accepts it whole; :meth:`Engine.walk` samples
  a random path through the grammar with the matcher's token masks.
* :func:`check_message` checks a parsed message against tools, ``tool_choice`` and
  ``parallel_tool_calls`` (names declared, arguments valid for their JSON schemas with ``jsonschema``).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import jsonschema
import llguidance
import numpy as np
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

#: The end-of-sequence token of every test tokenizer (a special token, never part of a template).
EOS = "<|rt_eos|>"

#: Text the tokenizer is trained on besides the family's own samples: prose, JSON, XML-ish markup and
#: code, so that BPE learns the pieces tool calls are written with.
BASE_CORPUS = (
    "The weather in Paris is sunny today, with a high of 21 degrees.",
    "Let me think about this step by step. First, I need the user's location.",
    '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3, "unit": "celsius"}}',
    '{"location": "San Francisco, CA", "format": "fahrenheit", "limit": 10, "verbose": true}',
    '[{"id": 1, "tags": ["a", "b"], "score": 0.5, "ok": false, "next": null}]',
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>",
    '<invoke name="search"><parameter name="query">llguidance</parameter></invoke>',
    "[get_weather(city='Paris', days=3), search(query=\"x\")]",
    "def f(x):\n    return x * 2\n\nprint(f(21))",
    "Sure! Here is the answer: 42.\n\n- one\n- two\n",
)

_SPECIAL_REF = re.compile(r"<\[(\d+)\]>|<\|[^|<>\s]*\|>|<[^<>\s\"/|\[][^<>\s\"]*>")


def special_tokens_of_lark(lark: str) -> list[str]:
    """The special tokens a Lark grammar names with llguidance's ``<token>`` syntax, in order of first
    use (string literals, regexes, comments and inline ``%json`` schemas are skipped).

    >>> special_tokens_of_lark('start: <|im_end|> "<b>" /<c>/ x // <d>\\nx: <tool_call> <|im_end|>')
    ['<|im_end|>', '<tool_call>']
    """
    found: list[str] = []
    for token in _lark_token_refs(lark):
        if token not in found:
            found.append(token)
    return found


def _lark_token_refs(lark: str) -> Iterable[str]:
    i, n = 0, len(lark)
    while i < n:
        c = lark[i]
        if c == '"':
            i = _skip_quoted(lark, i, '"')
        elif (c == "/" and i + 1 < n and lark[i + 1] == "/") or c == "#":
            i = _skip_line(lark, i)
        elif c == "/":
            i = _skip_quoted(lark, i, "/")
        elif lark.startswith("%json", i):
            i = _skip_json(lark, i + len("%json"))
        elif c == "<":
            m = _SPECIAL_REF.match(lark, i)
            if m and not m.group(1):
                yield m.group(0)
                i = m.end()
            else:
                i += 1
        else:
            i += 1


def _skip_quoted(text: str, i: int, quote: str) -> int:
    i += 1
    while i < len(text) and text[i] != quote:
        i += 2 if text[i] == "\\" else 1
    return i + 1


def _skip_line(text: str, i: int) -> int:
    end = text.find("\n", i)
    return len(text) if end < 0 else end + 1


def _skip_json(text: str, i: int) -> int:
    while i < len(text) and text[i] != "{":
        i += 1
    depth = 0
    while i < len(text):
        c = text[i]
        if c == '"':
            i = _skip_quoted(text, i, '"')
            continue
        depth += c == "{"
        depth -= c == "}"
        i += 1
        if depth == 0:
            break
    return i


def train_tokenizer(
    specials: Sequence[str] = (), corpus: Iterable[str] = (), *, vocab_size: int = 1200
) -> Tokenizer:
    """A byte-level BPE tokenizer trained on ``corpus`` plus :data:`BASE_CORPUS`, with :data:`EOS` and
    ``specials`` as special tokens (ids ``0..len(specials)``, EOS first). Deterministic for the same
    arguments; takes a fraction of a second."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[EOS, *[s for s in specials if s != EOS]],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    texts = [*BASE_CORPUS, *corpus]
    # Special tokens are split out before the pre-tokenizer, so the corpus can hold them as they are.
    tokenizer.train_from_iterator(texts * 3, trainer)
    return tokenizer


@dataclass
class Walk:
    """One random walk: the token ids, the text, and how it ended (``eos``: the EOS token was chosen;
    ``stopped``: the grammar allowed nothing more; ``cap``: the length cap was hit first)."""

    ids: list[int]
    text: str
    end: str

    @property
    def finished(self) -> bool:
        return self.end in ("eos", "stopped")


@dataclass
class Engine:
    """A trained tokenizer with its llguidance twin; one per set of special tokens."""

    tokenizer: Tokenizer
    ll: llguidance.LLTokenizer = field(init=False)
    eos: int = field(init=False)
    #: The special tokens are ids ``0..n_special-1`` (EOS is 0).
    n_special: int = field(init=False)
    #: Ids of tokens that contain a character that often closes a structure (quotes, brackets, ``>``,
    #: newline) or are special: random walks lean on them to finish.
    closers: np.ndarray[Any, Any] = field(init=False)

    def __post_init__(self) -> None:
        self.eos = self.tokenizer.token_to_id(EOS)
        self.n_special = sum(1 for t in self.tokenizer.get_added_tokens_decoder().values() if t.special)
        self.ll = llguidance.LLTokenizer(self.tokenizer.to_str(), eos_token=self.eos)
        vocab = self.tokenizer.get_vocab_size()
        closing = [
            i
            for i in range(vocab)
            if self.ll.is_special_token(i) or any(ch in self.decode([i]) for ch in "\"'}]>)")
        ]
        self.closers = np.array(sorted(closing), dtype=np.int64)

    @property
    def vocab_size(self) -> int:
        return int(self.ll.vocab_size)

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def decode(self, ids: Sequence[int]) -> str:
        return str(self.tokenizer.decode(list(ids), skip_special_tokens=False))

    def matcher(self, lark: str) -> llguidance.LLMatcher:
        """A fresh matcher; raises ``ValueError`` with llguidance's message if the grammar is invalid."""
        m = llguidance.LLMatcher(self.ll, lark, log_level=0)
        if m.is_error():
            raise ValueError(m.get_error())
        return m

    def allowed(self, m: llguidance.LLMatcher) -> np.ndarray[Any, Any]:
        """The token ids the matcher allows next (from its bitmask)."""
        bits = np.unpackbits(np.frombuffer(m.compute_bitmask(), dtype=np.uint8), bitorder="little")
        return np.flatnonzero(bits[: self.vocab_size])

    def accepts(self, lark: str, text: str) -> tuple[bool, str]:
        """Whether the grammar accepts ``text`` whole (tokenized by this tokenizer), and if not, where it
        stopped: ``(True, "")`` or ``(False, reason)``."""
        m = self.matcher(lark)
        ids = self.encode(text)
        for index, token in enumerate(ids):
            if not m.consume_token(token):
                done = self.decode(ids[:index])
                return False, f"token {index} {self.decode([token])!r} rejected after {done[-60:]!r}"
        if not m.is_accepting():
            return False, "the text is a proper prefix of the language (the grammar wants more)"
        return True, ""

    def walk(
        self,
        lark: str | llguidance.LLMatcher,
        rng: random.Random,
        *,
        max_tokens: int = 400,
        p_stop: float = 0.2,
        p_special: float = 0.3,
        p_close: float = 0.45,
    ) -> Walk:
        """A random path through the grammar: at each step a token the mask allows, EOS with probability
        ``p_stop`` when allowed, otherwise a special token with probability ``p_special`` (when one is
        allowed, so that walks reach the delimiters), a closing-ish token with probability ``p_close``
        (when one is allowed) or any allowed token. Ends at EOS, when the grammar stops, or at
        ``max_tokens``."""
        m = self.matcher(lark) if isinstance(lark, str) else lark
        ids: list[int] = []
        end = "cap"
        for _ in range(max_tokens):
            if m.is_stopped():
                end = "stopped"
                break
            allowed = self.allowed(m)
            if len(allowed) == 0:
                raise AssertionError(f"empty mask after {self.decode(ids)!r}: {m.get_error()}")
            eos_ok = bool(np.any(allowed == self.eos))
            if eos_ok and rng.random() < p_stop:
                token = self.eos
            else:
                choices = allowed[allowed != self.eos] if len(allowed) > 1 else allowed
                specials = choices[choices < self.n_special]
                if len(specials) and rng.random() < p_special:
                    choices = specials
                elif rng.random() < p_close:
                    closing = np.intersect1d(choices, self.closers, assume_unique=True)
                    if len(closing):
                        choices = closing
                token = int(choices[rng.randrange(len(choices))])
            if not m.consume_token(token):
                raise AssertionError(f"the mask allowed a token the matcher refused: {m.get_error()}")
            if token == self.eos:
                end = "eos"
                break
            ids.append(token)
        else:
            if m.is_stopped():
                end = "stopped"
        return Walk(ids, self.decode(ids), end)


@cache
def engine_for(specials: tuple[str, ...], corpus: tuple[str, ...] = ()) -> Engine:
    """A cached :class:`Engine` for a set of special tokens (and extra corpus)."""
    return Engine(train_tokenizer(specials, corpus))


def engine_for_lark(lark: str, corpus: Sequence[str] = ()) -> Engine:
    """The engine whose special tokens are those ``lark`` names."""
    return engine_for(tuple(special_tokens_of_lark(lark)), tuple(corpus))


# ------------------------------------------------------------------------------------------------------
# Checking a parsed message against the request
# ------------------------------------------------------------------------------------------------------


def tool_schemas(tools: Sequence[Mapping[str, Any]] | None) -> dict[str, Mapping[str, Any]]:
    """Tool name -> its parameters' JSON schema (``{}`` when the tool declares none)."""
    out: dict[str, Mapping[str, Any]] = {}
    for tool in tools or ():
        fn = tool.get("function", tool)
        out[fn["name"]] = fn.get("parameters") or {}
    return out


def named_choice(tool_choice: Any) -> str | None:
    if isinstance(tool_choice, Mapping):
        return str(tool_choice["function"]["name"])
    if isinstance(tool_choice, str) and tool_choice not in ("auto", "required", "none"):
        return tool_choice
    return None


def call_problems(calls: Sequence[Any], tools: Sequence[Mapping[str, Any]] | None) -> list[str]:
    """What is wrong with the calls against the tools (undeclared names, arguments that do not validate
    against the tool's JSON schema); empty when nothing is."""
    schemas = tool_schemas(tools)
    problems: list[str] = []
    for index, call in enumerate(calls):
        fn = call.get("function", call) if isinstance(call, Mapping) else None
        if not isinstance(fn, Mapping) or "name" not in fn:
            problems.append(f"call {index} has no function name: {call!r}")
            continue
        name = fn["name"]
        if name not in schemas:
            problems.append(f"call {index} names undeclared tool {name!r}")
            continue
        args = fn.get("arguments", {})
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                problems.append(f"call {index} ({name}) arguments are not JSON: {args!r}")
                continue
        try:
            jsonschema.validate(args, dict(schemas[name]))
        except jsonschema.ValidationError as exc:
            problems.append(f"call {index} ({name}) arguments invalid: {exc.message}")
        except jsonschema.SchemaError as exc:
            problems.append(f"tool {name} has an invalid schema: {exc.message}")
    return problems


def check_message(
    message: Mapping[str, Any],
    tools: Sequence[Mapping[str, Any]] | None,
    *,
    tool_choice: Any = "auto",
    parallel_tool_calls: bool = True,
) -> list[str]:
    """Every way ``message`` breaks the request: :func:`call_problems` plus ``tool_choice`` (at least one
    call for ``required``, only the named tool for a named choice, none for ``none``) and at most one
    call without parallel calls (exactly one when a call is required)."""
    calls = list(message.get("tool_calls") or [])
    problems = call_problems(calls, tools)
    named = named_choice(tool_choice)
    must_call = tool_choice == "required" or named is not None
    if must_call and not calls:
        problems.append(f"tool_choice={tool_choice!r} but no call")
    if tool_choice == "none" and calls:
        problems.append(f"tool_choice='none' but {len(calls)} call(s)")
    if named is not None:
        for index, call in enumerate(calls):
            name = call.get("function", call).get("name")
            if name != named:
                problems.append(f"call {index} is {name!r}, not the named tool {named!r}")
    if not parallel_tool_calls and len(calls) > 1:
        problems.append(f"parallel_tool_calls=False but {len(calls)} calls")
    return problems
