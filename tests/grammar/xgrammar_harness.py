"""The xgrammar side of the grammar proofs: the structural tag driven token by token through xgrammar's
``GrammarMatcher``, over the same trained tokenizer as :mod:`grammar_harness` (llguidance's side).

Not a test module: ``test_grammar_forms.py`` and ``benchmarks/bench_grammar.py`` import it. Needs
xgrammar and transformers (the engines' venv, ``.venv-vllm``).

* :class:`XEngine` wraps a :class:`grammar_harness.Engine`: its tokenizer is wrapped as a transformers
  fast tokenizer and handed to ``xgrammar.TokenizerInfo.from_huggingface`` (byte-level vocabulary, the
  family's special tokens as single tokens, EOS as the stop token), so a structural tag that names a
  special token (a ``token`` format, by id or by text) meets the token a model emits;
  :meth:`XEngine.compile` compiles a structural tag; :meth:`XEngine.accepts` feeds a text's tokens to a
  matcher, then EOS, and says whether the tag accepts the text whole; :meth:`XEngine.walk` samples a
  random path through the tag with the matcher's token bitmasks.
* :func:`completeness` runs the completeness proof in both formats: per recorded sample of each compiled
  family, the ``auto`` grammar built as ``test_grammar_completeness.py`` builds it (the sample's tools,
  its prompt as prefix, the family's token-like delimiters as special tokens), judged by xgrammar over
  the structural tag and by llguidance over the Lark form.

As a script (``.venv-vllm/bin/python tests/grammar/xgrammar_harness.py --completeness
[--families a,b] [--json out.json] [--quiet]``) it prints each sample's two verdicts, a summary per
family and the samples on which the two formats disagree.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

_HERE = Path(__file__).resolve().parent
for _path in (_HERE, _HERE.parent):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import grammar_harness as gh  # noqa: E402
import xgrammar as xgr  # noqa: E402


def _tokenizer_info(engine: gh.Engine) -> Any:
    """xgrammar's view of the engine's tokenizer: through transformers when it can wrap it (the path a
    serving engine takes), else the raw bytes of every token."""
    try:
        from transformers import PreTrainedTokenizerFast

        hf = PreTrainedTokenizerFast(tokenizer_object=engine.tokenizer)
        return xgr.TokenizerInfo.from_huggingface(
            hf, vocab_size=engine.vocab_size, stop_token_ids=[engine.eos]
        )
    except Exception:  # pragma: no cover - an older transformers, or none
        vocab = [bytes(engine.ll.decode_bytes([i])) for i in range(engine.vocab_size)]
        vocab[engine.eos] = gh.EOS.encode()
        return xgr.TokenizerInfo(vocab, xgr.VocabType.RAW, stop_token_ids=[engine.eos])


def tag_json(tag: Mapping[str, Any] | str) -> str:
    return tag if isinstance(tag, str) else json.dumps(tag)


@dataclass
class XEngine:
    """A :class:`grammar_harness.Engine` with its xgrammar twin (tokenizer info and compiler)."""

    engine: gh.Engine
    info: Any = field(init=False)
    compiler: Any = field(init=False)

    def __post_init__(self) -> None:
        self.info = _tokenizer_info(self.engine)
        self.compiler = xgr.GrammarCompiler(self.info, cache_enabled=False)

    @property
    def vocab_size(self) -> int:
        return self.engine.vocab_size

    @property
    def eos(self) -> int:
        return self.engine.eos

    def compile(self, tag: Mapping[str, Any] | str | Any) -> Any:
        """A compiled grammar for a structural tag (dict or JSON) or an ``xgrammar.Grammar``; raises
        ``ValueError`` with xgrammar's message when it is refused."""
        try:
            if isinstance(tag, xgr.Grammar):
                return self.compiler.compile_grammar(tag)
            return self.compiler.compile_structural_tag(tag_json(tag))
        except Exception as exc:
            # xgrammar's C++ messages start with a time and a source position: keep the message.
            message = re.sub(r"^\[[\d:]+\] \S+:\d+: ", "", str(exc).strip())
            raise ValueError(f"{type(exc).__name__}: {message}") from exc

    def compile_ms(self, tag: Mapping[str, Any] | str) -> float:
        """The time xgrammar takes to compile ``tag`` once (a fresh compiler, no cache)."""
        compiler = xgr.GrammarCompiler(self.info, cache_enabled=False)
        t0 = time.perf_counter()
        compiler.compile_structural_tag(tag_json(tag))
        return (time.perf_counter() - t0) * 1e3

    def matcher(self, compiled: Any) -> Any:
        return xgr.GrammarMatcher(compiled)

    def allowed(self, matcher: Any, bitmask: Any | None = None) -> np.ndarray[Any, Any]:
        """The token ids the matcher allows next (from its token bitmask)."""
        if bitmask is None:
            bitmask = xgr.allocate_token_bitmask(1, self.vocab_size)
        matcher.fill_next_token_bitmask(bitmask)
        bits = np.unpackbits(bitmask[0].numpy().view(np.uint8), bitorder="little")
        return np.flatnonzero(bits[: self.vocab_size])

    def accepts(self, compiled: Any, text: str) -> tuple[bool, str]:
        """Whether the compiled tag (or a structural tag, compiled here) accepts ``text`` whole: every
        token of it, then EOS. ``(True, "")`` or ``(False, where it stopped)``."""
        if not isinstance(compiled, xgr.CompiledGrammar):
            compiled = self.compile(compiled)
        m = self.matcher(compiled)
        ids = self.engine.encode(text)
        for index, token in enumerate(ids):
            if not m.accept_token(token):
                done = self.engine.decode(ids[:index])
                return False, f"token {index} {self.engine.decode([token])!r} rejected after {done[-60:]!r}"
        if not m.accept_token(self.eos):
            return False, "the text is a proper prefix of the language (the grammar wants more)"
        return True, ""

    def walk(
        self,
        compiled: Any,
        rng: random.Random,
        *,
        max_tokens: int = 400,
        p_stop: float = 0.2,
        p_special: float = 0.3,
        p_close: float = 0.45,
    ) -> gh.Walk:
        """A random path through the tag with xgrammar's token masks, by the same rule as
        :meth:`grammar_harness.Engine.walk` (EOS with probability ``p_stop`` when allowed, else a
        special token with ``p_special``, a closing-ish token with ``p_close``, or any allowed one)."""
        if not isinstance(compiled, xgr.CompiledGrammar):
            compiled = self.compile(compiled)
        m = self.matcher(compiled)
        bitmask = xgr.allocate_token_bitmask(1, self.vocab_size)
        engine = self.engine
        ids: list[int] = []
        end = "cap"
        for _ in range(max_tokens):
            if m.is_terminated():
                end = "stopped"
                break
            allowed = self.allowed(m, bitmask)
            if len(allowed) == 0:
                end = "stopped"
                break
            eos_ok = bool(np.any(allowed == self.eos))
            if eos_ok and rng.random() < p_stop:
                token = self.eos
            else:
                choices = allowed[allowed != self.eos] if len(allowed) > 1 else allowed
                specials = choices[choices < engine.n_special]
                if len(specials) and rng.random() < p_special:
                    choices = specials
                elif rng.random() < p_close:
                    closing = np.intersect1d(choices, engine.closers, assume_unique=True)
                    if len(closing):
                        choices = closing
                token = int(choices[rng.randrange(len(choices))])
            if not m.accept_token(token):
                raise AssertionError(f"xgrammar's mask allowed token {token} that its matcher refused")
            if token == self.eos:
                end = "eos"
                break
            ids.append(token)
        return gh.Walk(ids, engine.decode(ids), end)

    def mask_us(self, compiled: Any, steps: int, seed: Any) -> float:
        """Mean time (µs) of one token bitmask along a random path of ``steps`` tokens (restarting when
        the grammar ends)."""
        m = self.matcher(compiled)
        bitmask = xgr.allocate_token_bitmask(1, self.vocab_size)
        rng = random.Random(seed)
        total = 0.0
        for _ in range(steps):
            if m.is_terminated():
                m = self.matcher(compiled)
            t0 = time.perf_counter()
            m.fill_next_token_bitmask(bitmask)
            total += time.perf_counter() - t0
            bits = np.unpackbits(bitmask[0].numpy().view(np.uint8), bitorder="little")[: self.vocab_size]
            allowed = [int(i) for i in np.flatnonzero(bits) if i != self.eos] or [self.eos]
            token = allowed[rng.randrange(len(allowed))]
            if not m.accept_token(token) or token == self.eos:
                m = self.matcher(compiled)
        return total / max(steps, 1) * 1e6


