"""Transforms: reshape a parsed value into the structure the message needs.

A transform is JSON-like template data (dicts with string keys, lists, strings, numbers, booleans, null).
Applying it builds a fresh copy of that structure in which every string that is *exactly* a placeholder
(``"{name}"`` or a dotted path ``"{content.args.city}"``, segments made of word characters) is replaced by
the value of that variable, with its type kept. A dotted path descends into dict keys. Any other string is
a literal; a string that mixes a placeholder with other text (``"call {name}"``) is rejected by
:func:`validate_transform` -- transforms are not f-strings -- and so is a placeholder in a dict key, which
would never be substituted.

Variables are ``content`` (the parsed value) and the named groups of the field's patterns. A path that
does not resolve raises :class:`~response_templates.errors.ContentError`, so a half-built tool call never
reaches the output. Substituted dicts and lists are copied (iteratively, so arbitrarily deep values are
fine): the output never shares a mutable object with the variables, nor between two of its own places.

Example::

    >>> transform = {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}}
    >>> validate_transform(transform, field="tool_calls")
    >>> sorted(transform_placeholders(transform))
    ['content', 'name']
    >>> apply_transform(transform, {"name": "get_weather", "content": {"city": "Paris"}})
    {'type': 'function', 'function': {'name': 'get_weather', 'arguments': {'city': 'Paris'}}}
    >>> apply_transform_each({"name": "{tool}", "id": "{call}"}, [{"tool": "a"}, {"tool": "b", "call": 2}],
    ...                      {"call": 1})
    [{'name': 'a', 'id': 1}, {'name': 'b', 'id': 2}]
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import regex

from .errors import ContentError, TemplateError

__all__ = [
    "MAX_TRANSFORM_DEPTH",
    "OPTIONAL_PLACEHOLDERS",
    "apply_transform",
    "apply_transform_each",
    "compile_transform",
    "transform_placeholders",
    "uses_optional_placeholders",
    "validate_transform",
]

MAX_TRANSFORM_DEPTH: int = 64
"""Deepest nesting of dicts/lists a transform may have (transforms are small, hand-written data)."""

#: The transform feature of optional placeholders ``"{path?}"``. The extension ``optional-placeholders``
#: (language/extensions/optional_placeholders.py, the home of its rule) turns it on for the templates that
#: declare it; this module implements it (``validate_transform(optional=True)``, :func:`apply_transform`).
OPTIONAL_PLACEHOLDERS = "optional placeholder"

# A placeholder: braces around one or more dot-separated runs of word characters; a trailing ``?`` marks
# an optional placeholder (extension ``optional-placeholders``).
_PLACEHOLDER = regex.compile(r"\{(\w+(?:\.\w+)*)(\??)\}")
_MISSING = object()
_SCALARS = (str, int, float, bool, type(None))
_MAX_LISTED_KEYS = 20


def _placeholder_path(text: str) -> list[str] | None:
    """The path segments if ``text`` is exactly one placeholder (optional or not), else None."""
    match = _PLACEHOLDER.fullmatch(text)
    return match.group(1).split(".") if match else None


def _is_optional(text: str) -> bool:
    """Whether ``text`` is exactly one optional placeholder (``"{id?}"``)."""
    match = _PLACEHOLDER.fullmatch(text)
    return bool(match and match.group(2))


def uses_optional_placeholders(transform: Any) -> bool:
    """Whether the transform contains an optional placeholder ``"{path?}"`` (extension optional-placeholders)."""
    return any(isinstance(node, str) and _is_optional(node) for node, _ in _walk(transform, None))


def _location(path: tuple[str | int, ...]) -> str:
    """Readable position inside a transform, e.g. ``transform["function"]["name"]``."""
    return "transform" + "".join(f"[{step!r}]" for step in path)


def _walk(transform: Any, field: str | None) -> Iterator[tuple[Any, tuple[str | int, ...]]]:
    """Yield every node of ``transform`` with its path, checking types and depth (iteratively)."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(transform, ())]
    while stack:
        node, path = stack.pop()
        if len(path) > MAX_TRANSFORM_DEPTH:
            raise TemplateError(
                f"the transform is nested more than {MAX_TRANSFORM_DEPTH} levels deep (or contains a cycle)",
                field=field,
                key="transform",
            )
        if isinstance(node, dict):
            for key in node:
                if not isinstance(key, str):
                    raise TemplateError(
                        f"{_location(path)} has a non-string key {key!r}; transforms are JSON data",
                        field=field,
                        key="transform",
                    )
        elif not isinstance(node, (list, *_SCALARS)):
            raise TemplateError(
                f"{_location(path)} is a {type(node).__name__}; a transform may only contain objects, "
                "arrays, strings, numbers, booleans and null",
                field=field,
                key="transform",
            )
        yield node, path
        if isinstance(node, dict):
            for key in list(node)[::-1]:
                stack.append((node[key], (*path, key)))
        elif isinstance(node, list):
            for index in range(len(node) - 1, -1, -1):
                stack.append((node[index], (*path, index)))


