"""Tests of response_templates.tools: tool schemas from functions, tool lists, tool-call argument typing.

The reference implementation (transformers' ``get_json_schema`` and the response parser's ``_coerce`` /
``_coerce_tool_calls``) is used as a test oracle when it is installed.

Intended differences from the reference, each pinned by the named test:

* ``type_tool_calls`` never mutates its input; the reference rewrites the arguments dict in place.
  -> test_input_is_never_mutated, test_shared_call_is_not_changed_through_another_reference
* Whole numbers beyond float precision are cast exactly ("1e23" -> 10**23, "12345678901234567891" stays
  exact for ``number``), and a text that only rounds to a whole number ("3.0000000000000000001") is not an
  integer; the reference goes through ``float`` and returns a rounded int.
  -> test_integer_cast_is_exact_beyond_float_precision, test_number_cast_keeps_big_integers_exact
* Absurdly deep JSON in an object/array argument keeps the string, and absurdly deep lists around tool calls
  come back untyped; the reference lets ``RecursionError`` escape.
  -> test_deeply_nested_json_argument_keeps_the_string, test_deeply_nested_lists_do_not_crash
* A malformed ``anyOf``/``oneOf`` (not a list) is ignored; the reference raises ``TypeError``.
  -> test_malformed_union_in_schema_is_ignored
* ``tool_parameters`` rejects what the reference silently skips: items that are neither dicts nor
  functions, non-function callables, dicts without a non-empty string name, a non-dict ``function``,
  ``parameters`` or ``properties``, a parameter schema that is neither a dict nor a boolean, and two
  different tools with the same name (the reference keeps the last one).
  -> test_tool_parameters_rejects_* tests
* ``callable_to_schema`` rejects ``*args``/``**kwargs`` even when annotated (the reference lists them as
  required scalar properties, which no tool call can satisfy), a ``(choices: ...)`` that is valid JSON but
  not a list (the reference iterates it: "tea" becomes ["t", "e", "a"]), and callables other than functions
  and methods (classes, partials, callable objects). A return annotation that cannot be converted is always
  left out (the reference crashes with ``TypeError`` on an unhashable one). Every error is a
  ``ToolSpecError``, never a foreign exception.
  -> test_annotated_var_args_are_rejected, test_non_list_choices_are_rejected,
     test_non_function_callables_are_rejected, test_unhashable_return_annotation_is_left_out
"""

import copy
import doctest
import enum
import functools
import json
import math
import re
import typing
from decimal import Decimal
from typing import Any, Literal, Optional, Union

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from hypothesis_profiles import examples
from response_templates import errors, tools
from response_templates.tools import ToolSpecError, callable_to_schema, tool_parameters, type_tool_calls

try:  # the reference implementation, only for differential tests
    from transformers.utils.chat_parsing.response_parser import ResponseParser as _RefParser
    from transformers.utils.chat_parsing.response_parser import _coerce as _ref_coerce
    from transformers.utils.chat_parsing.response_parser import _schema_types as _ref_schema_types
    from transformers.utils.chat_template_utils import get_json_schema as _ref_get_json_schema
except ImportError:  # pragma: no cover - the reference is an optional test dependency
    _RefParser = None

needs_reference = pytest.mark.skipif(
    _RefParser is None, reason="transformers (the reference) is not installed"
)


def dump(value: Any) -> str:
    """A comparison key that tells 3 from 3.0 from True, keeps key order and treats NaN as equal to NaN."""
    return json.dumps(value)


def ref_schema(fn: Any) -> Any:
    """The reference schema, or the exception class it raised."""
    try:
        return _ref_get_json_schema(fn)
    except Exception as exc:
        return type(exc)


def ref_type_tool_calls(value: Any, params: dict[str, dict]) -> Any:
    parser = _RefParser({"fields": {"content": {}}, "start_anchor": "x"}, prefix="")
    parser._tool_params = params
    return parser._coerce_tool_calls(copy.deepcopy(value))


def ref_tool_params(tool_list: list[Any]) -> dict[str, dict]:
    return _RefParser(
        {"fields": {"content": {}}, "start_anchor": "x"}, prefix="", tools=tool_list
    )._tool_params


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


def args_of(value: dict[str, Any]) -> dict[str, Any]:
    return value["function"]["arguments"]


# =========================================================================================================
# Functions for callable_to_schema (module level so that annotations resolve)


