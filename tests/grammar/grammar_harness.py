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
from pathlib import Path
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

_SPECIAL_REF = re.compile(r"<\[(\d+)\]>|<\|[^|<>\s]*\|>|</?[^<>\s\"/|\[][^<>\s\"]*>")


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


#: Delimiters that real tokenizers keep as single special (added) tokens: ``<|...|>``, DeepSeek's
#: full-width ``<｜...｜>``, ``[TOOL_CALLS]``-style words, ``◁think▷``, and simple closed tags such as
#: ``<think>``, ``</tool_call>``, ``<minimax:tool_call>`` (a tag with attributes, ``<function=...>``, is
#: text). The proofs treat every such delimiter of a family as a special token.
_TOKEN_LIKE = re.compile(
    r"<\|[^|<>\s]+\|>|<｜[^｜]+｜>|\[/?[A-Z][A-Z_]*\]|◁/?[a-z]+▷|</?[A-Za-z_][A-Za-z0-9_:.\-]*>"
)


def _strings_of(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if key not in ("json_schema", "pattern"):
                yield from _strings_of(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings_of(item)


def tag_formats(node: Any, kind: str) -> list[dict[str, Any]]:
    """Every format object of ``kind`` in a structural tag, depth first."""
    found: list[dict[str, Any]] = []
    if isinstance(node, dict):
        if node.get("type") == kind:
            found.append(node)
        for value in node.values():
            found.extend(tag_formats(value, kind))
    elif isinstance(node, list):
        for value in node:
            found.extend(tag_formats(value, kind))
    return found


def special_tokens_of_tag(structural_tag: Mapping[str, Any]) -> list[str]:
    """The token-like delimiters (see ``_TOKEN_LIKE``) in a structural tag's strings, sorted.

    >>> special_tokens_of_tag({"format": {"begin": "<tool_call>\\n{", "end": "}</tool_call><|im_end|>"}})
    ['</tool_call>', '<tool_call>', '<|im_end|>']
    """
    found = {m.group(0) for text in _strings_of(structural_tag) for m in _TOKEN_LIKE.finditer(text)}
    return sorted(found)


def build_with_tokens(grammar_module: Any, template: Any, **kwargs: Any) -> tuple[Any, Engine]:
    """``grammar.build`` with the template's token-like delimiters declared as special tokens (found by
    building once without them), and the :class:`Engine` whose tokenizer has them: the grammar names
    them by id (``<[id]>``), which works for every spelling (``[TOOL_CALLS]`` has no ``<...>`` name)."""
    plain = grammar_module.build(template, **kwargs)
    tokens = tuple(special_tokens_of_tag(plain.structural_tag))
    # The format's markup is in the training text, so BPE learns its pieces as a model's tokenizer has.
    engine = engine_for(tokens, tuple(delimiters_of_tag(plain.structural_tag, tokens)))
    if not tokens:
        return plain, engine
    ids = {token: engine.tokenizer.token_to_id(token) for token in tokens}
    return grammar_module.build(template, special_tokens=ids, **kwargs), engine


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


# ------------------------------------------------------------------------------------------------------
# The recorded samples a family's grammar must accept
# ------------------------------------------------------------------------------------------------------


@dataclass
class SampleCase:
    """One recorded output our parser reads as expected, with what its request declared."""

    id: str
    family: str
    raw: str
    prefix: str
    tools: list[Any] | None
    inferred_tools: bool
    message: Mapping[str, Any]
    #: :func:`call_problems` of the parsed calls against the tools: non-empty means the output is not
    #: valid for its tools, so a grammar that enforces the schemas must reject it.
    problems: list[str]
    #: Why the output does not count for completeness (``""``: it counts): ``"cut"`` when a region is
    #: still open where the output ends (a truncated generation, or the turn's stop token written inside
    #: the region, which a template reads as its close), ``"invalid"`` when its calls are not valid for
    #: its tools, ``"builtin"`` when it addresses a built-in tool (:data:`BUILTIN_CALL`), ``"listed"``
    #: when it is reviewed and listed as not counting, malformed for its format or with a control token
    #: inside a value (:func:`load_not_counted`). See :func:`incompleteness`.
    incomplete: str = ""


#: The failure class of the samples written with the turn's stop token inside a region
#: (``tests/library/test_library_failure_classes.py``): malformed by construction.
STOP_TOKEN_INSIDE = 3

#: A private-use character appended to an output to tell a closer at its very end from an open region.
SENTINEL = "\ue000"


def incompleteness(template: Any, raw: str, prefix: str, problems: Sequence[str]) -> str:
    """Why an output is not one the grammar must accept: ``"invalid"`` (calls not valid for the tools),
    ``"builtin"`` (a message to a built-in tool, :data:`BUILTIN_CALL`), ``"cut"`` (a region with a close
    delimiter of its own is still open where the output ends, once a final stop token of the turn is set
    aside: the generation was cut off, or the model wrote the stop token inside the region), or ``""``
    (a complete output).

    A grammar ends a region with its closer and leaves the stop token to the engine, so a complete
    output under the grammar never has a cut region; the template still reads such outputs leniently.
    A region that runs to the end of the turn by design (no close delimiter) is not cut.
    """
    from response_templates.grammar import _resolve
    from response_templates.grammar.reasoning import turn_ends as _turn_ends
    from response_templates.parser import ResponseParser

    if problems:
        return "invalid"
    if BUILTIN_CALL.search(raw):
        return "builtin"
    resolved, _ = _resolve(template)
    turn_ends = _turn_ends(resolved)
    text = raw
    for end in sorted(turn_ends, key=len, reverse=True):
        if end and text.endswith(end):
            text = text[: -len(end)]
            break
    parser = ResponseParser(resolved, prefix, errors="keep")
    # A character no delimiter continues with: a closer held back at the very end (its optional tail
    # might still follow) is decided, so only a region really left open is still open at the end.
    parser.feed(text + SENTINEL)
    _, events = parser.finalize()
    for event in events:
        if event["type"] != "region_close":
            continue
        spec = resolved.by_name.get(event["field"])
        if spec is None or spec.implicit or spec.close is None:
            continue
        literals = spec.close.literals
        if literals is None or not all(end in turn_ends or _ends_generation(end) for end in literals):
            return "cut"
    return ""


#: A message to a built-in tool, which a request enables outside its ``tools`` (gpt-oss's system prompt,
#: Llama's ``builtin_tools``): a harmony recipient other than ``functions.NAME`` (and ``assistant``), or
#: Llama's ``<|python_tag|>NAME.call(...)``. A grammar writes calls of the request's function tools, so
#: such an output does not count.
BUILTIN_CALL = re.compile(
    r"(?:<\|start\|>|<\|channel\|>)[^<]*\bto=(?!functions\.|assistant\b)[A-Za-z_][\w.]*"
    r"|<\|python_tag\|>\s*[A-Za-z_]\w*\.call\("
)

#: Harmony's message ends (gpt-oss), which stop the generation where a message is the last.
HARMONY_STOPS = frozenset({"<|call|>", "<|return|>", "<|end|>"})
_SPECIAL = re.compile(r"<[|｜][^<>]*[|｜]>")
_ENDING_WORDS = re.compile(r"end|eot|eom|eos|stop|return", re.IGNORECASE)
_DELIMITER_WORDS = re.compile(r"tool|call|arg|think|func|param|section", re.IGNORECASE)


def _ends_generation(token: str) -> bool:
    """Whether a closer is a token that ends the generation (``<|python_end|>``, ``<|eom_id|>``), not a
    delimiter of a call or a reasoning block (``<|tool_call_end|>``): a region closed only by such tokens
    runs to the end of the output by design."""
    if token in HARMONY_STOPS:
        return True
    return (
        bool(_SPECIAL.fullmatch(token))
        and bool(_ENDING_WORDS.search(token))
        and not _DELIMITER_WORDS.search(token)
    )


#: The reviewed exceptions of completeness (tests/grammar/test_grammar_completeness.py).
EXCEPTIONS_FILE = Path(__file__).resolve().parents[1] / "data" / "grammar_exceptions.json"


def load_not_counted() -> dict[str, str]:
    """Sample id -> why it does not count, for outputs reviewed one by one (``grammar_exceptions.json``,
    ``not_counted``): malformed for their format (a delimiter the format requires left out: a parameter or
    call ended by the next opener instead of its closer, a header with no message, an opener with no
    call), which the template reads leniently and a grammar, writing every delimiter, never writes; or a
    control token of the format inside a value, which read token by token is that delimiter."""
    data = json.loads(EXCEPTIONS_FILE.read_text(encoding="utf-8"))
    return dict(data.get("not_counted", {}))


def without_unknown_stop_token(raw: str, template: Mapping[str, Any]) -> str:
    """``raw`` without a final token that ends the generation (:func:`_ends_generation`:
    ``<|content_model_end_sampling|>``) and that the template never names: the model's stop token, which
    the engine generates as its end of sequence, after the grammar's text."""
    match = _SPECIAL.search(raw, max(0, len(raw) - 80))
    while match is not None and match.end() != len(raw):
        match = _SPECIAL.search(raw, match.start() + 1)
    if match is None or not _ends_generation(match.group(0)):
        return raw
    texts = "".join(re.sub(r"\\(.)", r"\1", t) for t in _strings_of(dict(template)))
    return raw if match.group(0) in texts else raw[: match.start()]


def sample_cases() -> tuple[list[SampleCase], dict[str, int]]:
    """Every recorded sample (research set and ``family_samples``) that our parser reads exactly as the
    source expects (``library_samples`` verdict ``pass``), with its family's prompt and tools; and
    counts of the samples left out, by reason."""
    import library_samples as ls
    from response_templates import library

    table = ls.load_tools()
    exceptions = ls.load_exceptions()
    not_counted = load_not_counted()
    cases: list[SampleCase] = []
    skipped: dict[str, int] = {}
    for sample in ls.load_samples():
        verdict = ls.judge(sample, table, exceptions.get(sample["id"]))
        if verdict.status != "pass" or verdict.family is None:
            key = f"verdict {verdict.status}"
            skipped[key] = skipped.get(key, 0) + 1
            continue
        fam = library.family(verdict.family)
        prefix, _ = ls.prefix_for(sample, fam)
        tools, inferred = ls.tools_for(sample, table)
        message = verdict.got
        problems = call_problems(list(message.get("tool_calls") or []), tools)
        cases.append(
            SampleCase(
                id=sample["id"],
                family=fam.name,
                raw=without_unknown_stop_token(sample["raw"], fam.template_dict()),
                prefix=prefix,
                tools=tools,
                inferred_tools=inferred,
                message=message,
                problems=problems,
                incomplete=(
                    "cut"
                    if (sample.get("context") or {}).get("failure_class") == STOP_TOKEN_INSIDE
                    else "listed"
                    if sample["id"] in not_counted and not problems
                    else incompleteness(fam.template(), sample["raw"], prefix, problems)
                ),
            )
        )
    return cases, skipped


# ------------------------------------------------------------------------------------------------------
# Random walks through a family's grammar, parsed back and checked
# ------------------------------------------------------------------------------------------------------

#: The tools every walk is given: a typed object with an enum and bounds, nested values, no parameters.
WALK_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer", "minimum": 1, "maximum": 14},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["city"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search the web.",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
                    "exact": {"type": "boolean"},
                },
                "required": ["query"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "ping",
            "description": "No arguments.",
            "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
        },
    },
]