def validate_transform(
    transform: Any, field: str | None, *, optional: bool = False, error_key: str = "transform"
) -> None:
    """Check a transform at template load time; ``TemplateError(field=field, key="transform")`` if bad.

    ``optional``: the extension ``optional-placeholders`` is declared, so ``"{path?}"`` is allowed;
    otherwise such a string is rejected here, where it is met, among the other checks of the transform.
    """
    for node, path in _walk(transform, field):
        if isinstance(node, str) and not optional and _is_optional(node):
            raise TemplateError(
                f"{_location(path)} is the optional placeholder {node!r}, which belongs to the extension "
                "'optional-placeholders'; declare it at the top level: \"extensions\": "
                '["optional-placeholders"] (see docs/extensions.md)',
                field=field,
                key=error_key,
            )
        if isinstance(node, dict):
            for key in node:
                if _PLACEHOLDER.search(key):
                    raise TemplateError(
                        f"{_location(path)} has the key {key!r}, which contains a placeholder; placeholders "
                        "are only substituted in values, never in keys",
                        field=field,
                        key="transform",
                    )
        elif isinstance(node, str) and _PLACEHOLDER.search(node) and _placeholder_path(node) is None:
            raise TemplateError(
                f"{_location(path)} is {node!r}, which mixes a {{placeholder}} with other text; use a "
                'string that is exactly one placeholder (e.g. "{content}") or a plain literal -- '
                "transforms are not f-strings",
                field=field,
                key="transform",
            )


def transform_placeholders(transform: Any) -> set[str]:
    """The root variable names the transform refers to, e.g. ``{"content", "name"}``."""
    roots: set[str] = set()
    for node, _ in _walk(transform, None):
        if isinstance(node, str):
            path = _placeholder_path(node)
            if path is not None:
                roots.add(path[0])
    return roots


def _describe_keys(mapping: Mapping[Any, Any]) -> str:
    keys = [repr(k) for k in list(mapping)[: _MAX_LISTED_KEYS + 1]]
    if not keys:
        return "none"
    if len(keys) > _MAX_LISTED_KEYS:
        return ", ".join(keys[:_MAX_LISTED_KEYS]) + f", ... ({len(mapping)} in all)"
    return ", ".join(sorted(keys))


def _copy_value(value: Any) -> Any:
    """Copy the dicts and lists of ``value`` (iteratively, any depth); other objects are shared.

    Within one copy, an object met twice is copied once (like ``copy.deepcopy``), so shared and cyclic
    structures keep their shape without endless work.
    """
    if not isinstance(value, (dict, list)):
        return value
    root: Any = {} if isinstance(value, dict) else []
    memo: dict[int, Any] = {id(value): root}
    stack: list[tuple[Any, Any]] = [(value, root)]
    while stack:
        source, target = stack.pop()
        items = source.items() if isinstance(source, dict) else enumerate(source)
        for key, child in items:
            if isinstance(child, (dict, list)):
                copied = memo.get(id(child))
                if copied is None:
                    copied = {} if isinstance(child, dict) else []
                    memo[id(child)] = copied
                    stack.append((child, copied))
                child = copied
            if isinstance(target, dict):
                target[key] = child
            else:
                target.append(child)
    return root


def _resolve(path: list[str], variables: Mapping[str, Any], optional: bool = False) -> Any:
    """The value at ``path``; for an optional placeholder, ``_MISSING`` when the path does not resolve."""
    dotted = ".".join(path)
    root = path[0]
    if optional:
        value = variables.get(root, _MISSING)
        for segment in path[1:]:
            if not isinstance(value, Mapping) or segment not in value:
                return _MISSING
            value = value[segment]
        return value
    if root not in variables:
        raise ContentError(
            f"transform placeholder '{{{dotted}}}': there is no variable {root!r}; "
            f"available variables: {_describe_keys(variables)}"
        )
    value = variables[root]
    for depth, segment in enumerate(path[1:], start=1):
        here = ".".join(path[:depth])
        if not isinstance(value, Mapping):
            raise ContentError(
                f"transform placeholder '{{{dotted}}}': cannot look up {segment!r} because '{here}' is "
                f"{type(value).__name__}, not an object"
            )
        if segment not in value:
            raise ContentError(
                f"transform placeholder '{{{dotted}}}': '{here}' has no key {segment!r}; "
                f"available keys: {_describe_keys(value)}"
            )
        value = value[segment]
    return value


def _build(node: Any, variables: Mapping[str, Any], copy_values: bool = True) -> Any:
    if isinstance(node, dict):
        built = {key: _build(value, variables, copy_values) for key, value in node.items()}
        return {key: value for key, value in built.items() if value is not _MISSING}
    if isinstance(node, list):
        return [
            None if item is _MISSING else item for item in (_build(i, variables, copy_values) for i in node)
        ]
    if isinstance(node, str):
        match = _PLACEHOLDER.fullmatch(node)
        if match is not None:
            value = _resolve(match.group(1).split("."), variables, optional=bool(match.group(2)))
            if value is _MISSING:
                return _MISSING  # an unresolved optional placeholder: its key is omitted (null elsewhere)
            return _copy_value(value) if copy_values else value
    return node


