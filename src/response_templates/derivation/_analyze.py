"""The analysis: diff probe renders, recognise the markers and the call syntax, build a template."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from . import _text as tx
from ._render import CALL_1, CALL_2, CONTENT, IDS, REASONING, Render, Renderer

__all__ = ["Findings", "analyze", "build"]

_NAME = r"[\w.\-]+"
_KEY = r"[^\s<>\"'=:]+"


@dataclass
class Findings:
    """What the probes showed, piece by piece, with the evidence for each."""

    anchor: str = ""
    #: What the generation prompt and the rendered turn share (the anchor and any block it pre-opens).
    header: str = ""
    end: str = ""
    reasoning_open: str = ""
    reasoning_close: str = ""
    #: The generation prompt may close reasoning before the model writes (``<think></think>``-less
    #: ``</think>`` alone): the reasoning region may then open empty at the start.
    closed_by_prompt: bool = False
    content_open: str = ""
    content_close: str = ""
    tools: dict[str, Any] | None = None
    evidence: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    renders: dict[str, Render] = field(default_factory=dict)
    guessed: int = 0

    def note(self, probe: str, what: str, value: Any) -> None:
        self.evidence.append({"probe": probe, "found": what, "value": value})


# ------------------------------------------------------------------------------------------ turn pieces


def _header(plain: Render, gens: Mapping[str, str]) -> str:
    """The text the generation prompt and the rendered turn share: where the model starts writing."""
    gen = plain.generation
    return tx.prefix_at_boundary(gen, plain.turn)


def _strip_end(text: str, end: str) -> str:
    if end and end in text:
        return text[: text.rfind(end)]
    return text


def analyze(r: Renderer) -> Findings:
    f = Findings()
    gens = r.generation_prompts()
    for name, gen in gens.items():
        f.note(f"generation prompt ({name})", "generation prompt", gen)
    plain = r.probe("plain", r.message())
    if plain is None:
        return f
    f.renders["plain"] = plain
    turn = plain.turn
    at = turn.find(CONTENT)
    if at < 0:
        f.warnings.append("the chat template does not render the assistant's content")
        return f
    header = _header(plain, gens)
    f.header = header
    after = turn[at + len(CONTENT) :]
    # The turn's end: the last marker after the content (the first one, if a wrapper closes first).
    after_tokens = tx.tokens(after)
    end = r.eos_token if r.eos_token and r.eos_token in after else after_tokens[0] if after_tokens else ""
    if len(after_tokens) >= 2 and not (r.eos_token and after_tokens[0] == r.eos_token):
        # <|END_RESPONSE|><|END_OF_TURN_TOKEN|>: a content wrapper closes before the turn ends
        f.content_close = after_tokens[0]
        end = after_tokens[1]
    f.end = end
    f.note("plain", "end of turn", end)
    # Before the content: the header, then perhaps an empty reasoning block or a content opener.
    before = turn[len(header) : at]
    _reasoning(r, f, plain, header, before, gens)
    lead = before
    if f.reasoning_close and f.reasoning_close in lead:
        lead = lead[lead.rfind(f.reasoning_close) + len(f.reasoning_close) :]
    elif f.reasoning_open and f.reasoning_open in lead:
        lead = ""
    if lead.strip():
        f.content_open = lead.strip()
        f.note("plain", "content opener", f.content_open)
        if f.content_close:
            f.note("plain", "content closer", f.content_close)
    elif f.content_close and f.reasoning_close != f.content_close:
        # a closer with no opener: more of the turn's end
        f.content_close = ""
    # The anchor: the header without a reasoning block the generation prompt opens or writes empty.
    anchor = header
    for marker in (f.reasoning_open, f.reasoning_close):
        if marker and marker in anchor:
            anchor = anchor[: anchor.find(marker)]
    if not anchor.strip():
        anchor = tx.trailing_marker(plain.base) or anchor
        if anchor:
            f.note("plain", "start anchor (the history's last marker)", anchor)
    else:
        f.note("plain", "start anchor", anchor)
    f.anchor = anchor
    for gen in gens.values():
        tail = gen[gen.find(anchor) + len(anchor) :] if anchor and anchor in gen else gen
        if f.reasoning_close and tail.strip().startswith(f.reasoning_close):
            f.closed_by_prompt = True
    _tools(r, f, header)
    return f


# -------------------------------------------------------------------------------------------- reasoning


def _reasoning(
    r: Renderer, f: Findings, plain: Render, header: str, before: str, gens: Mapping[str, str]
) -> None:
    probes: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
        ("reasoning", r.message(reasoning=REASONING), {}),
        ("reasoning, thinking on", r.message(reasoning=REASONING), {"enable_thinking": True}),
        ("reasoning with a call", r.message(content="", reasoning=REASONING, calls=[CALL_1]), {}),
        (
            "reasoning as a content block",
            {
                "role": "assistant",
                "content": [{"type": "thinking", "thinking": REASONING}, {"type": "text", "text": CONTENT}],
            },
            {},
        ),
    ]
    for name, msg, kwargs in probes:
        rendered = r.probe(name, msg, **kwargs)
        if rendered is None or REASONING not in rendered.turn:
            continue
        if isinstance(msg["content"], list) and re.search(r"""['"]type['"]""", rendered.turn):
            continue  # the template printed the blocks as a list
        turn = rendered.turn
        at = turn.find(REASONING)
        head = tx.prefix_at_boundary(header, turn[: len(header)]) if header else ""
        opener_text = turn[len(head) : at]
        opener = opener_text.strip()
        if not opener:
            opener = tx.last_token(turn[:at]).strip()
        # when the turn also starts with an empty block, the opener is the last marker before the text
        toks = tx.tokens(opener_text)
        if len(toks) > 1 and all(t.startswith(("<", "[")) for t in toks):
            opener = toks[-1] if not _looks_multi(toks) else opener
        rest = turn[at + len(REASONING) :]
        closer = tx.first_token(rest)
        if not opener or not closer or CONTENT in closer or closer.startswith(CONTENT[:5]):
            continue
        f.reasoning_open, f.reasoning_close = opener, closer
        f.renders["reasoning"] = rendered
        f.note(name, "reasoning markers", [opener, closer])
        return
    # Reasoning not rendered from history: the thinking switch of the generation prompt.
    on, off, default = gens.get("on", ""), gens.get("off", ""), gens.get("default", "")
    for a, b, how in ((on, off, "thinking on vs off"), (default, off, "default vs thinking off")):
        if a == b:
            continue
        cut = len(tx.prefix_at_boundary(a, b))
        extra_a, extra_b = a[cut:].strip(), b[cut:].strip()
        ta, tb = tx.tokens(extra_a), tx.tokens(extra_b)
        if (len(tb) >= 2 and not ta) or (ta and len(tb) >= 2 and tb[0] == ta[-1]):
            opener, closer = tb[0], tb[-1]
        elif len(ta) == 1 and not tb:
            opener, closer = ta[0], tx.closer_for(ta[0]) or ""
        elif len(ta) == 1 and len(tb) == 1:
            opener, closer = ta[0], tb[0]
        else:
            continue
        if opener and closer:
            f.reasoning_open, f.reasoning_close = opener, closer
            f.note(f"generation prompt ({how})", "reasoning markers", [opener, closer])
            f.warnings.append(
                "the chat template drops reasoning from the history: the reasoning markers were read "
                f"off the generation prompt ({how})"
            )
            return
    # An opener the generation prompt always writes (a pre-opened block), closed by rule.
    tail = tx.trailing_marker(default)
    ruled = tx.closer_for(tail) if tail else None
    if tail and ruled and ruled in r.chat_template and tail not in header:
        closer = ruled
        f.reasoning_open, f.reasoning_close = tail, closer
        f.guessed += 1
        f.note("generation prompt (default)", "reasoning opener (closer by the naming rule)", [tail, closer])
        f.warnings.append(
            f"the chat template drops reasoning from the history: the closer {closer!r} is guessed from "
            f"the opener {tail!r} the generation prompt writes"
        )
        return
    # A marker pair the template's source splits reasoning off on.
    for m in re.finditer(r"""split\(\s*['"](</?[^'"<>]+>)['"]""", r.chat_template):
        closer = m.group(1)
        opener = closer.replace("</", "<", 1)
        if opener != closer and opener in r.chat_template:
            f.reasoning_open, f.reasoning_close = opener, closer
            f.guessed += 1
            f.note("template source", "reasoning markers (split off the history)", [opener, closer])
            f.warnings.append(
                f"the chat template drops reasoning from the history; the markers {opener!r}/{closer!r} "
                "are taken from the text it splits reasoning off on"
            )
            return


