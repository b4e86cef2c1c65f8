"""The template linter: portability rules, suspicious patterns, extension use.

:func:`lint` reads a response template (as data, a JSON string, a file's parsed content, or a compiled
template) and returns a list of :class:`Issue`. It never raises for a bad template: a template that does
not load is reported as an ``error`` issue and the remaining checks still run on the raw data.

Rules (``code``, level):

* portability (docs/spec.md, section 10) -- ``backreference``, ``atomic-group``, ``possessive-quantifier``,
  ``recursion`` (warnings: other regex engines lack them) and ``lookaround`` (a note: allowed, but rare in
  other engines' partial matching).
* ``unreachable-field`` (error) -- two fields with the same literal open: the one whose name sorts later
  never matches.
* ``delimiter-prefix`` (warning) -- a literal delimiter that is a proper prefix of another one watched in
  the same state (``<tool`` and ``<tool_call>``): at a given position the longer one wins, so the shorter
  matches only where the longer does not, which is rarely what was meant.
* ``implicit-without-close`` (warning) -- on a chat-markup model (the start anchor is a special token such
  as ``<|im_start|>assistant``) an implicit field without ``close`` keeps the end-of-turn token
  (``<|im_end|>``) in its text.
* ``greedy-delimiter`` (note) -- a delimiter pattern with an unbounded ``.*``/``.+``: while the stream is
  open the parser holds back everything after a partial match.
* ``extension`` (note) -- the template uses a template-language extension (``docs/extensions.md``; the
  design ids E1-E9 are those of ``docs/design/extensions.md``): its declaration, and each field key,
  content parser, ``content_args`` key and transform feature of an extension, all read from the one
  registry the loader uses (``language/registry.py``), whether declared or not; also a content parser
  outside the base language, and a structured ``close`` (a draft form the language does not have).
  Implementations of the base language alone reject such templates.
* ``ignored-content-arg`` (warning) -- a ``content_args`` entry that cannot change the result and is
  ignored, as the reference ignores it: an argument the parser does not have (often a misspelling),
  ``strip`` on ``int``/``float``, ``strip`` on ``json`` without ``allow_non_json``.
* ``flag-tags`` (note) -- an ``xml-inline`` ``tag_pattern`` without a ``value`` group: every tag's value
  is the empty string.
* ``load-error`` (error) -- the template does not load; the message is the loader's.
* ``anchor-not-in-prompt`` (error, only with ``chat_template=``) -- the chat template's generation prompt
  (one user message, ``add_generation_prompt=True``, rendered as :mod:`response_templates.verify` does)
  does not contain the start anchor, a misspelled anchor: every parse with that prompt would fail with
  ``AnchorNotFoundError``. A chat template that does not render is a note (``chat-template-render``).

>>> import response_templates as rt
>>> issues = rt.lint({
...     "start_anchor": "<|im_start|>assistant\\n",
...     "fields": {"reasoning_content": {"open": "<think>", "close_pattern": r"(?>\\s*)</think>"},
...                "content": {}},
... })
>>> [(i.level, i.code, i.field) for i in issues]
[('warning', 'atomic-group', 'reasoning_content'), ('warning', 'implicit-without-close', 'content')]
>>> print(issues[0])
warning atomic-group [reasoning_content.close_pattern]: atomic group (?>...) at offset 0: not portable (docs/spec.md, section 10)
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .content import get_content_parser
from .content._args import recording_ignored_args
from .errors import ResponseTemplateError
from .language import BASE_CONTENT_PARSERS, REGISTRY, Extension, ResponseTemplate, load_template
from .language.registry import EXTENSION_FIELD_KEYS, EXTENSION_PARSERS, extension, extension_args_used

__all__ = ["LEVELS", "Issue", "lint", "regex_constructs"]

#: Issue levels, most severe first.
LEVELS = ("error", "warning", "note")

_PATTERN_KEYS = ("open_pattern", "close_pattern")
_CHAT_MARKUP = ("<|", "|>", "<｜", "｜>", "[INST]", "[/INST]", "<start_of_turn>", "<seed:", "]~b]")


@dataclass(frozen=True)
class Issue:
    """One finding of the linter."""

    level: str
    code: str
    message: str
    field: str | None = None
    key: str | None = None

    def __str__(self) -> str:
        where = ".".join(p for p in (self.field, self.key) if p)
        return f"{self.level} {self.code}" + (f" [{where}]" if where else "") + f": {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "code": self.code,
            "message": self.message,
            "field": self.field,
            "key": self.key,
        }


# ------------------------------------------------------------------------------------ regex scanning


# Over 80 lines on purpose: one pass over the pattern whose branches share the cursor, the lookaround
# stack and the end of the last atom; split into functions, that state would have to be passed around.
def regex_constructs(pattern: str) -> Iterator[tuple[str, int, str]]:
    """``(kind, offset, text)`` for each non-portable or notable construct of a regex.

    Kinds: ``backreference``, ``atomic-group``, ``possessive-quantifier``, ``recursion``, ``lookaround``
    and ``greedy`` (an unbounded ``.*``/``.+`` outside lookarounds). Escapes and character classes are
    skipped, so ``[(?>]`` and ``\\(?>`` are not reported.

    >>> [k for k, _, _ in regex_constructs(r"(?P<a>x)(?P=a)\\1[\\1(?>]a++b{2}+(?=c)")]
    ['backreference', 'backreference', 'possessive-quantifier', 'possessive-quantifier', 'lookaround']
    """
    i, n = 0, len(pattern)
    look_stack: list[bool] = []
    atom_end = -1  # the position right after the last atom (a quantifier may follow there)
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            nxt = pattern[i + 1 : i + 2]
            after = pattern[i + 2 : i + 3]
            if (nxt.isdigit() and nxt != "0") or (nxt in ("g", "k") and after in ("<", "{", "'")):
                yield "backreference", i, pattern[i : i + 2]
            i += 2
            atom_end = i
        elif ch == "[":
            j = i + 1
            if pattern[j : j + 1] == "^":
                j += 1
            if pattern[j : j + 1] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 2 if pattern[j] == "\\" else 1
            i = j + 1
            atom_end = i
        elif ch == "(":
            head = pattern[i : i + 5]
            is_look = head.startswith(("(?=", "(?!", "(?<=", "(?<!"))
            if is_look:
                yield "lookaround", i, head[:4] if head.startswith("(?<") else head[:3]
            elif head.startswith("(?>"):
                yield "atomic-group", i, "(?>"
            elif head.startswith("(?P="):
                yield "backreference", i, "(?P="
            elif (
                head.startswith(("(?P>", "(?&", "(?R)"))
                or (head[:2] == "(?" and head[2:3].isdigit())
                or (head.startswith(("(?+", "(?-")) and head[3:4].isdigit())
            ):
                yield "recursion", i, head[:4]
            look_stack.append(is_look)
            i += 1
            atom_end = -1
        elif ch == ")":
            if look_stack:
                look_stack.pop()
            i += 1
            atom_end = i
        elif ch in "*+?" and atom_end == i:
            greedy = ch != "?" and pattern[i - 1 : i] == "." and pattern[i + 1 : i + 2] not in ("?", "+")
            if greedy and not any(look_stack):
                yield "greedy", i - 1, pattern[i - 1 : i + 1]
            i += 1
            if pattern[i : i + 1] == "+":
                yield "possessive-quantifier", i - 1, pattern[i - 1 : i + 1]
                i += 1
            elif pattern[i : i + 1] == "?":
                i += 1
            atom_end = -1
        elif ch == "{" and atom_end == i:
            j = pattern.find("}", i)
            if j > i and all(c.isdigit() or c == "," for c in pattern[i + 1 : j]):
                i = j + 1
                if pattern[i : i + 1] == "+":
                    yield "possessive-quantifier", j, pattern[j : i + 1]
                    i += 1
                elif pattern[i : i + 1] == "?":
                    i += 1
                atom_end = -1
            else:
                i += 1
                atom_end = i
        else:
            i += 1
            atom_end = i


_MESSAGES = {
    "backreference": "backreference {text} at offset {at}: not portable (docs/spec.md, section 10)",
    "atomic-group": "atomic group (?>...) at offset {at}: not portable (docs/spec.md, section 10)",
    "possessive-quantifier": "possessive quantifier {text} at offset {at}: not portable (docs/spec.md, section 10)",
    "recursion": "recursion {text} at offset {at}: not portable (docs/spec.md, section 10)",
    "lookaround": "lookaround {text} at offset {at}: allowed, but rare in other engines (docs/spec.md, section 10)",
    "greedy": "unbounded {text} at offset {at}: while streaming, everything after a partial match is held "
    "back until the delimiter is decided",
}
_LEVEL = {
    "backreference": "warning",
    "atomic-group": "warning",
    "possessive-quantifier": "warning",
    "recursion": "warning",
    "lookaround": "note",
    "greedy": "note",
}


def _patterns(fields: Mapping[str, Any]) -> Iterator[tuple[str, str, str]]:
    for name, spec in fields.items():
        if not isinstance(spec, Mapping):
            continue
        for key in _PATTERN_KEYS:
            value = spec.get(key)
            if isinstance(value, str):
                yield name, key, value
        args = spec.get("content_args")
        if isinstance(args, Mapping) and isinstance(args.get("tag_pattern"), str):
            yield name, "content_args.tag_pattern", args["tag_pattern"]


def _literals(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str) and v]
    return []


# -------------------------------------------------------------------------------------------- checks


def _check_regexes(fields: Mapping[str, Any], data: Mapping[str, Any]) -> Iterator[Issue]:
    sources = list(_patterns(fields))
    if isinstance(data.get("start_anchor_pattern"), str):
        sources.append(("", "start_anchor_pattern", data["start_anchor_pattern"]))
    for name, key, pattern in sources:
        seen: set[str] = set()
        for kind, at, text in regex_constructs(pattern):
            if kind == "greedy" and key == "content_args.tag_pattern":
                continue  # tag patterns run once per closed region, not while streaming
            if kind in ("lookaround", "greedy") and kind in seen:
                continue
            seen.add(kind)
            yield Issue(_LEVEL[kind], kind, _MESSAGES[kind].format(text=text, at=at), name or None, key)


def _check_delimiters(fields: Mapping[str, Any]) -> Iterator[Issue]:
    opens: list[tuple[str, str]] = []
    implicit_close: list[tuple[str, str]] = []
    for name, spec in fields.items():
        if not isinstance(spec, Mapping):
            continue
        if "open" in spec:
            opens.extend((name, lit) for lit in _literals(spec["open"]))
        elif "open_pattern" not in spec:
            implicit_close.extend((name, lit) for lit in _literals(spec.get("close")))
    outside = opens + implicit_close
    reported: set[tuple[str, str]] = set()
    by_literal: dict[str, list[str]] = {}
    for name, lit in opens:
        by_literal.setdefault(lit, []).append(name)
    for lit, names in by_literal.items():
        unique = sorted(set(names))
        if len(unique) > 1:
            for loser in unique[1:]:
                yield Issue(
                    "error",
                    "unreachable-field",
                    f"fields {unique[0]!r} and {loser!r} both open with {lit!r}; on a tie the field whose name "
                    f"sorts first wins, so {loser!r} never matches there",
                    loser,
                    "open",
                )
    for name_a, a in outside:
        for name_b, b in outside:
            if a != b and b.startswith(a) and (name_a, a) not in reported:
                reported.add((name_a, a))
                yield Issue(
                    "warning",
                    "delimiter-prefix",
                    f"{a!r} is a prefix of {b!r} (field {name_b!r}); where both could match the longer one wins, "
                    f"so {a!r} matches only where {b!r} does not follow",
                    name_a,
                    "open" if (name_a, a) in opens else "close",
                )


def _check_implicit(fields: Mapping[str, Any], data: Mapping[str, Any]) -> Iterator[Issue]:
    anchors = _literals(data.get("start_anchor"))
    if not anchors and isinstance(data.get("start_anchor_pattern"), str):
        anchors = [data["start_anchor_pattern"]]
    markup = any(token in anchor for anchor in anchors for token in _CHAT_MARKUP)
    if not markup:
        return
    for name, spec in fields.items():
        implicit = isinstance(spec, Mapping) and "open" not in spec and "open_pattern" not in spec
        if implicit and "close" not in spec and "close_pattern" not in spec:
            hint = " (<|im_end|>)" if any("<|im_start|>" in a for a in anchors) else ""
            yield Issue(
                "warning",
                "implicit-without-close",
                f"the implicit field has no close: on this chat-markup model the end-of-turn token{hint} "
                "stays in its text when the output includes it",
                name,
                "close",
            )


def _check_extensions(fields: Mapping[str, Any], data: Mapping[str, Any]) -> Iterator[Issue]:
    """One note per extension the template declares or uses, from the registry (language/registry.py)."""
    if "extensions" in data:
        yield Issue("note", "extension", f"declares extensions {data['extensions']!r}", None, "extensions")
    raw = data.get("extensions")
    declared = tuple(e for e in raw if isinstance(e, str)) if isinstance(raw, list) else ()
    for name, spec in fields.items():
        if isinstance(spec, Mapping):
            yield from _field_extensions(name, spec, fields, declared)


def _field_extensions(
    name: str, spec: Mapping[str, Any], fields: Mapping[str, Any], declared: tuple[str, ...]
) -> Iterator[Issue]:
    for ext in REGISTRY:
        for feature in ext.transform_features:
            key = feature.used_in(spec, declared)
            if key is not None:
                yield Issue("note", "extension", f"{feature.summary}: {_named(ext)}", name, key)
    content = spec.get("content")
    parser = content
    if isinstance(content, str):
        parser = content.split()[0] if content.strip() else content
        if parser in EXTENSION_PARSERS:
            ext = extension(EXTENSION_PARSERS[parser])
            yield Issue("note", "extension", f"content parser {parser!r} is {_named(ext)}", name, "content")
        elif parser not in BASE_CONTENT_PARSERS:
            yield Issue(
                "note", "extension", f"content parser {parser!r} is not a seed parser", name, "content"
            )
    for key, ext_name in EXTENSION_FIELD_KEYS.items():
        if key in spec:
            where = _named(extension(ext_name))
            if key == "into" and isinstance(spec["into"], str) and _is_implicit(fields.get(spec["into"])):
                where += "; into the implicit field: an optional wrapper of its text (E6)"
            yield Issue("note", "extension", f"key {key!r} is {where}", name, key)
    if isinstance(spec.get("close"), Mapping):
        yield Issue(
            "note",
            "extension",
            "a structured close (e.g. {'json': 'value'}) is not part of the language; a region that ends "
            f'with its JSON value is written "close_json": true, {_named(extension("json-value-end"))}',
            name,
            "close",
        )
    for parser_name, arg, ext_name in extension_args_used(parser or "text", spec.get("content_args")):
        yield Issue(
            "note",
            "extension",
            f"content_args {arg!r} of {parser_name!r} is {_named(extension(ext_name))}",
            name,
            "content_args",
        )


# ------------------------------------------------------------------ content_args (helper "reference")


def _check_content_args(fields: Mapping[str, Any]) -> Iterator[Issue]:
    """``ignored-content-arg`` warnings and the ``flag-tags`` note, from the content parsers' validators.

    The validators ignore what cannot change a result (and refuse what would be misread); what they ignore
    is recorded (``content._args.recording_ignored_args``), so the rule stays with each parser.
    """
    for name, spec in fields.items():
        if not isinstance(spec, Mapping) or not isinstance(spec.get("content", "text"), str):
            continue
        try:
            parser = get_content_parser(spec.get("content", "text"), name)
        except ResponseTemplateError:
            continue  # reported by load-error
        with recording_ignored_args() as ignored:
            try:
                validated = parser.validate(spec.get("content_args", {}), name)
            except ResponseTemplateError:
                continue  # reported by load-error
        for item in ignored:
            where = "" if item.parser == parser.name else f" (of the value_parser {item.parser!r})"
            yield Issue(
                "warning",
                "ignored-content-arg",
                f"content_args {item.arg!r}{where} is ignored: {item.reason}",
                name,
                "content_args",
            )
        tag_re = validated.get("_tag_re") if parser.name == "xml-inline" else None
        if tag_re is not None and "value" not in tag_re.groupindex:
            yield Issue(
                "note",
                "flag-tags",
                "tag_pattern has no 'value' group: every tag gives the empty string (flag tags); add "
                "(?P<value>...) if the tags carry values",
                name,
                "content_args",
            )


def _named(ext: Extension) -> str:
    return f"extension {ext.design} ({ext.name})"


def _is_implicit(spec: Any) -> bool:
    return isinstance(spec, Mapping) and "open" not in spec and "open_pattern" not in spec


def _check_anchor_in_prompt(compiled: ResponseTemplate, chat_template: str) -> Iterator[Issue]:
    """The start anchor must occur in the generation prompt the chat template renders."""
    from .policy import anchor_not_found
    from .verify import render_chat_template

    try:
        prompt = render_chat_template(
            chat_template, [{"role": "user", "content": "Hello."}], add_generation_prompt=True
        )
    except Exception as exc:  # a chat template may refuse this conversation, or jinja2 may be missing
        yield Issue(
            "note", "chat-template-render", f"the chat template did not render: {type(exc).__name__}: {exc}"
        )
        return
    if not compiled.cut_prefix(prompt)[1]:
        key = "start_anchor" if "start_anchor" in compiled.source else "start_anchor_pattern"
        message = (
            f"the chat template's generation prompt has no start anchor: {anchor_not_found(compiled, prompt)}"
        )
        yield Issue("error", "anchor-not-in-prompt", message, None, key)


def lint(
    template: Mapping[str, Any] | ResponseTemplate | str, *, chat_template: str | None = None
) -> list[Issue]:
    """Check a response template; the issues, most severe first (see the module docstring for the rules).

    ``chat_template`` (the Jinja text of the model's chat template) adds the check that its generation
    prompt contains the start anchor (``anchor-not-in-prompt``; rendering needs jinja2).

    >>> import response_templates as rt
    >>> chat = "{% for m in messages %}<|im_start|>{{ m.role }}\\n{{ m.content }}<|im_end|>\\n{% endfor %}" \\
    ...        "{% if add_generation_prompt %}<|im_start|>assistant\\n{% endif %}"
    >>> typo = {"start_anchor": "<|im_start|>assistent\\n", "fields": {"content": {"close": "<|im_end|>"}}}
    >>> [i.code for i in rt.lint(typo, chat_template=chat)]
    ['anchor-not-in-prompt']
    """
    issues: list[Issue] = []
    compiled: ResponseTemplate | None = None
    if isinstance(template, ResponseTemplate):
        data: Any = template.to_dict()
    elif isinstance(template, str):
        try:
            data = json.loads(template)
        except json.JSONDecodeError as exc:
            try:  # a library family name or model id, as load_template reads it
                data = load_template(template).to_dict()
            except ResponseTemplateError as by_name:
                message = str(by_name) if template.strip()[:1] not in "{[" else f"not valid JSON: {exc}"
                return [Issue("error", "load-error", message)]
    else:
        data = template
    if not isinstance(data, Mapping):
        return [Issue("error", "load-error", f"a response template is an object, got {type(data).__name__}")]
    try:
        compiled = load_template(data)
    except ResponseTemplateError as exc:
        issues.append(
            Issue("error", "load-error", str(exc), getattr(exc, "field", None), getattr(exc, "key", None))
        )
    if compiled is not None and chat_template is not None:
        issues.extend(_check_anchor_in_prompt(compiled, chat_template))
    fields = data.get("fields")
    if isinstance(fields, Mapping):
        issues.extend(_check_regexes(fields, data))
        issues.extend(_check_delimiters(fields))
        issues.extend(_check_implicit(fields, data))
        issues.extend(_check_extensions(fields, data))
        issues.extend(_check_content_args(fields))
    issues.sort(key=lambda issue: LEVELS.index(issue.level))
    return issues
