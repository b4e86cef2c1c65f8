"""Hugging Face integration: token ids in, templates saved with the tokenizer, exact token streams.

Everything here takes the tokenizer as its first argument and works with any transformers version
(4.x and 5.x, fast or slow tokenizers) or a bare ``tokenizers.Tokenizer``; neither package is imported
until you pass one in, and torch is never required (numpy arrays and torch tensors are both accepted).

* :func:`parse_response` / :func:`get_response_parser`: the tokenizer methods of docs/spec.md, section 2.
  Output and prefix may be text or token ids, one or a batch; ids are parsed as ids (a control token
  matches a delimiter only where the model generated it: :func:`control_token_ids`), padding is removed,
  the template defaults to the tokenizer's ``response_template``.
* :class:`TokenResponseParser`: streaming from ids (``feed_tokens``), decoded by :class:`TokenDecoder`,
  which is exact (no U+FFFD from split characters, no lost or doubled spaces) at O(1) per token.
* :class:`ResponseStreamer`: ``model.generate(..., streamer=...)`` as an iterator of parser events.
* :func:`save_response_template` / :func:`load_response_template`: the template in
  ``tokenizer_config.json``; :func:`install` adds the tokenizer methods to versions that lack them.

>>> import response_templates.hf as rthf
>>> from tokenizers import Tokenizer, decoders, models
>>> words = ["<|im_start|>", "assistant", "\\n", "Hello", "!", "<|im_end|>"]
>>> tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="!"))
>>> tok.decoder = decoders.Fuse()  # join tokens without spaces
>>> template = {"start_anchor": "<|im_start|>assistant\\n", "fields": {"content": {"close": "<|im_end|>"}}}
>>> rthf.parse_response(tok, [3, 4, 5], prefix=[0, 1, 2], template=template)
{'content': 'Hello!'}
>>> parser = rthf.get_response_parser(tok, prefix=[0, 1, 2], template=template)
>>> [e["type"] for i in (3, 4, 5) for e in parser.feed_tokens(i)]
['region_open', 'region_chunk', 'region_chunk', 'region_close']
>>> parser.finalize()[0]
{'content': 'Hello!'}

See docs/tokenizers.md for the whole story.
"""

from __future__ import annotations

from .config import (
    MissingTemplateError,
    knows_response_template,
    load_response_template,
    save_response_template,
)
from .control_tokens import PieceDecoder, control_token_ids
from .decoding import TokenDecoder, clean_up_applies, decode_text
from .methods import install, uninstall
from .parsing import TokenResponseParser, get_response_parser, parse_response
from .streamer import ResponseStreamer, StreamTimeout

__all__ = [
    "MissingTemplateError",
    "PieceDecoder",
    "ResponseStreamer",
    "StreamTimeout",
    "TokenDecoder",
    "TokenResponseParser",
    "clean_up_applies",
    "control_token_ids",
    "decode_text",
    "get_response_parser",
    "install",
    "knows_response_template",
    "load_response_template",
    "parse_response",
    "save_response_template",
    "uninstall",
]