def _looks_multi(toks: list[str]) -> bool:
    """``<|channel|>analysis<|message|>``-like openers: several markers that belong together."""
    return any(not t.startswith(("<", "[")) for t in toks)


# -------------------------------------------------------------------------------------------- tool calls


def _block(empty: Render, call: Render, end: str) -> str | None:
    """The text a call turn has where the empty turn has nothing (the turn's end marker left out)."""
    a, b = empty.turn, call.turn
    pre = len(tx.prefix_at_boundary(a, b))
    suf = len(tx.suffix_at_boundary(a[pre:], b[pre:]))
    block = b[pre : len(b) - suf]
    if end and block.rstrip().endswith(end):
        block = block.rstrip()[: -len(end)]
    return block or None


def _json_span(text: str, start: int, want: Any = None) -> tuple[int, Any] | None:
    try:
        value, end = json.JSONDecoder().raw_decode(text, start)
    except ValueError:
        return None
    if want is not None and not _same_args(value, want):
        return None
    return end, value


def _same_args(value: Any, want: Any) -> bool:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return False
    return isinstance(value, dict) and {k: str(v) for k, v in value.items()} == {
        k: str(v) for k, v in want.items()
    }


def _tools(r: Renderer, f: Findings, header: str) -> None:
    empty = r.probe("no call", r.message(content=""))
    one = r.probe("one call", r.message(content="", calls=[CALL_1]))
    text = ""
    if empty is None:
        # the template wants content in every turn: diff a turn with text against text plus a call
        empty = r.probe("no call (with text)", r.message())
        one = r.probe("one call (with text)", r.message(calls=[CALL_1]))
        text = CONTENT
    if one is not None and CALL_1["name"] not in one.turn and "city_q" not in one.turn:
        # perhaps the template wants the arguments as OpenAI's JSON string
        r.arguments_as_string = True
        retry = r.probe("one call (arguments as a JSON string)", r.message(content=text, calls=[CALL_1]))
        if retry is not None and CALL_1["name"] in retry.turn:
            one = retry
        else:
            r.arguments_as_string = False
    if one is None or empty is None:
        f.warnings.append("the chat template refused every tool-call probe: no tool calls derived")
        return
    if CALL_1["name"] not in one.turn:
        f.warnings.append(
            "the chat template does not render tool calls from the history: no tool calls derived"
        )
        return
    block1 = _block(empty, one, f.end)
    if block1 is None or CALL_1["name"] not in block1:
        f.warnings.append("the tool-call block could not be isolated")
        return
    f.renders["one call"] = one
    two = r.probe("two calls", r.message(content=text, calls=[CALL_1, CALL_2]))
    block2 = _block(empty, two, f.end) if two is not None else None
    if block2 is not None and CALL_2["name"] not in block2:
        block2 = None
    if two is not None and block2 is not None:
        f.renders["two calls"] = two
    else:
        f.warnings.append("the chat template renders no second call: multi-call separators not observed")
    f.note("one call", "tool-call block", block1)
    spec = _json_native(block1, block2, f) or _tagged(block1, block2, f)
    if spec is None:
        f.warnings.append("the tool-call syntax was not recognised: no tool calls derived")
        return
    f.tools = spec


