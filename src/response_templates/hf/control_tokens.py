"""Which tokens are control tokens, and token ids as pieces of text that say which are.

A *control token* is a token whose text the parser trusts as a delimiter only when the model generated
it as that token's id (docs/tokenizers.md, "Control tokens"). Which tokens they are, as transformers
5.25 decides it:

* every *special* added token (``<|im_start|>``, ``<|im_end|>``, ``</s>``, ...);
* every other added token whose text is among the chat template's literals (``<think>``, ``<tool_call>``
  in Qwen 3), except tokens that are only whitespace;
* or, when the tokenizer has ``chat_control_tokens``, the special tokens plus the added tokens listed there.

:func:`control_token_ids` computes that set (id -> text) once per tokenizer; :class:`PieceDecoder` decodes
ids exactly (:class:`~response_templates.hf.TokenDecoder`) into pieces ``(text, is_control)``, which the
core parser reads with :meth:`~response_templates.ResponseParser.feed` and
:meth:`~response_templates.ResponseParser.feed_control`.

>>> from tokenizers import AddedToken, Tokenizer, decoders, models
>>> tok = Tokenizer(models.WordLevel({"<": 0, "|": 1, "end": 2, ">": 3, "Hi": 4}, unk_token="Hi"))
>>> tok.decoder = decoders.Fuse()
>>> _ = tok.add_special_tokens([AddedToken("<|end|>", special=True)])
>>> control_token_ids(tok)
{5: '<|end|>'}
>>> dec = PieceDecoder(tok)
>>> dec.step([4, 0, 1, 2, 1, 3, 5]) + dec.flush()
[('Hi<|end|>', False), ('<|end|>', True)]
"""

from __future__ import annotations

import contextlib
import functools
import logging
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..controls import ControlTokens
from ..errors import ResponseTemplateError
from .decoding import _PRIME_TOKENS, TokenDecoder, _id_list, _tokenizer_info

__all__ = [
    "PieceDecoder",
    "control_token_ids",
    "control_tokens_for",
    "spellings_of",
    "template_literals",
    "whole_pieces",
]

logger = logging.getLogger("response_templates")

#: Ids of the prompt (or of the output so far) a decoder restarted after a control token is primed with.
_CONTEXT = 6

_CACHE: weakref.WeakKeyDictionary[Any, tuple[Any, dict[int, str]]] = weakref.WeakKeyDictionary()


def template_literals(chat_template: str) -> list[str]:
    """The literal strings of a Jinja chat template: its raw text and its string constants.

    >>> sorted(template_literals("{{ '<think>' }}{% for m in messages %}<|im_start|>{{ m.role }}{% endfor %}"))
    ['<think>', '<|im_start|>']
    """
    try:
        import jinja2
        import jinja2.nodes
    except ImportError:  # pragma: no cover - jinja2 is in the `transformers` extra
        logger.warning("jinja2 is not installed: control tokens are the special tokens only")
        return []
    try:
        tree = jinja2.Environment().parse(chat_template)
    except jinja2.TemplateSyntaxError as exc:
        logger.warning(
            "the chat template does not parse (%s): control tokens are the special tokens only", exc
        )
        return []
    found = [node.data for node in tree.find_all(jinja2.nodes.TemplateData)]
    found += [node.value for node in tree.find_all(jinja2.nodes.Const) if isinstance(node.value, str)]
    return found


def _added_tokens(tokenizer: Any) -> dict[int, Any]:
    decoder = getattr(tokenizer, "added_tokens_decoder", None)
    if isinstance(decoder, Mapping):
        return dict(decoder)
    get = getattr(tokenizer, "get_added_tokens_decoder", None)  # a bare tokenizers.Tokenizer
    if callable(get):
        return dict(get())
    return {}


def _chat_templates(tokenizer: Any) -> list[str]:
    template = getattr(tokenizer, "chat_template", None)
    if isinstance(template, Mapping):
        return [t for t in template.values() if isinstance(t, str)]
    if isinstance(template, str):
        return [template]
    return []


def control_token_ids(tokenizer: Any) -> dict[int, str]:
    """The tokenizer's control tokens, id -> text (computed once per tokenizer and chat template)."""
    override = getattr(tokenizer, "chat_control_tokens", None)
    templates = _chat_templates(tokenizer)
    key = (tuple(override) if override is not None else None, tuple(templates))
    try:
        cached = _CACHE.get(tokenizer)
    except TypeError:
        cached = None
    if cached is not None and cached[0] == key:
        return cached[1]
    added = _added_tokens(tokenizer)
    chosen: dict[int, str] = {}
    if override is not None:
        listed = set(override)
        for tid, token in added.items():
            content = getattr(token, "content", str(token))
            if getattr(token, "special", False) or content in listed:
                chosen[tid] = content
    else:
        literal_text = "\0".join(lit for t in templates for lit in template_literals(t))
        for tid, token in added.items():
            content = getattr(token, "content", str(token))
            if getattr(token, "special", False) or (
                content and content in literal_text and not content.isspace()
            ):
                chosen[tid] = content
    with contextlib.suppress(TypeError):
        _CACHE[tokenizer] = (key, chosen)
    return chosen


