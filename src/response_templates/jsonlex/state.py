"""Internal: what the JSON scanner keeps while it reads: the roles of values, the tree of watched paths,
and the open containers (:mod:`.scanner` drives them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

__all__ = ["ARGS", "HOLD", "ID", "NAME", "PLAIN", "Frame", "Watch"]

# Roles of a value.
PLAIN: Final = 0  # validated only
ARGS: Final = 1  # the arguments value of an item: reported (raw and canonical)
NAME: Final = 2  # a watched name value: captured, reported when complete
ID: Final = 3  # a watched id value: captured, reported when complete
HOLD: Final = 4  # a top-level argument that tool typing may change: captured, emitted once typed


class Watch:
    """A node of the tree of watched paths: what the value at this path is, and watched children."""

    __slots__ = ("children", "what")

    def __init__(self) -> None:
        self.what = PLAIN
        self.children: dict[str, Watch] | None = None

    def child(self, key: str) -> Watch:
        if self.children is None:
            self.children = {}
        node = self.children.get(key)
        if node is None:
            node = self.children[key] = Watch()
        return node


class Frame:
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

    def __init__(self, is_object: bool, node: Watch | None, sink: list[str] | None, item: int) -> None:
        self.is_object = is_object
        self.node = node  # watched children, if any
        self.sink = sink  # where this container's canonical text goes (None: nowhere)
        self.item = item  # the item (element of an each-document, else 0) it belongs to
        self.role = PLAIN  # the role of this container as a value
        self.conv: Callable[[Any], Any] | None = None  # the converter of a held container
        self.first = True  # no member/element written yet (for the ", " separators)
        self.top = False  # this is an arguments object: its members may be held for typing
        self.key: str | None = None  # the current member's key (objects whose keys matter)
        self.key_text = ""  # the current member's key as canonical JSON
        self.index = -1  # the current element's index (arrays)