class Colour(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Mixed(enum.Enum):
    A = 1
    B = "b"
    C = None


class Empty(enum.Enum):
    pass


class Point:
    pass


class NotScalar(enum.Enum):
    A = (1, 2)


def f_scalars(a: str, b: int, c: float, d: bool = True, e: None = None):
    """Take one of each scalar.

    Args:
        a: A string.
        b: An integer.
        c: A float.
        d: A flag.
        e: Always nothing.
    """


def f_containers(
    a: list[int], b: dict[str, int], c: list, d: dict, e: tuple[int, str], f: tuple, g: dict[str, list[float]]
):
    """Containers of all kinds.

    Args:
        a: Integers.
        b: Counts by name.
        c: Anything in a list.
        d: Any object.
        e: A pair.
        f: Any tuple.
        g: Nested values.
    """


def f_optional(a: Optional[int], b: int | None = None, c: Optional[list[str]] = None):  # noqa: UP045
    """Optionals.

    Args:
        a: Maybe an int.
        b: Maybe an int, new syntax.
        c: Maybe strings.
    """


def f_unions(
    a: Union[int, str],  # noqa: UP007
    b: int | str | None,
    c: Union[int, list[str]],  # noqa: UP007
    d: list | tuple,
    e: bool | int,
    f: Union[str, float, None],  # noqa: UP007
):
    """Unions of basic and complex types.

    Args:
        a: Int or string.
        b: Int, string or nothing.
        c: Int or strings.
        d: A list or a tuple.
        e: A flag or a number.
        f: Written string first.
    """


def f_cls_receiver(cls, y: int):
    """A plain function whose unannotated first argument is called cls.

    Args:
        y: The input.
    """


def f_annotated_self(self: int, y: int):
    """An annotated self is an ordinary argument.

    Args:
        self: Not a receiver.
        y: The input.
    """


def f_literal(mode: Literal["fast", "slow"], level: Literal[1, "two", None, True] = 1):
    """Literals.

    Args:
        mode: How fast.
        level: A mixed literal.
    """


def f_enums(colour: Colour, level: Level, mixed: Optional[Mixed] = None):  # noqa: UP045
    """Enums.

    Args:
        colour: A colour.
        level: A level.
        mixed: Mixed values.
    """


def f_any(x: Any, y: typing.List[int], z: typing.Dict[str, Any]):  # noqa: UP006
    """Any and the typing aliases.

    Args:
        x: Anything.
        y: Typing list.
        z: Typing dict.
    """


def f_choices(drink: str, size: int, temp: str = "hot"):
    """Choices in the docs.

    Args:
        drink: The drink to make (choices: ["tea", "coffee"])
        size: Cup size in ml (CHOICES: [250, 500])
        temp: Temperature   (Choices: [" hot ", "cold"])
    """


def f_literal_and_choices(mode: Literal["a", "b"]):
    """Choices replace a Literal's enum in place.

    Args:
        mode: The mode (choices: ["x"])
    """


def f_multiline(query: str, limit: int = 10):
    """Search the index
    for documents that match.

    More text after a blank line.

    Args:
        query: The query, which may be
            long and span lines: with colons.
        limit:
            Maximum number of hits.
    """


def f_returns(x: int) -> list[str]:
    """Has a Returns section.

    Args:
        x: The input.

    Returns:
        The names,
        one per line.

    Raises:
        ValueError: never.
    """


def f_return_hint_only(x: int) -> int:
    """Return hint without a Returns section.

    Args:
        x: The input.
    """


def f_returns_none(x: int) -> None:
    """Returns nothing.

    Args:
        x: The input.

    Returns:
        Nothing at all.
    """


def f_custom_return(x: int) -> Point:
    """A return type with no schema is left out.

    Args:
        x: The input.

    Returns:
        A point.
    """


def f_no_args() -> str:
    """No arguments at all."""


def f_string_annotations(x: "int", y: "list[str]"):
    """String annotations.

    Args:
        x: An int.
        y: Some strings.
    """


def f_returns_first(x: int) -> int:
    """Returns before Args.

    Returns:
        A number.

    Args:
        x: The input.
    """


def f_extra_docs(x: int):
    """Documents more than it takes.

    Args:
        x: The input.
        ghost: Not an argument.
    """


def f_tabs_and_indent(alpha: int, beta: str):
    """Odd indentation.

    Args:
      alpha: First.
          beta: still part of alpha's text, it is indented deeper.
      beta: Second.
    """


def f_keyword_only(a: int, *, b: str = "x", c: float):
    """Keyword-only arguments.

    Args:
        a: A.
        b: B.
        c: C.
    """


def f_positional_only(a: int, /, b: int):
    """Positional-only arguments.

    Args:
        a: A.
        b: B.
    """


def f_unicode(größe: int, naïve: str):
    """Unicode names — 日本語の説明。

    Args:
        größe: Size.
        naïve: Innocent.
    """


def f_defaults_everywhere(a: int = 1, b: str = "s", c: Optional[float] = 1.5):  # noqa: UP045
    """Nothing required.

    Args:
        a: A.
        b: B.
        c: C.
    """


class Toolbox:
    def method(self, x: int) -> str:
        """A method.

        Args:
            x: The input.
        """

    @classmethod
    def cmethod(cls, y: str):
        """A class method.

        Args:
            y: The input.
        """

    @staticmethod
    def smethod(z: float):
        """A static method.

        Args:
            z: The input.
        """


def _decorated(fn: Any) -> Any:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return wrapper


@_decorated
def f_wrapped(x: int):
    """Wrapped with functools.wraps.

    Args:
        x: The input.
    """


def f_typed_args_in_parens(x: int, y: list[str], z: str = ""):
    """Google style with types in parentheses (read since transformers 5.24).

    Args:
        x (int): The input.
        y	( list[str] ): More
            input.
        z(str, optional): Last.
    """


ACCEPTED = [
    f_scalars,
    f_containers,
    f_optional,
    f_unions,
    f_literal,
    f_enums,
    f_any,
    f_choices,
    f_literal_and_choices,
    f_multiline,
    f_returns,
    f_return_hint_only,
    f_returns_none,
    f_custom_return,
    f_no_args,
    f_string_annotations,
    f_returns_first,
    f_extra_docs,
    f_tabs_and_indent,
    f_keyword_only,
    f_positional_only,
    f_unicode,
    f_defaults_everywhere,
    Toolbox.method,
    Toolbox().method,
    Toolbox.cmethod,
    Toolbox.smethod,
    f_wrapped,
    f_cls_receiver,
    f_annotated_self,
    f_typed_args_in_parens,
]


@needs_reference
@pytest.mark.parametrize("fn", ACCEPTED, ids=lambda fn: fn.__qualname__)
def test_schema_matches_reference(fn: Any) -> None:
    ours = callable_to_schema(fn)
    reference = _ref_get_json_schema(fn)
    assert ours == reference
    assert dump(ours) == dump(reference)  # key order too: chat templates render the schema as JSON


def test_schema_of_scalars_spelled_out() -> None:
    assert callable_to_schema(f_scalars) == {
        "type": "function",
        "function": {
            "name": "f_scalars",
            "description": "Take one of each scalar.",
            "parameters": {
                "type": "object",
                "properties": {
                    "a": {"type": "string", "description": "A string."},
                    "b": {"type": "integer", "description": "An integer."},
                    "c": {"type": "number", "description": "A float."},
                    "d": {"type": "boolean", "description": "A flag."},
                    "e": {"type": "null", "description": "Always nothing."},
                },
                "required": ["a", "b", "c"],
            },
        },
    }


def test_schema_type_mapping() -> None:
    props = callable_to_schema(f_containers)["function"]["parameters"]["properties"]
    assert props["a"]["items"] == {"type": "integer"}
    assert props["b"]["additionalProperties"] == {"type": "integer"}
    assert props["e"]["prefixItems"] == [{"type": "integer"}, {"type": "string"}]
    assert props["f"]["type"] == "array" and "prefixItems" not in props["f"]
    props = callable_to_schema(f_unions)["function"]["parameters"]["properties"]
    assert props["a"]["type"] == ["integer", "string"]
    assert props["b"] == {
        "type": ["integer", "string"],
        "nullable": True,
        "description": "Int, string or nothing.",
    }
    assert props["c"]["anyOf"] == [{"type": "integer"}, {"type": "array", "items": {"type": "string"}}]
    assert props["d"]["type"] == "array"
    assert props["f"]["type"] == ["number", "string"] and props["f"]["nullable"] is True
    props = callable_to_schema(f_literal)["function"]["parameters"]["properties"]
    assert props["mode"]["enum"] == ["fast", "slow"] and props["mode"]["type"] == "string"
    assert props["level"]["type"] == ["integer", "string", "null", "boolean"]
    props = callable_to_schema(f_enums)["function"]["parameters"]["properties"]
    assert props["colour"] == {"type": "string", "enum": ["red", "green"], "description": "A colour."}
    assert props["mixed"]["nullable"] is True and props["mixed"]["type"] == ["integer", "string", "null"]


def test_schema_docstring_details() -> None:
    fn = callable_to_schema(f_multiline)["function"]
    assert fn["description"] == "Search the index\nfor documents that match.\n\nMore text after a blank line."
    props = fn["parameters"]["properties"]
    assert props["query"]["description"] == "The query, which may be long and span lines: with colons."
    assert props["limit"]["description"] == "Maximum number of hits."
    assert fn["parameters"]["required"] == ["query"]
    props = callable_to_schema(f_choices)["function"]["parameters"]["properties"]
    assert props["drink"] == {"type": "string", "enum": ["tea", "coffee"], "description": "The drink to make"}
    assert props["size"]["enum"] == [250, 500]
    assert props["temp"]["enum"] == ["hot", "cold"] and props["temp"]["description"] == "Temperature"
    assert list(
        callable_to_schema(f_literal_and_choices)["function"]["parameters"]["properties"]["mode"]
    ) == [
        "type",
        "enum",
        "description",
    ]


def test_schema_returns_and_receivers() -> None:
    fn = callable_to_schema(f_returns)["function"]
    assert fn["return"] == {
        "type": "array",
        "items": {"type": "string"},
        "description": "The names,\n    one per line.",
    }
    assert callable_to_schema(f_return_hint_only)["function"]["return"] == {"type": "integer"}
    assert callable_to_schema(f_returns_none)["function"]["return"] == {
        "type": "null",
        "description": "Nothing at all.",
    }
    assert "return" not in callable_to_schema(f_custom_return)["function"]
    assert "return" not in callable_to_schema(f_scalars)["function"]
    assert callable_to_schema(f_no_args)["function"]["parameters"] == {"type": "object", "properties": {}}
    assert callable_to_schema(f_cls_receiver)["function"]["parameters"]["required"] == ["y"]
    assert callable_to_schema(f_annotated_self)["function"]["parameters"]["required"] == ["self", "y"]
    for method in (Toolbox.method, Toolbox().method, Toolbox.cmethod):
        params = callable_to_schema(method)["function"]["parameters"]
        assert "self" not in params["properties"] and "cls" not in params["properties"]
        assert len(params["required"]) == 1


def test_media_types_are_recognised_by_name() -> None:
    image_cls = type("Image", (), {"__module__": "PIL.Image"})
    tensor_cls = type("Tensor", (), {"__module__": "torch"})
    other_cls = type("Image", (), {"__module__": "mylib"})

    def fn(picture: image_cls, sound: tensor_cls) -> None:  # type: ignore[valid-type]
        """Media.

        Args:
            picture: A picture.
            sound: A sound.
        """

    props = callable_to_schema(fn)["function"]["parameters"]["properties"]
    assert props["picture"]["type"] == "image" and props["sound"]["type"] == "audio"

    def other(picture: other_cls) -> None:  # type: ignore[valid-type]
        """Not PIL.

        Args:
            picture: A picture.
        """

    with pytest.raises(ToolSpecError, match="no JSON-schema equivalent"):
        callable_to_schema(other)


# --- errors ----------------------------------------------------------------------------------------------


def e_no_doc(x: int):
    pass


def e_undocumented(x: int, y: int):
    """Only x.

    Args:
        x: The input.
    """


def e_missing_hint(x: int, y):
    """Missing hint.

    Args:
        x: The input.
        y: The other.
    """


def e_custom_class(p: Point):
    """Custom class.

    Args:
        p: A point.
    """


def e_forward_ref(p: "DoesNotExist"):  # noqa: F821
    """Unresolvable.

    Args:
        p: A thing.
    """


def e_bad_choices(x: str):
    """Bad choices.

    Args:
        x: The input (choices: [tea, coffee])
    """


def e_empty_choices(x: str):
    """Empty choices.

    Args:
        x: The input (choices:)
    """


def e_empty_enum(x: Empty):
    """Empty enum.

    Args:
        x: Nothing.
    """


def e_non_scalar_enum(x: NotScalar):
    """Enum of tuples.

    Args:
        x: A tuple.
    """


def e_non_scalar_literal(x: Literal[Colour.RED]):
    """Literal of an enum member.

    Args:
        x: Red.
    """


def e_one_tuple(x: tuple[int]):
    """One-element tuple.

    Args:
        x: One.
    """


def e_var_tuple(x: tuple[int, ...]):
    """Variable tuple.

    Args:
        x: Many.
    """


def e_set(x: set[int]):
    """A set.

    Args:
        x: A set.
    """


def e_unannotated_var_args(*args):
    """Var args.

    Args:
        args: Anything.
    """


def e_args_on_first_line(x: int):
    """Args:
    x: The input.
    """


def e_args_header_with_trailing_text(x: int):
    """Header with text after the colon.

    Args: x
        x: The input.
    """


def e_union_with_bad_member(x: Union[int, Point]):  # noqa: UP007
    """Union with a custom class.

    Args:
        x: The input.
    """


REJECTED = [
    (e_no_doc, "no docstring"),
    (e_undocumented, "does not describe argument 'y'"),
    (e_missing_hint, "argument 'y' has no type hint"),
    (e_custom_class, "argument 'p': Point has no JSON-schema equivalent"),
    (e_forward_ref, "type hints cannot be resolved (NameError"),
    (e_bad_choices, "(choices: ...) of argument 'x' is not valid JSON"),
    (e_empty_choices, "(choices: ...) of argument 'x' is not valid JSON"),
    (e_empty_enum, "Enum Empty has no members"),
    (e_non_scalar_enum, "values that are not JSON scalars"),
    (e_non_scalar_literal, "lists values that are not str, int, float, bool or None"),
    (e_one_tuple, "one-element tuple"),
    (e_var_tuple, "variable length"),
    (e_set, "set[int] has no JSON-schema equivalent"),
    (e_unannotated_var_args, "'*args' cannot be described"),
    (e_args_on_first_line, "does not describe argument 'x'"),
    (e_args_header_with_trailing_text, "does not describe argument 'x'"),
    (e_union_with_bad_member, "argument 'x': Point has no JSON-schema equivalent"),
]


@pytest.mark.parametrize(("fn", "message"), REJECTED, ids=[fn.__name__ for fn, _ in REJECTED])
def test_schema_errors(fn: Any, message: str) -> None:
    with pytest.raises(ToolSpecError) as info:
        callable_to_schema(fn)
    assert message in str(info.value)
    assert str(info.value).startswith(f"tool {fn.__name__!r}: ")
    assert info.value.name == fn.__name__ and info.value.index is None
    assert isinstance(info.value, errors.ResponseTemplateError) and isinstance(info.value, ValueError)


@needs_reference
@pytest.mark.parametrize(("fn", "message"), REJECTED, ids=[fn.__name__ for fn, _ in REJECTED])
def test_schema_errors_where_reference_raises(fn: Any, message: str) -> None:
    assert isinstance(ref_schema(fn), type), "the reference accepted a function we reject"


# --- intended differences ---------------------------------------------------------------------------------


def d_typed_var_args(a: int, *rest: int):
    """Annotated var args.

    Args:
        a: A.
        rest: More.
    """


def d_typed_var_kwargs(a: int, **options: str):
    """Annotated var kwargs.

    Args:
        a: A.
        options: More.
    """


def d_string_choices(x: str):
    """Choices that are a JSON string.

    Args:
        x: The input (choices: "tea")
    """


def d_object_choices(x: str):
    """Choices that are a JSON object.

    Args:
        x: The input (choices: {"tea": 1})
    """


def d_number_choices(x: str):
    """Choices that are a number.

    Args:
        x: The input (choices: 5)
    """


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (d_typed_var_args, "'*rest' cannot be described"),
        (d_typed_var_kwargs, "'**options' cannot be described"),
    ],
)
def test_annotated_var_args_are_rejected(fn: Any, message: str) -> None:
    with pytest.raises(ToolSpecError, match=message.replace("*", r"\*")):
        callable_to_schema(fn)
    if _RefParser is not None:  # the reference accepts them, as required scalar properties
        assert isinstance(ref_schema(fn), dict)


