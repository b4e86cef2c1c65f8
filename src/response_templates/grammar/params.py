"""Internal: the order of a call's parameters (XML parameter tags, Python keyword arguments).

Up to :data:`ANY_ORDER_MAX` parameters, any order, exactly: each parameter at most once, and the run
ends only once every required one is written (one shared choice per set of parameters written).

Beyond that, an exact grammar grows with the number of orders: the Lark form could share one rule per
set of parameters written (2^n rules), but the structural tag has no shared rules and spells each path
out (n!-fold). Parameters separated by whitespace only (XML tags) are then written in a looser form,
the same in both: the required ones each exactly once, in any order (up to :data:`REQUIRED_ANY_ORDER_MAX`
of them, else in the schema's order), and between them a run of optional parameters in any order, each
possibly repeated. The parser keeps the last value of a repeated parameter, each of which is valid for
its schema, so the call still validates and names the same set of parameters as an exact run would.
Other separators (Python keyword arguments, which a repeated keyword would make invalid) keep the
schema's order beyond :data:`ANY_ORDER_MAX`, each optional parameter skippable.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from .nodes import WS, Alt, Lit, Node, Repeat, SharedAlt, optional, seq

__all__ = ["ANY_ORDER_MAX", "REQUIRED_ANY_ORDER_MAX", "ordered_params", "schema_order"]

#: Up to this many parameters, a call writes them in any order, each at most once.
ANY_ORDER_MAX = 4

#: In the looser form (more parameters), up to this many required parameters come in any order.
REQUIRED_ANY_ORDER_MAX = 3


def ordered_params(items: Sequence[tuple[str, Node]], required: Collection[str], separator: Node) -> Node:
    """The parameters of one call (``items``: each name and its node), joined by ``separator``."""
    if not items:
        return Lit("")
    needed = {name for name, _ in items if name in required}
    if len(items) <= ANY_ORDER_MAX:
        return _any_order(items, needed, separator, frozenset(), True, {})
    if separator == WS:
        return _loose(items, needed)
    return schema_order(items, needed, separator)


def _any_order(
    items: Sequence[tuple[str, Node]],
    required: set[str],
    separator: Node,
    written: frozenset[str],
    first: bool,
    memo: dict[tuple[frozenset[str], bool], Node],
) -> Node:
    """The parameters not yet ``written``, in any order, each at most once; the run may end once every
    required parameter is written. The choice after each set of parameters is one shared node."""
    key = (written, first)
    if key in memo:
        return memo[key]
    options: list[Node] = []
    for name, node in items:
        if name in written:
            continue
        rest = _any_order(items, required, separator, written | {name}, False, memo)
        options.append(seq(node, rest) if first else seq(separator, node, rest))
    if required <= written or not options:
        options.append(Lit(""))
    memo[key] = result = options[0] if len(options) == 1 else SharedAlt(tuple(options))
    return result


def schema_order(items: Sequence[tuple[str, Node]], required: Collection[str], separator: Node) -> Node:
    """The parameters (or object entries) in the schema's order joined by ``separator``: the required
    ones always, each optional one when written."""
    if not items:
        return Lit("")
    options: list[Node] = []
    for first in range(len(items)):
        if any(items[j][0] in required for j in range(first)):
            break
        parts: list[Node] = [items[first][1]]
        for name, node in items[first + 1 :]:
            entry = seq(separator, node)
            parts.append(entry if name in required else optional(entry))
        options.append(seq(*parts))
    if not required:
        options.append(Lit(""))
    return options[0] if len(options) == 1 else Alt(tuple(options))


def _loose(items: Sequence[tuple[str, Node]], required: set[str]) -> Node:
    """Whitespace-separated parameters: each required one exactly once (any order, or the schema's for
    many), optional ones anywhere between them, in any order, possibly repeated."""
    needed = [(name, node) for name, node in items if name in required]
    extra = [node for name, node in items if name not in required]
    # One run of optional parameters (a shared choice: one rule in the Lark form), each after whitespace.
    run: Node = Lit("")
    lead: Node = Lit("")
    if extra:
        one = seq(WS, extra[0]) if len(extra) == 1 else SharedAlt(tuple(seq(WS, n) for n in extra))
        run = Repeat(one, len(extra))
        lead = extra[0] if len(extra) == 1 else SharedAlt(tuple(extra))
    any_order = len(needed) <= REQUIRED_ANY_ORDER_MAX

    def choices(written: frozenset[str]) -> list[tuple[str, Node]]:
        left = [(name, node) for name, node in needed if name not in written]
        return left if any_order else left[:1]

    memo: dict[frozenset[str], Node] = {}

    def rest(written: frozenset[str]) -> Node:
        """After the parameters ``written`` (and the first one): optional ones, then the next required."""
        if written not in memo:
            left = choices(written)
            if not left:
                memo[written] = run
            else:
                nexts = tuple(seq(WS, node, rest(written | {name})) for name, node in left)
                memo[written] = seq(run, nexts[0] if len(nexts) == 1 else SharedAlt(nexts))
        return memo[written]

    # The first parameter (no whitespace of its own: the arguments' leading whitespace is before it).
    first: list[Node] = [seq(lead, rest(frozenset()))] if extra else []
    first += [seq(node, rest(frozenset([name]))) for name, node in choices(frozenset())]
    if not needed:
        first.append(Lit(""))
    return first[0] if len(first) == 1 else Alt(tuple(first))