def _wrap(a: str, x: str | None, z: str) -> tuple[str, str, str, str]:
    """``(section open, call open, call close, section close)`` from the text before the first call
    (``a``), between two calls (``x``) and after the last (``z``)."""
    if x is None:
        return "", a.strip(), z.strip(), ""
    pre = tx.suffix_at_boundary(a, x)
    post = tx.prefix_at_boundary(z, x)
    if len(pre) + len(post) > len(x):
        post = x[: max(0, len(x) - len(pre))]
    return a[: len(a) - len(pre)].strip(), pre.strip(), post.strip(), z[len(post) :].strip()


def _close_pattern(call_close: str, section_close: str, end: str) -> str:
    parts = tx.flex(call_close)
    if section_close:
        parts += r"(?:\s*" + tx.flex(section_close) + ")?"
    alts = [parts]
    if end:
        alts.append(re.escape(end))
    return "|".join(alts)


def _open_prefix(section_open: str, call_open: str) -> str:
    out = ""
    if section_open:
        out += "(?:" + tx.flex(section_open) + r"\s*)?"
    if call_open:
        out += tx.flex(call_open)
    return out


def _json_native(block1: str, block2: str | None, f: Findings) -> dict[str, Any] | None:
    name = CALL_1["name"]
    at = block1.find(name)
    for start in range(at, -1, -1):
        if block1[start] not in "{[":
            continue
        got = _json_span(block1, start)
        if got is None or got[0] <= at:
            continue
        end, value = got
        break
    else:
        return None
    is_list = isinstance(value, list)
    item = value[0] if is_list and value else value
    if not isinstance(item, dict):
        return None
    transform = _call_transform(item)
    if transform is None:
        return None
    a, z = _ids(block1[:start]), _ids(block1[end:])
    spec: dict[str, Any] = {"repeats": True, "content": "json"}
    if is_list:
        section_open, call_open, call_close, section_close = "", a.strip(), z.strip(), ""
        spec.pop("repeats")
        spec["transform_each"] = True
        spec["transform"] = {k: _each(v) for k, v in transform.items()}
        f.note("one call", "argument syntax", "a JSON array of call objects")
    else:
        x = None
        if block2 is not None:
            s2 = block2.find("{", block2.find(name) - (at - start))
            first = _json_span(block2, start)
            second_at = block2.find(CALL_2["name"])
            if first is not None:
                second = max(block2.rfind("{", 0, second_at), 0)
                x = _ids(block2[first[0] : second])
            del s2
        section_open, call_open, call_close, section_close = _wrap(a, x, z)
        spec["transform"] = transform
        f.note("one call", "argument syntax", "a JSON object per call")
    f.note(
        "two calls" if block2 else "one call",
        "call markers",
        [section_open, call_open, call_close, section_close],
    )
    if call_open:
        spec["open_pattern"] = _open_prefix(section_open, call_open)
    else:
        first_key = next(iter(item))
        spec["open_pattern"] = r"(?=\{\s*" + re.escape(json.dumps(first_key)) + r"\s*:)"
        if is_list:
            spec["open_pattern"] = r"(?=\[\s*\{\s*" + re.escape(json.dumps(first_key)) + r"\s*:)"
    if call_close:
        spec["close_pattern"] = _close_pattern(call_close, section_close, f.end)
    else:
        spec["close_json"] = True
    return spec


