"""Internal: a grammar tree (:mod:`.nodes`) written as an llguidance Lark grammar.

How each node kind is written:

* a literal is a string, except the parts of it that are special tokens of the model's tokenizer
  (``special_tokens``), which are written as token references: ``<|im_end|>``, or ``<[id]>`` when the
  token ids are known. llguidance matches special tokens only that way: as text, the model could never
  produce them.
* free text followed by a string is one *lazy* lexeme (``t[lazy]: TEXT "end"``): it ends at the first
  occurrence of the string, the way a tag's content ends at its end string. Text that must not contain
  some strings is a terminal built with llguidance's ``&`` and ``~`` operators.
* a JSON value is ``%json {schema}``; a regular expression ``/pattern/``.
* tool calls in free text: a lazy head (text up to a trigger) and the rest of the tag, repeated; the
  text after the last call excludes the triggers, so that a trigger always starts a call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from .nodes import (
    WS,
    Alt,
    Calls,
    DialectValue,
    Json,
    Lit,
    Node,
    Pattern,
    PyString,
    Repeat,
    Seq,
    SharedAlt,
    Tag,
    Text,
    seq,
    split_special,
    usable_special_tokens,
    written_special_tokens,
)

__all__ = ["to_lark"]

#: Whitespace the template requires (``\\s+``), as :func:`.arguments.spelled_nodes` writes it.
_SPACE1 = Pattern("[ \\t\\r\\n]+", example=" ")

_REGEX_META = set("\\.+*?()|[]{}^$#&-~/")


def regex_escape(text: str) -> str:
    """``text`` as a regex (Rust ``regex`` syntax) that matches it literally, for a Lark ``/.../``."""
    out = []
    for ch in text:
        if ch in _REGEX_META:
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{{{ord(ch):x}}}")
        else:
            out.append(ch)
    return "".join(out)


def _string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


class _Writer:
    #: How a text is written as a literal regex (for the value writers of :mod:`.anyvalue`, below this
    #: module).
    escape = staticmethod(regex_escape)

    def __init__(self, special_tokens: Mapping[str, int | None], spelled: tuple[str, ...] = ()) -> None:
        # llguidance names a special token by id (``<[id]>``) or, when its text is ``<...>``, by that
        # text; any other token without an id is written as text.
        self.special = usable_special_tokens(special_tokens)
        self.tokens = sorted(self.special, key=len, reverse=True)
        #: The texts of the special tokens the grammar writes: free text never spells one in ordinary
        #: tokens either (the parser would read it as the delimiter), as in the structural tag.
        self.spelled = spelled
        self.rules: list[str] = []
        self.counter = 0
        self.text_terminals: dict[tuple[str, ...], str] = {}
        self.json_rules: dict[str, str] = {}
        self.text_rules: dict[tuple[tuple[str, ...], str], str] = {}
        # By the node's identity (the node kept, so that its id is not reused): its rule's name.
        self.shared_rules: dict[int, tuple[Node, str]] = {}

    def _name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    # ------------------------------------------------------------------ literals and special tokens

    def _split(self, text: str) -> list[tuple[bool, str]]:
        """``text`` as (is_special_token, piece) pieces, longest special token first at each position."""
        return split_special(text, self.tokens)

    def _token(self, token: str) -> str:
        token_id = self.special.get(token)
        if token_id is not None:
            return f"<[{token_id}]>"
        return token

    def literal(self, text: str) -> str:
        pieces = self._split(text)
        if not pieces:
            return '""'
        return " ".join(self._token(p) if special else _string(p) for special, p in pieces)

    def starts_special(self, text: str) -> bool:
        pieces = self._split(text)
        return bool(pieces) and pieces[0][0]

    # ------------------------------------------------------------------------------------- text

    def text_terminal(self, excludes: tuple[str, ...]) -> str:
        """A terminal for text containing none of ``excludes`` (special tokens never occur in text)."""
        # Text never holds a special token, so an exclude that starts with one needs no rule; it never
        # spells one the grammar writes either.
        plain = tuple(sorted(({self._first_text(e) for e in excludes} | set(self.spelled)) - {""}))
        name = self.text_terminals.get(plain)
        if name is not None:
            return name
        name = f"TEXT{len(self.text_terminals)}"
        self.text_terminals[plain] = name
        if plain:
            alts = "|".join(regex_escape(e) for e in plain)
            self.rules.append(f"{name}: /(?s:.*)/ & ~/(?s:.*)(?:{alts})(?s:.*)/")
        else:
            self.rules.append(f"{name}: /(?s:.*)/")
        return name

    def _is_all_special(self, text: str) -> bool:
        return all(special for special, _ in self._split(text))

    def _first_text(self, text: str) -> str:
        """The text part of ``text`` up to its first special token (what plain text could spell)."""
        pieces = self._split(text)
        out = []
        for special, piece in pieces:
            if special:
                break
            out.append(piece)
        return "".join(out)

    def text_until(self, excludes: tuple[str, ...], follow: str) -> str:
        """Free text, then ``follow``: one expression that consumes both."""
        key = (excludes, follow)
        if key not in self.text_rules:
            self.text_rules[key] = self._text_until(excludes, follow)
        return self.text_rules[key]

    def _text_until(self, excludes: tuple[str, ...], follow: str) -> str:
        terminal = self.text_terminal(excludes)
        if self.starts_special(follow):
            return f"{terminal}? {self.literal(follow)}"
        head = self._first_text(follow)
        rest = follow[len(head) :]
        name = self._name("t")
        self.rules.append(f"{name}[lazy]: {terminal} {_string(head)}")
        return f"{name} {self.literal(rest)}" if rest else name

    # ------------------------------------------------------------------------------------- nodes

    def node(self, node: Node, follow: str | None = None) -> tuple[str, bool]:
        """``(expression, consumed)``: the node's Lark expression, and whether it also consumed
        ``follow`` (the literal that comes next, if known)."""
        if isinstance(node, Lit):
            return self.literal(node.value), False
        if isinstance(node, Json):
            key = json.dumps(node.schema, sort_keys=True)
            name = self.json_rules.get(key)
            if name is None:
                name = self._name("json")
                self.json_rules[key] = name
                self.rules.append(f"{name}: %json {json.dumps(node.schema, ensure_ascii=False)}")
            return name, False
        if isinstance(node, DialectValue):  # any value of a JSON dialect: rules of its own
            from .anyvalue import lark_any_value

            return lark_any_value(self, node), False
        if isinstance(node, Text):
            if follow:
                return self.text_until(node.excludes, follow), True
            return self.text_terminal(node.excludes) + "?", False
        if isinstance(node, Pattern):
            return "/" + node.pattern.replace("/", "\\/") + "/", False
        if isinstance(node, PyString):  # holds no special token's text, as in the structural tag
            from .anyvalue import lark_py_string

            return lark_py_string(self, node.excludes), False
        if isinstance(node, Seq):
            parts = []
            consumed = False
            skip = False
            items = _distribute_space(node.items)
            for index, item in enumerate(items):
                if skip:  # a literal the text or whitespace before it already consumed
                    skip = False
                    continue
                after_item = items[index + 1] if index + 1 < len(items) else None
                space = "*" if item == WS else "+" if item == _SPACE1 else None
                if space and isinstance(after_item, Lit) and self._first_text(after_item.value):
                    # Whitespace (optional or not) and the text after it are one lexeme: separate, a greedy
                    # lexer could not tell `` to=`` from another token that starts with whitespace.
                    head = self._first_text(after_item.value)
                    rest = after_item.value[len(head) :]
                    parts.append(
                        f"/[ \\t\\r\\n]{space}{regex_escape(head)}/"
                        + (f" {self.literal(rest)}" if rest else "")
                    )
                    skip = True
                    continue
                if item == WS and isinstance(after_item, Tag) and self._first_text(after_item.begin):
                    head = self._first_text(after_item.begin)
                    parts.append(f"/[ \\t\\r\\n]*{regex_escape(head)}/ {self.tag(after_item, len(head))}")
                    skip = True
                    continue
                nxt: str | None
                if index + 1 < len(items):
                    after = items[index + 1]
                    nxt = after.value if isinstance(after, Lit) else None
                else:
                    nxt = follow
                expr, used = self.node(item, nxt)
                parts.append(expr)
                if used:
                    if index + 1 < len(items):
                        skip = True
                    else:
                        consumed = True
            return " ".join(p for p in parts if p != '""') or '""', consumed
        if isinstance(node, SharedAlt):
            shared = self.shared_rules.get(id(node))
            if shared is None:
                expr, _ = self.node(Alt(node.options))
                shared = (node, self._name("any"))
                self.shared_rules[id(node)] = shared
                self.rules.append(f"{shared[1]}: {expr}")
            return shared[1], False
        if isinstance(node, Alt):
            options = [o for o in node.options if not (isinstance(o, Lit) and not o.value)]
            empty = len(options) < len(node.options)
            exprs = [self.node(o)[0] for o in options]
            body = " | ".join(exprs) if exprs else '""'
            return (f"({body})?" if empty else f"({body})"), False
        if isinstance(node, Tag):
            return self.tag(node), False
        if isinstance(node, Repeat):
            return f"({self.node(node.content)[0]}){{0,{node.most}}}", False
        return self.calls(node, follow)

    def tag(self, tag: Tag, skip: int = 0) -> str:
        """``begin content end`` (``skip``: characters of ``begin`` already written by a trigger)."""
        begin = self.literal(tag.begin[skip:]) if tag.begin[skip:] else ""
        if tag.other_ends:
            items = tag.content.items if isinstance(tag.content, Seq) else (tag.content,)
            if isinstance(items[-1], Text):
                # one sequence, so that whitespace joins the text after it (see node)
                head = self.node(seq(*items[:-1]))[0] if items[:-1] else ""
                options = [self.text_until(items[-1].excludes, end) for end in tag.ends]
                name = self._name("t")
                self.rules.append(f"{name}: " + " | ".join(options))
                return " ".join(p for p in (begin, head, name) if p and p != '""')
            # each end after the content, so that text at the end of the content stops at it (lazily)
            options = [self.node(seq(tag.content, Lit(end)))[0] for end in tag.ends]
            return f"{begin} ({' | '.join(options)})".strip()
        # begin, content and end as one sequence, so that text before the end is one lazy lexeme and
        # whitespace before it joins it
        whole, _ = self.node(seq(Lit(tag.begin[skip:]), tag.content, Lit(tag.end)))
        return whole

    def calls(self, calls: Calls, follow: str | None = None) -> tuple[str, bool]:
        """The calls' expression, and whether it also consumed ``follow`` (free text after the last call
        ends at it: the calls inside a reasoning block end at its closer)."""
        if not follow or calls.separator is not None or calls.calls_last or calls.at_least_one:
            return self._calls(calls), False
        until = self.text_until(tuple(calls.excludes) + tuple(calls.triggers), follow)
        body = self._calls(calls, last_text=False)
        if calls.stop_after_first:
            return f"({body} {until} | {until})", True
        return f"{body} {until}", True

    def _calls(self, calls: Calls, last_text: bool = True) -> str:
        if calls.separator is not None:
            one = self._name("tag")
            self.rules.append(f"{one}: " + " | ".join(self.tag(t) for t in calls.tags))
            if calls.stop_after_first:
                return one if calls.at_least_one else f"({one})?"
            sep = self.literal(calls.separator) if calls.separator else ""
            many = f"{one} ({sep} {one})*" if sep else f"{one}+"
            return many if calls.at_least_one else f"({many})?"
        excludes = tuple(calls.excludes) + tuple(calls.triggers)
        text = self.text_terminal(excludes)
        # One head per trigger: free text up to (and including) the trigger.
        heads: dict[str, str] = {}
        for trigger in calls.triggers:
            name = self._name("head")
            if self.starts_special(trigger):
                self.rules.append(f"{name}: {text}? {self.literal(trigger)}")
            else:
                first = self._first_text(trigger)
                rest = trigger[len(first) :]
                self.rules.append(
                    f"{name}[lazy]: {text} {_string(first)}" + (f" {self.literal(rest)}" if rest else "")
                )
            heads[trigger] = name
        triggered = []
        for tag in calls.tags:
            found = next((t for t in calls.triggers if tag.begin.startswith(t)), None)
            if found is not None:
                triggered.append(f"{heads[found]} {self.tag(tag, len(found))}".strip())
        call = self._name("call")
        self.rules.append(f"{call}: " + " | ".join(triggered) if triggered else f"{call}: {text}?")
        first = self._name("first")
        self.rules.append(f"{first}: " + " | ".join(self.tag(t) for t in calls.tags))
        if calls.calls_last:
            run = first if calls.stop_after_first else f"{first}+"
            if calls.at_least_one:
                return run
            opener = next(iter(heads.values()))
            more = "" if calls.stop_after_first else f" {first}*"
            rests = " | ".join(
                self.tag(t, len(calls.triggers[0]))
                for t in calls.tags
                if t.begin.startswith(calls.triggers[0])
            )
            return f"({text}? | {opener} ({rests}){more})"
        after = f" {text}?" if calls.text_after else ""
        if calls.at_least_one:
            return first + after if calls.stop_after_first else f"{first} {call}* {text}?"
        if not last_text:
            return call if calls.stop_after_first else f"{call}*"
        if calls.stop_after_first:
            return f"({call}{after} | {text}?)"
        return f"{call}* {text}?"


def _distribute_space(items: tuple[Node, ...]) -> tuple[Node, ...]:
    """The same sequence, with optional whitespace before a choice moved into each of its options.

    Optional whitespace joins the text after it into one lexeme (see :meth:`_Writer.node`); a whitespace
    lexeme of its own next to such a joined one makes llguidance's greedy lexer take the joined one for
    a prefix it cannot finish (``\n<｜DSML｜ parameter`` read as the start of ``\n</｜DSML｜ invoke>``).
    ``WS (a | b)`` is ``(WS a | WS b)``; ``WS (a | "") WS`` is ``(WS a | "") WS``: the same texts.
    """
    out: list[Node] = []
    i = 0
    while i < len(items):
        item = items[i]
        after = items[i + 1] if i + 1 < len(items) else None
        if item == WS and isinstance(after, Alt) and after != WS:
            empty = any(isinstance(o, Lit) and not o.value for o in after.options)
            then = items[i + 2] if i + 2 < len(items) else None
            if not empty or then == WS:
                options = tuple(
                    o if isinstance(o, Lit) and not o.value else seq(WS, o) for o in after.options
                )
                out.append(Alt(options))
                i += 2
                continue
        out.append(item)
        i += 1
    return tuple(out)


def to_lark(node: Node, special_tokens: Mapping[str, int | None] | None = None) -> str:
    """The Lark grammar (llguidance dialect) whose ``start`` rule accepts what ``node`` accepts."""
    special = usable_special_tokens(special_tokens)
    writer = _Writer(special, written_special_tokens(node, special))
    start, _ = writer.node(node)
    lines = ["%llguidance {}", "", f"start: {start}", *writer.rules]
    return "\n".join(lines) + "\n"