def control_tokens_for(tokenizer: Any, chosen: Iterable[str] | str | None = "auto") -> dict[int, str]:
    """The control tokens to use: ``"auto"`` (the tokenizer's, :func:`control_token_ids`), or the added
    tokens whose texts are in ``chosen`` (``()``: none, which is the text reading: every spelling of a
    delimiter matches)."""
    if chosen is None or (isinstance(chosen, str) and chosen == "auto"):
        return control_token_ids(tokenizer)
    if isinstance(chosen, str):
        raise ResponseTemplateError(
            f'control_tokens must be "auto" or a collection of token texts, got the string {chosen!r}'
        )
    wanted = set(chosen)
    out: dict[int, str] = {}
    for tid, token in _added_tokens(tokenizer).items():
        content = getattr(token, "content", str(token))
        if content in wanted:
            out[tid] = content
    missing = wanted - set(out.values())
    if missing:
        raise ResponseTemplateError(
            f"control_tokens names text(s) that are not added tokens of this tokenizer: {sorted(missing)!r} "
            "(a control token is one token id)"
        )
    return out


@functools.lru_cache(maxsize=64)
def _spellings(texts: tuple[str, ...]) -> ControlTokens:
    return ControlTokens(texts)


def spellings_of(controls: Mapping[int, str]) -> ControlTokens:
    """The :class:`~response_templates.controls.ControlTokens` of ``controls`` (built once per set)."""
    return _spellings(tuple(sorted(set(controls.values()))))


class PieceDecoder:
    """Token ids in, text out, as pieces ``(text, is_control)``: a control token's id is a piece of its
    own (its exact text), the text of other ids is decoded exactly by a
    :class:`~response_templates.hf.TokenDecoder` (primed with the prompt's ids, or restarted after a
    control token in the context of the ids before it).

    The concatenation of all pieces equals ``tokenizer.decode(ids)`` (special tokens kept, after the
    prompt when primed); each id costs O(1) amortized.
    """

    __slots__ = ("_controls", "_decoder", "_recent", "_tokenizer", "spellings")

    def __init__(
        self,
        tokenizer: Any,
        controls: Mapping[int, str] | None = None,
        prompt_ids: Sequence[int] | None = None,
    ) -> None:
        self._tokenizer = tokenizer
        self._controls: Mapping[int, str] = control_token_ids(tokenizer) if controls is None else controls
        #: The control tokens' texts, for the parser (:class:`~response_templates.controls.ControlTokens`).
        self.spellings = spellings_of(self._controls)
        prompt = _id_list(prompt_ids) if prompt_ids is not None else None
        self._decoder = TokenDecoder(tokenizer, prompt_ids=prompt)
        self._recent: list[int] = prompt[-_CONTEXT:] if prompt else []

    @property
    def pending(self) -> int:
        """How many fed ids have not produced their text yet."""
        return self._decoder.pending

    def step(self, ids: int | Sequence[int] | Any) -> list[tuple[str, bool]]:
        """Feed one id or several; the pieces that became final."""
        new = [ids] if type(ids) is int else _id_list(ids)
        if not new:
            return []
        controls = self._controls
        out: list[tuple[str, bool]] = []
        start = 0
        for i, tid in enumerate(new):
            if tid not in controls:
                continue
            if i > start:
                self._ordinary(new[start:i], out)
            self._control(tid, controls[tid], out)
            start = i + 1
        if start < len(new):
            self._ordinary(new[start:] if start else new, out)
        return out

    def flush(self) -> list[tuple[str, bool]]:
        """End the ids: the text still held (an unfinished character becomes U+FFFD)."""
        text = self._decoder.flush()
        return [(text, False)] if text else []

    def release(self) -> str:
        """Text held only as clean-up look-ahead, given up because text fed otherwise follows it."""
        return self._decoder._release()

    def _ordinary_one(self, tid: int) -> str:
        """One ordinary (not control) id, checked by the caller: the text it released."""
        recent = self._recent
        recent.append(tid)
        if len(recent) > 4 * _CONTEXT:
            del recent[:-_CONTEXT]
        return self._decoder.step(tid)

    def _ordinary(self, ids: list[int], out: list[tuple[str, bool]]) -> None:
        text = self._decoder.step(ids)
        if text:
            out.append((text, False))
        recent = self._recent
        recent.extend(ids[-_CONTEXT:])
        if len(recent) > 4 * _CONTEXT:
            del recent[:-_CONTEXT]

    def _control(self, tid: int, spelling: str, out: list[tuple[str, bool]]) -> None:
        decoder = self._decoder
        text = decoder.step(tid)
        self._recent.append(tid)
        if not decoder.holding and text.endswith(spelling):
            # The common case: the decoder released everything up to and including the token, which ends
            # its text; it goes on decoding the next ids in the token's context.
            before = text[: len(text) - len(spelling)]
            if before:
                out.append((before, False))
            out.append((spelling, True))
            return
        # The text held before the control token is final now (no later id can change it), and the ids
        # after it decode in its context: end this decoder and start one primed with the ids so far.
        text += decoder.flush()
        self._decoder = TokenDecoder(self._tokenizer, prompt_ids=self._recent[-_CONTEXT:])
        if text.endswith(spelling):
            before = text[: len(text) - len(spelling)]
            if before:
                out.append((before, False))
            out.append((spelling, True))
            return
        # A tokenizer that decodes the token to something else: its whole text counts as the token.
        logger.debug("control token %d decoded as %r, not %r", tid, text, spelling)
        out.append((text, True))