_XENGINES: dict[int, XEngine] = {}


def xengine_for(engine: gh.Engine) -> XEngine:
    """The cached :class:`XEngine` of a harness engine (engines are cached by their special tokens)."""
    found = _XENGINES.get(id(engine))
    if found is None or found.engine is not engine:
        found = _XENGINES[id(engine)] = XEngine(engine)
    return found


# ------------------------------------------------------------------------------------------------------
# Completeness in both formats
# ------------------------------------------------------------------------------------------------------


@dataclass
class FormsVerdict:
    """One recorded sample judged in both formats of its family's ``auto`` grammar."""

    id: str
    family: str
    #: The structural tag in xgrammar accepts it (``None``: xgrammar refused the tag).
    tag: bool | None
    tag_why: str
    lark: bool
    lark_why: str
    #: The output's calls are not valid for its tools (a grammar that enforces schemas rejects it).
    invalid_for_tools: bool

    @property
    def agree(self) -> bool:
        return self.tag == self.lark


def compiled_families() -> list[str]:
    from response_templates import grammar

    return sorted(name for name, cov in grammar.coverage().items() if cov.compiles)


def judge_case(case: gh.SampleCase) -> FormsVerdict:
    """Both formats' verdicts on one recorded sample (the build of ``test_grammar_completeness.py``)."""
    from response_templates import grammar

    kwargs: dict[str, Any] = {"tools": case.tools or [], "tool_choice": "auto", "prefix": case.prefix}
    g, engine = gh.build_with_tokens(grammar, case.family, **kwargs)
    lark_ok, lark_why = engine.accepts(g.lark, case.raw)
    xe = xengine_for(engine)
    tag_ok: bool | None
    try:
        tag_ok, tag_why = xe.accepts(xe.compile(g.structural_tag), case.raw)
    except ValueError as exc:
        tag_ok, tag_why = None, f"xgrammar refused the tag: {str(exc)[:300]}"
    return FormsVerdict(case.id, case.family, tag_ok, tag_why, lark_ok, lark_why, bool(case.problems))