@pytest.mark.parametrize("fn", [d_string_choices, d_object_choices, d_number_choices])
def test_non_list_choices_are_rejected(fn: Any) -> None:
    with pytest.raises(ToolSpecError, match="must be a JSON list"):
        callable_to_schema(fn)


@needs_reference
def test_reference_iterates_non_list_choices() -> None:
    props = _ref_get_json_schema(d_string_choices)["function"]["parameters"]["properties"]
    assert props["x"]["enum"] == ["t", "e", "a"]


class CallableObject:
    """A callable object.

    Args:
        x: The input.
    """

    def __call__(self, x: int) -> int:
        return x


@pytest.mark.parametrize(
    "fn",
    [Toolbox, CallableObject(), functools.partial(f_scalars, "a"), len, "not callable"],
    ids=["class", "callable-object", "partial", "builtin", "string"],
)
def test_non_function_callables_are_rejected(fn: Any) -> None:
    with pytest.raises(ToolSpecError, match="only functions and methods"):
        callable_to_schema(fn)


def test_unhashable_return_annotation_is_left_out() -> None:
    def fn(x: int) -> [int]:  # type: ignore[valid-type]
        """Odd return.

        Args:
            x: The input.
        """

    assert "return" not in callable_to_schema(fn)["function"]
    if _RefParser is not None:
        assert ref_schema(fn) is TypeError


# --- generated differential tests ---------------------------------------------------------------------------

DOC_PIECES = st.sampled_from(
    [
        "Args:",
        "Args:\n",
        "Returns:\n",
        "Returns:",
        "Raises:",
        "Raises:\n",
        "\n",
        "\n\n",
        " ",
        "    ",
        "\t",
        "\r",
        "\u3000",
        "x:",
        "y:",
        "x: ",
        "y: ",
        "    x: ",
        "        y: ",
        "\tx:",
        "z:",
        "x (int):",
        "y(str, optional):",
        " (",
        "x (",
        "word",
        "two words",
        "é_1",
        ":",
        "(",
        ")",
        '(choices: ["a", " b "])',
        "(Choices: [1, 2])",
        "(choices: x)",
        ".",
    ]
)


INDENTS = st.sampled_from(["", " ", "  ", "    ", "      ", "        ", "\t", "\t ", "  \t", "\u3000"])
HEADS = st.sampled_from(
    [
        "x:",
        "y:",
        "z:",
        "x: ",
        "y:  ",
        "x:\n",
        "x (int):",
        "y(str):",
        "x\t( a, b ):",
        "x (a(b)):",
        "x (int) :",
        "y ():",
        "x (int",
        "x (in\nt):",
        "",
        "",
        "_9:",
        "é:",
        "word word",
    ]
)
WORDS = st.lists(
    st.sampled_from(
        [
            "text",
            "more",
            " ",
            "  ",
            "\t",
            "\r",
            ":",
            "y:",
            "x:",
            "Returns:",
            "Raises:",
            "Args:",
            "(",
            ")",
            '(choices: ["a", " b "])',
            "(CHOICES: [1, 2]) ",
            "(choices: x)",
            "(choices: [1]) )",
            ".",
        ]
    ),
    max_size=4,
).map("".join)
ARG_LINES = st.lists(st.tuples(INDENTS, HEADS, WORDS).map("".join), max_size=6)
STRUCTURED_DOCS = st.tuples(
    WORDS,
    st.sampled_from(["\n\n", "\n", "\n  \n ", " ", "\n\t"]),
    st.sampled_from(["Args:\n", "Args:\n", "Args: \n", "  Args:\n"]),
    ARG_LINES.map("\n".join),
    st.sampled_from(["", "\n\nReturns:\n    ", "\nReturns:\n", "\nRaises:\n  E: no\n", "\n\n  \n"]),
    WORDS,
    st.sampled_from(["", "\nRaises:\n    ValueError: bad", "\n    Args:\n    x: late"]),
).map("".join)
ANY_DOCS = st.one_of(STRUCTURED_DOCS, st.lists(DOC_PIECES, max_size=25).map("".join))