#: ``(tool_choice, parallel_tool_calls)`` settings the walks cover.
WALK_MODES: list[tuple[Any, bool]] = [
    ("auto", True),
    ("required", True),
    ("none", True),
    ("get_weather", True),
    ({"type": "function", "function": {"name": "search"}}, True),
    ("required", False),
    ("auto", False),
]


def mode_label(tool_choice: Any, parallel: bool) -> str:
    name = named_choice(tool_choice)
    label = f"named:{name}" if name is not None else str(tool_choice)
    return label if parallel else f"{label},no-parallel"


@dataclass
class WalkReport:
    """What the walks of one family and mode found."""

    family: str
    mode: str
    walks: int = 0
    finished: int = 0
    with_calls: int = 0
    calls: int = 0
    failures: list[str] = field(default_factory=list)


def walk_family(
    family: str,
    grammar_module: Any,
    tool_choice: Any,
    parallel: bool,
    count: int,
    seed: int,
    *,
    prefix: str | None = None,
    max_tokens: int = 400,
) -> WalkReport:
    """``count`` random walks through ``family``'s grammar for one setting; each finished walk is parsed
    with the family's template (``prefix``: the family's plain generation prompt unless given) and
    checked with :func:`check_message`. Failures are collected, not raised."""
    import response_templates as rt
    from response_templates import library

    fam = library.family(family)
    prompt = fam.generation_prompt if prefix is None else prefix
    g, engine = build_with_tokens(
        grammar_module,
        family,
        tools=WALK_TOOLS,
        tool_choice=tool_choice,
        parallel_tool_calls=parallel,
        prefix=prompt,
    )
    report = WalkReport(family, mode_label(tool_choice, parallel))
    rng = random.Random(seed)
    template = fam.template()
    for _ in range(count):
        walk = engine.walk(g.lark, rng, max_tokens=max_tokens)
        report.walks += 1
        if not walk.finished:
            continue
        report.finished += 1
        try:
            message = rt.parse_response(walk.text, template, prefix=prompt, tools=WALK_TOOLS)
        except rt.ResponseTemplateError as exc:
            report.failures.append(f"does not parse ({type(exc).__name__}: {exc}): {walk.text!r}")
            continue
        problems = check_message(message, WALK_TOOLS, tool_choice=tool_choice, parallel_tool_calls=parallel)
        calls = len(message.get("tool_calls") or [])
        report.calls += calls
        report.with_calls += calls > 0
        if problems:
            report.failures.append(f"{problems}: {walk.text!r}")
    return report