def placeholders_repeat(transform: Any) -> bool:
    """Whether a variable is substituted more than once (then the copies must not share objects)."""
    roots: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, str):
            path = _placeholder_path(node)
            if path is not None:
                roots.append(path[0])

    walk(transform)
    return len(roots) != len(set(roots))


def apply_transform(transform: Any, variables: Mapping[str, Any], *, copy_values: bool = True) -> Any:
    """Build the transform's output with placeholders replaced by ``variables``.

    The transform is expected to have passed :func:`validate_transform`. Raises ``ContentError`` when a
    placeholder path does not resolve. With ``copy_values`` (the default) substituted dicts and lists
    are copies; a caller that owns fresh values used at most once each (see :func:`placeholders_repeat`)
    may pass ``False`` to skip the copy.
    """
    try:
        built = _build(transform, variables, copy_values)
        return None if built is _MISSING else built
    except RecursionError:
        raise TemplateError(
            "the transform is nested too deeply (or contains a cycle); validate it first", key="transform"
        ) from None


#: A compiled transform: variables -> the built value (see :func:`compile_transform`).
Builder = Callable[[Mapping[str, Any]], Any]


def compile_transform(transform: Any, *, copy_values: bool = True) -> Builder:
    """A function that does what ``apply_transform(transform, variables, copy_values=...)`` does.

    The transform is walked once, here, instead of at every region: each dict, list and placeholder
    becomes a small builder. The result, and every error, is the same as :func:`apply_transform`'s (a path
    that does not resolve is looked up by the same function, which raises the same ``ContentError``).

    >>> build = compile_transform({"type": "function", "function": "{content}"})
    >>> build({"content": {"name": "f"}})
    {'type': 'function', 'function': {'name': 'f'}}
    """
    node = _compile(transform, copy_values)

    def build(variables: Mapping[str, Any]) -> Any:
        built = node(variables)
        return None if built is _MISSING else built

    return build


def _compile(node: Any, copy_values: bool) -> Builder:
    if isinstance(node, dict):
        items = [(key, _compile(value, copy_values)) for key, value in node.items()]

        def build_dict(variables: Mapping[str, Any]) -> Any:
            out = {}
            for key, child in items:
                value = child(variables)
                if value is not _MISSING:
                    out[key] = value
            return out

        return build_dict
    if isinstance(node, list):
        children = [_compile(item, copy_values) for item in node]

        def build_list(variables: Mapping[str, Any]) -> Any:
            return [None if item is _MISSING else item for item in (child(variables) for child in children)]

        return build_list
    if isinstance(node, str):
        match = _PLACEHOLDER.fullmatch(node)
        if match is not None:
            path = match.group(1).split(".")
            optional = bool(match.group(2))
            if len(path) == 1 and not optional:
                root = path[0]

                def build_variable(variables: Mapping[str, Any]) -> Any:
                    if root not in variables:
                        return _resolve(path, variables)  # raises the error that names what is there
                    value = variables[root]
                    return _copy_value(value) if copy_values else value

                return build_variable

            def build_path(variables: Mapping[str, Any]) -> Any:
                value = _resolve(path, variables, optional=optional)
                if value is _MISSING:
                    return _MISSING
                return _copy_value(value) if copy_values else value

            return build_path

    def build_constant(variables: Mapping[str, Any]) -> Any:
        return node

    return build_constant


def apply_transform_each(
    transform: Any, value: Any, captures: Mapping[str, Any], *, items: bool = False
) -> list[Any]:
    """Apply ``transform`` to each element of ``value``, a list of dicts.

    Each element's keys, on top of ``captures`` (an element key wins over a capture of the same name), are
    the variables. Raises ``ContentError`` if ``value`` is not a list of dicts or a path does not resolve.

    With ``items`` (the ``item-transform`` extension) each element must be an object with exactly one key;
    the variables are ``captures`` plus ``key`` (that key) and ``value`` (its value):

    >>> apply_transform_each({"name": "{key}", "arguments": "{value}"}, [{"f": {"a": 1}}], {}, items=True)
    [{'name': 'f', 'arguments': {'a': 1}}]
    """
    if not isinstance(value, list):
        raise ContentError(
            f"transform_each needs the parsed content to be a list of objects, got {type(value).__name__}"
        )
    out = []
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            raise ContentError(
                f"transform_each needs a list of objects, but element {index} is {type(item).__name__}"
            )
        if items:
            if len(item) != 1:
                raise ContentError(
                    f"item-transform needs objects with exactly one key (the name), but element {index} has "
                    f"{len(item)} keys: {_describe_keys(item)}"
                )
            ((key, inner),) = item.items()
            variables = {**captures, "key": key, "value": inner}
        else:
            variables = {**captures, **item}
        try:
            out.append(apply_transform(transform, variables))
        except ContentError as exc:
            raise ContentError(f"transform_each element {index}: {exc}") from exc
    return out