def _documented_fn(doc: str) -> Any:
    def fn(x: int, y: str = "") -> list[int]:
        pass

    fn.__doc__ = doc
    return fn


@needs_reference
@settings(max_examples=examples(600), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ANY_DOCS)
def test_docstring_reading_matches_reference(doc: str) -> None:
    fn = _documented_fn(doc)
    reference = ref_schema(fn)
    if isinstance(reference, dict):
        ours = callable_to_schema(fn)
        assert dump(ours) == dump(reference)
    else:
        with pytest.raises(ToolSpecError):
            callable_to_schema(fn)


@needs_reference
@settings(max_examples=examples(1000), deadline=None)
@given(ANY_DOCS)
def test_raw_docstring_reader_matches_reference(doc: str) -> None:
    # Through the public API, inspect.getdoc has already expanded tabs and removed the common indentation;
    # this checks the reader on raw text too, against the reference's (public) docstring reader.
    from transformers.utils.chat_template_utils import parse_google_format_docstring

    assert tools._parse_docstring(doc) == parse_google_format_docstring(doc)


def _hints() -> st.SearchStrategy[Any]:
    leaves = st.sampled_from(
        [int, str, float, bool, type(None), Any, list, dict, tuple, Colour, Level, Mixed, Empty, Point, set]
    )
    literal = st.lists(
        st.sampled_from([1, "a", None, True, 2.5, "b"]), min_size=1, max_size=3, unique=True
    ).map(lambda values: Literal[tuple(values)])

    def extend(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return st.one_of(
            inner.map(lambda t: list[t]),
            inner.map(lambda t: dict[str, t]),
            inner.map(lambda t: Optional[t]),  # noqa: UP045
            st.lists(inner, min_size=1, max_size=3).map(lambda ts: tuple[tuple(ts)]),
            st.lists(inner, min_size=2, max_size=3).map(lambda ts: Union[tuple(ts)]),  # noqa: UP007
            inner.map(lambda t: typing.Set[t]),  # noqa: UP006
        )

    return st.recursive(st.one_of(leaves, literal), extend, max_leaves=6)


@needs_reference
@settings(max_examples=examples(400), deadline=None)
@given(_hints(), _hints())
def test_type_hints_match_reference(param_hint: Any, return_hint: Any) -> None:
    def fn(x):  # annotations set below
        """Generated.

        Args:
            x: The input.

        Returns:
            Something.
        """

    fn.__annotations__ = {"x": param_hint, "return": return_hint}
    reference = ref_schema(fn)
    if isinstance(reference, dict):
        assert dump(callable_to_schema(fn)) == dump(reference)
    else:
        with pytest.raises(ToolSpecError):
            callable_to_schema(fn)


# =========================================================================================================
# tool_parameters

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
        },
    },
}
BARE = {"name": "ping", "parameters": {"type": "object", "properties": {"count": {"type": "integer"}}}}
FLAT = {"type": "function", "name": "flat", "parameters": {"properties": {"on": {"type": "boolean"}}}}
NO_PARAMS = {"type": "function", "function": {"name": "now"}}
NULL_PARAMS = {"name": "later", "parameters": None}
NO_PROPERTIES = {"name": "noop", "parameters": {"type": "object"}}


def test_tool_parameters_accepts_every_form() -> None:
    params = tool_parameters([WEATHER, BARE, FLAT, NO_PARAMS, NULL_PARAMS, NO_PROPERTIES, f_scalars])
    assert params == {
        "get_weather": WEATHER["function"]["parameters"]["properties"],
        "ping": {"count": {"type": "integer"}},
        "flat": {"on": {"type": "boolean"}},
        "now": {},
        "later": {},
        "noop": {},
        "f_scalars": callable_to_schema(f_scalars)["function"]["parameters"]["properties"],
    }
    assert params["get_weather"] is WEATHER["function"]["parameters"]["properties"]  # not copied


def test_tool_parameters_of_nothing() -> None:
    assert tool_parameters(None) == {}
    assert tool_parameters([]) == {}
    assert tool_parameters(()) == {}
    assert tool_parameters(iter([BARE])) == {"ping": {"count": {"type": "integer"}}}


def test_tool_parameters_accepts_methods_and_repeated_identical_tools() -> None:
    params = tool_parameters([Toolbox().method, Toolbox.cmethod, BARE, copy.deepcopy(BARE)])
    assert params["method"] == {"x": {"type": "integer", "description": "The input."}}
    assert params["cmethod"] == {"y": {"type": "string", "description": "The input."}}
    assert params["ping"] == BARE["parameters"]["properties"]


@needs_reference
def test_tool_parameters_matches_reference_on_well_formed_tools() -> None:
    tool_list = [
        WEATHER,
        BARE,
        FLAT,
        NO_PARAMS,
        NULL_PARAMS,
        NO_PROPERTIES,
        f_scalars,
        f_enums,
        Toolbox().method,
    ]
    assert tool_parameters(tool_list) == ref_tool_params(tool_list)


def _tool_error(tool_list: Any) -> ToolSpecError:
    with pytest.raises(ToolSpecError) as info:
        tool_parameters(tool_list)
    return info.value


@pytest.mark.parametrize("item", [5, "get_weather", None, ["name"], 3.5])
def test_tool_parameters_rejects_items_that_are_not_dicts_or_functions(item: Any) -> None:
    error = _tool_error([BARE, item])
    assert str(error).startswith("tool #1: must be a JSON-schema dict or a function")
    assert type(item).__name__ in str(error)
    assert error.index == 1 and error.name is None


@pytest.mark.parametrize(
    "callable_item",
    [Toolbox, CallableObject(), functools.partial(f_scalars, "a"), len],
    ids=["class", "callable-object", "partial", "builtin"],  # stable ids: parallel workers must agree
)
def test_tool_parameters_rejects_non_function_callables(callable_item: Any) -> None:
    error = _tool_error([callable_item])
    assert str(error).startswith("tool #0: only functions and methods are converted")


@pytest.mark.parametrize(
    ("tool", "message"),
    [
        ({"type": "function", "function": {"description": "nameless"}}, "has no name"),
        ({"parameters": {}}, "has no name"),
        ({"name": 5}, "'name' must be a non-empty string, got 5"),
        ({"name": ""}, "'name' must be a non-empty string, got ''"),
        ({"type": "function", "function": None}, "'function' must be a dict, got NoneType"),
        ({"type": "function", "function": "get_weather"}, "'function' must be a dict, got str"),
        ({"type": "code_interpreter"}, "has no name"),
    ],
)
def test_tool_parameters_rejects_nameless_dicts(tool: dict[str, Any], message: str) -> None:
    error = _tool_error([BARE, BARE, tool])
    assert str(error).startswith("tool #2: ")
    assert message in str(error)


@pytest.mark.parametrize(
    ("tool", "message"),
    [
        (
            {"name": "t", "parameters": "x: int"},
            "'parameters' must be a JSON-schema object (a dict), got str",
        ),
        (
            {"name": "t", "parameters": {"properties": ["x"]}},
            "at #/properties: 'properties' must be a dict of schemas, got a list",
        ),
        (
            {"name": "t", "parameters": {"properties": {"x": "integer"}}},
            "at #/properties/x: a schema must be a dict or a boolean, got 'integer'",
        ),
    ],
)
def test_tool_parameters_rejects_malformed_parameters(tool: dict[str, Any], message: str) -> None:
    error = _tool_error([tool])
    assert str(error).startswith("tool #0 't': ")
    assert message in str(error)
    assert error.index == 0 and error.name == "t"


def test_tool_parameters_accepts_boolean_parameter_schemas() -> None:
    assert tool_parameters([{"name": "t", "parameters": {"properties": {"x": True}}}]) == {"t": {"x": True}}


def test_tool_parameters_rejects_different_tools_with_one_name() -> None:
    other = {"name": "ping", "parameters": {"properties": {"count": {"type": "string"}}}}
    error = _tool_error([WEATHER, BARE, other])
    assert str(error).startswith("tool #2 'ping': tool #1 has the same name but different parameters")