def whole_pieces(
    tokenizer: Any, ids: list[int], controls: Mapping[int, str], prompt_ids: Sequence[int] | None = None
) -> list[tuple[str, bool]]:
    """All of ``ids`` as pieces at once: what :class:`PieceDecoder` gives, with one decode per run of
    ordinary ids (in the context of the id before it) instead of a step per id. Falls back to the
    decoder where one decode per run could differ (clean-up of spaces, a decoder that rewrites text)."""
    info = _tokenizer_info(tokenizer)
    if info.cleanup is not None or not ids:
        decoder = PieceDecoder(tokenizer, controls, prompt_ids=prompt_ids)
        return decoder.step(ids) + decoder.flush()
    raw = info.raw_decode
    concat = info.concatenative
    found = controls.keys() & set(ids) if controls else set()
    cuts: list[int] = []
    for tid in found:  # list.index scans at C speed; the control ids are few
        at = ids.index(tid)
        while True:
            cuts.append(at)
            try:
                at = ids.index(tid, at + 1)
            except ValueError:
                break
    cuts.sort()
    out: list[tuple[str, bool]] = []
    context: list[int] = list(prompt_ids[-_PRIME_TOKENS:]) if prompt_ids else []
    start = 0
    for cut in [*cuts, len(ids)]:
        if cut > start:
            run = ids[start:cut]
            if concat or not context:
                text = raw(run)
            else:
                known = raw(context)
                full = raw(context + run)
                if not full.startswith(known) or known.endswith("\ufffd"):
                    decoder = PieceDecoder(tokenizer, controls, prompt_ids=prompt_ids)
                    return decoder.step(ids) + decoder.flush()
                text = full[len(known) :]
            if text:
                out.append((text, False))
        if cut < len(ids):
            out.append((controls[ids[cut]], True))
            context = [ids[cut]]
        start = cut + 1
    return out


def token_input(tokenizer: Any, prefix: Any, chosen: Any) -> tuple[PieceDecoder, Any, ControlTokens]:
    """What :class:`~response_templates.ResponseParser` needs to read ids (its ``tokenizer=`` argument):
    the decoder of the generated ids, the prompt as the parser takes it (text, or ids as pieces), and the
    control tokens' texts. ``chosen`` is the parser's ``control_tokens`` (None: the tokenizer's)."""
    from .inputs import normalize, pad_info

    controls = control_tokens_for(tokenizer, "auto" if chosen is None else chosen)
    prompt_ids: list[int] | None = None
    if not isinstance(prefix, str):
        pad_id, keep_one = pad_info(tokenizer)
        inputs = normalize(prefix, pad_id=pad_id, keep_one=keep_one, what="prefix")
        if not inputs.items:  # [] or an empty array: the explicit opt-out, as prefix=""
            inputs = normalize("", pad_id=pad_id, keep_one=keep_one, what="prefix")
        if inputs.batched and len(inputs.items) != 1:
            raise ResponseTemplateError(
                f"a parser follows one generation, but prefix is a batch of {len(inputs.items)}: pass one prompt"
            )
        item = inputs.items[0] if inputs.items else ""
        if isinstance(item, str):
            prefix = item
        else:
            prompt_ids = item
            prompt = PieceDecoder(tokenizer, controls)
            prefix = prompt.step(item) + prompt.flush()
    decoder = PieceDecoder(tokenizer, controls, prompt_ids=prompt_ids)
    return decoder, prefix, decoder.spellings