def _each(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("{content.", "{").replace("{content}", "{content}")
    if isinstance(value, dict):
        return {k: _each(v) for k, v in value.items()}
    return value


def _call_transform(item: Mapping[str, Any]) -> dict[str, Any] | None:
    """How a rendered call object maps to a tool call: the keys holding the name, the arguments, the id."""

    def find(obj: Mapping[str, Any], path: str) -> tuple[str, str, str] | None:
        name_key = next((k for k, v in obj.items() if v == CALL_1["name"]), None)
        args_key = next((k for k, v in obj.items() if _same_args(v, CALL_1["arguments"])), None)
        if name_key and args_key:
            return path + name_key, path + args_key, ""
        for k, v in obj.items():
            if isinstance(v, dict):
                inner = find(v, f"{path}{k}.")
                if inner:
                    return inner
        return None

    found = find(item, "")
    out: dict[str, Any] = {"type": "function"}
    if found is not None:
        id_key = next((k for k, v in item.items() if v == IDS[0]), None)
        if id_key:
            out["id"] = "{content." + id_key + "}"
        out["function"] = {"name": "{content." + found[0] + "}", "arguments": "{content." + found[1] + "}"}
        return out
    return None


def _tagged(block1: str, block2: str | None, f: Findings) -> dict[str, Any] | None:
    name = CALL_1["name"]
    n1 = block1.find(name)
    after = block1[n1 + len(name) :]
    args = CALL_1["arguments"]
    keys = list(args)
    # Python call: name(key=value, ...), usually inside [...]
    if after.lstrip().startswith("("):
        return _python(block1, n1, f)
    # name then a JSON object (or a JSON dialect)
    brace = after.find("{")
    first_key = after.find(keys[0])
    if brace >= 0 and (first_key < 0 or brace < first_key):
        got = _json_span(after, brace, args)
        content_args: dict[str, Any] = {}
        if got is None:
            dialect = _dialect(after, brace)
            if dialect is None:
                return None
            content_args, args_end = dialect
        else:
            args_end = got[0]
        mid = after[:brace]
        unit_end = n1 + len(name) + args_end
        kind = "name then a JSON object" if not content_args else "name then a JSON dialect object"
        f.note("one call", "argument syntax", kind)
        spec = _name_spec(block1, block2, n1, unit_end, mid, f)
        spec.update({"content": "json"})
        if content_args:
            spec["content_args"] = content_args
        if spec.get("close_pattern") is None:
            spec.pop("close_pattern", None)
            spec["open_pattern"] += r"(?=\s*\{)"
            spec["close_json"] = True
        return spec
    # name then per-argument tags
    if first_key < 0:
        return None
    return _xml(block1, block2, n1, after, f)


def _name_spec(
    block1: str, block2: str | None, n1: int, unit_end: int, mid: str, f: Findings
) -> dict[str, Any]:
    a, z = block1[:n1], block1[unit_end:]
    x = None
    if block2 is not None:
        m1 = block2.find(CALL_1["name"])
        m2 = block2.find(CALL_2["name"])
        if 0 <= m1 < m2:
            x = block2[m1 + (unit_end - n1) : m2]
    a, z = _ids(a), _ids(z)
    x = _ids(x) if x is not None else None
    mid = re.sub(r":[01](?!\d)", ":" + tx.INDEX, _ids(mid))
    section_open, call_open, call_close, section_close = _wrap(a, x, z)
    f.note(
        "two calls" if x is not None else "one call",
        "call markers",
        [section_open, call_open, call_close, section_close],
    )
    # ``functions.NAME:0``: the name inside a word the template composes as the call's id
    word = re.search(r"[\w.\-]+\Z", call_open)
    index = re.match(re.escape(":" + tx.INDEX), mid)
    if word and index and tx.ID not in call_open + mid:
        call_open = call_open[: word.start()]
        open_pattern = _open_prefix(section_open, call_open) + (r"\s*" if call_open else "")
        open_pattern += f"(?P<id>{re.escape(word.group(0))}(?P<name>{_NAME}):\\d+)"
        mid = mid[index.end() :]
        f.note("one call", "call id", "the template writes the name and index as the call's id")
    else:
        open_pattern = _open_prefix(section_open, call_open)
        if call_open:
            open_pattern += r"\s*"
        open_pattern += f"(?P<name>{_NAME})"
    if mid.strip():
        open_pattern += r"\s*" + tx.flex(mid.strip())
    transform: dict[str, Any] = {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}}
    if "(?P<id>" in open_pattern:
        transform = {"type": "function", "id": "{id}", "function": transform["function"]}
    spec: dict[str, Any] = {
        "open_pattern": open_pattern,
        "repeats": True,
        "transform": transform,
        "close_pattern": _close_pattern(call_close, section_close, f.end) if call_close else None,
    }
    return spec