@pytest.mark.parametrize("tool_list", [BARE, "tools", f_scalars, 42], ids=["dict", "str", "function", "int"])
def test_tool_parameters_rejects_a_single_tool_instead_of_a_list(tool_list: Any) -> None:
    error = _tool_error(tool_list)
    assert str(error).startswith("tools: expected a list of tools, got a single")


def test_tool_parameters_reports_function_errors_with_index_and_name() -> None:
    error = _tool_error([BARE, e_undocumented])
    assert str(error).startswith("tool #1 'e_undocumented': the docstring does not describe argument 'y'")
    assert error.index == 1 and error.name == "e_undocumented"


# =========================================================================================================
# type_tool_calls

SCHEMAS = {
    "int": {"type": "integer"},
    "num": {"type": "number"},
    "flag": {"type": "boolean"},
    "nothing": {"type": "null"},
    "obj": {"type": "object"},
    "arr": {"type": "array"},
    "text": {"type": "string"},
    "int_or_null": {"type": ["integer", "null"]},
    "any_of": {"anyOf": [{"type": "boolean"}, {"type": "integer"}]},
    "one_of": {"oneOf": [{"type": "array"}, {"type": "object"}]},
    "nullable_int": {"type": "integer", "nullable": True},
    "text_or_int": {"type": ["string", "integer"]},
    "untyped": {"description": "no type"},
    "enum_only": {"enum": [1, 2]},
    "boolean_schema": True,
}
PARAMS = {"t": SCHEMAS, "empty": {}}


@pytest.mark.parametrize(
    ("param", "raw", "expected"),
    [
        ("int", "3", 3),
        ("int", " -42 ", -42),
        ("int", "3.0", 3),
        ("int", "1e3", 1000),
        ("int", "3.5", "3.5"),
        ("int", "three", "three"),
        ("int", "nan", "nan"),
        ("int", "inf", "inf"),
        ("int", "", ""),
        ("num", "3", 3),
        ("num", "3.5", 3.5),
        ("num", "3.0", 3.0),
        ("num", "-0.25", -0.25),
        ("num", "1e3", 1000),
        ("num", "1.5e3", 1500.0),
        ("num", "NaN", "NaN"),
        ("num", "inf", "inf"),
        ("num", "-Infinity", "-Infinity"),
        ("num", "1e400", "1e400"),
        ("num", "1.2.3", "1.2.3"),
        ("flag", "true", True),
        ("flag", "FALSE", False),
        ("flag", " True ", True),
        ("flag", "1", True),
        ("flag", "0", False),
        ("flag", "yes", "yes"),
        ("nothing", "null", None),
        ("nothing", " None ", None),
        ("nothing", "nil", "nil"),
        ("obj", '{"a": [1, 2]}', {"a": [1, 2]}),
        ("obj", "[1]", "[1]"),
        ("obj", "{bad", "{bad"),
        ("arr", "[1, 2]", [1, 2]),
        ("arr", '{"a": 1}', '{"a": 1}'),
        ("text", "3", "3"),
        ("text", "true", "true"),
        ("int_or_null", "7", 7),
        ("int_or_null", "null", None),
        ("int_or_null", "x", "x"),
        ("any_of", "1", True),
        ("any_of", "2", 2),
        ("one_of", "[]", []),
        ("one_of", "{}", {}),
        ("nullable_int", "None", None),
        ("nullable_int", "5", 5),
        ("text_or_int", "5", 5),  # "string" never ends the search, as in the reference
        ("untyped", "5", "5"),
        ("enum_only", "1", "1"),
        ("boolean_schema", "1", "1"),
    ],
)
def test_casts(param: str, raw: str, expected: Any) -> None:
    typed = args_of(type_tool_calls(call("t", **{param: raw}), PARAMS))[param]
    assert dump(typed) == dump(expected)
    if _RefParser is not None:
        kinds = _ref_schema_types(SCHEMAS[param])
        assert dump(_ref_coerce(raw, kinds) if kinds else raw) == dump(expected)


def test_unknown_tools_parameters_and_non_strings_are_untouched() -> None:
    value = call("t", int=5, flag=[1], mystery="3", obj={"already": "parsed"}, num=None)
    assert type_tool_calls(value, PARAMS) is value
    for untouched in (call("nope", int="3"), call("empty", int="3"), call("t", text="3")):
        assert type_tool_calls(untouched, PARAMS) is untouched


@pytest.mark.parametrize(
    "value",
    [
        None,
        "text",
        42,
        {"function": "t"},
        {"function": {"name": "t", "arguments": '{"int": "3"}'}},  # arguments not yet decoded
        {"function": {"name": 5, "arguments": {"int": "3"}}},
        {"function": {"arguments": {"int": "3"}}},
        {"outer": call("t", int="3")},  # dicts are not descended
        ("tuple", call("t", int="3")),  # neither are tuples
    ],
    ids=repr,
)
def test_values_that_are_not_tool_calls_come_back_as_they_are(value: Any) -> None:
    assert type_tool_calls(value, PARAMS) is value


def test_empty_params_is_a_no_op() -> None:
    value = call("t", int="3")
    assert type_tool_calls(value, {}) is value


def test_other_keys_of_the_call_are_kept() -> None:
    value = {
        "type": "function",
        "id": "call_1",
        "function": {"name": "t", "arguments": {"int": "3"}, "extra": 1},
    }
    assert type_tool_calls(value, PARAMS) == {
        "type": "function",
        "id": "call_1",
        "function": {"name": "t", "arguments": {"int": 3}, "extra": 1},
    }


def test_lists_of_calls_are_descended() -> None:
    first, second, other = call("t", int="1"), call("t", flag="true"), call("other", int="1")
    typed = type_tool_calls([first, [second, other], "text"], PARAMS)
    assert typed == [call("t", int=1), [call("t", flag=True), other], "text"]
    assert typed[1][1] is other
    untouched = [other, [other]]
    assert type_tool_calls(untouched, PARAMS) is untouched


def test_merged_duplicate_values_are_cast_item_by_item() -> None:
    value = call("t", int=["1", "x", 2, "3.0"], flag=["true", "0"], arr=["[1]", "[2]"], text=["1", "2"])
    typed = args_of(type_tool_calls(value, PARAMS))
    assert dump(typed["int"]) == dump([1, "x", 2, 3])
    assert typed["flag"] == [True, False]
    assert typed["arr"] == ["[1]", "[2]"]  # the schema allows an array: the list is the value itself
    assert typed["text"] is args_of(value)["text"]


def test_input_is_never_mutated() -> None:
    value = [call("t", int="1", arr="[1]", flag=["true"]), call("t", text="x")]
    snapshot = copy.deepcopy(value)
    inner_args = value[0]["function"]["arguments"]
    typed = type_tool_calls(value, PARAMS)
    assert value == snapshot
    assert typed is not value and typed[0] is not value[0]
    assert typed[0]["function"]["arguments"] is not inner_args
    assert typed[0]["function"]["arguments"]["flag"] is not inner_args["flag"]
    assert typed[1] is value[1]  # untouched calls are shared, not copied


def test_shared_call_is_not_changed_through_another_reference() -> None:
    shared = call("t", int="1")
    output = {"tool_calls": [shared]}
    type_tool_calls(shared, PARAMS)
    assert output["tool_calls"][0]["function"]["arguments"]["int"] == "1"


def test_integer_cast_is_exact_beyond_float_precision() -> None:
    typed = args_of(type_tool_calls(call("t", int="1e23"), PARAMS))
    assert typed["int"] == 10**23
    typed = args_of(type_tool_calls(call("t", int="12345678901234567891.0"), PARAMS))
    assert typed["int"] == 12345678901234567891
    typed = args_of(type_tool_calls(call("t", int="3.0000000000000000001"), PARAMS))
    assert typed["int"] == "3.0000000000000000001"
    if _RefParser is not None:  # the reference rounds through float
        assert _ref_coerce("1e23", ("integer",)) == int(1e23) != 10**23
        assert _ref_coerce("3.0000000000000000001", ("integer",)) == 3


