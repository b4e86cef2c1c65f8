"""Exact incremental detokenization: token ids in, text out, never half a character.

A model emits token ids one at a time, but text only exists for whole characters: an emoji can be four
byte-level tokens, a CJK character three byte-fallback tokens, and a SentencePiece tokenizer decides
whether a word starts with a space by looking at the token before it. Decoding each token on its own
gets all of this wrong (U+FFFD replacement characters, lost spaces); re-decoding the whole output on
every token is right but costs O(n) per token.

:class:`TokenDecoder` keeps a small window of recent tokens and decodes only that window, emitting
the part of its text that no later token can change. Its guarantee: the concatenation of everything
:meth:`TokenDecoder.step` and :meth:`TokenDecoder.flush` return equals ``tokenizer.decode(ids)`` of all
the ids fed (special tokens kept), or, when primed with the prompt's ids,
``tokenizer.decode(prompt + ids)`` minus the prompt's own text. Each step costs O(1) amortized.

>>> from tokenizers import Tokenizer, decoders, models, pre_tokenizers
>>> byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False)
>>> alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
>>> tok = Tokenizer(models.BPE({c: i for i, c in enumerate(alphabet)}, []))
>>> tok.pre_tokenizer, tok.decoder = byte_level, decoders.ByteLevel()
>>> ids = tok.encode("Hi 🙂!").ids   # the emoji is four one-byte tokens
>>> dec = TokenDecoder(tok)
>>> [dec.step(i) for i in ids] + [dec.flush()]
['H', 'i', ' ', '', '', '', '🙂', '!', '']
"""

from __future__ import annotations

import contextlib
import functools
import logging
import operator
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import ParserStateError, ResponseTemplateError

__all__ = ["TokenDecoder", "clean_up_applies", "decode_text"]

logger = logging.getLogger("response_templates")

_FFFD = "\ufffd"

#: Tokens of the prompt used as decoding context when a decoder is primed.
_PRIME_TOKENS = 6
#: Tokens that may wait for a clean character boundary before the window is searched for a safe
#: restart point (only garbage output, such as a run of invalid UTF-8 bytes, gets there).
_MAX_PENDING = 16
#: Without a byte-level decoder, the window is cut down to its last piece only when it is longer than
#: this: decoding a few more tokens costs less than decoding the context again after every token.
_SHRINK_AT = 3
#: Characters that can appear after the first character of one of the patterns of transformers'
#: ``clean_up_tokenization`` (" .", " ?", " !", " ,", " ' ", " n't", " 'm", " 's", " 've", " 're").
_CLEANUP_NON_INITIAL = frozenset(".?!,' ntmsver")


# --------------------------------------------------------------------------------------------------------
# What we need to know about a tokenizer (computed once per tokenizer)
# --------------------------------------------------------------------------------------------------------


class _TokenizerInfo:
    """Facts about one tokenizer that the decoders need, computed once and cached."""

    __slots__ = ("byte_ids", "cleanup", "concatenative", "decode_full", "raw_decode")

    def __init__(
        self,
        raw_decode: Callable[[list[int]], str],
        decode_full: Callable[[list[int]], str],
        byte_ids: frozenset[int],
        cleanup: Callable[[str], str] | None,
        concatenative: bool,
    ) -> None:
        #: ids -> text with special tokens kept and no clean-up of spaces.
        self.raw_decode = raw_decode
        #: ids -> text exactly as ``tokenizer.decode(ids)`` gives it (special tokens kept).
        self.decode_full = decode_full
        #: Ids of SentencePiece byte-fallback tokens (``<0x00>`` .. ``<0xFF>``).
        self.byte_ids = byte_ids
        #: The tokenizer's ``clean_up_tokenization`` when its ``decode`` applies it, else None.
        self.cleanup = cleanup
        #: Whether ``raw_decode`` is UTF-8 decoding of the tokens' concatenated bytes (a bare ByteLevel
        #: decoder), so that at a character boundary decode(a + b) == decode(a) + decode(b).
        self.concatenative = concatenative


#: tokenizer -> (its clean_up_tokenization_spaces flag when computed, facts)
_INFO: weakref.WeakKeyDictionary[Any, tuple[bool, _TokenizerInfo]] = weakref.WeakKeyDictionary()


def _is_transformers_tokenizer(tokenizer: Any) -> bool:
    return hasattr(tokenizer, "init_kwargs") and hasattr(tokenizer, "convert_ids_to_tokens")