def _ids(text: str) -> str:
    """``text`` with the probe call ids replaced by a stand-in (ids are values, not markers)."""
    return text.replace(IDS[0], tx.ID).replace(IDS[1], tx.ID)


def _dialect(after: str, brace: int) -> tuple[dict[str, Any], int] | None:
    """``{key:<|"|>value<|"|>,...}``: unquoted keys, custom string delimiters."""
    m = re.match(r"\{\s*(\w+)\s*:(.*?)Paris_v(.*?)[,}]", after[brace:], re.DOTALL)
    if not m or m.group(1) != "city_q":
        return None
    d_open, d_close = m.group(2).strip(), m.group(3).strip()
    depth, end = 0, -1
    for i in range(brace, len(after)):
        if after[i] == "{":
            depth += 1
        elif after[i] == "}":
            depth -= 1
            if depth == 0:
                end = i + 1
                break
    if end < 0:
        return None
    args: dict[str, Any] = {"unquoted_keys": True}
    if d_open and d_open != '"':
        args["string_delims"] = [[d_open, d_close or d_open]]
    return args, end


def _python(block1: str, n1: int, f: Findings) -> dict[str, Any] | None:
    lb = block1.rfind("[", 0, n1)
    rb = block1.rfind("]")
    if lb < 0 or rb < n1 or block1[lb + 1 : n1].strip():
        f.warnings.append("a Python-call syntax without a [...] list was seen; not supported by derivation")
        return None
    opener, closer = block1[:lb].strip(), block1[rb + 1 :].strip()
    f.note("one call", "argument syntax", "a Python list of calls")
    spec: dict[str, Any] = {
        "content": "python-call-list",
        "transform_each": True,
        "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}},
    }
    spec["open_pattern"] = (tx.flex(opener) + r"\s*" if opener else "^\\s*") + r"(?=\[)"
    if closer:
        spec["close_pattern"] = _close_pattern(closer, "", f.end)
    elif f.end:
        spec["close"] = f.end
    return spec