def test_number_cast_keeps_big_integers_exact() -> None:
    typed = args_of(
        type_tool_calls(call("t", num="12345678901234567891", int="12345678901234567891"), PARAMS)
    )
    assert typed["num"] == 12345678901234567891 and typed["int"] == 12345678901234567891
    assert args_of(type_tool_calls(call("t", num="1e23"), PARAMS))["num"] == 10**23
    assert dump(args_of(type_tool_calls(call("t", num="1e-400"), PARAMS))["num"]) == dump(0.0)
    if _RefParser is not None:
        assert _ref_coerce("12345678901234567891", ("number",)) != 12345678901234567891


def test_deeply_nested_json_argument_keeps_the_string() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    assert args_of(type_tool_calls(call("t", arr=deep), PARAMS))["arr"] is deep
    if _RefParser is not None:
        with pytest.raises(RecursionError):
            _ref_coerce(deep, ("array",))


def test_deeply_nested_lists_do_not_crash() -> None:
    value: Any = call("t", int="1")
    for _ in range(100_000):
        value = [value]
    assert type_tool_calls(value, PARAMS) is value


def test_malformed_union_in_schema_is_ignored() -> None:
    params = {"t": {"x": {"anyOf": 5, "type": "integer"}, "y": {"oneOf": {"type": "integer"}}}}
    typed = args_of(type_tool_calls(call("t", x="1", y="2"), params))
    assert typed == {"x": 1, "y": "2"}
    if _RefParser is not None:
        with pytest.raises(TypeError):
            _ref_schema_types({"anyOf": 5})


def test_typing_with_parameters_from_a_function() -> None:
    params = tool_parameters([f_scalars, f_optional, f_unions, f_enums])
    typed = type_tool_calls(
        [
            call("f_scalars", a="1", b="2", c="2.5", d="false", e="null"),
            call("f_optional", a="None", b="4", c='["x"]'),
            call("f_unions", a="5", c='["a"]', e="1"),
            call("f_enums", level="2", colour="red"),
        ],
        params,
    )
    assert dump([args_of(item) for item in typed]) == dump(
        [
            {"a": "1", "b": 2, "c": 2.5, "d": False, "e": None},
            {"a": None, "b": 4, "c": ["x"]},
            {"a": 5, "c": ["a"], "e": True},
            {"level": 2, "colour": "red"},
        ]
    )


# --- generated differential tests ---------------------------------------------------------------------------

TYPE_NAMES = st.sampled_from(["integer", "number", "boolean", "null", "object", "array", "string", "mystery"])


def _schemas() -> st.SearchStrategy[Any]:
    simple = st.one_of(
        TYPE_NAMES.map(lambda t: {"type": t}),
        st.lists(TYPE_NAMES, min_size=1, max_size=3).map(lambda ts: {"type": ts}),
        st.just({}),
        st.just({"description": "untyped"}),
    )
    schema = st.recursive(
        simple,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3).map(lambda xs: {"anyOf": xs}),
            st.lists(inner, max_size=3).map(lambda xs: {"oneOf": xs}),
            st.tuples(TYPE_NAMES, st.lists(inner, max_size=2)).map(lambda p: {"type": p[0], "anyOf": p[1]}),
        ),
        max_leaves=5,
    )
    return st.tuples(schema, st.booleans()).map(lambda p: {**p[0], "nullable": True} if p[1] else p[0])


RAW_STRINGS = st.one_of(
    st.sampled_from(
        [
            "0",
            "1",
            "-1",
            "3.0",
            "3.5",
            "1e3",
            "1E-2",
            "-0",
            "-0.0",
            "+7",
            " 8 ",
            "1_000",
            "٣",
            "３",
            "nan",
            "NaN",
            "inf",
            "-inf",
            "Infinity",
            "1e400",
            "true",
            "False",
            "TRUE",
            " null ",
            "None",
            "none",
            "[]",
            '[1, "a"]',
            "{}",
            '{"k": [1]}',
            "[NaN]",
            '"str"',
            "",
            " ",
            "yes",
            "0x10",
            "1.",
            ".5",
            "5.",
            "12345678",
            "9007199254740993",
            "1e15",
            "1e16",
        ]
    ),
    st.integers().map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(alphabet='0123456789.eE+-_ nNaifItTrRuUlLsSoO[]{}":,', max_size=10),
    st.text(max_size=8),
)


def _loses_precision_in_reference(raw: str) -> bool:
    """True for the documented difference: the text rounds to a whole float that is not its exact value."""
    try:
        approx = float(raw)
        exact = Decimal(raw)
    except (ValueError, ArithmeticError):
        return False
    return math.isfinite(approx) and approx.is_integer() and Decimal(approx) != exact


@needs_reference
@settings(max_examples=examples(1500), deadline=None)
@given(_schemas(), RAW_STRINGS)
def test_casts_match_reference(schema: dict[str, Any], raw: str) -> None:
    assume(not _loses_precision_in_reference(raw))
    params = {"t": {"p": schema}}
    ours = type_tool_calls(call("t", p=raw, items=[raw, 1]), {"t": {"p": schema, "items": schema}})
    reference = ref_type_tool_calls(call("t", p=raw, items=[raw, 1]), {"t": {"p": schema, "items": schema}})
    assert dump(ours) == dump(reference)
    assert dump(type_tool_calls([call("t", p=raw)], params)) == dump(
        ref_type_tool_calls([call("t", p=raw)], params)
    )


@needs_reference
@settings(max_examples=examples(300), deadline=None)
@given(
    st.recursive(
        st.one_of(
            st.builds(
                lambda raw, name: call(name, p=raw),
                RAW_STRINGS.filter(lambda raw: not _loses_precision_in_reference(raw)),
                st.sampled_from(["t", "u"]),
            ),
            st.none(),
            st.text(max_size=3),
        ),
        lambda inner: st.lists(inner, max_size=3),
        max_leaves=6,
    )
)
def test_walk_matches_reference_and_does_not_mutate(value: Any) -> None:
    params = {"t": {"p": {"type": ["integer", "boolean", "null"]}}}
    snapshot = copy.deepcopy(value)
    ours = type_tool_calls(value, params)
    assert dump(value) == dump(snapshot)
    assert dump(ours) == dump(ref_type_tool_calls(value, params))


# =========================================================================================================


def test_module_example_runs() -> None:
    result = doctest.testmod(tools, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_error_class() -> None:
    assert issubclass(ToolSpecError, errors.ResponseTemplateError)
    error = ToolSpecError("bad", index=3, name="x")
    assert str(error) == "tool #3 'x': bad" and error.detail == "bad"
    assert str(ToolSpecError("bad", index=0)) == "tool #0: bad"
    assert str(ToolSpecError("bad", name="f")) == "tool 'f': bad"
    assert str(ToolSpecError("bad")) == "tools: bad"


# =========================================================================================================
# Every tool shape the wire formats carry (issue 28, item 5), and one schema check for parsing and grammars
# (issue 28, item 10)

import glob  # noqa: E402
from pathlib import Path  # noqa: E402

import response_templates as rt  # noqa: E402
from response_templates import grammar  # noqa: E402
from response_templates.wire import AnthropicMessagesAdapter  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"
QWEN3 = rt.templates.get("qwen3")
QWEN_CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": "3"}}\n</tool_call>'
WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    "required": ["city"],
}


def get_weather(city: str, days: int = 1) -> str:
    """Weather in a city.

    Args:
        city: The city.
        days: How many days.
    """
    return city


def tool_shapes(schema: dict[str, Any]) -> dict[str, Any]:
    """The same tool in each shape a request may carry it."""
    return {
        "chat": {"type": "function", "function": {"name": "get_weather", "parameters": schema}},
        "responses": {"type": "function", "name": "get_weather", "parameters": schema},
        "bare": {"name": "get_weather", "parameters": schema},
        "anthropic": {"name": "get_weather", "description": "Weather in a city.", "input_schema": schema},
        "anthropic custom": {"type": "custom", "name": "get_weather", "input_schema": schema},
    }


def _readers(tool: Any) -> dict[str, Any]:
    """Every reader of a request's tools, each a function that reads a list of this one tool."""
    template = QWEN3
    return {
        "parse_response": lambda: rt.parse_response(QWEN_CALL, QWEN3, prefix="", tools=[tool]),
        "ResponseParser": lambda: rt.ResponseParser(template, prefix="", tools=[tool]),
        "grammar, JSON arguments": lambda: grammar.build("qwen3", tools=[tool], tool_choice="required"),
        "grammar, XML arguments": lambda: grammar.build("qwen3-coder", tools=[tool]),
        "Anthropic adapter": lambda: AnthropicMessagesAdapter(template, tools=[tool]),
    }


