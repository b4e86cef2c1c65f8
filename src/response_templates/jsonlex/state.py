"""Internal: what the JSON scanner keeps while it reads: the roles of values, the tree of watched paths,
and the open containers (:mod:`.scanner` drives them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# Roles of a value.
_PLAIN = 0  # validated only
_ARGS = 1  # the arguments value of an item: reported (raw and canonical)
_NAME = 2  # a watched name value: captured, reported when complete
_ID = 3  # a watched id value: captured, reported when complete
_HOLD = 4  # a top-level argument that tool typing may change: captured, emitted once typed


class _Watch:
    """A node of the tree of watched paths: what the value at this path is, and watched children."""

    __slots__ = ("children", "what")

    def __init__(self) -> None:
        self.what = _PLAIN
        self.children: dict[str, _Watch] | None = None

    def child(self, key: str) -> _Watch:
        if self.children is None:
            self.children = {}
        node = self.children.get(key)
        if node is None:
            node = self.children[key] = _Watch()
        return node


class _Frame:
    """An open object or array."""

    __slots__ = (
        "conv",
        "first",
        "index",
        "is_object",
        "item",
        "key",
        "key_text",
        "node",
        "role",
        "sink",
        "top",
    )

    def __init__(self, is_object: bool, node: _Watch | None, sink: list[str] | None, item: int) -> None:
        self.is_object = is_object
        self.node = node  # watched children, if any
        self.sink = sink  # where this container's canonical text goes (None: nowhere)
        self.item = item  # the item (element of an each-document, else 0) it belongs to
        self.role = _PLAIN  # the role of this container as a value
        self.conv: Callable[[Any], Any] | None = None  # the converter of a held container
        self.first = True  # no member/element written yet (for the ", " separators)
        self.top = False  # this is an arguments object: its members may be held for typing
        self.key: str | None = None  # the current member's key (objects whose keys matter)
        self.key_text = ""  # the current member's key as canonical JSON
        self.index = -1  # the current element's index (arrays)