# ------------------------------------------------------------------------------------------------------
# Constrained sampling from a model's logits
# ------------------------------------------------------------------------------------------------------


class RandomBigramModel:
    """A stand-in language model: next-token logits from a fixed random bigram table (seeded), plus

    * a pull towards ending that grows with the length (EOS, special tokens, closing characters), the
      way a trained model's outputs end;
    * a bonus for tokens that continue one of the format's delimiters (``delimiters``) once its first
      character is written, the way a model trained on the format spells its markup once started.

    Only its logits are used, through the grammar's mask, as a sampler would."""

    def __init__(
        self,
        engine: Engine,
        seed: int = 0,
        *,
        delimiters: Sequence[str] = (),
        scale: float = 1.0,
        horizon: int = 40,
        bonus: float = 6.0,
    ) -> None:
        rs = np.random.default_rng(seed)
        self.engine = engine
        self.table = rs.normal(0.0, scale, size=(engine.vocab_size, engine.vocab_size)).astype(np.float32)
        self.horizon = horizon
        self.bonus = bonus
        self.ending = np.zeros(engine.vocab_size, dtype=np.float32)
        self.ending[engine.closers] = 1.0
        self.ending[: engine.n_special] = 1.5  # delimiters close regions (a reasoning block, a call)
        self.ending[engine.eos] = 2.5
        self.delimiters = sorted({d for d in delimiters if d})
        self.pieces = [engine.decode([i]) for i in range(engine.vocab_size)]
        self.by_first: dict[str, list[int]] = {}
        for index, piece in enumerate(self.pieces):
            if piece:
                self.by_first.setdefault(piece[0], []).append(index)

    def logits(self, ids: Sequence[int], text: str = "") -> np.ndarray[Any, Any]:
        last = ids[-1] if ids else self.engine.eos
        out = self.table[last] + self.ending * (4.0 * len(ids) / self.horizon)
        tail = text[-64:]
        # Delimiters already started (the longest written part of each), else a close tag from nothing
        # (a model ends an argument or a block).
        wanted = [
            delim[k:]
            for delim in self.delimiters
            for k in range(len(delim) - 1, 0, -1)
            if tail.endswith(delim[:k])
        ]
        if not wanted:
            wanted = [delim for delim in self.delimiters if delim.startswith("</")]
        for rest in set(wanted):
            for index in self.by_first.get(rest[0], ()):
                piece = self.pieces[index]
                if rest.startswith(piece) or piece.startswith(rest):
                    out[index] += self.bonus
        return out  # type: ignore[no-any-return]