def _arguments(message: dict[str, Any]) -> Any:
    return message["tool_calls"][0]["function"]["arguments"]


def test_every_tool_shape_types_the_arguments() -> None:
    shapes: dict[str, Any] = {**tool_shapes(WEATHER_SCHEMA), "function": get_weather}
    typed = {
        label: _arguments(rt.parse_response(QWEN_CALL, QWEN3, prefix="", tools=[tool]))
        for label, tool in shapes.items()
    }
    assert typed == {label: {"city": "Paris", "days": 3} for label in shapes}
    # the parser and the tool-list reader agree, shape by shape
    for label, tool in shapes.items():
        assert tool_parameters([tool])["get_weather"]["days"]["type"] == "integer", label
        parser = rt.ResponseParser(rt.templates.get("qwen3"), prefix="", tools=[tool])
        parser.feed(QWEN_CALL)
        assert _arguments(parser.finalize()[0]) == {"city": "Paris", "days": 3}, label


def test_anthropic_adapter_types_the_input_by_input_schema() -> None:
    tool = tool_shapes(WEATHER_SCHEMA)["anthropic"]
    template = rt.templates.get("qwen3")
    for arguments in ("stream", "buffered"):
        parser = rt.ResponseParser(template, prefix="", tools=[tool])
        adapter = AnthropicMessagesAdapter(template, tools=[tool], seed=1, arguments=arguments)  # type: ignore[arg-type]
        events = adapter.feed(parser.initial_events)
        events += adapter.feed(parser.feed("Let me look." + QWEN_CALL))
        events += adapter.finish(parser.finalize()[1])
        blocks = [block for block in adapter.final()["content"] if block["type"] == "tool_use"]
        assert [block["input"] for block in blocks] == [{"city": "Paris", "days": 3}], arguments
        sent = "".join(
            e["delta"]["partial_json"]
            for e in events
            if e["type"] == "content_block_delta" and e["delta"]["type"] == "input_json_delta"
        )
        assert json.loads(sent) == {"city": "Paris", "days": 3}, arguments


@pytest.mark.parametrize(
    "tool",
    [
        {"name": "get_weather", "description": "Weather in a city."},
        {"type": "function", "name": "get_weather", "description": "Weather in a city."},
        {"type": "custom", "name": "get_weather"},
        {"name": "get_weather", "input_schema": None},
    ],
)
def test_a_tool_without_a_schema_key_is_refused(tool: dict[str, Any]) -> None:
    for read in _readers(tool).values():
        with pytest.raises(ToolSpecError) as info:
            read()
        assert info.value.index == 0 and info.value.name == "get_weather"
        assert "input_schema" in str(info.value), str(info.value)
        if "input_schema" not in tool:  # names both keys it looked for
            assert "'parameters'" in str(info.value)


@pytest.mark.parametrize(
    ("tool", "message"),
    [
        (
            {"type": "function", "function": {"name": "get_weather", "input_schema": WEATHER_SCHEMA}},
            "keeps its schema in 'function.parameters'",
        ),
        (
            {"name": "get_weather", "parameters": WEATHER_SCHEMA, "input_schema": WEATHER_SCHEMA},
            "both 'parameters' and 'input_schema'",
        ),
        ({"type": "web_search_20250305", "name": "get_weather"}, "is not a function tool"),
        ({"name": "get_weather", "input_schema": "object"}, "'input_schema' must be a JSON-schema object"),
    ],
)
def test_a_schema_under_a_key_its_shape_does_not_read_is_refused(tool: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolSpecError, match=re.escape(message)):
        rt.parse_response(QWEN_CALL, QWEN3, prefix="", tools=[tool])


def test_tools_without_arguments_in_the_shapes_that_allow_it() -> None:
    assert tool_parameters(
        [
            {"type": "function", "function": {"name": "a"}},
            {"type": "function", "name": "b", "parameters": None},
            {"name": "c", "input_schema": {"type": "object"}},
            {"name": "d", "input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}}},
        ]
    ) == {"a": {}, "b": {}, "c": {}, "d": {"n": {"type": "integer"}}}


def _nested(depth: int) -> dict[str, Any]:
    """An object schema whose parameter nests ``depth`` objects deep."""
    schema: dict[str, Any] = {"type": "integer"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


def _with(parameter: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"city": {"type": "string"}, "days": parameter}}


#: (schema, where the fault is, what the message says)
INVALID_SCHEMAS = {
    "dangling $ref": (_with({"$ref": "#/$defs/days"}), "#/properties/days/$ref", "does not resolve"),
    "$ref outside": (_with({"$ref": "days.json"}), "#/properties/days/$ref", "points outside"),
    "$ref cycle": (
        {**_with({"$ref": "#/$defs/a"}), "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}},
        "#/",
        "cycle",
    ),
    "type 5": (_with({"type": 5}), "#/properties/days/type", "'type' must be one of"),
    "unknown type": (_with({"type": "int"}), "#/properties/days/type", "'type' must be one of"),
    "not an object": ({"type": "array", "items": {"type": "string"}}, "#/type", 'must allow "object"'),
    "bad pattern": (_with({"type": "string", "pattern": "(["}), "#/properties/days/pattern", "not a valid"),
    "bad patternProperties": (
        {"type": "object", "patternProperties": {"([": {"type": "string"}}},
        "#/patternProperties",
        "not a valid regular expression",
    ),
    "huge pattern": (
        _with({"type": "string", "pattern": "a{1000000000}"}),
        "#/properties/days/pattern",
        "too large",
    ),
    "deep pattern": (
        _with({"type": "string", "pattern": "(" * 5000 + ")" * 5000}),
        "#/properties/days/pattern",
        "nests its groups deeper",
    ),
    "NaN minimum": (_with({"type": "number", "minimum": math.nan}), "#/properties/days/minimum", "finite"),
    "infinite maximum": (
        _with({"type": "number", "maximum": math.inf}),
        "#/properties/days/maximum",
        "finite",
    ),
    "NaN in enum": (_with({"enum": [1, math.nan]}), "#/properties/days/enum/1", "not a JSON number"),
    "negative maxLength": (
        _with({"type": "string", "maxLength": -1}),
        "#/properties/days/maxLength",
        "non-negative",
    ),
    "required not names": ({**_with({"type": "integer"}), "required": [1]}, "#/required", "property names"),
    "subschema not a schema": (_with("integer"), "#/properties/days", "must be a dict or a boolean"),
    "anyOf empty": (_with({"anyOf": []}), "#/properties/days/anyOf", "non-empty list"),
    "lone surrogate key": (
        {"type": "object", "properties": {"da\ud800ys": {"type": "integer"}}},
        "#/properties",
        "lone surrogate",
    ),
    "lone surrogate text": (
        _with({"type": "integer", "description": "x\udc00"}),
        "#/properties/days/description",
        "lone surrogate",
    ),
    "depth 500": (_nested(500), "#/properties/a/properties/a", "the schema nests deeper than"),
    "not JSON": (
        _with({"type": "integer", "default": {1, 2}}),
        "#/properties/days/default",
        "not a JSON value",
    ),
}


def _refusals(schema: dict[str, Any]) -> list[Any]:
    """The errors of every reader of a request's tools, for one tool with ``schema`` (each in the
    Anthropic shape and in the chat shape)."""
    found: list[Any] = []
    for label, tool in tool_shapes(schema).items():
        if label not in ("chat", "anthropic"):
            continue
        for read in _readers(tool).values():
            with pytest.raises(tools.ToolSchemaError) as info:
                read()
            found.append(info.value)
    return found


@pytest.mark.parametrize("case", sorted(INVALID_SCHEMAS))
def test_an_invalid_schema_is_refused_by_parsing_and_grammars_alike(case: str) -> None:
    schema, path, message = INVALID_SCHEMAS[case]
    refusals = _refusals(schema)
    assert len(refusals) == 10
    for error in refusals:
        assert isinstance(error, errors.ResponseTemplateError)
        assert error.index == 0 and error.name == "get_weather"
        assert error.path is not None and error.path.startswith(path), (error.path, path)
        assert message in error.problem, error.problem
        assert "get_weather" in str(error) and message in str(error)
        assert error.key in ("function.parameters", "input_schema")
        str(error).encode("utf-8")  # printable, also for a lone surrogate in the schema
    assert {str(error) for error in refusals[:5]} == {str(refusals[0])}  # one message, whoever reads it
    with pytest.raises(tools.ToolSchemaError) as check:
        tools.check_schema(schema)
    assert check.value.path == refusals[0].path and check.value.problem == refusals[0].problem


def test_depth_500_is_the_typed_error_not_a_recursion_error() -> None:
    schema = _nested(500)
    with pytest.raises(tools.ToolSchemaError) as info:
        grammar.build("qwen3", tools=[{"name": "deep", "parameters": schema}])
    assert len(str(info.value)) < 400  # the pointer is abridged in the message, whole in .path
    assert info.value.path is not None and info.value.path.count("/properties/a") > 40
    deepest = tools.MAX_SCHEMA_DEPTH // 2 - 1  # each level is a schema and a properties dict
    fine = [{"name": "deep", "parameters": _nested(deepest)}]
    assert grammar.build("qwen3", tools=fine, tool_choice="required").lark
    call = (
        '<tool_call>\n{"name": "deep", "arguments": '
        + '{"a": ' * (deepest - 1)
        + '"7"'
        + "}" * deepest
        + "\n</tool_call>"
    )
    value = _arguments(rt.parse_response(call, QWEN3, prefix="", tools=fine))
    for _ in range(deepest - 1):
        value = value["a"]
    assert value == "7"  # nested values are not typed, top-level ones are
    with pytest.raises(tools.ToolSchemaError):
        tools.check_schema(_nested(deepest + 1))


def test_a_lone_surrogate_in_a_tool_name_is_refused() -> None:
    for tool in (
        {"name": "get\ud800", "parameters": WEATHER_SCHEMA},
        {"name": "get\udfff", "input_schema": WEATHER_SCHEMA},
    ):
        for read in _readers(tool).values():
            with pytest.raises(ToolSpecError, match="lone surrogate") as info:
                read()
            str(info.value).encode("utf-8")


#: A recursive schema (a linked list), an enum and a number through references, as Pydantic writes them.
REFS_SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"$ref": "#/$defs/Days", "description": "How many days."},
        "unit": {"anyOf": [{"$ref": "#/$defs/Unit"}, {"type": "null"}]},
        "route": {"$ref": "#/$defs/Node"},
    },
    "required": ["city"],
    "$defs": {
        "Days": {"type": "integer", "minimum": 1},
        "Unit": {"enum": ["C", "F"], "type": "string"},
        "Node": {
            "type": "object",
            "properties": {
                "stop": {"type": "string"},
                "next": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]},
            },
            "required": ["stop", "next"],
        },
    },
}