def _defined_in(cls: type, name: str) -> str | None:
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__module__
    return None


# Modules whose ``_decode`` is "backend decode, then optional clean-up" (transformers 5.x and 4.x).
_FAST_DECODE_MODULES = frozenset(
    {"transformers.tokenization_utils_tokenizers", "transformers.tokenization_utils_fast"}
)


def _backend_decode(tokenizer: Any) -> Callable[[list[int]], str] | None:
    """The Rust decode behind a fast transformers tokenizer, when ``tokenizer.decode`` is exactly it."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None or not hasattr(backend, "decode"):
        return None
    cls = type(tokenizer)
    if _defined_in(cls, "_decode") not in _FAST_DECODE_MODULES:
        return None  # a subclass decodes in its own way: go through tokenizer.decode
    if _defined_in(cls, "decode") != "transformers.tokenization_utils_base":
        return None
    return functools.partial(backend.decode, skip_special_tokens=False)


def _is_byte_level(tokenizer: Any) -> bool:
    """Whether the Rust decoder is a bare ``ByteLevel`` one (not inside a ``Sequence``)."""
    backend = getattr(tokenizer, "backend_tokenizer", tokenizer)
    decoder = getattr(backend, "decoder", None)
    return type(decoder).__name__ == "ByteLevel" and type(decoder).__module__.startswith("tokenizers")


def _byte_fallback_ids(tokenizer: Any) -> frozenset[int]:
    names = [f"<0x{b:02X}>" for b in range(256)]
    backend = getattr(tokenizer, "backend_tokenizer", None)
    lookup = getattr(backend, "token_to_id", None) or getattr(tokenizer, "token_to_id", None)
    found: set[int] = set()
    if lookup is not None:
        for name in names:
            tid = lookup(name)
            if tid is not None:
                found.add(int(tid))
        return frozenset(found)
    convert = getattr(tokenizer, "convert_tokens_to_ids", None)
    if convert is None:
        return frozenset()
    unk = getattr(tokenizer, "unk_token_id", None)
    for name in names:
        try:
            tid = convert(name)
        except (KeyError, ValueError, TypeError):
            continue
        if tid is not None and tid != unk:
            found.add(int(tid))
    return frozenset(found)


def _cleanup_function(tokenizer: Any, raw_decode: Callable[[list[int]], str]) -> Callable[[str], str] | None:
    """``tokenizer.clean_up_tokenization`` if ``tokenizer.decode`` applies it by default, else None.

    transformers applies it when ``clean_up_tokenization_spaces`` is true, except that transformers 5
    skips it for BPE tokenizers; a small probe tells which case this is, whatever the version.
    """
    if not getattr(tokenizer, "clean_up_tokenization_spaces", False):
        return None
    # a transformers tokenizer method: `(str) -> str` when it exists
    cleanup: Callable[[str], str] | None = getattr(tokenizer, "clean_up_tokenization", None)
    if not callable(cleanup):
        return None
    try:
        ids = list(tokenizer.encode("a .", add_special_tokens=False))
        raw = raw_decode(ids)
        cooked = tokenizer.decode(ids, skip_special_tokens=False)
    except Exception:  # an exotic tokenizer: trust its flag
        return cleanup
    if raw == cooked and " ." in raw:
        return None  # the flag is set but decode does not clean (transformers 5, BPE)
    return cleanup


def _tokenizer_info(tokenizer: Any) -> _TokenizerInfo:
    flag = bool(getattr(tokenizer, "clean_up_tokenization_spaces", False))
    try:
        cached = _INFO.get(tokenizer)
    except TypeError:  # not weak-referenceable or not hashable
        cached = None
    if cached is not None and cached[0] == flag:
        return cached[1]
    concatenative = False
    raw: Callable[[list[int]], str]
    full: Callable[[list[int]], str]
    if _is_transformers_tokenizer(tokenizer):
        backend = _backend_decode(tokenizer)
        if backend is not None:
            raw = backend
            concatenative = _is_byte_level(tokenizer)
        else:  # slow tokenizers, and classes with a decode of their own
            raw = functools.partial(
                tokenizer.decode, skip_special_tokens=False, clean_up_tokenization_spaces=False
            )
        full = functools.partial(tokenizer.decode, skip_special_tokens=False)
        cleanup = _cleanup_function(tokenizer, raw)
    elif hasattr(tokenizer, "decode") and hasattr(tokenizer, "token_to_id"):  # a tokenizers.Tokenizer
        raw = full = functools.partial(tokenizer.decode, skip_special_tokens=False)
        cleanup = None
        concatenative = _is_byte_level(tokenizer)
    else:
        raise ResponseTemplateError(
            f"expected a Hugging Face tokenizer (transformers or tokenizers), got {type(tokenizer).__name__}"
        )
    info = _TokenizerInfo(raw, full, _byte_fallback_ids(tokenizer), cleanup, concatenative)
    with contextlib.suppress(TypeError):
        _INFO[tokenizer] = (flag, info)
    return info


def clean_up_applies(tokenizer: Any) -> bool:
    """Whether ``tokenizer.decode`` cleans up spaces before punctuation (``" ."`` -> ``"."``).

    transformers does it when the tokenizer's ``clean_up_tokenization_spaces`` is set (many 4.x
    configurations, Llama 3 among them), except that transformers 5 leaves BPE tokenizers alone. The
    token paths of this module reproduce whatever ``decode`` does, incrementally.
    """
    return _tokenizer_info(tokenizer).cleanup is not None


def decode_text(tokenizer: Any, ids: Sequence[int]) -> str:
    """``tokenizer.decode(ids)`` with special tokens kept: the text the parser reads for these ids."""
    return _tokenizer_info(tokenizer).decode_full(_id_list(ids))


# --------------------------------------------------------------------------------------------------------
# Token ids
# --------------------------------------------------------------------------------------------------------


_INT_ONLY = {int}


def _id_list(ids: Any) -> list[int]:
    """A list of Python ints from an int, a sequence of ints, or a numpy/torch 0-D or 1-D array."""
    # `ids` is Any: numpy and torch arrays (untyped here) arrive as well as ints and sequences; every
    # element is checked below.
    out: list[Any]
    if (
        type(ids) is list
        and ids
        and set(map(type, ids)) == _INT_ONLY
        and min(ids) >= 0
        and max(ids) < 1 << 32
    ):
        return ids  # the common case, checked at C speed
    tolist = getattr(ids, "tolist", None)
    if tolist is not None and not isinstance(ids, (list, tuple)):
        ids = tolist()
    if isinstance(ids, int) and not isinstance(ids, bool):
        out = [ids]
    elif isinstance(ids, (str, bytes, bytearray)):
        raise ResponseTemplateError(f"expected token ids, got {type(ids).__name__}")
    else:
        try:
            out = ids if type(ids) is list else list(ids)
        except TypeError:
            raise ResponseTemplateError(f"expected token ids, got {type(ids).__name__}") from None
    for i, tid in enumerate(out):
        if type(tid) is not int:
            try:
                tid = operator.index(tid)
            except TypeError:
                raise ResponseTemplateError(
                    f"token ids must be integers, got {type(out[i]).__name__} at position {i}"
                ) from None
            if out is ids:
                out = list(out)
            out[i] = tid
        if tid < 0 or tid >= 1 << 32:
            raise ResponseTemplateError(f"invalid token id {tid} at position {i}")
    return out


# --------------------------------------------------------------------------------------------------------
# Clean-up of spaces, incrementally
# --------------------------------------------------------------------------------------------------------


class _IncrementalCleanup:
    """Apply ``clean_up_tokenization`` to a stream of text pieces exactly as to their concatenation.

    Its patterns start with a space, are at most four characters long and only delete spaces. A cut
    before position ``c`` cannot split an occurrence (in any of its passes) when the character at ``c``
    never follows a pattern's first character, or when the three characters before ``c`` hold no space.
    Text after the last such cut is held until more arrives; each character is examined once.
    """

    __slots__ = ("_before", "_fn", "_tail")

    def __init__(self, fn: Callable[[str], str]) -> None:
        self._fn = fn
        self._tail = ""  # text not emitted yet (starts at a safe cut)
        self._before = ""  # up to 3 characters emitted just before the tail (context for the rule)

    @property
    def holding(self) -> bool:
        return bool(self._tail)

    def push(self, text: str) -> str:
        if not text:
            return ""
        ctx = self._before
        s = ctx + self._tail + text
        first_new = len(ctx) + max(len(self._tail), 1)
        cut = -1
        for c in range(len(s) - 1, first_new - 1, -1):
            if s[c] not in _CLEANUP_NON_INITIAL or " " not in s[max(0, c - 3) : c]:
                cut = c
                break
        if cut < 0:
            self._tail = s[len(ctx) :]
            return ""
        ready = s[len(ctx) : cut]
        self._tail = s[cut:]
        self._before = s[max(0, cut - 3) : cut]
        return self._fn(ready)

    def flush(self) -> str:
        out = self._fn(self._tail) if self._tail else ""
        self._tail = ""
        return out


# --------------------------------------------------------------------------------------------------------
# The incremental decoder
# --------------------------------------------------------------------------------------------------------


class TokenDecoder:
    """Decode a stream of token ids incrementally and exactly.

    Args:
        tokenizer: a transformers tokenizer (any version, fast or slow) or a ``tokenizers.Tokenizer``.
        prompt_ids: the ids that precede the stream (the prompt). They are never emitted; they give the
            first generated tokens their context, which SentencePiece-style tokenizers need to know
            whether a word starts with a space.

    :meth:`step` takes one id or several and returns the text that became final (often ``""``: a
    character split across tokens waits for its last byte); :meth:`flush` ends the stream and returns
    the rest. Special tokens come out as their text. The concatenation of all returned text equals
    ``tokenizer.decode(ids)`` of everything fed (with ``prompt_ids``: ``decode(prompt_ids + ids)``
    without the prompt's text), U+FFFD appears only where that decode has one, and each step costs
    O(1) amortized.

    Byte-fallback tokens (``<0xE6>``) are decoded a run at a time: the tokenizer turns a whole run into
    replacement characters if any byte of it is invalid, so the text of a run is final only when a
    token that is not a byte ends it.

    >>> from tokenizers import Tokenizer, decoders, models
    >>> vocab = {"<unk>": 0, "▁Hello": 1, "▁world": 2} | {f"<0x{b:02X}>": 3 + b for b in range(256)}
    >>> tok = Tokenizer(models.BPE(vocab, [], unk_token="<unk>", byte_fallback=True))
    >>> tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
    ...                                  decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    >>> tok.decode([2]), tok.decode([1, 2])   # a leading space is stripped at the start of a text
    ('world', 'Hello world')
    >>> dec = TokenDecoder(tok, prompt_ids=[1])   # primed: "▁world" continues "Hello"
    >>> dec.step(2), dec.step([3 + 0xE6, 3 + 0x9D, 3 + 0xB1]), dec.step(2), dec.flush()
    (' world', '', '東 world', '')
    """

    __slots__ = (
        "_byte_ids",
        "_cleanup",
        "_concat",
        "_decode",
        "_finished",
        "_limit",
        "_read",
        "_read_len",
        "_text",
        "_warned",
        "_win",
    )

    def __init__(self, tokenizer: Any, prompt_ids: Sequence[int] | None = None) -> None:
        info = _tokenizer_info(tokenizer)
        self._decode = info.raw_decode
        self._byte_ids = info.byte_ids
        self._cleanup = _IncrementalCleanup(info.cleanup) if info.cleanup is not None else None
        self._concat = info.concatenative
        # The window: context tokens (their text is known) followed by pending tokens.
        self._win: list[int] = []
        self._read = 0  # tokens before this index are context
        self._read_len = 0  # len(decode(self._win[: self._read]))
        self._text = ""  # the part of decode(self._win) already emitted or belonging to the prompt
        self._limit = _MAX_PENDING
        self._finished = False
        self._warned = False
        if prompt_ids is not None:
            self._prime(_id_list(prompt_ids))

    def _prime(self, ids: list[int]) -> None:
        if not ids:
            return
        start = max(0, len(ids) - _PRIME_TOKENS)
        byte_ids = self._byte_ids
        while start > 0 and ids[start] in byte_ids and ids[start - 1] in byte_ids:
            start -= 1  # never start the window inside a run of byte tokens
        self._win = ids[start:]
        text = self._decode(self._win)
        if text.endswith(_FFFD):  # the prompt ends inside a character (never with real prompts)
            self._text = text.rstrip(_FFFD)
        else:
            self._text = text
            self._read = len(self._win)
            self._read_len = len(text)

    @property
    def pending(self) -> int:
        """How many fed tokens have not produced their text yet (e.g. the first bytes of a character)."""
        return len(self._win) - self._read

    @property
    def holding(self) -> bool:
        """Whether some fed input has not come out yet (pending tokens or clean-up look-ahead)."""
        return self._read < len(self._win) or (self._cleanup is not None and self._cleanup.holding)

    def step(self, ids: int | Sequence[int] | Any) -> str:
        """Feed one token id or several; return the text that became final (possibly ``""``)."""
        if self._finished:
            raise ParserStateError("step() after flush(): one TokenDecoder follows one stream")
        win = self._win
        if type(ids) is int and 0 <= ids < 1 << 32:
            last = ids
            win.append(ids)
        else:
            new = _id_list(ids)
            if not new:
                return ""
            win.extend(new)
            last = new[-1]
        if last in self._byte_ids:
            return ""  # inside a run of byte-fallback tokens: its text is known when the run ends
        text = self._decode(win)
        known = self._text
        if text.endswith(_FFFD) or not text.startswith(known):
            out = self._advance_slowly(text)
        else:
            # The common case, inlined: new text after a clean boundary. The tokens read since the
            # previous boundary become the context for the next step.
            out = text[len(known) :]
            read = self._read
            if read and (self._concat or len(win) > _SHRINK_AT):
                context = win[read:]
                # With a byte-level decoder the context starts at a character boundary, so its text
                # is what follows the previous context's text; otherwise decode it.
                context_text = text[self._read_len :] if self._concat else self._decode(context)
                if context_text and text.endswith(context_text):
                    self._win = win = context
                    text = context_text
            self._text = text
            self._read = len(win)
            self._read_len = len(text)
            self._limit = _MAX_PENDING
        if self._cleanup is not None:
            out = self._cleanup.push(out)
        return out

    def flush(self) -> str:
        """End the stream: return whatever is still held (an unfinished character becomes U+FFFD)."""
        if self._finished:
            return ""
        self._finished = True
        out = ""
        if self._read < len(self._win):
            text = self._decode(self._win)
            known = self._text
            out = text[len(known) :] if text.startswith(known) else self._diverged(text)
        if self._cleanup is not None:
            out = self._cleanup.push(out) + self._cleanup.flush()
        return out

    def decode(self, ids: Sequence[int] | Any) -> str:
        """Feed ``ids`` and end the stream: their whole text (after any earlier steps' text)."""
        return self.step(ids) + self.flush()

    # -- internals -----------------------------------------------------------------------------------

    def _release(self) -> str:
        """Text held only as clean-up look-ahead, released because other text follows it."""
        if self._cleanup is None or self._read < len(self._win):
            return ""
        out = self._cleanup.flush()
        self._cleanup._before = ""
        return out

    def _advance_slowly(self, text: str) -> str:
        """A step whose text ends with U+FFFD (perhaps an unfinished character) or rewrote old text."""
        known = self._text
        if not text.endswith(_FFFD):
            out = self._diverged(text)
            self._text = text
            self._read = len(self._win)
            self._read_len = len(text)
            return out
        # Emit only what precedes the trailing replacement characters: they may still change.
        out = ""
        stable = text.rstrip(_FFFD)
        if len(stable) > len(known) and stable.startswith(known):
            out = stable[len(known) :]
            self._text = stable
        if len(self._win) - self._read > self._limit:
            out += self._restart(text)
        return out

    def _restart(self, text: str) -> str:
        """Many tokens without a clean boundary: look for a split that later tokens cannot affect.

        A split before token ``j`` is safe when decoding both sides separately gives the same text as
        decoding them together (UTF-8 decoding resynchronizes) and it is not inside a byte-token run.
        """
        win, decode, byte_ids = self._win, self._decode, self._byte_ids
        known = self._text
        for j in range(len(win) - 1, self._read, -1):
            if win[j] in byte_ids and win[j - 1] in byte_ids:
                continue
            right = decode(win[j:])
            if not right or not text.endswith(right):
                continue
            left = text[: len(text) - len(right)]
            if decode(win[:j]) != left:
                continue
            out = ""
            done = len(known)
            if len(left) > len(known) and left.startswith(known):
                out = left[len(known) :]
                done = len(left)
            self._win = win[j:]
            self._read = 0
            self._read_len = 0
            self._text = text[len(left) : max(done, len(left))]
            self._limit = _MAX_PENDING
            return out
        self._limit *= 2  # nothing safe yet: look again after twice as many tokens
        return ""

    def _diverged(self, text: str) -> str:
        """The decoder changed text it had already produced (not prefix-stable): keep going."""
        if not self._warned:
            self._warned = True
            logger.warning(
                "the tokenizer's decoder rewrote text it had already produced (%r -> %r); the streamed "
                "text may differ from tokenizer.decode() of the whole output",
                self._text[-20:],
                text[-20:],
            )
        return text[len(self._text) :]