def _xml(block1: str, block2: str | None, n1: int, after: str, f: Findings) -> dict[str, Any] | None:
    (k1, v1), (k2, v2) = list(CALL_1["arguments"].items())
    pk1 = after.find(k1)
    pv1 = after.find(str(v1), pk1 + len(k1))
    pk2 = after.find(k2, pv1 + len(str(v1)))
    pv2 = after.find(str(v2), pk2 + len(k2))
    if min(pk1, pv1, pk2, pv2) < 0:
        return None
    m1 = after[:pk1]  # MID + key prefix
    kv1 = after[pk1 + len(k1) : pv1]
    m2 = after[pv1 + len(str(v1)) : pk2]  # value suffix + separator + key prefix
    kv2 = after[pk2 + len(k2) : pv2]
    end_v2 = pv2 + len(str(v2))
    unit_end = n1 + len(CALL_1["name"]) + end_v2
    key_prefix = tx.suffix_at_boundary(m1, m2)
    mid = m1[: len(m1) - len(key_prefix)]
    spec = _name_spec(block1, block2, n1, unit_end, mid, f)
    # the text after the last value: value suffix, then the call's close
    rest = block1[unit_end:]
    value_suffix = tx.prefix_at_boundary(rest, m2) if rest else ""
    kv_mid = kv1 if kv1 == kv2 else ""
    if kv_mid:
        kv_re = _ws(kv_mid[: len(kv_mid) - len(kv_mid.lstrip())]) + tx.flex(kv_mid.strip())
        kv_re += _ws(kv_mid[len(kv_mid.rstrip()) :])
    else:
        pre, suf = tx.prefix_at_boundary(kv1, kv2), tx.suffix_at_boundary(kv1, kv2)
        kv_re = tx.flex(pre.strip()) + r"[^<>\n]*?" + tx.flex(suf.strip()) + r"\s*"
    kp = key_prefix.strip()
    vs = value_suffix.strip()
    key_re = tx.flex(kp) + "(?P<key>" + (r"[^<>\n\"]+?" if kp else r"[A-Za-z_][\w.\-]*") + ")"
    value_end = (
        (_ws(value_suffix[: len(value_suffix) - len(value_suffix.lstrip())]) + tx.flex(vs)) if vs else ""
    )
    lookahead = r"(?=\s*" + tx.flex(kp) + ")" if kp else r"(?=\n)"
    tag = (
        key_re
        + kv_re
        + "(?P<value>.*?)"
        + "(?:"
        + (value_end + "|" if value_end else "")
        + lookahead
        + r"|\Z)"
    )
    f.note(
        "one call", "argument syntax", {"key prefix": kp, "between": kv_mid or [kv1, kv2], "value suffix": vs}
    )
    # the call's close is what follows the value suffix
    if spec.get("close_pattern") is not None and vs:
        call_close = rest[len(value_suffix) :].strip()
        spec_close = call_close.split(vs, 1)[-1].strip() if call_close.startswith(vs) else call_close
        if spec_close:
            # the call's own close is required, what wraps the calls after it is not
            first = tx.first_token(spec_close)
            outer = spec_close[spec_close.find(first) + len(first) :].strip()
            spec["close_pattern"] = _close_pattern(first, outer, f.end)
        else:
            spec["close_pattern"] = None
    if spec.get("close_pattern") is None:
        spec["close_pattern"] = re.escape(f.end) if f.end else r"\Z"
    spec["content"] = "xml-inline"
    spec["content_args"] = {"tag_pattern": tag}
    return spec