def completeness(families: Sequence[str] | None = None) -> list[FormsVerdict]:
    """:func:`judge_case` for every recorded sample of the compiled ``families`` (default: all)."""
    wanted = set(compiled_families())
    if families is not None:
        wanted &= set(families)
    cases, _ = gh.sample_cases()
    return [judge_case(case) for case in cases if case.family in wanted]


@dataclass
class FamilyForms:
    family: str
    samples: int = 0
    valid: int = 0
    tag: int = 0
    lark: int = 0
    tag_refused: bool = False
    tag_only: list[str] = field(default_factory=list)
    lark_only: list[str] = field(default_factory=list)


def summarize(verdicts: Sequence[FormsVerdict]) -> dict[str, FamilyForms]:
    out: dict[str, FamilyForms] = {}
    for v in verdicts:
        row = out.setdefault(v.family, FamilyForms(v.family))
        row.samples += 1
        row.valid += not v.invalid_for_tools
        row.tag += bool(v.tag)
        row.lark += v.lark
        row.tag_refused |= v.tag is None
        if v.tag and not v.lark:
            row.tag_only.append(v.id)
        if v.lark and not v.tag:
            row.lark_only.append(v.id)
    return out


def _print_completeness(verdicts: Sequence[FormsVerdict], quiet: bool) -> None:
    def mark(ok: bool | None) -> str:
        return "refused" if ok is None else ("accept" if ok else "reject")

    if not quiet:
        for v in verdicts:
            print(
                f"{v.family:28} {v.id:48} tag={mark(v.tag):7} lark={mark(v.lark):7}"
                + ("  (invalid for its tools)" if v.invalid_for_tools else "")
            )
    rows = summarize(verdicts)
    print()
    print(
        f"{'family':28} {'samples':>7} {'valid':>6} {'tag':>5} {'lark':>5} {'tag-only':>8} {'lark-only':>9}"
    )
    for name in sorted(rows):
        r = rows[name]
        tag = "refused" if r.tag_refused else str(r.tag)
        print(
            f"{name:28} {r.samples:7} {r.valid:6} {tag:>5} {r.lark:5} {len(r.tag_only):8} {len(r.lark_only):9}"
        )
    total = len(verdicts)
    valid = [v for v in verdicts if not v.invalid_for_tools]
    tag_ok = sum(bool(v.tag) for v in verdicts)
    lark_ok = sum(v.lark for v in verdicts)
    print(
        f"\n{len(rows)} families, {total} samples ({len(valid)} valid for their tools): structural tag "
        f"(xgrammar) accepts {tag_ok}, Lark (llguidance) accepts {lark_ok}; of the valid ones "
        f"{sum(bool(v.tag) for v in valid)} and {sum(v.lark for v in valid)}"
    )
    refused = sorted(r.family for r in rows.values() if r.tag_refused)
    if refused:
        print(f"xgrammar refused the tag of: {', '.join(refused)}")
    differ = [v for v in verdicts if not v.agree]
    print(f"\n{len(differ)} disagreements between the two formats:")
    for v in differ:
        side = "tag only" if v.tag else "lark only"
        why = v.lark_why if v.tag else v.tag_why
        print(f"  {v.id} [{v.family}] accepted by {side}; the other: {why}")