def test_references_are_resolved_for_typing_and_recursive_ones_are_accepted() -> None:
    tools.check_schema(REFS_SCHEMA)
    params = tool_parameters([{"name": "get_weather", "input_schema": REFS_SCHEMA}])["get_weather"]
    assert params["days"] == {"type": "integer", "minimum": 1, "description": "How many days."}
    assert params["city"] is REFS_SCHEMA["properties"]["city"]  # not copied
    assert REFS_SCHEMA["properties"]["days"] == {"$ref": "#/$defs/Days", "description": "How many days."}
    call = (
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": "3", "unit": "null",'
        ' "route": "{\\"stop\\": \\"a\\", \\"next\\": null}"}}\n</tool_call>'
    )
    for shape in tool_shapes(REFS_SCHEMA).values():
        arguments = _arguments(rt.parse_response(call, QWEN3, prefix="", tools=[shape]))
        # "unit" admits a string through its reference: in a json call the string "null" stays as written
        assert arguments == {"city": "Paris", "days": 3, "unit": "null", "route": {"stop": "a", "next": None}}
    # a schema that refers to itself at the top, and a self-referring option, are read without recursion
    loop = {
        "type": "object",
        "properties": {"child": {"$ref": "#"}, "x": {"anyOf": [{"$ref": "#/properties/x"}]}},
    }
    tools.check_schema(loop)
    assert set(tool_parameters([{"name": "t", "parameters": loop}])["t"]) == {"child", "x"}
    assert grammar.build("qwen3", tools=[{"name": "t", "parameters": loop}]).lark


def _valid_tools() -> list[Any]:
    """The tools the library's tests use: the sample tools, every family sample's tools, the grammar
    coverage tools and the tools of this file."""
    found: list[Any] = list(json.loads((DATA / "sample_tools.json").read_text()).values())
    for path in sorted(glob.glob(str(DATA / "family_samples" / "*.jsonl"))):
        for line in Path(path).read_text().splitlines():
            sample = json.loads(line)
            found.extend((sample.get("context") or {}).get("tool_schemas") or ())
    found.extend(grammar.COVERAGE_TOOLS)
    found.extend([WEATHER, BARE, FLAT, NO_PARAMS, NULL_PARAMS, NO_PROPERTIES, f_scalars, get_weather])
    found.extend(tool_shapes(REFS_SCHEMA).values())
    return found


def test_the_library_test_tools_pass_the_check_unchanged() -> None:
    corpus = _valid_tools()
    assert len(corpus) > 250
    for tool in corpus:
        schemas = tools.tool_schemas([tool])
        ((name, schema),) = schemas.items()
        tools.check_schema(schema)
        if isinstance(tool, dict) and "function" in tool and tool["function"].get("parameters") is not None:
            assert schema is tool["function"]["parameters"], name  # the caller's own object
    # and every distinct tool builds a grammar (JSON and XML arguments)
    distinct = {name: tool for tool in corpus for name in tools.tool_schemas([tool])}
    assert grammar.build("qwen3", tools=list(distinct.values()), tool_choice="required").lark
    assert grammar.build("qwen3-coder", tools=list(distinct.values())).lark


def test_the_schema_error_class() -> None:
    assert issubclass(tools.ToolSchemaError, ToolSpecError) and rt.ToolSchemaError is tools.ToolSchemaError
    error = tools.ToolSchemaError("bad", path="#/properties/a", index=2, name="f", key="input_schema")
    assert str(error) == "tool #2 'f': invalid schema in 'input_schema' at #/properties/a: bad"
    assert (error.path, error.problem, error.key) == ("#/properties/a", "bad", "input_schema")
    import pickle

    copied = pickle.loads(pickle.dumps(error))
    assert (type(copied), str(copied), copied.path, copied.name) == (
        tools.ToolSchemaError,
        str(error),
        error.path,
        "f",
    )


class Thermostat:
    def set_temp(self: "Thermostat", celsius: float) -> None:
        """Set the temperature.

        Args:
            celsius: The target in degrees.
        """

    @classmethod
    def make(cls: "type[Thermostat]", count: int) -> None:
        """Make some.

        Args:
            count: How many.
        """


#: transformers 5.25.0's get_json_schema of Thermostat().set_temp (5.24 raised for the hint of self).
_SET_TEMP_525 = {
    "type": "function",
    "function": {
        "name": "set_temp",
        "description": "Set the temperature.",
        "parameters": {
            "type": "object",
            "properties": {"celsius": {"type": "number", "description": "The target in degrees."}},
            "required": ["celsius"],
        },
        "return": {"type": "null"},
    },
}


def test_a_bound_method_whose_self_is_annotated_is_a_tool() -> None:
    """Its signature leaves the receiver out, so the schema has only the other parameters (5.25)."""
    assert dump(callable_to_schema(Thermostat().set_temp)) == dump(_SET_TEMP_525)
    params = callable_to_schema(Thermostat.make)["function"]["parameters"]
    assert params == {
        "type": "object",
        "properties": {"count": {"type": "integer", "description": "How many."}},
        "required": ["count"],
    }
    assert tool_parameters([Thermostat().set_temp])["set_temp"]["celsius"]["type"] == "number"
    # unbound, `self` is an ordinary argument, and its class has no schema
    with pytest.raises(ToolSpecError, match="argument 'self'"):
        callable_to_schema(Thermostat.set_temp)
    if _RefParser is not None:
        assert dump(_ref_get_json_schema(Thermostat().set_temp)) == dump(_SET_TEMP_525)
        assert dump(_ref_get_json_schema(Thermostat.make)["function"]["parameters"]) == dump(params)