def _ws(space: str) -> str:
    """A regex for whitespace next to a value: one optional newline stays that, more is any space."""
    if not space:
        return ""
    return r"\n?" if space == "\n" else r"\s*"


# ---------------------------------------------------------------------------------------------- building


def _opener_pattern(opener: str) -> str:
    """The reasoning opener as a pattern: written twice is once (models repeat a pre-opened marker), and a
    word after a marker (``<|channel>thought``) may be left out."""
    toks = tx.tokens(opener)
    if len(toks) == 2 and toks[0].startswith(("<", "[")) and not toks[1].startswith(("<", "[")):
        marker = tx.flex(toks[0])
        return f"{marker}(?:\\s*{marker})?(?:{tx.flex(toks[1])}\\n?)?"
    if len(toks) == 1:
        marker = tx.flex(opener)
        return f"{marker}(?:\\s*{marker})?"
    return tx.flex(opener)


def build(f: Findings) -> dict[str, Any]:
    """The response template the findings describe."""
    ends = [f.end] if f.end else []
    fields: dict[str, Any] = {}
    extensions: list[str] = []
    if f.reasoning_open and f.reasoning_close:
        spec: dict[str, Any] = {"close": [f.reasoning_close, *(e for e in ends if e != f.reasoning_close)]}
        opener = _opener_pattern(f.reasoning_open)
        if f.closed_by_prompt:
            opener += r"|^\s*(?=" + re.escape(f.reasoning_close) + ")"
        spec["open_pattern"] = opener
        fields["reasoning_content"] = spec
    if f.tools is not None:
        tool = dict(f.tools)
        if tool.get("close_json"):
            extensions.append("json-value-end")
        if tool.get("close_pattern") is None:
            tool.pop("close_pattern", None)
        fields["tool_calls"] = tool
    content: dict[str, Any] = {}
    # a stray reasoning closer in the answer ends nothing and is not text: content closes on it and goes on
    closes = [c for c in (f.content_close, *ends, f.reasoning_close) if c]
    if f.content_open:
        content["open"] = f.content_open
    if closes:
        content["close"] = list(dict.fromkeys(closes))
    fields["content"] = content
    template: dict[str, Any] = {"defaults": {"role": "assistant"}}
    if extensions:
        template["extensions"] = extensions
    if f.anchor:
        template["start_anchor"] = f.anchor
    else:
        template["start_anchor_pattern"] = "^"
    template["fields"] = fields
    return template