# ------------------------------------------------------------------------------------------------------
# Soundness of the structural tag under xgrammar
# ------------------------------------------------------------------------------------------------------


@dataclass
class FamilyWalks:
    """Random walks through one family's structural tag with xgrammar's masks, parsed back and checked."""

    family: str
    walks: int = 0
    finished: int = 0
    sound: int = 0
    unsound: list[str] = field(default_factory=list)
    refused: str = ""


def walk_soundness(
    families: Sequence[str] | None = None,
    count: int = 10,
    modes: Sequence[str] = ("auto", "required"),
    *,
    plain: bool = False,
    max_tokens: int = 300,
) -> list[FamilyWalks]:
    """``count`` walks per mode through each compiled family's structural tag (the walk tools, the
    family's plain generation prompt, the family's token-like delimiters as special tokens of the
    tokenizer), each finished walk parsed with the template and checked with
    ``grammar_harness.check_message``. ``plain``: the tag built without ``special_tokens`` (every
    delimiter as text), over the same tokenizer."""
    import response_templates as rt
    from response_templates import grammar, library

    names = [f for f in compiled_families() if families is None or f in families]
    out: list[FamilyWalks] = []
    for name in names:
        fam = library.family(name)
        prompt = fam.generation_prompt
        row = FamilyWalks(name)
        out.append(row)
        for mode in modes:
            kwargs: dict[str, Any] = {"tools": gh.WALK_TOOLS, "tool_choice": mode, "prefix": prompt}
            try:
                g, engine = gh.build_with_tokens(grammar, name, **kwargs)
            except grammar.GrammarError:
                continue  # a family without calls has no forced choice
            tag = grammar.build(name, **kwargs).structural_tag if plain else g.structural_tag
            xe = xengine_for(engine)
            try:
                compiled = xe.compile(tag)
            except ValueError as exc:
                row.refused = str(exc)[:200]
                continue
            rng = random.Random(f"{name}/{mode}")
            for _ in range(count):
                walk = xe.walk(compiled, rng, max_tokens=max_tokens)
                row.walks += 1
                if not walk.finished:
                    continue
                row.finished += 1
                try:
                    message = rt.parse_response(walk.text, fam.template(), prefix=prompt, tools=gh.WALK_TOOLS)
                except rt.ResponseTemplateError as exc:
                    row.unsound.append(f"{mode}: does not parse ({type(exc).__name__}): {walk.text[:160]!r}")
                    continue
                problems = gh.check_message(message, gh.WALK_TOOLS, tool_choice=mode)
                if problems:
                    row.unsound.append(f"{mode}: {problems}: {walk.text[:160]!r}")
                else:
                    row.sound += 1
    return out


def _print_walks(rows: Sequence[FamilyWalks], quiet: bool) -> None:
    for r in rows:
        if not quiet or r.unsound or r.refused:
            print(
                f"{r.family:28} sound {r.sound}/{r.finished} of {r.walks} walks"
                + (f"  refused: {r.refused}" if r.refused else "")
            )
        for u in r.unsound[:3]:
            print(f"    {u}")
    print(
        f"\n{len(rows)} families: {sum(r.sound for r in rows)} sound of {sum(r.finished for r in rows)} "
        f"finished walks ({sum(r.walks for r in rows)} walks); families with an unsound walk: "
        f"{sum(bool(r.unsound) for r in rows)}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--completeness", action="store_true", help="both formats on the recorded samples")
    parser.add_argument("--families", help="comma-separated family names (default: every compiled family)")
    parser.add_argument("--quiet", action="store_true", help="leave out the per-sample lines")
    parser.add_argument("--json", help="write the per-sample verdicts to this file")
    parser.add_argument("--walks", type=int, help="random walks per mode (auto, required) through each tag")
    parser.add_argument("--plain", action="store_true", help="with --walks: the tag without special tokens")
    args = parser.parse_args(argv)
    families = args.families.split(",") if args.families else None
    if args.walks:
        t0 = time.perf_counter()
        _print_walks(walk_soundness(families, args.walks, plain=args.plain), args.quiet)
        print(f"({time.perf_counter() - t0:.0f} s)")
        return 0
    if not args.completeness:
        parser.error("say what to run: --completeness or --walks N")
    t0 = time.perf_counter()
    verdicts = completeness(families)
    _print_completeness(verdicts, args.quiet)
    print(f"({time.perf_counter() - t0:.0f} s)")
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(v) for v in verdicts], indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
