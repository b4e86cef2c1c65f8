"""The tool-call part of the analysis: isolate the call block, recognise its argument syntax (a JSON
object or array, a name tag then JSON, XML-like parameters, a Python call list) and its markers."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from . import _text as tx
from ._findings import Findings
from ._render import CALL_1, CALL_2, CONTENT, IDS, Render, Renderer

__all__ = ["tools"]

_NAME = r"[\w.\-]+"
#: A stand-in for an argument's name where a closing tag repeats it.
_KEY = "\x00KEY\x00"


def _block(empty: Render, call: Render, end: str, anchor: str = "", bare: str = "") -> str | None:
    """The text a call turn has where the empty turn has nothing (the turn's end marker left out).

    ``bare`` is the plain turn with its text taken out: when the empty turn writes markers the bare one
    does not (an empty call section), the diff is taken against the bare turn so the section shows."""
    a, b = empty.turn, call.turn
    if bare and len(bare) < len(a) and tx.common_prefix(a, bare) + tx.common_suffix(a, bare) >= len(bare):
        a = bare
    pre = len(tx.prefix_at_boundary(a, b))
    suf = len(tx.suffix_at_boundary(a[pre:], b[pre:]))
    block = b[pre : len(b) - suf]
    if anchor and block.startswith(anchor):  # the template wrote no turn for the empty message
        block = block[len(anchor) :]
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


def tools(r: Renderer, f: Findings, header: str) -> None:
    """Probe an empty turn, one call and two calls; isolate the call block and set ``f.tools`` to the
    tool-call field spec its syntax gives (or warn why none)."""
    empty = r.probe("no call", r.message(content=""))
    one = r.probe("one call", r.message(content="", calls=[CALL_1]))
    text = ""
    if empty is None:
        # the template wants content in every turn: diff a turn with text against text plus a call
        empty = r.probe("no call (with text)", r.message())
        one = r.probe("one call (with text)", r.message(calls=[CALL_1]))
        text = CONTENT
    call_content: str | None = text
    if empty is not None and (one is None or CALL_1["name"] not in one.turn):
        # perhaps the template renders calls only when the content is null, or wants the arguments
        # as OpenAI's JSON string
        for as_string, content in ((False, None), (True, text), (True, None)):
            if content is None and text:
                continue
            r.arguments_as_string = as_string
            how = ("arguments as a JSON string" if as_string else "") + (
                ", null content" if content is None else ""
            )
            retry = r.probe(f"one call ({how.strip(', ')})", r.message(content=content, calls=[CALL_1]))
            if retry is not None and CALL_1["name"] in retry.turn:
                one, call_content = retry, content
                break
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
    plain = f.renders.get("plain")
    bare = plain.turn.replace(CONTENT, "", 1) if plain is not None and not text else ""
    block1 = _block(empty, one, f.end, f.anchor, bare)
    if block1 is None or CALL_1["name"] not in block1:
        f.warnings.append("the tool-call block could not be isolated")
        return
    f.renders["one call"] = one
    two = r.probe("two calls", r.message(content=call_content, calls=[CALL_1, CALL_2]))
    block2 = _block(empty, two, f.end, f.anchor, bare) if two is not None else None
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
    if end and end in section_close:  # what follows the turn's end is the next turn's
        section_close = section_close[: section_close.find(end)].strip()
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
        outer = re.findall(r"<[^<>\n]+>|\[[^\[\]\n]+\]", call_open)
        rest = call_open.strip()
        lead = []
        for marker in outer:
            if not rest.startswith(marker) or not rest[len(marker) :].strip():
                break
            lead.append(marker)
            rest = rest[len(marker) :].strip()
        # ``<tool_call>\n<function=``: the outer markers may be left out, the last one opens the call
        out += "".join("(?:" + tx.flex(t) + r"\s*)?" for t in lead) + tx.flex(rest)
    return out


def _json_native(block1: str, block2: str | None, f: Findings) -> dict[str, Any] | None:
    name = CALL_1["name"]
    at = block1.find(name)
    # the outermost JSON value around the name (a list of calls rather than the call in it)
    found: tuple[int, int, Any] | None = None
    for start in range(at, -1, -1):
        if block1[start] not in "{[":
            continue
        got = _json_span(block1, start)
        if got is not None and got[0] > at:
            found = (start, got[0], got[1])
    if found is None:
        return None
    start, end, value = found
    is_list = isinstance(value, list)
    item = value[0] if is_list and value else value
    if not isinstance(item, dict):
        return None
    transform = _call_transform(item)
    named = is_list and list(item) == [name] and _same_args(item[name], CALL_1["arguments"])
    if named:  # ``[{"get_weather": {...}}]``: the name is the key (extension item-transform)
        transform = {"type": "function", "function": {"name": "{key}", "arguments": "{value}"}}
    if transform is None:
        return None
    a, z = _ids(block1[:start]), _ids(block1[end:])
    spec: dict[str, Any] = {"repeats": True, "content": "json"}
    if is_list:
        section_open, call_open, call_close, section_close = "", a.strip(), z.strip(), ""
        spec.pop("repeats")
        spec["transform_each"] = True
        spec["transform"] = transform if named else {k: _each(v) for k, v in transform.items()}
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
        # the marker opens a call only when JSON follows (the same marker before another syntax is text)
        spec["open_pattern"] = _open_prefix(section_open, call_open) + r"(?=\s*[\[{])"
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
        if id_key is None:  # an id the template numbers itself
            id_key = next((k for k, v in item.items() if str(v) in ("0", "1") and "id" in k.lower()), None)
        if id_key:
            out["id"] = "{content." + id_key + "?}"  # a model may leave the id out
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
        spec = _name_spec(block1, block2, n1, unit_end, mid, f, optional_mid=True)
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
    block1: str,
    block2: str | None,
    n1: int,
    unit_end: int,
    mid: str,
    f: Findings,
    optional_mid: bool = False,
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
    if section_open and not section_close and call_close and block2 is not None and call_close in block2:
        # a section the one-call turn leaves open: the two-call turn may show its close
        section_close = _ids(block2[block2.rfind(call_close) + len(call_close) :]).strip()
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
    optional_id = False
    marks = re.findall(r"(<[^<>\n]+>|\[[^\[\]\n]+\])\s*(" + re.escape(tx.ID) + ")?", mid)
    if optional_mid and marks and "".join(m + i for m, i in marks) == re.sub(r"\s+", "", mid):
        # ``name[CALL_ID]id[ARGS]{...}``: the markers between the name and the JSON (and the id after
        # one) may be left out
        for marker, has_id in marks:
            group = r"\s*(?P<id>[^\s<>\[\]]+?)" if has_id else ""
            open_pattern += r"\s*(?:" + tx.flex(marker) + group + ")?"
            optional_id = optional_id or bool(has_id)
    elif mid.strip():
        open_pattern += r"\s*" + tx.flex(mid.strip())
    transform: dict[str, Any] = {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}}
    if "(?P<id>" in open_pattern:
        call_id = "{id?}" if optional_id else "{id}"
        transform = {"type": "function", "id": call_id, "function": transform["function"]}
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
    lead = tx.flex(opener) + r"\s*" if opener else "^\\s*"
    spec["open_pattern"] = lead + r"(?=\[)(?!\[\s*\{)"
    if closer:
        spec["close_pattern"] = _close_pattern(closer, "", f.end)
    elif f.end:
        spec["close"] = f.end
    # models of Python-call templates also write the list as JSON objects: read that too
    json_list = {k: v for k, v in spec.items() if k != "open_pattern"}
    json_list.update(content="json", open_pattern=lead + r"(?=\[\s*\{)", into="tool_calls")
    f.more_fields["json_calls"] = json_list
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
    named_close = k1 in m2 and k2 in rest  # ``<city>Paris</city>``: the closing tag names the key
    if named_close:
        m2, rest = m2.replace(k1, _KEY, 1), rest.replace(k2, _KEY, 1)
    value_suffix = tx.prefix_at_boundary(rest, m2) if rest else ""
    # the suffix ends where the next key's prefix starts (``]<]x[>[</k>`` + ``]<]x[>[<``)
    value_suffix = value_suffix[: max(0, len(m2) - len(key_prefix))]
    # an integer argument of the second call may be written differently (``string="false"``)
    kv_other = _between_key_and_value(block2)
    if kv_other is not None and kv_other != kv1 and kv1 == kv2:
        kv2 = kv_other
    kv_mid = kv1 if kv1 == kv2 else ""
    if kv_mid:
        kv_re = _ws(kv_mid[: len(kv_mid) - len(kv_mid.lstrip())]) + tx.flex(kv_mid.strip())
        kv_re += _ws(kv_mid[len(kv_mid.rstrip()) :])
    else:
        n = tx.common_prefix(kv1, kv2)
        pre = kv1[:n]
        suf = kv1[n:][len(kv1) - n - min(tx.common_suffix(kv1, kv2), len(kv1) - n, len(kv2) - n) :]
        kv_re = tx.flex(pre.strip()) + r"[^<>\n]*?" + tx.flex(suf.strip()) + r"\s*"
    kp = key_prefix.strip()
    vs = value_suffix.strip()
    key_re = tx.flex(kp) + "(?P<key>" + (r"[^<>\n\"]+?" if kp else r"[A-Za-z_][\w.\-]*") + ")"
    value_end = (
        (_ws(value_suffix[: len(value_suffix) - len(value_suffix.lstrip())]) + tx.flex(vs)) if vs else ""
    )
    if named_close:
        value_end = value_end.replace(re.escape(_KEY), "(?P=key)")
        key_re = key_re.replace(r"[^<>\n\"]+?", r"[^<>\n\"/]+?")
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
            if not re.fullmatch(r"<[^<>]+>|\[[^\[\]]+\]", first):  # an odd marker: up to the space
                first = spec_close.split()[0]
            outer = spec_close[spec_close.find(first) + len(first) :].strip()
            spec["close_pattern"] = _close_pattern(first, outer, f.end)
        else:
            spec["close_pattern"] = None
    if spec.get("close_pattern") is None:
        spec["close_pattern"] = re.escape(f.end) if f.end else r"\Z"
    spec["content"] = "xml-inline"
    spec["content_args"] = {"tag_pattern": tag}
    if named_close and kp.endswith("<") and kv_mid == ">":
        # ``<city>Paris</city>``: an argument's value may itself be child tags (an object, an array)
        prefix = kp[:-1]
        spec["content_args"] = {
            "tag_pattern": tx.flex(prefix)
            + r"<(?P<key>[^/>\s]+)>(?P<value>.*)"
            + tx.flex(prefix)
            + "</(?P=key)>",
            "nested": {"leaf_parser": {"name": "json", "args": {"allow_non_json": True}}},
        }
        if prefix:
            spec["content_args"]["nested"]["tag_prefix"] = prefix
    elif value_end:
        # a value may be a CDATA section (its text verbatim, a closing tag in it included)
        spec["content_args"] = {
            "tag_pattern": tag.replace("(?P<value>.*?)", r"(?P<value><!\[CDATA\[.*?\]\]>|.*?)"),
            "cdata": True,
        }
    return spec


def _between_key_and_value(block2: str | None) -> str | None:
    """The text between the second call's integer argument's name and its value, if rendered."""
    if block2 is None:
        return None
    at = block2.find(CALL_2["name"])
    (_, _), (k2, v2) = list(CALL_2["arguments"].items())
    pk = block2.find(k2, at)
    pv = block2.find(str(v2), pk + len(k2)) if pk >= 0 else -1
    if at < 0 or pk < 0 or pv < 0:
        return None
    return block2[pk + len(k2) : pv]


def _ws(space: str) -> str:
    """A regex for whitespace next to a value: one optional newline stays that, more is any space."""
    if not space:
        return ""
    return r"\n?" if space == "\n" else r"\s*"