def delimiters_of_tag(structural_tag: Mapping[str, Any], specials: Iterable[str] = ()) -> list[str]:
    """The fixed strings of a structural tag (begins, ends, constants, triggers) cut at the special
    tokens ``specials`` (a model emits those as tokens, not spelled), for :class:`RandomBigramModel`."""
    tokens = sorted(specials, key=len, reverse=True)
    pieces: set[str] = set()
    for text in set(_strings_of(structural_tag)) - {"structural_tag"}:
        parts = [text]
        for token in tokens:
            parts = [p for part in parts for p in part.split(token)]
        pieces.update(p for p in parts if len(p) >= 2)
    return sorted(pieces)


def constrained_sample(
    engine: Engine, lark: str, model: RandomBigramModel, rng: random.Random, *, max_tokens: int = 1000
) -> Walk:
    """Sample from ``model`` with llguidance's mask applied to its logits (softmax over allowed tokens)
    until EOS, the grammar stops, or ``max_tokens``."""
    m = engine.matcher(lark)
    ids: list[int] = []
    end = "cap"
    for _ in range(max_tokens):
        if m.is_stopped():
            end = "stopped"
            break
        allowed = engine.allowed(m)
        logits = model.logits(ids, engine.decode(ids[-24:]))[allowed].astype(np.float64)
        probs = np.exp(logits - logits.max())
        probs /= probs.sum()
        token = int(allowed[int(np.searchsorted(np.cumsum(probs), rng.random() * probs.sum()))])
        if not m.consume_token(token):
            raise AssertionError(f"the mask allowed a token the matcher refused: {m.get_error()}")
        if token == engine.eos:
            end = "eos"
            break
        ids.append(token)
    return Walk(ids, engine.decode(ids), end)
