"""Differential conformance cases: each one is run through the reference implementation
(``transformers.utils.chat_parsing``) and through ``response_templates``.

A case is a response template, a prefix, a model output and optionally ``tools``. Unless the
case names a ``difference`` the two implementations must agree exactly (same message, with the
same value types) or both raise. A case with ``difference="<slug>"`` documents an intended
deviation from the reference (see ``docs/differences.md``): ours must give ``expected`` and the
reference must give something else. ``events_difference="<slug>"`` marks a case whose messages agree
but whose region events differ by a documented difference.

``error`` names the exception class (from ``response_templates``) that ours must raise when the
case is an error case; the reference must raise too (``ValueError`` or ``KeyError``).

The case id starts with its category (``feature/``, ``content/``, ...). Cases under ``sample/``
were taken from real model outputs in public parser test suites (see
``/work/shared/research/model_output_samples.jsonl``) with draft templates for their family.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["CASES", "Case", "Raises"]


@dataclass(frozen=True)
class Raises:
    """Expected outcome of a difference case where ours raises (name of a ``response_templates`` class)."""

    error: str


@dataclass(frozen=True)
class Case:
    id: str
    template: Any
    text: str
    prefix: str | None = ""
    tools: list | None = None
    difference: str | None = None
    expected: Any = None
    error: str | None = None
    notes: str = ""
    # A disagreement with the reference that docs/spec.md does not list yet: the reference test is an
    # expected failure (strict) until the lead either documents it as a difference or changes ours.
    pending: str | None = None
    # The messages agree but the region events do not, for the documented difference with this slug
    # (docs/differences.md): the events test then checks that they really differ.
    events_difference: str | None = None

    @property
    def category(self) -> str:
        return self.id.split("/", 1)[0]

    @property
    def streams(self) -> bool:
        """Whether the streaming checks apply (cases where ours produces a message)."""
        if self.error is not None or self.prefix is None:
            return False
        return not isinstance(self.expected, Raises)


CASES: list[Case] = []


def case(id: str, template: Any, text: str, **kw: Any) -> None:
    if any(c.id == id for c in CASES):
        raise AssertionError(f"duplicate case id {id}")
    CASES.append(Case(id, copy.deepcopy(template), text, **kw))


# ---------------------------------------------------------------------------------------------
# Building blocks
# ---------------------------------------------------------------------------------------------

ROLE = {"role": "assistant"}
CHATML = "<|im_start|>assistant\n"


def tpl(fields: dict, anchor: Any = CHATML, defaults: Any = ROLE, **top: Any) -> dict:
    t: dict = {"fields": fields}
    if isinstance(anchor, dict):
        t.update(anchor)
    else:
        t["start_anchor"] = anchor
    if defaults is not None:
        t["defaults"] = defaults
    t.update(top)
    return t


THINK = {"open": "<think>", "close": "</think>"}
HERMES_CALL = {
    "open": "<tool_call>",
    "close": "</tool_call>",
    "repeats": True,
    "content": "json",
    "transform": {"type": "function", "function": "{content}"},
}
IM_END_CONTENT = {"close": "<|im_end|>"}

# Qwen3 / Hermes style: <think>, <tool_call>{json}</tool_call>, the answer is the implicit field.
QWEN3 = tpl({"reasoning_content": THINK, "tool_calls": HERMES_CALL, "content": IM_END_CONTENT})
# Reasoning + implicit content only.
THINK_ONLY = tpl({"reasoning_content": THINK, "content": {}})


def one(content: str, content_args: dict | None = None, **fieldkw: Any) -> dict:
    """A template with a single field ``v`` between ``<v>`` and ``</v>``."""
    f: dict = {"open": "<v>", "close": "</v>", "content": content, **fieldkw}
    if content_args is not None:
        f["content_args"] = content_args
    return tpl({"v": f})


def fn(name: str, props: dict, required: list | None = None, wrap: bool = True) -> dict:
    inner = {
        "name": name,
        "description": f"The {name} tool.",
        "parameters": {"type": "object", "properties": props, "required": required or []},
    }
    return {"type": "function", "function": inner} if wrap else inner


def call(name: str, arguments: Any, **extra: Any) -> dict:
    return {"type": "function", "function": {"name": name, "arguments": arguments}, **extra}


def msg(**kw: Any) -> dict:
    return {"role": "assistant", **kw}


# ---------------------------------------------------------------------------------------------
# feature/: every template feature
# ---------------------------------------------------------------------------------------------

case("feature/literal-open-close", THINK_ONLY, "<think>plan it</think>The answer.")
case(
    "feature/literal-open-close-multiline",
    THINK_ONLY,
    "<think>\nline 1\nline 2\n</think>\n\nAnswer\nwith lines\n",
)
case(
    "feature/literal-list-open-close",
    tpl(
        {
            "reasoning": {"open": ["<think>", "<thinking>"], "close": ["</think>", "</thinking>"]},
            "content": {},
        }
    ),
    "<thinking>hmm</thinking>ok",
)
case(
    "feature/literal-list-prefers-longest",
    tpl({"call": {"open": ["<tool", "<tool_call>"], "close": "</tool_call>"}, "content": {}}),
    "<tool_call>body</tool_call>",
)
case(
    "feature/literal-list-shorter-alternative",
    tpl({"call": {"open": ["<tool", "<tool_call>"], "close": "</tool_call>"}, "content": {}}),
    "<tool body</tool_call>",
)
case(
    "feature/literal-list-close-any",
    tpl({"final": {"open": "<|message|>", "close": ["<|end|>", "<|return|>"]}}),
    "<|message|>done<|return|>",
)
case(
    "feature/literal-list-duplicate-entries",
    tpl({"final": {"open": ["<a>", "<a>"], "close": ["</a>", "</a>"]}}),
    "<a>x</a>",
)
case(
    "feature/open-pattern-named-groups",
    tpl(
        {
            "calls": {
                "open_pattern": r'<call name="(?P<name>\w+)" id="(?P<id>\d+)">',
                "close": "</call>",
                "repeats": True,
                "content": "json",
                "transform": {"id": "{id}", "function": {"name": "{name}", "arguments": "{content}"}},
            },
            "content": {},
        }
    ),
    'Sure. <call name="lookup" id="7">{"q": "cats"}</call><call name="fetch" id="8">{"url": "x"}</call>',
)
case(
    "feature/open-close-pattern-no-groups",
    tpl(
        {
            "reasoning_content": {"open_pattern": r"<think(?:ing)?>", "close_pattern": r"</think(?:ing)?>"},
            "content": {},
        }
    ),
    "<thinking>a</think>b",
)
case(
    "feature/close-pattern-lookahead",
    tpl(
        {
            "reasoning_content": {"open": "<think>", "close_pattern": r"</think>|(?=<tool_call>)"},
            "tool_calls": HERMES_CALL,
            "content": {},
        }
    ),
    '<think>I will call it<tool_call>{"name": "f", "arguments": {}}</tool_call>',
)
case(
    "feature/close-pattern-end-of-input",
    tpl({"title": {"open": "Title:", "close_pattern": r"\n|$"}, "content": {}}),
    "Title: Only a title",
)
case(
    "feature/close-pattern-newline",
    tpl({"title": {"open": "Title:", "close_pattern": r"\n|$"}, "content": {}}),
    "Title: A title\nThe body text.",
)
case(
    "feature/no-close-runs-to-end",
    tpl({"answer": {"open": "<answer>"}, "reasoning_content": THINK}),
    "<think>t</think><answer>all of this <think>is not reasoning</think> stays",
)
case("feature/unclosed-region-at-eos", THINK_ONLY, "<think>I was cut off mid-thou")
case("feature/empty-region-dropped", THINK_ONLY, "<think></think>Answer")
case("feature/whitespace-region-dropped", THINK_ONLY, "<think>\n\n</think>\n\nAnswer")
case(
    "feature/repeats-list",
    QWEN3,
    '<tool_call>\n{"name": "a", "arguments": {"x": 1}}\n</tool_call>\n<tool_call>\n{"name": "b", "arguments": {}}\n</tool_call>',
)
case(
    "feature/repeats-text-list",
    tpl({"notes": {"open": "<note>", "close": "</note>", "repeats": True}}),
    "<note> one </note> junk <note>two</note><note>\nthree\n</note>",
)
case(
    "feature/repeats-join-newline",
    tpl(
        {
            "reasoning_content": {"open": "<think>", "close": "</think>", "repeats": True, "join": "\n"},
            "content": {"open": "<answer>", "close": "</answer>"},
        }
    ),
    "<think>a</think><answer>x</answer><think>b</think>",
)
case(
    "feature/repeats-join-empty-separator",
    tpl({"reasoning_content": {"open": "<think>", "close": "</think>", "repeats": True, "join": ""}}),
    "<think>a </think><think> b</think>",
)
case(
    "feature/repeats-join-single",
    tpl({"reasoning_content": {"open": "<think>", "close": "</think>", "repeats": True, "join": " | "}}),
    "<think>only</think>",
)
case(
    "feature/repeats-join-empty-item",
    tpl({"n": {"open": "<n>", "close": "</n>", "repeats": True, "join": ","}}),
    "<n>a</n><n>  </n><n>b</n>",
)
case(
    "feature/repeats-empty-text-item",
    tpl({"n": {"open": "<n>", "close": "</n>", "repeats": True}}),
    "<n></n>",
)
case(
    "feature/repeats-int-list",
    tpl({"n": {"open": "<n>", "close": "</n>", "repeats": True, "content": "int"}}),
    "<n>1</n>, <n> 2 </n>, <n>-3</n>",
)
case(
    "feature/optional-false-present",
    tpl({"answer": {"open": "<a>", "close": "</a>", "optional": False}}),
    "<a>42</a>",
)
case(
    "feature/optional-false-repeats-present",
    tpl({"answer": {"open": "<a>", "close": "</a>", "optional": False, "repeats": True}}),
    "<a>1</a><a>2</a>",
)
case(
    "feature/optional-true-explicit-absent",
    tpl({"answer": {"open": "<a>", "close": "</a>", "optional": True}, "content": {}}),
    "no answer tag",
)
case(
    "feature/no-implicit-discards-outside",
    tpl({"a": {"open": "<a>", "close": "</a>"}}),
    "hello <a>kept</a> bye",
)
case("feature/implicit-only", tpl({"content": {}}), "Just a plain answer.")
case("feature/implicit-close", tpl({"content": {"close": "<|im_end|>"}}), "Hello there<|im_end|>")
case("feature/implicit-close-list", tpl({"content": {"close": ["<|eot_id|>", "<|eom_id|>"]}}), "Hi<|eom_id|>")
case(
    "feature/implicit-close-pattern",
    tpl({"content": {"close_pattern": r"<\|im_end\|>|<\|endoftext\|>"}}),
    "Hi<|endoftext|>",
)
case(
    "feature/implicit-strip-false",
    tpl({"content": {"content_args": {"strip": False}}}),
    "  spaced out \n",
)
case(
    "feature/implicit-int",
    tpl({"content": {"content": "int"}}),
    " 12 ",
)
case(
    "feature/tie-longer-match-wins",
    tpl({"a": {"open": "<x>", "close": "</x>"}, "b": {"open": "<x><y>", "close": "</y>"}}),
    "<x><y>hi</y>",
)
case(
    "feature/tie-field-name-order",
    tpl({"zeta": {"open": "<t>", "close": "</t>"}, "alpha": {"open": "<t>", "close": "</t>"}}),
    "<t>who gets me</t>",
)
case(
    "feature/tie-open-before-implicit-close",
    tpl({"extra": {"open": "<sep>", "close": "</sep>"}, "content": {"close": "<sep>"}}),
    "hi<sep>x</sep>",
)
case(
    "feature/earliest-match-wins",
    tpl({"a": {"open": "<a>", "close": "</a>"}, "b": {"open": "<b>", "close": "</b>"}}),
    "<b>first <a>not a</a></b><a>second</a>",
)
case(
    "feature/regex-dotall",
    tpl({"a": {"open_pattern": r"<a.b>", "close": "</a>"}}),
    "<a\nb>x</a>",
)
case(
    "feature/regex-unicode-word",
    tpl(
        {
            "tags": {
                "open_pattern": r"<(?P<tag>\w+)>",
                "close_pattern": r"</\w+>",
                "repeats": True,
                "transform": {"tag": "{tag}", "text": "{content}"},
            }
        }
    ),
    "<名前>太郎</名前><été>chaud</été>",
)
case(
    "feature/regex-lookbehind",
    tpl({"answer": {"open_pattern": r"(?<=\n)ANSWER:", "close_pattern": r"\n|$"}, "content": {}}),
    "\nANSWER: 42\nNot an ANSWER: here",
)
case(
    "feature/regex-caret-at-stream-start",
    tpl(
        {"reasoning_content": {"open_pattern": r"<think>|^(?=</think>)", "close": "</think>"}, "content": {}}
    ),
    "</think>after",
)
case(
    "feature/regex-caret-not-midstream",
    tpl(
        {"reasoning_content": {"open_pattern": r"<think>|^(?=</think>)", "close": "</think>"}, "content": {}}
    ),
    "I mention </think> in passing",
)
case(
    "feature/regex-caret-only-start",
    tpl({"title": {"open_pattern": r"^# ", "close_pattern": r"\n"}, "content": {}}),
    "# Heading\nbody with # not a heading\n",
)
case(
    "feature/start-anchor-pattern",
    tpl({"content": {}}, anchor={"start_anchor_pattern": r"<\|assistant(?::\w+)?\|>"}),
    "answer",
    prefix="<|user|>q<|assistant:v2|>pre ",
)
case(
    "feature/start-anchor-list",
    tpl({"reasoning_content": THINK, "content": {}}, anchor=["<|turn>model\n", "<tool_response|>"]),
    "more</think>done",
    prefix="<|turn>model\nold answer<tool_response|><think>",
)
case("feature/version-1", tpl({"content": {}}, version=1), "v1")
case(
    "feature/no-defaults",
    tpl({"reasoning_content": THINK, "content": {}}, defaults=None),
    "<think>x</think>y",
)
case("feature/empty-defaults", tpl({"content": {}}, defaults={}), "y")
case(
    "feature/field-overrides-default",
    tpl({"role": {"open": "<role>", "close": "</role>"}, "content": {}}),
    "<role>tool</role>hi",
)
case(
    "feature/same-open-and-close",
    tpl({"math": {"open": "$$", "close": "$$"}, "content": {}}),
    "$$x^2$$ is the formula",
)
case(
    "feature/duplicate-group-name-alternatives",
    tpl(
        {
            "tool_calls": {
                "open_pattern": r"(?:to=(?P<name>\w+) <m>|<m> to=(?P<name>\w+):)",
                "close": "<call>",
                "repeats": True,
                "content": "json",
                "transform": {"name": "{name}", "arguments": "{content}"},
            }
        }
    ),
    'to=alpha <m>{"a": 1}<call><m> to=beta:{"b": 2}<call>',
)
case(
    "feature/close-pattern-named-group-unused",
    tpl({"v": {"open": "<v>", "close_pattern": r"</v(?P<n>\d*)>", "transform": {"text": "{content}"}}}),
    "<v>payload</v12>",
)
case(
    "feature/special-token-delimiters",
    tpl(
        {"reasoning_content": {"open": "◁think▷", "close": "◁/think▷"}, "content": {"close": "<|im_end|>"}},
        anchor="<|im_assistant|>assistant<|im_middle|>",
    ),
    "◁think▷考える◁/think▷答え<|im_end|>",
)
case(
    "feature/regex-special-literal",
    tpl({"calls": {"open": "[TOOL_CALLS]", "close": "(*)", "content": "json"}, "content": {}}),
    '[TOOL_CALLS][{"a": 1}](*)',
)
case(
    "feature/literal-with-backslash",
    tpl({"v": {"open": "\\begin{v}", "close": "\\end{v}"}}),
    "\\begin{v} x \\end{v}",
)
case(
    "feature/implicit-close-then-nothing",
    QWEN3,
    "Hello!<|im_end|>",
)
case(
    "feature/region-at-very-end",
    THINK_ONLY,
    "Answer first<think>",
)

# ---------------------------------------------------------------------------------------------
# content/: content parsers
# ---------------------------------------------------------------------------------------------

case("content/text-strip-default", one("text"), "<v>  padded \n</v>")
case("content/text-strip-true", one("text", {"strip": True}), "<v>\t tabbed \t</v>")
case("content/text-strip-false", one("text", {"strip": False}), "<v>\n  keep me  \n</v>")
case("content/text-unicode-whitespace", one("text"), "<v>\u3000全角\u00a0</v>")
case(
    "content/text-empty",
    tpl({"v": {"open": "<v>", "close": "</v>"}, "w": {"open": "<w>", "close": "</w>"}}),
    "<v></v><w>x</w>",
)
case("content/int-basic", one("int"), "<v>42</v>")
case("content/int-whitespace", one("int"), "<v>\n -7 \n</v>")
case("content/int-plus-sign", one("int"), "<v>+3</v>")
case("content/int-leading-zeros", one("int"), "<v>007</v>")
case("content/int-big", one("int"), "<v>123456789012345678901234567890</v>")
case("content/int-underscore", one("int"), "<v>1_000</v>")
case("content/float-basic", one("float"), "<v>3.25</v>")
case("content/float-exponent", one("float"), "<v>1e-3</v>")
case("content/float-integer-text", one("float"), "<v> 2 </v>")
case("content/float-negative", one("float"), "<v>-0.5</v>")
case("content/float-inf", one("float"), "<v>inf</v>")
case("content/bool-true", one("bool"), "<v>true</v>")
case("content/bool-false-upper", one("bool"), "<v>FALSE</v>")
case("content/bool-one", one("bool"), "<v> 1 </v>")
case("content/bool-zero", one("bool"), "<v>0</v>")
case("content/bool-mixed-case", one("bool"), "<v>\nTrue\n</v>")
case("content/json-object", one("json"), '<v>{"a": 1, "b": [true, null, 2.5], "c": {"d": "e"}}</v>')
case("content/json-array", one("json"), "<v> [1, 2, 3] </v>")
case("content/json-string", one("json"), '<v>"just a string"</v>')
case("content/json-number", one("json"), "<v>12.5</v>")
case("content/json-zero-kept", one("json"), "<v>0</v>")
case("content/json-false-kept", one("json"), "<v>false</v>")
case("content/json-null-dropped", one("json"), "<v>null</v>")
case("content/json-empty-object-dropped", one("json"), "<v>{}</v>")
case("content/json-empty-array-dropped", one("json"), "<v>[]</v>")
case("content/json-empty-string-dropped", one("json"), '<v>""</v>')
case(
    "content/json-unicode-escapes",
    one("json"),
    '<v>{"s": "caf\\u00e9 \\ud83d\\ude00", "raw": "日本語 🎉"}</v>',
)
case("content/json-duplicate-keys", one("json"), '<v>{"a": 1, "a": 2}</v>')
case("content/json-nested-deep", one("json"), '<v>{"a": {"b": {"c": {"d": [[[{"e": 1}]]]}}}}</v>')
case(
    "content/json-unquoted-keys",
    one("json", {"unquoted_keys": True}),
    '<v>{name:"foo",n:1,nested:{inner:[1,2]}}</v>',
)
case("content/json-unquoted-keys-spaced", one("json", {"unquoted_keys": True}), '<v>{name: "foo", n: 1}</v>')
case("content/json-unquoted-keys-colon-in-string", one("json", {"unquoted_keys": True}), '<v>{a:"x,b:y"}</v>')
case("content/json-unquoted-keys-mixed", one("json", {"unquoted_keys": True}), '<v>{"quoted": 1,bare: 2}</v>')
case("content/json-unquoted-keys-unicode", one("json", {"unquoted_keys": True}), "<v>{名前:1,été:2}</v>")
case("content/json-unquoted-keys-already-valid", one("json", {"unquoted_keys": True}), '<v>{"a": "b"}</v>')
case(
    "content/json-string-delims",
    one("json", {"unquoted_keys": True, "string_delims": [['<|"|>', '<|"|>']]}),
    '<v>{city:<|"|>Paris, France<|"|>,count:3,tags:[<|"|>a<|"|>,<|"|>b: c<|"|>]}</v>',
)
case(
    "content/json-string-delims-with-quotes-inside",
    one("json", {"unquoted_keys": True, "string_delims": [["<escape>", "<escape>"]]}),
    '<v>{code:<escape>print("hi, there")\n<escape>}</v>',
)
case(
    "content/json-string-delims-two-pairs",
    one("json", {"string_delims": [["«", "»"], ["<s>", "</s>"]]}),
    '<v>{"a": «x», "b": <s>y</s>}</v>',
)
case(
    "content/json-allow-non-json-fallback",
    one("json", {"allow_non_json": True}),
    "<v>  not json at all  </v>",
)
case("content/json-allow-non-json-valid", one("json", {"allow_non_json": True}), '<v>{"ok": true}</v>')
case(
    "content/json-allow-non-json-strip-false",
    one("json", {"allow_non_json": True, "strip": False}),
    "<v>  raw text \n</v>",
)
case(
    "content/xml-inline-basic",
    one("xml-inline", {"tag_pattern": r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>"}),
    "<v><city>Paris</city><days>3</days></v>",
)
case(
    "content/xml-inline-value-parser-json",
    one(
        "xml-inline",
        {
            "tag_pattern": r'<p name="(?P<key>[^"]+)">(?P<value>.*?)</p>',
            "value_parser": {"name": "json", "args": {"allow_non_json": True}},
        },
    ),
    '<v><p name="n">42</p><p name="s">hello world</p><p name="o">{"x": [1]}</p><p name="b">true</p></v>',
)
case(
    "content/xml-inline-value-parser-int",
    one(
        "xml-inline",
        {"tag_pattern": r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>", "value_parser": {"name": "int"}},
    ),
    "<v><a> 1 </a><b>2</b></v>",
)
case(
    "content/xml-inline-value-parser-text-no-args",
    one(
        "xml-inline",
        {"tag_pattern": r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>", "value_parser": {"name": "text"}},
    ),
    "<v><a>\n  spaced \n</a></v>",
)
case(
    "content/xml-inline-merge-duplicates",
    one("xml-inline", {"tag_pattern": r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>", "merge_duplicates": True}),
    "<v><f>a.py</f><f>b.py</f><g>1</g><f>c.py</f></v>",
)
case(
    "content/xml-inline-duplicates-last-wins",
    one("xml-inline", {"tag_pattern": r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>"}),
    "<v><f>a.py</f><f>b.py</f></v>",
)
case(
    "content/xml-inline-raw-values-unstripped",
    one("xml-inline", {"tag_pattern": r"<parameter=(?P<key>[^>\n]+)>(?P<value>.*?)</parameter>"}),
    "<v><parameter=code>\n    indented()\n</parameter></v>",
)
case(
    "content/xml-inline-no-matches",
    tpl(
        {
            "v": {
                "open": "<v>",
                "close": "</v>",
                "content": "xml-inline",
                "content_args": {"tag_pattern": r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>"},
            },
            "content": {},
        }
    ),
    "<v>nothing tagged</v>rest",
    difference="xml-inline-unread-text",
    expected=Raises("ParseError"),
    notes="the reference drops 'nothing tagged' without a trace",
)
case(
    "content/xml-inline-only-whitespace",
    tpl(
        {
            "v": {
                "open": "<v>",
                "close": "</v>",
                "content": "xml-inline",
                "content_args": {"tag_pattern": r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>"},
            },
            "content": {},
        }
    ),
    "<v> \n\t</v>rest",
)
case(
    "content/xml-inline-multiline-values",
    one(
        "xml-inline",
        {"tag_pattern": r"<arg_key>(?P<key>.*?)</arg_key>\s*<arg_value>(?P<value>.*?)</arg_value>"},
    ),
    "<v><arg_key>text</arg_key>\n<arg_value>line1\nline2</arg_value></v>",
)
case("content/kv-lines-basic", one("kv-lines"), "<v>\nname: Ada\nlang: en\n</v>")
case("content/kv-lines-skips-blank", one("kv-lines"), "<v>a: 1\n\n \t\n  b :  2  \n</v>")
case(
    "content/kv-lines-line-without-separator",
    one("kv-lines"),
    "<v>a: 1\n\nno separator here\n  b :  2  \n</v>",
    difference="kv-lines-unread-line",
    expected=Raises("ParseError"),
    notes="the reference drops 'no separator here' without a trace",
)
case("content/kv-lines-split-first-sep", one("kv-lines"), "<v>url: http://x.y/z\n</v>")
case(
    "content/kv-lines-custom-seps",
    one("kv-lines", {"line_sep": ";", "kv_sep": "="}),
    "<v>a=1; b = two ;c=3=4</v>",
)
case("content/kv-lines-strip-false", one("kv-lines", {"strip": False}), "<v>a: 1\n b:2 \n</v>")
case(
    "content/kv-lines-value-parser-int",
    one("kv-lines", {"value_parser": {"name": "int"}}),
    "<v>x: 1\ny: -2\n</v>",
)
case(
    "content/kv-lines-value-parser-json",
    one("kv-lines", {"value_parser": {"name": "json", "args": {"allow_non_json": True}}}),
    "<v>n: 3\nl: [1, 2]\ns: plain text\nb: false\n</v>",
)
case("content/kv-lines-duplicate-last-wins", one("kv-lines"), "<v>k: 1\nk: 2\n</v>")
case("content/kv-lines-crlf", one("kv-lines"), "<v>a: 1\r\nb: 2\r\n</v>")
case(
    "content/kv-lines-empty-dropped",
    tpl({"v": {"open": "<v>", "close": "</v>", "content": "kv-lines"}, "content": {}}),
    "<v>\n\n</v>ok",
)

# ---------------------------------------------------------------------------------------------
# transform/: transforms and transform_each
# ---------------------------------------------------------------------------------------------

case(
    "transform/literals-kept",
    one(
        "json",
        transform={
            "type": "function",
            "n": 3,
            "f": 1.5,
            "b": True,
            "z": None,
            "l": [1, "a"],
            "payload": "{content}",
        },
    ),
    '<v>{"x": 1}</v>',
)
case("transform/type-kept-int", one("int", transform={"value": "{content}"}), "<v>5</v>")
case("transform/type-kept-list", one("json", transform={"value": "{content}"}), "<v>[1, 2]</v>")
case("transform/top-level-placeholder", one("json", transform="{content}"), '<v>{"a": 1}</v>')
case("transform/top-level-list", one("json", transform=["{content}", "{content}"]), "<v>7</v>")
case("transform/constant-string", one("text", transform="constant"), "<v>ignored</v>")
case(
    "transform/dotted-path",
    one(
        "json",
        transform={"name": "{content.fn.name}", "args": "{content.fn.args}", "deep": "{content.fn.args.x}"},
    ),
    '<v>{"fn": {"name": "f", "args": {"x": [1, 2]}}}</v>',
)
case(
    "transform/non-placeholder-braces-kept",
    one("text", transform={"a": "{not-a-placeholder}", "b": "{}", "c": "{ content }", "v": "{content}"}),
    "<v>x</v>",
)
case(
    "transform/captures-and-content",
    tpl(
        {
            "tool_calls": {
                "open_pattern": r"<function=(?P<name>[^>]+)>",
                "close": "</function>",
                "repeats": True,
                "content": "json",
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
            }
        }
    ),
    '<function=get_weather>{"city": "Paris"}</function><function=noop>{}</function>',
)
case(
    "transform/each",
    tpl(
        {
            "tool_calls": {
                "open": "<tool_calls>",
                "close": "</tool_calls>",
                "content": "json",
                "transform_each": True,
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}},
            },
            "content": {},
        }
    ),
    'Calling.<tool_calls>[{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": {}}]</tool_calls>',
)
case(
    "transform/each-with-captures",
    tpl(
        {
            "tool_calls": {
                "open_pattern": r"<batch id=(?P<batch>\d+)>",
                "close": "</batch>",
                "content": "json",
                "transform_each": True,
                "transform": {"batch": "{batch}", "name": "{tool}", "args": "{params.inner}"},
            }
        }
    ),
    '<batch id=9>[{"tool": "t1", "params": {"inner": 1}}, {"tool": "t2", "params": {"inner": [2]}}]</batch>',
)
case(
    "transform/each-element-key-shadows-capture",
    tpl(
        {
            "items": {
                "open_pattern": r"<items name=(?P<name>\w+)>",
                "close": "</items>",
                "content": "json",
                "transform_each": True,
                "transform": {"name": "{name}"},
            }
        }
    ),
    '<items name=outer>[{"name": "inner"}]</items>',
)
case(
    "transform/each-empty-list",
    tpl(
        {
            "items": {
                "open": "<i>",
                "close": "</i>",
                "content": "json",
                "transform_each": True,
                "transform": {"x": "{x}"},
            },
            "content": {},
        }
    ),
    "<i>[]</i>after",
)
case(
    "transform/each-with-repeats",
    tpl(
        {
            "items": {
                "open": "<i>",
                "close": "</i>",
                "repeats": True,
                "content": "json",
                "transform_each": True,
                "transform": {"x": "{x}"},
            }
        }
    ),
    '<i>[{"x": 1}, {"x": 2}]</i><i>[{"x": 3}]</i>',
)
case(
    "transform/kv-lines",
    tpl(
        {
            "meta": {
                "open": "---\n",
                "close": "\n---",
                "content": "kv-lines",
                "transform": {"title": "{content.title}", "all": "{content}"},
            },
            "content": {},
        }
    ),
    "---\ntitle: Hello\nauthor: me\n---\nBody",
)
case(
    "transform/xml-inline",
    tpl(
        {
            "tool_calls": {
                "open_pattern": r"<invoke name=\"(?P<name>[^\"]+)\">",
                "close": "</invoke>",
                "repeats": True,
                "content": "xml-inline",
                "content_args": {
                    "tag_pattern": r"<parameter name=\"(?P<key>[^\"]+)\">(?P<value>.*?)</parameter>"
                },
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
            }
        }
    ),
    '<invoke name="search"><parameter name="q">cats</parameter><parameter name="n">5</parameter></invoke>',
)
case(
    "transform/capture-with-empty-group",
    tpl(
        {
            "calls": {
                "open_pattern": r"<c(?P<suffix>\d*)>",
                "close": "</c>",
                "repeats": True,
                "transform": {"s": "{suffix}", "c": "{content}"},
            }
        }
    ),
    "<c>x</c><c2>y</c>",
)
case(
    "transform/content-is-dict-with-content-key",
    one("json", transform={"inner": "{content.content}"}),
    '<v>{"content": "nested"}</v>',
)

# ---------------------------------------------------------------------------------------------
# defaults/: defaults and dropping of empty values
# ---------------------------------------------------------------------------------------------

case("defaults/role-only-empty-output", QWEN3, "")
case("defaults/role-only-whitespace-output", QWEN3, "   \n\n  ")
case(
    "defaults/extra-default-kept-when-absent",
    tpl({"content": {}}, defaults={"role": "assistant", "tool_calls": []}),
    "hi",
)
case(
    "defaults/default-kept-when-empty-captured",
    tpl({"content": {}}, defaults={"role": "assistant", "content": ""}),
    "  ",
)
case(
    "defaults/default-overridden-by-capture",
    tpl({"content": {}}, defaults={"role": "assistant", "content": "none"}),
    "something",
)
case(
    "defaults/none-default",
    tpl(
        {"reasoning_content": THINK, "content": {}}, defaults={"role": "assistant", "reasoning_content": None}
    ),
    "no thinking",
)
case(
    "defaults/nested-default",
    tpl({"content": {}}, defaults={"role": "assistant", "meta": {"source": "model", "tags": ["a"]}}),
    "x",
)
case("defaults/non-role-defaults-only", tpl({"content": {}}, defaults={"kind": "reply"}), "x")
case(
    "defaults/list-field-empty-dropped",
    tpl({"items": {"open": "<i>", "close": "</i>", "content": "json"}, "content": {}}),
    "<i> [ ] </i>text",
)
case("defaults/int-zero-kept", tpl({"n": {"open": "<n>", "close": "</n>", "content": "int"}}), "<n>0</n>")
case(
    "defaults/bool-false-kept",
    tpl({"b": {"open": "<b>", "close": "</b>", "content": "bool"}}),
    "<b>false</b>",
)
case(
    "defaults/float-zero-kept", tpl({"f": {"open": "<f>", "close": "</f>", "content": "float"}}), "<f>0.0</f>"
)

# ---------------------------------------------------------------------------------------------
# tools/: tool-argument typing
# ---------------------------------------------------------------------------------------------

TYPED_TOOLS = [
    fn(
        "typed",
        {
            "i": {"type": "integer"},
            "n": {"type": "number"},
            "b": {"type": "boolean"},
            "z": {"type": "null"},
            "o": {"type": "object"},
            "a": {"type": "array"},
            "s": {"type": "string"},
            "u": {"type": ["integer", "null"]},
            "any": {"anyOf": [{"type": "integer"}, {"type": "boolean"}]},
            "one": {"oneOf": [{"type": "object"}, {"type": "string"}]},
            "nl": {"type": "integer", "nullable": True},
            "untyped": {"description": "no type"},
        },
    )
]
# Qwen3-Coder style XML calls: every argument arrives as a string.
XML_CALLS = tpl(
    {
        "tool_calls": {
            "open_pattern": r"<function=(?P<name>[^>\n]+)>",
            "close": "</function>",
            "repeats": True,
            "content": "xml-inline",
            "content_args": {"tag_pattern": r"<parameter=(?P<key>[^>\n]+)>\n?(?P<value>.*?)\n?</parameter>"},
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        },
        "content": {},
    }
)
XML_CALLS_MERGE = copy.deepcopy(XML_CALLS)
XML_CALLS_MERGE["fields"]["tool_calls"]["content_args"]["merge_duplicates"] = True


def xml_call(name: str, **params: str) -> str:
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params.items())
    return f"<function={name}>\n{body}</function>"


case("tools/integer", XML_CALLS, xml_call("typed", i="5"), tools=TYPED_TOOLS)
case("tools/integer-negative", XML_CALLS, xml_call("typed", i="-12"), tools=TYPED_TOOLS)
case("tools/integer-from-float-text", XML_CALLS, xml_call("typed", i="3.0"), tools=TYPED_TOOLS)
case("tools/integer-non-integral-kept", XML_CALLS, xml_call("typed", i="3.5"), tools=TYPED_TOOLS)
case("tools/integer-words-kept", XML_CALLS, xml_call("typed", i="five"), tools=TYPED_TOOLS)
case("tools/integer-leading-zero", XML_CALLS, xml_call("typed", i="007"), tools=TYPED_TOOLS)
case(
    "tools/integer-padded",
    XML_CALLS,
    "<function=typed><parameter=i>  8  </parameter></function>",
    tools=TYPED_TOOLS,
)
case("tools/number-float", XML_CALLS, xml_call("typed", n="2.5"), tools=TYPED_TOOLS)
case("tools/number-integral-text", XML_CALLS, xml_call("typed", n="4"), tools=TYPED_TOOLS)
case("tools/number-integral-with-point", XML_CALLS, xml_call("typed", n="4.0"), tools=TYPED_TOOLS)
case("tools/number-exponent", XML_CALLS, xml_call("typed", n="1e3"), tools=TYPED_TOOLS)
case("tools/number-nan-kept", XML_CALLS, xml_call("typed", n="nan"), tools=TYPED_TOOLS)
case("tools/number-inf-kept", XML_CALLS, xml_call("typed", n="inf"), tools=TYPED_TOOLS)
case("tools/boolean-true", XML_CALLS, xml_call("typed", b="true"), tools=TYPED_TOOLS)
case("tools/boolean-false-capital", XML_CALLS, xml_call("typed", b="False"), tools=TYPED_TOOLS)
case(
    "tools/boolean-digits", XML_CALLS, xml_call("typed", b="1") + xml_call("typed", b="0"), tools=TYPED_TOOLS
)
case("tools/boolean-yes-kept", XML_CALLS, xml_call("typed", b="yes"), tools=TYPED_TOOLS)
case("tools/null", XML_CALLS, xml_call("typed", z="null"), tools=TYPED_TOOLS)
case("tools/null-python-none", XML_CALLS, xml_call("typed", z="None"), tools=TYPED_TOOLS)
case("tools/null-other-kept", XML_CALLS, xml_call("typed", z="nil"), tools=TYPED_TOOLS)
case("tools/object", XML_CALLS, xml_call("typed", o='{"k": [1, 2]}'), tools=TYPED_TOOLS)
case("tools/object-invalid-kept", XML_CALLS, xml_call("typed", o="{k: 1}"), tools=TYPED_TOOLS)
case("tools/object-given-array-kept", XML_CALLS, xml_call("typed", o="[1]"), tools=TYPED_TOOLS)
case("tools/array", XML_CALLS, xml_call("typed", a='["x", 2]'), tools=TYPED_TOOLS)
case("tools/array-given-object-kept", XML_CALLS, xml_call("typed", a='{"x": 1}'), tools=TYPED_TOOLS)
case("tools/string-unchanged", XML_CALLS, xml_call("typed", s="00123"), tools=TYPED_TOOLS)
case("tools/string-json-looking-unchanged", XML_CALLS, xml_call("typed", s='{"a": 1}'), tools=TYPED_TOOLS)
case("tools/type-list-integer", XML_CALLS, xml_call("typed", u="9"), tools=TYPED_TOOLS)
case("tools/type-list-null", XML_CALLS, xml_call("typed", u="null"), tools=TYPED_TOOLS)
case("tools/type-list-neither-kept", XML_CALLS, xml_call("typed", u="many"), tools=TYPED_TOOLS)
case("tools/anyof-first", XML_CALLS, xml_call("typed", any="1"), tools=TYPED_TOOLS)
case("tools/anyof-second", XML_CALLS, xml_call("typed", any="true"), tools=TYPED_TOOLS)
case("tools/oneof-object", XML_CALLS, xml_call("typed", one='{"a": 1}'), tools=TYPED_TOOLS)
case("tools/oneof-string", XML_CALLS, xml_call("typed", one="plain"), tools=TYPED_TOOLS)
case(
    "tools/nullable-flag",
    XML_CALLS,
    xml_call("typed", nl="null") + xml_call("typed", nl="12"),
    tools=TYPED_TOOLS,
)
case("tools/untyped-param-kept", XML_CALLS, xml_call("typed", untyped="5"), tools=TYPED_TOOLS)
case("tools/unknown-param-kept", XML_CALLS, xml_call("typed", extra="5"), tools=TYPED_TOOLS)
case("tools/unknown-tool-kept", XML_CALLS, xml_call("other", i="5"), tools=TYPED_TOOLS)
case(
    "tools/many-params",
    XML_CALLS,
    xml_call("typed", i="1", n="0.25", b="TRUE", z="null", o="{}", a="[]", s="str", u="2"),
    tools=TYPED_TOOLS,
)
case("tools/no-tools-strings-kept", XML_CALLS, xml_call("typed", i="5", b="true"))
case("tools/empty-tools-list", XML_CALLS, xml_call("typed", i="5"), tools=[])
case(
    "tools/bare-function-dict",
    XML_CALLS,
    xml_call("bare", k="3"),
    tools=[fn("bare", {"k": {"type": "integer"}}, wrap=False)],
)
case(
    "tools/no-parameters-key",
    XML_CALLS,
    xml_call("noparams", k="3"),
    tools=[{"type": "function", "function": {"name": "noparams"}}],
)
case(
    "tools/json-args-non-strings-untouched",
    QWEN3,
    '<tool_call>{"name": "typed", "arguments": {"i": "5", "s": 5, "b": 1, "n": "2"}}</tool_call>',
    tools=TYPED_TOOLS,
)
case(
    "tools/json-args-as-string-untouched",
    QWEN3,
    '<tool_call>{"name": "typed", "arguments": "{\\"i\\": \\"5\\"}"}</tool_call>',
    tools=TYPED_TOOLS,
)
case(
    "tools/merge-duplicates-cast-per-item",
    XML_CALLS_MERGE,
    "<function=typed><parameter=i>1</parameter><parameter=i>2</parameter><parameter=i>x</parameter></function>",
    tools=TYPED_TOOLS,
)
case(
    "tools/merge-duplicates-array-param",
    XML_CALLS_MERGE,
    "<function=typed><parameter=a>[1]</parameter><parameter=a>[2]</parameter></function>",
    tools=TYPED_TOOLS,
)
case(
    "tools/single-call-not-repeated",
    tpl(
        {
            "tool_call": {
                "open_pattern": r"<function=(?P<name>[^>\n]+)>",
                "close": "</function>",
                "content": "xml-inline",
                "content_args": {"tag_pattern": r"<parameter=(?P<key>[^>\n]+)>(?P<value>.*?)</parameter>"},
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
            }
        }
    ),
    "<function=typed><parameter=i>5</parameter></function>",
    tools=TYPED_TOOLS,
)
case(
    "tools/transform-each-list",
    tpl(
        {
            "tool_calls": {
                "open": "<calls>",
                "close": "</calls>",
                "content": "json",
                "transform_each": True,
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}},
            }
        }
    ),
    '<calls>[{"name": "typed", "arguments": {"i": "1", "b": "false"}}, {"name": "typed", "arguments": {"n": "0.5"}}]</calls>',
    tools=TYPED_TOOLS,
)
case(
    "tools/field-not-named-tool-calls",
    tpl(
        {
            "actions": {
                "open": "<a>",
                "close": "</a>",
                "content": "json",
                "transform": {"function": {"name": "{content.n}", "arguments": "{content.a}"}},
            }
        }
    ),
    '<a>{"n": "typed", "a": {"i": "3"}}</a>',
    tools=TYPED_TOOLS,
)
case(
    "tools/gemma-string-delims-typed",
    tpl(
        {
            "tool_calls": {
                "open_pattern": r"<\|tool_call>call:(?P<name>[\w.-]+)",
                "close": "<tool_call|>",
                "repeats": True,
                "content": "json",
                "content_args": {"unquoted_keys": True, "string_delims": [['<|"|>', '<|"|>']]},
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
            },
            "content": {},
        }
    ),
    '<|tool_call>call:typed{i:<|"|>42<|"|>,s:<|"|>42<|"|>,b:true}<tool_call|>',
    tools=TYPED_TOOLS,
)


def get_weather(city: str, days: int, metric: bool = True) -> str:
    """Get the weather forecast.

    Args:
        city: The city to look up.
        days: How many days to forecast.
        metric: Whether to use metric units.
    """
    return city


def set_levels(level: float, tags: list[str], config: dict, note: str | None = None) -> None:
    """Set levels.

    Args:
        level: The level.
        tags: Some tags.
        config: A config object.
        note: An optional note.
    """


def maybe_count(count: int | None = None, mode: Literal["fast", "slow"] = "fast") -> None:
    """Count maybe.

    Args:
        count: How many, or nothing.
        mode: The mode.
    """


case(
    "tools/callable-basic",
    XML_CALLS,
    xml_call("get_weather", city="Paris", days="3", metric="false"),
    tools=[get_weather],
)
case(
    "tools/callable-float-list-dict",
    XML_CALLS,
    xml_call("set_levels", level="0.75", tags='["a", "b"]', config='{"x": 1}', note="hello"),
    tools=[set_levels],
)
case(
    "tools/callable-optional-int",
    XML_CALLS,
    xml_call("maybe_count", count="null", mode="slow") + xml_call("maybe_count", count="4"),
    tools=[maybe_count],
)
case(
    "tools/callables-and-dicts-mixed",
    XML_CALLS,
    xml_call("get_weather", days="2") + xml_call("typed", i="2"),
    tools=[get_weather, TYPED_TOOLS[0]],
)

# ---------------------------------------------------------------------------------------------
# model/: real-model formats (format facts from research/formats.md)
# ---------------------------------------------------------------------------------------------

DEEPSEEK_R1 = tpl(
    {
        "reasoning_content": THINK,
        "tool_calls": {
            "open_pattern": r"(?:<｜tool▁calls▁begin｜>\s*)?<｜tool▁call▁begin｜>\w+<｜tool▁sep｜>(?P<name>[^\n]+)\n```(?:json)?\n",
            "close_pattern": r"\s*```\s*<｜tool▁call▁end｜>(?:\s*<｜tool▁calls▁end｜>)?",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        },
        "content": {"close": "<｜end▁of▁sentence｜>"},
    },
    anchor="<｜Assistant｜>",
)
DEEPSEEK_V31 = tpl(
    {
        "reasoning_content": {"open_pattern": r"<think>|^(?=</think>)", "close": "</think>"},
        "tool_calls": {
            "open_pattern": r"(?:<｜tool▁calls▁begin｜>\s*)?<｜tool▁call▁begin｜>(?P<name>[^<\n]+?)<｜tool▁sep｜>",
            "close_pattern": r"\s*<｜tool▁call▁end｜>(?:\s*<｜tool▁calls▁end｜>)?",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        },
        "content": {"close": "<｜end▁of▁sentence｜>"},
    },
    anchor="<｜Assistant｜>",
)
GPT_OSS = tpl(
    {
        "reasoning_content": {
            "open_pattern": r"(?:<\|start\|>assistant)?<\|channel\|>analysis<\|message\|>",
            "close": "<|end|>",
            "repeats": True,
            "join": "\n",
        },
        "content": {
            "open_pattern": r"(?:<\|start\|>assistant)?<\|channel\|>(?:final|commentary)(?:\s*(?:<\|constrain\|>)?\s*[\w-]+)?\s*<\|message\|>",
            "close": ["<|end|>", "<|return|>"],
            "repeats": True,
            "join": "\n",
        },
        "tool_calls": {
            "open_pattern": r"(?:<\|start\|>assistant)?(?: to=functions\.(?P<name>[^\s<]+)\s*<\|channel\|>(?:commentary|analysis)|<\|channel\|>(?:commentary|analysis) to=functions\.(?P<name>[^\s<]+))(?:\s*(?:<\|constrain\|>)?\s*[\w-]+)?\s*<\|message\|>",
            "close": ["<|call|>", "<|end|>"],
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        },
    },
    anchor="<|start|>assistant",
)
QWEN3_CODER = tpl(
    {
        "reasoning_content": {"open": "<think>", "close_pattern": r"</think>|(?=<tool_call>)"},
        "tool_calls": {
            "open_pattern": r"(?:<tool_call>\s*)?<function=(?P<name>[^>\n]+)>",
            "close_pattern": r"</function>(?:\s*</tool_call>)?",
            "repeats": True,
            "content": "xml-inline",
            "content_args": {"tag_pattern": r"<parameter=(?P<key>[^>\n]+)>\n?(?P<value>.*?)\n?</parameter>"},
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        },
        "content": {"close": "<|im_end|>"},
    }
)
MISTRAL = tpl(
    {
        "reasoning_content": {"open": "[THINK]", "close": "[/THINK]"},
        "tool_calls": {
            "open_pattern": r"\[TOOL_CALLS\]\s*(?P<name>[^\[\]{}\s]+?)(?:\[CALL_ID\][^\[]*?)?(?:\[ARGS\])?(?=\s*\{)",
            "close_pattern": r"(?=\[TOOL_CALLS\])|</s>",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        },
        "content": {"close": "</s>"},
    },
    anchor="[/INST]",
)
MISTRAL_V3 = tpl(
    {
        "tool_calls": {
            "open": "[TOOL_CALLS]",
            "close": "</s>",
            "content": "json",
            "transform_each": True,
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}},
        },
        "content": {"close": "</s>"},
    },
    anchor="[/INST]",
)
MINIMAX_M2 = tpl(
    {
        "reasoning_content": THINK,
        "tool_calls": {
            "open_pattern": r"(?:<minimax:tool_call>\s*)?<invoke name=\"(?P<name>[^\"]+)\">",
            "close_pattern": r"</invoke>(?:\s*</minimax:tool_call>)?",
            "repeats": True,
            "content": "xml-inline",
            "content_args": {
                "tag_pattern": r"<parameter name=\"(?P<key>[^\"]+)\">(?P<value>.*?)</parameter>",
                "value_parser": {"name": "json", "args": {"allow_non_json": True}},
            },
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        },
        "content": {"close": "[e~["},
    },
    anchor="]~b]ai\n",
)
KIMI_K2 = tpl(
    {
        "reasoning_content": {
            "open": "<think>",
            "close_pattern": r"</think>|(?=<\|tool_calls?_section_begin\|>|<\|tool_call_begin\|>)",
        },
        "tool_calls": {
            "open_pattern": r"(?:<\|tool_calls?_section_begin\|>\s*)?<\|tool_call_begin\|>\s*(?P<id>(?:functions\.)?(?P<name>[\w.\-]+?)(?::\d+)?)\s*<\|tool_call_argument_begin\|>",
            "close_pattern": r"\s*<\|tool_call_end\|>(?:\s*<\|tool_calls?_section_end\|>)?|(?=<\|tool_call_begin\|>)",
            "repeats": True,
            "content": "json",
            "transform": {
                "type": "function",
                "id": "{id}",
                "function": {"name": "{name}", "arguments": "{content}"},
            },
        },
        "content": {"close": "<|im_end|>"},
    },
    anchor="<|im_assistant|>assistant<|im_middle|>",
)
GLM45 = tpl(
    {
        "reasoning_content": {
            "open_pattern": r"<think>|^(?=</think>)",
            "close": "</think>",
            "repeats": True,
            "join": "",
        },
        "tool_calls": {
            "open_pattern": r"<tool_call>\s*(?P<name>[^\s<]+)\s*",
            "close": "</tool_call>",
            "repeats": True,
            "content": "xml-inline",
            "content_args": {
                "tag_pattern": r"<arg_key>(?P<key>.*?)</arg_key>\s*<arg_value>(?P<value>.*?)</arg_value>",
                "value_parser": {"name": "json", "args": {"allow_non_json": True}},
            },
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        },
        "content": {"close": ["<|user|>", "<|observation|>", "<|endoftext|>"]},
    },
    anchor="<|assistant|>",
)
GEMMA4 = tpl(
    {
        "reasoning_content": {"open_pattern": r"<\|channel>thought\n?", "close": "<channel|>"},
        "tool_calls": {
            "open_pattern": r"<\|tool_call>call:(?P<name>[\w.-]+)",
            "close": "<tool_call|>",
            "repeats": True,
            "content": "json",
            "content_args": {"unquoted_keys": True, "string_delims": [['<|"|>', '<|"|>']]},
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        },
        "content": {"close": ["<turn|>", "<|tool_response>", "<eos>"]},
    },
    anchor=["<|turn>model\n", "<tool_response|>"],
)
LLAMA3 = tpl(
    {
        "tool_calls": {
            "open_pattern": r"(?:<\|python_tag\|>)?\s*(?=\{\s*\"(?:type|name)\"\s*:)",
            "close_pattern": r"\s*(?:;|<\|eom_id\|>|<\|eot_id\|>)",
            "repeats": True,
            "content": "json",
            "transform": {
                "type": "function",
                "function": {"name": "{content.name}", "arguments": "{content.parameters}"},
            },
        },
        "content": {"close": ["<|eot_id|>", "<|eom_id|>"]},
    },
    anchor="<|start_header_id|>assistant<|end_header_id|>\n\n",
)
COHERE = tpl(
    {
        "reasoning_content": {"open": "<|START_THINKING|>", "close": "<|END_THINKING|>"},
        "content": {"open": "<|START_RESPONSE|>", "close": "<|END_RESPONSE|>"},
        "tool_calls": {
            "open": "<|START_ACTION|>",
            "close": "<|END_ACTION|>",
            "content": "json",
            "transform_each": True,
            "transform": {
                "type": "function",
                "function": {"name": "{tool_name}", "arguments": "{parameters}"},
            },
        },
    },
    anchor="<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>",
)
SEED_OSS = tpl(
    {
        "reasoning_content": {"open": "<seed:think>", "close": "</seed:think>"},
        "tool_calls": {
            "open_pattern": r"(?:<seed:tool_call>\s*)?<function=(?P<name>[^>\n]+)>",
            "close_pattern": r"</function>(?:\s*</seed:tool_call>)?",
            "repeats": True,
            "content": "xml-inline",
            "content_args": {
                "tag_pattern": r"<parameter=(?P<key>[^>\n]+)>(?P<value>.*?)</parameter>",
                "value_parser": {"name": "json", "args": {"allow_non_json": True}},
            },
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        },
        "content": {"close": "<seed:eos>"},
    },
    anchor="<seed:bos>assistant\n",
)
FUNCTIONARY_V32 = tpl(
    {
        "content": {
            "open_pattern": r"(?:>>>)?all\n",
            "close_pattern": r"(?=>>>)|<\|eot_id\|>",
            "repeats": True,
            "join": "",
        },
        "tool_calls": {
            "open_pattern": r"(?:>>>)?(?!all\n)(?P<name>[\w.-]+)\n",
            "close_pattern": r"(?=>>>)|<\|eot_id\|>|<\|eom_id\|>",
            "repeats": True,
            "content": "json",
            "content_args": {"allow_non_json": True},
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        },
    },
    anchor="<|start_header_id|>assistant<|end_header_id|>\n\n",
)

case(
    "model/qwen3-think-tool-call",
    QWEN3,
    '<think>\nThe user wants weather. I should call get_weather.\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}\n</tool_call><|im_end|>',
    prefix="<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n",
)
case(
    "model/qwen3-parallel-calls",
    QWEN3,
    '<think>\nTwo cities.\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Berlin"}}\n</tool_call>',
    prefix=CHATML,
)
case(
    "model/qwen3-answer-only",
    QWEN3,
    "<think>\nSimple.\n</think>\n\nParis is the capital of France.<|im_end|>",
    prefix=CHATML,
)
case(
    "model/qwen3-no-think-prefill",
    QWEN3,
    "Direct answer.<|im_end|>",
    prefix="<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
)
case(
    "model/qwq-prefilled-think",
    QWEN3,
    "Okay, let me think.\nYes.\n</think>\n\nThe answer is 4.",
    prefix="<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n<think>\n",
)
case(
    "model/hermes-typed-call",
    QWEN3,
    '<tool_call>\n{"name": "typed", "arguments": {"i": 3, "s": "x"}}\n</tool_call>',
    prefix=CHATML,
    tools=TYPED_TOOLS,
)
case(
    "model/deepseek-r1-prefilled-think-and-calls",
    DEEPSEEK_R1,
    'I need the weather.\n</think>\n\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{"city": "Tokyo"}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n```json\n{"tz": "JST"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>',
    prefix="<｜begin▁of▁sentence｜><｜User｜>Weather and time in Tokyo?<｜Assistant｜><think>\n",
)
case(
    "model/deepseek-r1-answer",
    DEEPSEEK_R1,
    "Simple arithmetic.\n</think>\n\n2 + 2 = 4<｜end▁of▁sentence｜>",
    prefix="<｜User｜>2+2<｜Assistant｜><think>\n",
)
case(
    "model/deepseek-v3-no-think",
    DEEPSEEK_R1,
    '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>search\n```json\n{"q": "x"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
    prefix="<｜User｜>find x<｜Assistant｜>",
)
case(
    "model/deepseek-v31-thinking",
    DEEPSEEK_V31,
    'Reasoning here</think>Let me look.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{"city": "Tokyo"}<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>',
    prefix="<｜User｜>time?<｜Assistant｜><think>",
)
case(
    "model/deepseek-v31-non-thinking",
    DEEPSEEK_V31,
    "Plain answer.<｜end▁of▁sentence｜>",
    prefix="<｜User｜>hi<｜Assistant｜></think>",
)
case(
    "model/gpt-oss-analysis-final",
    GPT_OSS,
    "<|channel|>analysis<|message|>User asks 2+2. Easy.<|end|><|start|>assistant<|channel|>final<|message|>4<|return|>",
    prefix="<|start|>user<|message|>2+2?<|end|><|start|>assistant",
)
case(
    "model/gpt-oss-tool-call-channel-recipient",
    GPT_OSS,
    '<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"location": "SF"}<|call|>',
    prefix="<|start|>assistant",
)
case(
    "model/gpt-oss-tool-call-role-recipient",
    GPT_OSS,
    '<|channel|>analysis<|message|>Think.<|end|><|start|>assistant to=functions.lookup<|channel|>commentary json<|message|>{"id": 7}<|call|>',
    prefix="<|start|>assistant",
)
case(
    "model/gpt-oss-multiple-analysis-joined",
    GPT_OSS,
    "<|channel|>analysis<|message|>First thought.<|end|><|start|>assistant<|channel|>analysis<|message|>Second thought.<|end|><|start|>assistant<|channel|>final<|message|>Done.<|return|>",
    prefix="<|start|>assistant",
)
case(
    "model/gpt-oss-preamble-and-call",
    GPT_OSS,
    "<|channel|>commentary<|message|>Let me check that.<|end|><|start|>assistant<|channel|>commentary to=functions.check <|constrain|>json<|message|>{}<|call|>",
    prefix="<|start|>assistant",
)
case(
    "model/qwen3-coder-xml",
    QWEN3_CODER,
    "I'll run it.\n<tool_call>\n<function=run_code>\n<parameter=code>\ndef f():\n    return 1\n</parameter>\n<parameter=timeout>\n30\n</parameter>\n</function>\n</tool_call><|im_end|>",
    prefix=CHATML,
    tools=[fn("run_code", {"code": {"type": "string"}, "timeout": {"type": "integer"}})],
)
case(
    "model/qwen35-prefilled-think-xml",
    QWEN3_CODER,
    "Need to call.\n</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nSan Francisco\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
    prefix="<|im_start|>user\nweather<|im_end|>\n<|im_start|>assistant\n<think>\n",
    tools=[get_weather],
)
case(
    "model/qwen35-call-interrupts-think",
    QWEN3_CODER,
    "Thinking and then calling\n<tool_call>\n<function=special_function>\n<parameter=arg1>\n1\n</parameter>\n</function>\n</tool_call>",
    prefix="<|im_start|>assistant\n<think>\n",
    tools=[fn("special_function", {"arg1": {"type": "integer"}})],
)
case(
    "model/mistral-think-and-calls",
    MISTRAL,
    '[THINK]Two lookups.[/THINK][TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_time[ARGS]{"tz": "CET"}</s>',
    prefix="[INST]weather and time[/INST]",
)
case(
    "model/mistral-call-id",
    MISTRAL,
    '[TOOL_CALLS]get_weather[CALL_ID]abc123XYZ[ARGS]{"city": "Rome"}',
    prefix="[INST]q[/INST]",
)
case(
    "model/mistral-answer",
    MISTRAL,
    "Bonjour !</s>",
    prefix="<s>[INST]hi[/INST]",
)
case(
    "model/mistral-v3-json-array",
    MISTRAL_V3,
    '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Oslo"}}, {"name": "get_time", "arguments": {}}]</s>',
    prefix="[INST]q[/INST]",
)
case(
    "model/minimax-m2",
    MINIMAX_M2,
    'The user wants two things.\n</think>\n\n<minimax:tool_call>\n<invoke name="search">\n<parameter name="query">rust async</parameter>\n<parameter name="limit">5</parameter>\n</invoke>\n<invoke name="open">\n<parameter name="url">https://example.com</parameter>\n</invoke>\n</minimax:tool_call>',
    prefix="]~b]user\nq[e~[\n]~b]ai\n<think>\n",
)
case(
    "model/kimi-k2",
    KIMI_K2,
    '<think>Need two calls.</think><|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "Beijing"}<|tool_call_end|><|tool_call_begin|>functions.get_weather:1<|tool_call_argument_begin|>{"city": "Shanghai"}<|tool_call_end|><|tool_calls_section_end|>',
    prefix="<|im_user|>user<|im_middle|>weather<|im_end|><|im_assistant|>assistant<|im_middle|>",
)
case(
    "model/kimi-k2-answer",
    KIMI_K2,
    "<think>Simple.</think>Hello!<|im_end|>",
    prefix="<|im_assistant|>assistant<|im_middle|>",
)
case(
    "model/glm45-think-and-call",
    GLM45,
    "\n<think>Check weather.</think>\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>北京</arg_value>\n<arg_key>days</arg_key>\n<arg_value>2</arg_value>\n</tool_call>",
    prefix="<|user|>\n北京天气<|assistant|>",
)
case(
    "model/glm45-nothink-prefill",
    GLM45,
    "Just an answer.",
    prefix="<|user|>\nhi /nothink<|assistant|>\n<think></think>\n",
)
case(
    "model/gemma4-thought-and-call",
    GEMMA4,
    '<|channel>thought\nLet me call the tool.<channel|><|tool_call>call:foo{bool_value:true,list_value:[<|"|>foo<|"|>,<|"|>bar<|"|>],null_value:null,number_value:1,string_value:<|"|>foo<|"|>,struct_value:{foo:<|"|>bar<|"|>}}<tool_call|>',
    prefix="<|turn>user\nhi<turn|>\n<|turn>model\n",
)
case(
    "model/gemma4-empty-thought-prefill",
    GEMMA4,
    "The answer is 42.<turn|>",
    prefix="<|turn>user\nq<turn|>\n<|turn>model\n<|channel>thought\n<channel|>",
)
case(
    "model/gemma4-after-tool-response",
    GEMMA4,
    "It is sunny.<turn|>",
    prefix='<|turn>model\n<|tool_call>call:w{}<tool_call|><|tool_response>response:w{r:<|"|>sun<|"|>}<tool_response|>',
)
case(
    "model/llama3-json-call",
    LLAMA3,
    '{"name": "get_weather", "parameters": {"city": "NYC"}}<|eom_id|>',
    prefix="<|start_header_id|>user<|end_header_id|>\n\nweather<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
)
case(
    "model/llama3-python-tag",
    LLAMA3,
    '<|python_tag|>{"name": "lookup", "parameters": {"id": 3}}; {"name": "lookup", "parameters": {"id": 4}}<|eom_id|>',
    prefix="<|start_header_id|>assistant<|end_header_id|>\n\n",
)
case(
    "model/llama3-plain-answer",
    LLAMA3,
    "The sky is blue.<|eot_id|>",
    prefix="<|start_header_id|>assistant<|end_header_id|>\n\n",
)
case(
    "model/cohere-command-r7b",
    COHERE,
    '<|START_THINKING|>Search first.<|END_THINKING|><|START_ACTION|>[\n    {"tool_call_id": "0", "tool_name": "search", "parameters": {"query": "x"}}\n]<|END_ACTION|>',
    prefix="<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>",
)
case(
    "model/cohere-response",
    COHERE,
    "<|START_RESPONSE|>Here you go.<|END_RESPONSE|>",
    prefix="<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>",
)
case(
    "model/seed-oss",
    SEED_OSS,
    "<seed:think>Use the tool.</seed:think><seed:tool_call>\n<function=get_weather>\n<parameter=location>Berlin</parameter>\n<parameter=days>2</parameter>\n</function>\n</seed:tool_call><seed:eos>",
    prefix="<seed:bos>user\nq<seed:eos><seed:bos>assistant\n",
)
case(
    "model/functionary-v32",
    FUNCTIONARY_V32,
    'all\nLet me check.>>>get_weather\n{"city": "Paris"}>>>get_time\n{"tz": "CET"}',
    prefix="<|start_header_id|>assistant<|end_header_id|>\n\n>>>",
)

# ---------------------------------------------------------------------------------------------
# prefix/: prefixes, start anchors, multi-turn, prefills
# ---------------------------------------------------------------------------------------------

MULTI_TURN_QWEN = (
    "<|im_start|>system\nYou are helpful.<|im_end|>\n"
    "<|im_start|>user\nWeather?<|im_end|>\n"
    '<|im_start|>assistant\n<think>\nOld reasoning.\n</think>\n\nOld words.<tool_call>\n{"name": "old_call", "arguments": {}}\n</tool_call><|im_end|>\n'
    '<|im_start|>user\n<tool_response>\n{"temp": 20}\n</tool_response><|im_end|>\n'
    "<|im_start|>assistant\n"
)

case("prefix/empty-prefix", QWEN3, "<think>x</think>y")
case("prefix/anchor-only", QWEN3, "<think>x</think>y", prefix=CHATML)
case(
    "prefix/multi-turn-no-leak",
    QWEN3,
    "<think>\nNew reasoning.\n</think>\n\nIt is 20 degrees.<|im_end|>",
    prefix=MULTI_TURN_QWEN,
)
case(
    "prefix/multi-turn-new-call",
    QWEN3,
    '<tool_call>\n{"name": "new_call", "arguments": {"a": 1}}\n</tool_call>',
    prefix=MULTI_TURN_QWEN,
)
case(
    "prefix/multi-turn-prefilled-think",
    QWEN3,
    "Continuing.\n</think>\n\nDone.",
    prefix=MULTI_TURN_QWEN + "<think>\n",
)
case(
    "prefix/multi-turn-earlier-unclosed-think",
    QWEN3,
    "fresh answer",
    prefix="<|im_start|>assistant\n<think>\nthis earlier turn was truncated<|im_end|>\n<|im_start|>user\nagain<|im_end|>\n<|im_start|>assistant\n",
)
case(
    "prefix/prefilled-think",
    QWEN3,
    "step 1\nstep 2\n</think>\n\nresult",
    prefix="<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\n",
)
case(
    "prefix/prefilled-think-never-closed",
    QWEN3,
    "still thinking when generation stopped",
    prefix=CHATML + "<think>\n",
)
case("prefix/prefilled-closed-empty-think", QWEN3, "answer", prefix=CHATML + "<think>\n\n</think>\n\n")
case(
    "prefix/prefilled-closed-nonempty-think",
    QWEN3,
    "answer",
    prefix=CHATML + "<think>\nfrom the prompt\n</think>\n\n",
)
case("prefix/assistant-prefill-content", QWEN3, "the rest of the sentence.", prefix=CHATML + "Sure, here is ")
case(
    "prefix/assistant-prefill-content-then-call",
    QWEN3,
    '<tool_call>{"name": "f", "arguments": {}}</tool_call>',
    prefix=CHATML + "Calling now.",
)
case(
    "prefix/prefill-inside-tool-call",
    QWEN3,
    'get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
    prefix=CHATML + '<tool_call>\n{"name": "',
)
case(
    "prefix/anchor-not-found-whole-prefix",
    QWEN3,
    "world",
    prefix="Hello ",
    difference="anchor-required",
    expected=Raises("AnchorNotFoundError"),
)
case(
    "prefix/anchor-not-found-with-think",
    QWEN3,
    "thought</think>answer",
    prefix="<|im_start|>user\nq<|im_end|>\n<think>",
    difference="anchor-required",
    expected=Raises("AnchorNotFoundError"),
)
case(
    "prefix/anchor-truncated-not-found",
    QWEN3,
    "x",
    prefix="<|im_start|>assist",
    difference="anchor-required",
    expected=Raises("AnchorNotFoundError"),
)
case(
    "prefix/anchor-last-occurrence",
    QWEN3,
    "final",
    prefix="<|im_start|>assistant\nA<|im_start|>assistant\nB<|im_start|>assistant\n",
)
case("prefix/anchor-in-generated-text-kept", QWEN3, "one <|im_start|>assistant\n two", prefix=CHATML)
case("prefix/partial-open-delimiter-in-prefix", QWEN3, "ink>reasoning</think>answer", prefix=CHATML + "<th")
case("prefix/partial-close-delimiter-in-prefix", QWEN3, "think>answer", prefix=CHATML + "<think>reasoning</")
case(
    "prefix/anchor-list-last-of-any",
    GEMMA4,
    "ok<turn|>",
    prefix="<|turn>model\nx<tool_response|>y<|turn>model\n",
)
case(
    "prefix/anchor-pattern-last",
    tpl({"content": {}}, anchor={"start_anchor_pattern": r"<\|assistant\|>\n?"}),
    "B",
    prefix="<|assistant|>\nA<|assistant|>",
)
case(
    "prefix/gpt-oss-anchor-repeated-in-output",
    GPT_OSS,
    "<|channel|>analysis<|message|>a<|end|><|start|>assistant<|channel|>final<|message|>b<|return|>",
    prefix="<|start|>assistant<|channel|>final<|message|>old<|end|><|start|>user<|message|>q<|end|><|start|>assistant",
)
case(
    "prefix/prefix-only-no-generation",
    QWEN3,
    "",
    prefix=CHATML + "<think>\nprefilled\n</think>\n\nprefilled answer",
)
case(
    "prefix/deepseek-v31-prefix-caret",
    DEEPSEEK_V31,
    "</think>extra close then answer",
    prefix="<｜Assistant｜>",
)
case("prefix/caret-applies-after-anchor", DEEPSEEK_V31, "answer", prefix="<｜User｜>q<｜Assistant｜></think>")
case("prefix/unicode-anchor", DEEPSEEK_R1, "答案</think>内容", prefix="<｜User｜>问题<｜Assistant｜><think>")

# ---------------------------------------------------------------------------------------------
# adversarial/: odd text
# ---------------------------------------------------------------------------------------------

case("adversarial/delimiter-fragments", THINK_ONLY, "a <thi b </thin c <th")
case("adversarial/fragment-at-end", THINK_ONLY, "answer <thin")
case("adversarial/close-fragment-in-region", THINK_ONLY, "<think>x </thi y</think>z")
case("adversarial/near-miss-tags", QWEN3, "<Think>a</Think> < think> <think >b <tool_call >{} </ tool_call>")
case(
    "adversarial/double-brackets",
    THINK_ONLY,
    "<<think>>inner<</think>>",
    difference="implicit-concat",
    expected=msg(content="<>", reasoning_content=">inner<"),
)
case("adversarial/nested-open-tags", THINK_ONLY, "<think<think>>x</think>")
case("adversarial/many-angle-brackets", THINK_ONLY, "<<<<<<think>deep</think>")
case("adversarial/close-without-open", THINK_ONLY, "text</think>more")
case("adversarial/text-is-a-delimiter", THINK_ONLY, "</think>")
case("adversarial/open-is-entire-text", THINK_ONLY, "<think>")
case(
    "adversarial/think-inside-tool-call-json",
    QWEN3,
    '<tool_call>{"name": "say", "arguments": {"s": "<think>not reasoning</think>"}}</tool_call>',
)
case(
    "adversarial/tool-call-inside-think",
    QWEN3,
    '<think>maybe <tool_call>{"name": "x"}</tool_call> later</think>answer',
)
case(
    "adversarial/emoji-cjk", QWEN3, "<think>🤔 思考中… 👨\u200d👩\u200d👧</think>답변: ✅ 完成", prefix=CHATML
)
case(
    "adversarial/emoji-in-arguments",
    QWEN3,
    '<tool_call>{"name": "send", "arguments": {"text": "Hi 👋🏽 — 你好", "to": "Zoë"}}</tool_call>',
)
case(
    "adversarial/combining-chars-near-delims",
    THINK_ONLY,
    "e\u0301<think>\u0301x\u200d</think>\u200bz",
    difference="implicit-concat",
    expected=msg(content="e\u0301\u200bz", reasoning_content="\u0301x\u200d"),
)
case(
    "adversarial/huge-whitespace",
    THINK_ONLY,
    "<think>" + " " * 3000 + "deep" + "\n" * 2000 + "</think>" + "\t" * 1000 + "answer" + " " * 2000,
)
case("adversarial/long-content", THINK_ONLY, "<think>r</think>" + "lorem ipsum " * 400)
case(
    "adversarial/crlf",
    QWEN3,
    '<think>\r\nx\r\n</think>\r\n\r\n<tool_call>\r\n{"name": "f", "arguments": {}}\r\n</tool_call>',
)
case("adversarial/nul-and-controls", THINK_ONLY, "<think>\x00\x07</think>a\x1bb")
case("adversarial/regex-metachar-text", THINK_ONLY, "<think>.*+?^$()[]{}|\\</think>$1 \\1")
case("adversarial/overlapping-open", QWEN3, '<tool_call<tool_call>{"name": "f", "arguments": {}}</tool_call>')
case("adversarial/repeated-close", THINK_ONLY, "<think>a</think></think></think>b")
case(
    "adversarial/surrogate-like-escapes-in-json",
    QWEN3,
    '<tool_call>{"name": "f", "arguments": {"e": "\\ud83d\\ude00"}}</tool_call>',
)
case(
    "adversarial/fullwidth-lookalike-delims",
    DEEPSEEK_R1,
    "<think>not</think> but <｜tool calls begin｜>",
    prefix="<｜Assistant｜>",
)
case(
    "adversarial/delimiter-in-code-block",
    THINK_ONLY,
    "<think>r</think>Use `</think>` to end and `<` + `think>` to start.",
)
case(
    "adversarial/brace-heavy-json",
    QWEN3,
    '<tool_call>{"name": "f", "arguments": {"t": "}}}{{{", "u": "</tool"}}</tool_call>',
)
case(
    "adversarial/rtl-and-bom",
    THINK_ONLY,
    "\ufeff<think>\u202eabc\u202c</think>\u05e9\u05dc\u05d5\u05dd",
    difference="implicit-concat",
    expected=msg(content="\ufeff\u05e9\u05dc\u05d5\u05dd", reasoning_content="\u202eabc\u202c"),
)
case(
    "adversarial/deepseek-mixed-width",
    DEEPSEEK_R1,
    "x</think>y<｜end▁of▁sentence｜>z",
    prefix="<｜Assistant｜><think>",
    difference="implicit-concat",
    expected=msg(reasoning_content="x", content="yz"),
)
case("adversarial/all-whitespace-regions", QWEN3, "<think> </think> \n <tool_call>[]</tool_call> ")
case(
    "adversarial/kimi-unclosed-call-before-next",
    KIMI_K2,
    '<|tool_call_begin|>functions.a:0<|tool_call_argument_begin|>{"x": 1}<|tool_call_begin|>functions.b:1<|tool_call_argument_begin|>{"y": 2}<|tool_call_end|>',
    prefix="<|im_assistant|>assistant<|im_middle|>",
)

# ---------------------------------------------------------------------------------------------
# error/: both implementations must raise
# ---------------------------------------------------------------------------------------------

case(
    "error/bad-json-tool-call",
    QWEN3,
    '<tool_call>{"name": "f", "arguments": {</tool_call>',
    error="ParseError",
)
case("error/truncated-tool-call", QWEN3, '<tool_call>{"name": "f", "argu', error="ParseError")
case(
    "error/close-inside-json-string",
    QWEN3,
    '<tool_call>{"name": "f", "arguments": {"s": "a</tool_call>b"}}</tool_call>',
    error="ParseError",
)
case("error/json-unquoted-keys-not-enabled", one("json"), "<v>{a: 1}</v>", error="ParseError")
case("error/json-trailing-garbage", one("json"), '<v>{"a": 1} trailing</v>', error="ParseError")
case("error/int-words", one("int"), "<v>forty two</v>", error="ParseError")
case("error/int-float-text", one("int"), "<v>3.0</v>", error="ParseError")
case("error/int-empty", one("int"), "<v>  </v>", error="ParseError")
case("error/float-words", one("float"), "<v>pi</v>", error="ParseError")
case(
    "error/transform-missing-key",
    one("json", transform={"n": "{content.name}"}),
    '<v>{"nom": 1}</v>',
    error="ParseError",
)
case(
    "error/transform-index-into-non-dict",
    one("json", transform={"n": "{content.name}"}),
    "<v>[1, 2]</v>",
    error="ParseError",
)
case(
    "error/transform-index-into-string",
    one("text", transform={"n": "{content.x}"}),
    "<v>abc</v>",
    error="ParseError",
)
case(
    "error/transform-each-not-list",
    tpl(
        {
            "v": {
                "open": "<v>",
                "close": "</v>",
                "content": "json",
                "transform_each": True,
                "transform": {"x": "{x}"},
            }
        }
    ),
    '<v>{"x": 1}</v>',
    error="ParseError",
)
case(
    "error/transform-each-non-dict-items",
    tpl(
        {
            "v": {
                "open": "<v>",
                "close": "</v>",
                "content": "json",
                "transform_each": True,
                "transform": {"x": "{x}"},
            }
        }
    ),
    "<v>[1, 2]</v>",
    error="ParseError",
)
case(
    "error/transform-each-missing-key",
    tpl(
        {
            "v": {
                "open": "<v>",
                "close": "</v>",
                "content": "json",
                "transform_each": True,
                "transform": {"x": "{x.y}"},
            }
        }
    ),
    '<v>[{"x": {"z": 1}}]</v>',
    error="ParseError",
)
case(
    "error/required-missing",
    tpl({"a": {"open": "<a>", "close": "</a>", "optional": False}, "content": {}}),
    "no tag",
    error="ParseError",
)
case(
    "error/required-implicit-missing",
    tpl({"a": {"open": "<a>", "close": "</a>"}, "content": {"optional": False}}),
    "<a>only</a>",
    error="ParseError",
)
case(
    "error/required-repeats-missing",
    tpl({"a": {"open": "<a>", "close": "</a>", "repeats": True, "optional": False}}),
    "",
    error="ParseError",
)
case(
    "error/join-non-string",
    tpl({"n": {"open": "<n>", "close": "</n>", "repeats": True, "join": ",", "content": "int"}}),
    "<n>1</n><n>2</n>",
    error="ParseError",
)
case(
    "error/xml-inline-value-parser-fails",
    one(
        "xml-inline",
        {"tag_pattern": r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>", "value_parser": {"name": "int"}},
    ),
    "<v><a>x</a></v>",
    error="ParseError",
)
case(
    "error/kv-lines-value-parser-fails",
    one("kv-lines", {"value_parser": {"name": "float"}}),
    "<v>a: one\n</v>",
    error="ParseError",
)
case(
    "error/json-string-delims-unclosed",
    one("json", {"string_delims": [["<s>", "</s>"]]}),
    '<v>{"a": <s>open}</v>',
    error="ParseError",
)
case("error/prefix-missing", QWEN3, "hello", prefix=None, error="ResponseTemplateError")

case(
    "error/value-parser-unknown",
    one("kv-lines", {"value_parser": {"name": "yaml"}}),
    "<v>a: 1\n</v>",
    error="ResponseTemplateError",
)

# Template errors (raised when the template is loaded).
T_OK_FIELD = {"open": "<a>", "close": "</a>"}
case(
    "error/template-open-and-open-pattern",
    tpl({"a": {"open": "<a>", "open_pattern": "<a>"}}),
    "x",
    error="TemplateError",
)
case(
    "error/template-close-and-close-pattern",
    tpl({"a": {"open": "<a>", "close": "</a>", "close_pattern": "</a>"}}),
    "x",
    error="TemplateError",
)
case("error/template-empty-literal", tpl({"a": {"open": "", "close": "</a>"}}), "x", error="TemplateError")
case(
    "error/template-empty-literal-in-list",
    tpl({"a": {"open": ["<a>", ""], "close": "</a>"}}),
    "x",
    error="TemplateError",
)
case("error/template-empty-list", tpl({"a": {"open": [], "close": "</a>"}}), "x", error="TemplateError")
case(
    "error/template-non-string-literal",
    tpl({"a": {"open": ["<a>", 3], "close": "</a>"}}),
    "x",
    error="TemplateError",
)
case(
    "error/template-literal-wrong-type", tpl({"a": {"open": 5, "close": "</a>"}}), "x", error="TemplateError"
)
case(
    "error/template-bad-regex",
    tpl({"a": {"open_pattern": "<a(", "close": "</a>"}}),
    "x",
    error="TemplateError",
)
case(
    "error/template-bad-close-regex",
    tpl({"a": {"open": "<a>", "close_pattern": "[unclosed"}}),
    "x",
    error="TemplateError",
)
case(
    "error/template-bad-anchor-regex",
    tpl({"a": T_OK_FIELD}, anchor={"start_anchor_pattern": "(?P<"}),
    "x",
    error="TemplateError",
)
case(
    "error/template-unknown-content",
    tpl({"a": {"open": "<a>", "close": "</a>", "content": "yaml"}}),
    "x",
    error="TemplateError",
)
case(
    "error/template-unknown-field-key",
    tpl({"a": {"open": "<a>", "close": "</a>", "strip": True}}),
    "x",
    error="TemplateError",
)
case("error/template-unknown-top-key", tpl({"a": T_OK_FIELD}, name="x"), "x", error="TemplateError")
case(
    "error/template-join-without-repeats",
    tpl({"a": {"open": "<a>", "close": "</a>", "join": ","}}),
    "x",
    error="TemplateError",
)
case(
    "error/template-join-not-string",
    tpl({"a": {"open": "<a>", "close": "</a>", "repeats": True, "join": 1}}),
    "x",
    error="TemplateError",
)
case(
    "error/template-transform-each-without-transform",
    tpl({"a": {"open": "<a>", "close": "</a>", "transform_each": True}}),
    "x",
    error="TemplateError",
)
case(
    "error/template-transform-each-not-bool",
    tpl({"a": {"open": "<a>", "close": "</a>", "transform_each": "yes", "transform": "{content}"}}),
    "x",
    error="TemplateError",
)
case(
    "error/template-mixed-placeholder",
    tpl({"a": {"open": "<a>", "close": "</a>", "transform": {"x": "Hello {content}"}}}),
    "x",
    error="TemplateError",
)
case(
    "error/template-mixed-placeholder-nested",
    tpl({"a": {"open": "<a>", "close": "</a>", "transform": {"x": [{"y": "{content}!"}]}}}),
    "x",
    error="TemplateError",
)
case(
    "error/template-group-without-transform",
    tpl({"a": {"open_pattern": "<a (?P<n>\\w+)>", "close": "</a>"}}),
    "x",
    error="TemplateError",
)
case(
    "error/template-close-group-without-transform",
    tpl({"a": {"open": "<a>", "close_pattern": "</a(?P<n>\\d)>"}}),
    "x",
    error="TemplateError",
)
case("error/template-two-implicit", tpl({"a": {}, "b": {"close": "x"}}), "x", error="TemplateError")
case("error/template-no-anchor", {"fields": {"a": T_OK_FIELD}}, "x", error="TemplateError")
case(
    "error/template-both-anchors",
    tpl({"a": T_OK_FIELD}, anchor={"start_anchor": "A", "start_anchor_pattern": "A"}),
    "x",
    error="TemplateError",
)
case("error/template-empty-anchor", tpl({"a": T_OK_FIELD}, anchor=""), "x", error="TemplateError")
case("error/template-version-2", tpl({"a": T_OK_FIELD}, version=2), "x", error="TemplateError")
case("error/template-fields-empty", tpl({}), "x", error="TemplateError")
case("error/template-fields-missing", {"start_anchor": "A"}, "x", error="TemplateError")
case(
    "error/template-fields-not-dict",
    {"start_anchor": "A", "fields": [T_OK_FIELD]},
    "x",
    error="TemplateError",
)
case(
    "error/template-defaults-not-dict", tpl({"a": T_OK_FIELD}, defaults=["role"]), "x", error="TemplateError"
)
case("error/template-not-a-dict", ["fields"], "x", error="TemplateError")
case("error/template-field-not-dict", tpl({"a": "<a>"}), "x", error="TemplateError")
case(
    "error/template-double-brace-placeholder",
    tpl({"a": {"open": "<a>", "close": "</a>", "transform": {"x": "{{content}}"}}}),
    "x",
    error="TemplateError",
)

# ---------------------------------------------------------------------------------------------
# difference/: intended differences from the reference (see docs/differences.md)
# ---------------------------------------------------------------------------------------------

case(
    "difference/implicit-concat-around-tool-call",
    QWEN3,
    'Let me check.\n<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>\nDone checking.',
    difference="implicit-concat",
    expected=msg(content="Let me check.\n\nDone checking.", tool_calls=[call("f", {})]),
)
case(
    "difference/implicit-concat-trailing-newline-after-call",
    QWEN3,
    'Calling f.<tool_call>{"name": "f", "arguments": {}}</tool_call>\n',
    difference="implicit-concat",
    expected=msg(content="Calling f.", tool_calls=[call("f", {})]),
)
case(
    "difference/implicit-concat-text-after-im-end",
    QWEN3,
    "Hello<|im_end|>\n",
    difference="implicit-concat",
    expected=msg(content="Hello"),
)
case(
    "difference/implicit-concat-around-think",
    THINK_ONLY,
    "Before. <think>mid</think> After.",
    difference="implicit-concat",
    expected=msg(content="Before.  After.", reasoning_content="mid"),
)
case(
    "difference/implicit-concat-three-segments",
    tpl({"x": {"open": "<x>", "close": "</x>", "repeats": True}, "content": {}}),
    "a<x>1</x>b<x>2</x>c",
    difference="implicit-concat",
    expected=msg(content="abc", x=["1", "2"]),
)
case(
    "difference/implicit-concat-int-parsed-once",
    tpl({"x": {"open": "<x>", "close": "</x>"}, "content": {"content": "int"}}),
    "1<x>ignored</x>2",
    difference="implicit-concat",
    expected=msg(content=12, x="ignored"),
)
case(
    "difference/implicit-concat-strip-false",
    tpl({"x": {"open": "<x>", "close": "</x>"}, "content": {"content_args": {"strip": False}}}),
    " a <x>1</x> b ",
    difference="implicit-concat",
    expected=msg(content=" a  b ", x="1"),
)
case(
    "difference/implicit-concat-prefix-and-generation",
    QWEN3,
    '<tool_call>{"name": "f", "arguments": {}}</tool_call> and more.',
    prefix=CHATML + "Prefilled words.",
    difference="implicit-concat",
    expected=msg(content="Prefilled words. and more.", tool_calls=[call("f", {})]),
)
case(
    "difference/implicit-concat-multi-turn",
    QWEN3,
    "Part two.",
    prefix=MULTI_TURN_QWEN + "Part one.<think>late thought</think>",
    difference="implicit-concat",
    expected=msg(content="Part one.Part two.", reasoning_content="late thought"),
)
case(
    "difference/implicit-concat-kimi-content-before-calls",
    KIMI_K2,
    '<think>I\'m\nthinking\n</think>\n\nHello, world!\n\n<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{"a": 1}<|tool_call_end|><|tool_calls_section_end|>\n',
    prefix="<|im_assistant|>assistant<|im_middle|>",
    difference="implicit-concat",
    expected=msg(
        reasoning_content="I'm\nthinking",
        content="Hello, world!",
        tool_calls=[call("f", {"a": 1}, id="functions.f:0")],
    ),
)
case(
    "difference/repeat-concat-two-thinks",
    THINK_ONLY,
    "<think>first</think>x<think>second</think>",
    difference="repeat-concat",
    expected=msg(reasoning_content="firstsecond", content="x"),
)
case(
    "difference/repeat-concat-think-in-content",
    tpl({"reasoning_content": THINK, "content": {"open": "<answer>", "close": "</answer>"}}),
    "<think>a</think><answer>b</answer><think>c</think>",
    difference="repeat-concat",
    expected=msg(reasoning_content="ac", content="b"),
)
case(
    "difference/repeat-concat-unclosed-second",
    tpl({"reasoning_content": THINK, "content": {"open": "<answer>", "close": "</answer>"}}),
    "<think>a </think><answer>b</answer><think> tail",
    difference="repeat-concat",
    expected=msg(reasoning_content="atail", content="b"),
)
case(
    "difference/repeat-concat-empty-second",
    tpl({"reasoning_content": THINK, "content": {"open": "<answer>", "close": "</answer>"}}),
    "<think>kept</think><answer>b</answer><think></think>",
    difference="repeat-concat",
    expected=msg(reasoning_content="kept", content="b"),
)
case(
    "difference/repeat-concat-non-string-error",
    tpl({"v": {"open": "<v>", "close": "</v>", "content": "json"}}),
    '<v>{"a": 1}</v><v>{"b": 2}</v>',
    difference="repeat-concat",
    expected=Raises("ParseError"),
)
case(
    "difference/repeat-concat-int-error",
    tpl({"v": {"open": "<v>", "close": "</v>", "content": "int"}}),
    "<v>1</v><v>2</v>",
    difference="repeat-concat",
    expected=Raises("ParseError"),
)
case(
    "difference/strict-bool-yes",
    one("bool"),
    "<v>yes</v>",
    difference="strict-bool",
    expected=Raises("ParseError"),
)
case(
    "difference/strict-bool-no",
    one("bool"),
    "<v>no</v>",
    difference="strict-bool",
    expected=Raises("ParseError"),
)
case(
    "difference/strict-bool-two",
    one("bool"),
    "<v>2</v>",
    difference="strict-bool",
    expected=Raises("ParseError"),
)
case(
    "difference/strict-bool-sentence",
    one("bool"),
    "<v>true, I think</v>",
    difference="strict-bool",
    expected=Raises("ParseError"),
)
case(
    "difference/strict-bool-value-parser",
    one("kv-lines", {"value_parser": {"name": "bool"}}),
    "<v>a: true\nb: maybe\n</v>",
    difference="strict-bool",
    expected=Raises("ParseError"),
)
case(
    "feature/close-captures-in-transform",
    tpl(
        {
            "calls": {
                "open_pattern": r"<call (?P<name>\w+)>",
                "close_pattern": r"</call id=(?P<cid>\d+)>",
                "repeats": True,
                "transform": {"name": "{name}", "id": "{cid}", "text": "{content}"},
            }
        }
    ),
    "<call f>body</call id=12>",
)
case(
    "feature/close-captures-only-close",
    tpl(
        {
            "v": {
                "open": "<v>",
                "close_pattern": r"</v:(?P<tag>\w+)>",
                "transform": {"tag": "{tag}", "value": "{content}"},
            }
        }
    ),
    "<v>x</v:end>",
)
case(
    "difference/required-after-drop-whitespace",
    tpl({"answer": {"open": "<a>", "close": "</a>", "optional": False}}),
    "<a>   </a>",
    difference="required-after-drop",
    expected=Raises("ParseError"),
)
case(
    "difference/required-after-drop-empty-json",
    tpl({"args": {"open": "<a>", "close": "</a>", "content": "json", "optional": False}}),
    "<a>{}</a>",
    difference="required-after-drop",
    expected=Raises("ParseError"),
)
case(
    "difference/required-after-drop-implicit",
    tpl({"reasoning_content": THINK, "content": {"optional": False}}),
    "<think>only reasoning</think>\n",
    difference="required-after-drop",
    expected=Raises("ParseError"),
)
case(
    "difference/typed-errors-unknown-root",
    one("text", transform={"x": "{missing}"}),
    "<v>a</v>",
    difference="typed-errors",
    expected=Raises("TemplateError"),
)
case(
    "difference/typed-errors-group-not-participating",
    tpl(
        {
            "calls": {
                "open_pattern": r"<call(?: id=(?P<id>\d+))?>",
                "close": "</call>",
                "transform": {"id": "{id}", "text": "{content}"},
            }
        }
    ),
    "<call>no id</call>",
    difference="typed-errors",
    expected=Raises("ParseError"),
)
case(
    "difference/typed-errors-numeric-placeholder",
    one("text", transform={"x": "{0}"}),
    "<v>a</v>",
    difference="typed-errors",
    expected=Raises("TemplateError"),
)
case(
    "difference/typed-errors-transform-each-missing-var",
    tpl(
        {
            "v": {
                "open": "<v>",
                "close": "</v>",
                "content": "json",
                "transform_each": True,
                "transform": {"x": "{name}"},
            }
        }
    ),
    '<v>[{"other": 1}]</v>',
    difference="typed-errors",
    expected=Raises("ParseError"),
)


# ---------------------------------------------------------------------------------------------
# probe/: behaviours the reference leaves loose; ours may differ (each is listed in the report)
# ---------------------------------------------------------------------------------------------

case(
    "probe/xml-inline-missing-tag-pattern-unused",
    tpl({"v": {"open": "<v>", "close": "</v>", "content": "xml-inline"}, "content": {}}),
    "no v region here",
)
case(
    "probe/unknown-content-arg", tpl({"content": {"content_args": {"strip": True, "colour": "blue"}}}), "text"
)
case("probe/repeats-not-bool", tpl({"n": {"open": "<n>", "close": "</n>", "repeats": "yes"}}), "<n>a</n>")
case("probe/optional-not-bool", tpl({"n": {"open": "<n>", "close": "</n>", "optional": 0}}), "nothing")
case(
    "probe/json-sentinel-chars",
    one("json", {"string_delims": [["<s>", "</s>"]]}),
    '<v>{"a": <s>x\x01y</s>}</v>',
)
case(
    "probe/group-named-content",
    tpl({"v": {"open_pattern": r"<(?P<content>\w+)>", "close": "</v>", "transform": {"x": "{content}"}}}),
    "<abc>body</v>",
)
case(
    "probe/unicode-placeholder",
    tpl(
        {
            "v": {
                "open_pattern": r"<v (?P<名前>\w+)>",
                "close": "</v>",
                "transform": {"name": "{名前}", "c": "{content}"},
            }
        }
    ),
    "<v 太郎>x</v>",
)
case("probe/int-non-ascii-digits", one("int"), "<v>\u0663\u0664</v>")
case("probe/float-nan-text", one("float"), "<v>nan</v>")


case("probe/int-strip-false", one("int", {"strip": False}), "<v> 5 </v>")
case(
    "probe/unresolvable-placeholder-field-unused",
    tpl({"v": {"open": "<v>", "close": "</v>", "transform": {"x": "{nope}"}}, "content": {}}),
    "the v field never appears",
)
case(
    "probe/open-pattern-caret-alone",
    tpl({"reasoning_content": {"open_pattern": r"(?:^|<think>)", "close": "</think>"}, "content": {}}),
    "reasoning without an open tag</think>answer",
)
case(
    "probe/anchor-completed-by-generation",
    QWEN3,
    "ant\nHello",
    prefix="<|im_start|>user\nq<|im_end|>\n<|im_start|>assist",
    difference="anchor-required",
    expected=Raises("AnchorNotFoundError"),
)

# ---------------------------------------------------------------------------------------------
# stream/: delimiters that stress streaming hold-back (also compared with the reference)
# ---------------------------------------------------------------------------------------------

case(
    "stream/literal-close-list-prefix-overlap-long",
    tpl({"m": {"open": "<m>", "close": ["<|end|>", "<|end|>!"]}, "content": {}}),
    "<m>x<|end|>!y",
)
case(
    "stream/literal-close-list-prefix-overlap-short",
    tpl({"m": {"open": "<m>", "close": ["<|end|>", "<|end|>!"]}, "content": {}}),
    "<m>x<|end|>y",
)
case(
    "stream/literal-close-list-prefix-overlap-at-eos",
    tpl({"m": {"open": "<m>", "close": ["<|end|>", "<|end|>!"]}, "content": {}}),
    "<m>x<|end|>",
)
case(
    "stream/literal-open-list-prefix-overlap",
    tpl({"a": {"open": ["<a", "<ab>"], "close": "</a>"}, "content": {}}),
    "<ab>one</a> <a two</a>",
    difference="repeat-concat",
    expected=msg(a="onetwo"),
)
case(
    "stream/close-dollar-only",
    tpl({"m": {"open": "<m>", "close_pattern": r"$"}, "content": {}}),
    "pre<m>to the end\n",
    difference="implicit-concat",
    expected=msg(content="pre", m="to the end"),
)
case(
    "stream/lookbehind-open-across-chunks",
    tpl({"answer": {"open_pattern": r"(?<=\n\n)Answer:"}, "content": {}}),
    "Some text\nAnswer: no\n\nAnswer: yes",
)
case(
    "stream/greedy-name-group",
    tpl(
        {
            "calls": {
                "open_pattern": r"<call:(?P<name>[\w.]+)",
                "close": "</call>",
                "repeats": True,
                "content": "json",
                "transform": {"name": "{name}", "args": "{content}"},
            }
        }
    ),
    '<call:very.long.function_name_here{"a": 1}</call><call:x{}</call>',
)
case(
    "stream/optional-suffix-open",
    tpl(
        {
            "t": {
                "open_pattern": r"<tool_call>\n?",
                "close_pattern": r"\n?</tool_call>",
                "repeats": True,
                "content": "json",
            }
        }
    ),
    '<tool_call>\n{"a": 1}\n</tool_call><tool_call>{"b": 2}</tool_call>',
)
case(
    "stream/close-with-optional-suffix",
    tpl(
        {
            "f": {"open": "<function>", "close_pattern": r"</function>(?:\s*</tool_call>)?", "repeats": True},
            "content": {},
        }
    ),
    "<function>a</function>\n\n</tool_call><function>b</function>\n\nnot a tag",
)
case(
    "stream/close-with-optional-suffix-at-eos",
    tpl(
        {
            "f": {"open": "<function>", "close_pattern": r"</function>(?:\s*</tool_call>)?", "repeats": True},
            "content": {},
        }
    ),
    "<function>a</function>\n\n",
)
case(
    "stream/repeated-char-delimiters", tpl({"m": {"open": "<<<", "close": ">>>"}, "content": {}}), "<<<<x>>>>"
)
case(
    "stream/self-overlapping-literal",
    tpl({"m": {"open": "aab", "close": "bba"}, "content": {}}),
    "aaab xx bbba",
)
case(
    "stream/long-literal",
    tpl(
        {
            "m": {"open": "<" + "long-delimiter-" * 4 + ">", "close": "</" + "long-delimiter-" * 4 + ">"},
            "content": {},
        }
    ),
    "a<long-delimiter-long-delimiter-long-delimiter-long-delim>b<"
    + "long-delimiter-" * 4
    + ">inside</"
    + "long-delimiter-" * 4
    + ">c",
    difference="implicit-concat",
    expected=msg(content="a<long-delimiter-long-delimiter-long-delimiter-long-delim>bc", m="inside"),
)
case(
    "stream/emoji-delimiters",
    tpl({"m": {"open": "👨\u200d👩\u200d👧", "close": "🏁"}, "content": {}}),
    "👨\u200d👩 no 👨\u200d👩\u200d👧family🏁👨 done",
    difference="implicit-concat",
    expected=msg(content="👨\u200d👩 no 👨 done", m="family"),
)
case(
    "stream/implicit-close-shares-prefix-with-open",
    tpl({"sys": {"open": "<|im_start|>", "close": "<|im_sep|>"}, "content": {"close": "<|im_end|>"}}),
    "hello<|im_start|>meta<|im_sep|>",
)
case(
    "stream/many-small-regions",
    QWEN3,
    "".join(f'<tool_call>{{"name": "f{i}", "arguments": {{"i": {i}}}}}</tool_call>' for i in range(40)),
)
case(
    "stream/regex-alternation-prefix",
    tpl({"r": {"open": "<think>", "close_pattern": r"</think>|</thinking>"}, "content": {}}),
    "<think>x</thinking>y",
)
case("stream/empty-text-region-open-in-prefix", QWEN3, "", prefix=CHATML + "<think>\npartial")
case(
    "stream/zero-width-open-no-implicit",
    tpl(
        {
            "call": {
                "open_pattern": r'(?=\{"name")',
                "close_pattern": r"(?<=\})\s*;|$",
                "repeats": True,
                "content": "json",
            }
        }
    ),
    '{"name": "a"}; {"name": "b"}',
)
case(
    "stream/lookahead-close-then-open",
    MISTRAL,
    '[TOOL_CALLS]a[ARGS]{"x": 1}[TOOL_CALLS]b[ARGS]{"y": [1, 2]}',
    prefix="[/INST]",
)
case(
    "stream/partial-anchor-like-text",
    tpl({"c": {"open": "<c>", "close": "</c>"}, "content": {}}),
    "<c <c> <c>> </c </c>",
)

case(
    "stream/dollar-before-newline-at-prefix-end",
    tpl({"m": {"open": "<m>", "close_pattern": r"</m>|$"}, "content": {}}),
    "more</m>after",
    prefix=CHATML + "<m>x\n",
)
case(
    "tools/number-big-integer-text",
    XML_CALLS,
    xml_call("typed", n="999999999999999999999999999999"),
    tools=TYPED_TOOLS,
)
case("tools/number-big-exponent", XML_CALLS, xml_call("typed", n="1e50"), tools=TYPED_TOOLS)
case(
    "tools/integer-almost-integral",
    XML_CALLS,
    xml_call("typed", i="1.999999999999999999999999999999"),
    tools=TYPED_TOOLS,
)


def _no_docstring(x: int) -> None:
    pass


def _bad_hint(t: bytes) -> None:
    """Bad.

    Args:
        t: bytes have no JSON-schema type.
    """


case(
    "error/tool-callable-no-docstring",
    XML_CALLS,
    xml_call("typed", i="1"),
    tools=[_no_docstring],
    error="ResponseTemplateError",
)
case(
    "error/tool-callable-bad-hint",
    XML_CALLS,
    xml_call("typed", i="1"),
    tools=[_bad_hint],
    error="ResponseTemplateError",
)
case("probe/tool-not-a-schema", XML_CALLS, xml_call("typed", i="1"), tools=["typed", TYPED_TOOLS[0]])
case(
    "probe/tool-without-name",
    XML_CALLS,
    xml_call("typed", i="1"),
    tools=[{"type": "function", "function": {}}, TYPED_TOOLS[0]],
)

JOIN_R = {"open": "<r>", "close": "</r>", "repeats": True, "join": "\n"}
case(
    "defaults/repeats-default-empty-list",
    tpl({"r": {"open": "<r>", "close": "</r>", "repeats": True}}, defaults={"role": "assistant", "r": []}),
    "<r>a</r>",
)
case(
    "defaults/join-default-none",
    tpl({"r": JOIN_R}, defaults={"role": "assistant", "r": None}),
    "<r>a</r><r>b</r>",
)
case(
    "defaults/required-satisfied-by-default",
    tpl({"r": {"open": "<r>", "close": "</r>", "optional": False}}, defaults={"role": "assistant", "r": "d"}),
    "none",
)
case(
    "difference/repeat-concat-with-default",
    tpl({"r": {"open": "<r>", "close": "</r>"}}, defaults={"role": "assistant", "r": "d"}),
    "<r>a</r><r>b</r>",
    difference="repeat-concat",
    expected=msg(r="ab"),
)
case(
    "probe/defaults-join-seed-empty",
    tpl({"r": JOIN_R}, defaults={"role": "assistant", "r": ""}),
    "<r>a</r><r>b</r>",
)
case(
    "probe/defaults-join-seed-text",
    tpl({"r": JOIN_R}, defaults={"role": "assistant", "r": "start"}),
    "<r>a</r>",
)
case(
    "probe/defaults-repeats-seed-list",
    tpl(
        {"r": {"open": "<r>", "close": "</r>", "repeats": True}}, defaults={"role": "assistant", "r": ["pre"]}
    ),
    "<r>a</r>",
)
case(
    "probe/defaults-repeats-seed-string",
    tpl({"r": {"open": "<r>", "close": "</r>", "repeats": True}}, defaults={"role": "assistant", "r": "x"}),
    "<r>a</r>",
)
case(
    "probe/defaults-required-empty-default",
    tpl({"r": {"open": "<r>", "close": "</r>", "optional": False}}, defaults={"role": "assistant", "r": ""}),
    "none",
)

case("probe/json-deep-nesting-600", one("json"), "<v>" + "[" * 600 + "]" * 600 + "</v>")
case(
    "difference/typed-errors-json-too-deep",
    one("json"),
    "<v>" + "[" * 3000 + "]" * 3000 + "</v>",
    difference="typed-errors",
    expected=Raises("ParseError"),
    notes="the reference raises RecursionError",
)

# ---------------------------------------------------------------------------------------------
# sample/: real model outputs from public parser test suites, with the draft template of their
# family (research/draft_templates.json) and the generation prompt they were produced after.
# ---------------------------------------------------------------------------------------------

# Schemas for the tools the sampled test suites declare (by name; parameters as the samples use them).
SAMPLE_TOOLS = [
    fn("special_function", {"arg1": {"type": "integer"}}, ["arg1"]),
    fn("special_function_with_opt", {"arg1": {"type": "integer"}, "arg2": {"type": "integer"}}, ["arg1"]),
    fn("python", {"code": {"type": "string"}}, ["code"]),
    fn("get_time", {"city": {"type": "string"}}, ["city"]),
    fn("get_weather", {"city": {"type": "string"}, "unit": {"type": "string"}}),
    fn("toggle", {"enabled": {"type": "boolean"}}, ["enabled"]),
    fn("set_nullable", {"value": {"type": "null"}}),
    fn("set_config", {"config": {"type": "object"}}),
    fn("amount", {"orig": {"type": "number"}}),
    fn("magic_int", {"ref": {"type": "integer"}, "name": {"type": "string"}}),
    fn("todo_list", {"todos": {"type": "array", "items": {"type": "string"}}}),
    fn(
        "complex_function",
        {
            "name": {"type": "string"},
            "age": {"type": "integer"},
            "active": {"type": "boolean"},
            "score": {"type": "number"},
        },
    ),
    fn("empty_args", {}),
    fn(
        "union_args",
        {
            "limit": {"anyOf": [{"type": "integer"}, {"type": "object"}]},
            "filter": {"type": ["array", "string"]},
            "label": {"type": "string"},
        },
    ),
    fn(
        "edit",
        {
            "filename": {"type": "string"},
            "oldString": {"type": "string"},
            "newString": {"type": "string"},
            "replaceAll": {"type": "boolean"},
        },
    ),
    fn("run_in_terminal", {"command": {"type": "string"}}),
    fn("html", {"markup": {"type": "string"}}),
    fn(
        "get_current_temperature",
        {"location": {"type": "string"}, "unit": {"type": "string"}, "detail_level": {"type": "integer"}},
    ),
    fn(
        "tool_2req_4opt",
        {
            "req1": {"type": "string"},
            "req2": {"type": "integer"},
            "opt1": {"type": "string"},
            "opt2": {"type": "integer"},
            "opt3": {"type": "string"},
            "opt4": {"type": "integer"},
        },
    ),
    fn(
        "tool_2req_5opt",
        {
            "req1": {"type": "string"},
            "req2": {"type": "integer"},
            "opt1": {"type": "string"},
            "opt2": {"type": "integer"},
            "opt3": {"type": "string"},
            "opt4": {"type": "integer"},
            "opt5": {"type": "string"},
        },
    ),
    fn("nested_args", {"tags": {"type": "array"}, "entries": {"type": "array"}}),
    fn("imaginary_number", {"number": {"type": "object"}}),
    fn("set_nullable_int", {"count": {"type": ["integer", "null"]}}),
]

SAMPLE_TEMPLATES = {
    "qwen3-coder": {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|im_start|>assistant\n",
        "fields": {
            "reasoning_content": {
                "open": "<think>",
                "close_pattern": "</think>|(?=<tool_call>)",
                "content": "text",
            },
            "tool_calls": {
                "open_pattern": "(?:<tool_call>\\s*)?<function=(?P<name>[^>\\n]+)>",
                "close_pattern": "</function>(?:\\s*</tool_call>)?",
                "repeats": True,
                "content": "xml-inline",
                "content_args": {
                    "tag_pattern": "<parameter=(?P<key>[^>\\n]+)>\\n?(?P<value>.*?)\\n?</parameter>"
                },
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
            },
            "content": {"close": "<|im_end|>", "content": "text"},
        },
    },
    "mistral-v11+": {
        "defaults": {"role": "assistant"},
        "start_anchor": "[/INST]",
        "fields": {
            "reasoning_content": {"open": "[THINK]", "close": "[/THINK]", "content": "text"},
            "tool_calls": {
                "open_pattern": "\\[TOOL_CALLS\\]\\s*(?P<name>[^\\[\\]{}\\s]+?)(?:\\[CALL_ID\\][^\\[]*?)?(?:\\[ARGS\\])?(?=\\s*\\{)",
                "close_pattern": "(?=\\[TOOL_CALLS\\])|</s>",
                "repeats": True,
                "content": "json",
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
            },
            "content": {"close": "</s>", "content": "text"},
        },
    },
    "cohere-command-r7b": {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>",
        "fields": {
            "reasoning_content": {
                "open": "<|START_THINKING|>",
                "close": "<|END_THINKING|>",
                "content": "text",
            },
            "content": {"open": "<|START_RESPONSE|>", "close": "<|END_RESPONSE|>", "content": "text"},
            "tool_calls": {
                "open": "<|START_ACTION|>",
                "close": "<|END_ACTION|>",
                "content": "json",
                "transform_each": True,
                "transform": {
                    "type": "function",
                    "function": {"name": "{tool_name}", "arguments": "{parameters}"},
                },
            },
        },
    },
    "cohere-command-a-reasoning": {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>",
        "fields": {
            "reasoning_content": {
                "open": "<|START_THINKING|>",
                "close": "<|END_THINKING|>",
                "content": "text",
            },
            "content": {"open": "<|START_TEXT|>", "close": "<|END_TEXT|>", "content": "text"},
            "tool_calls": {
                "open": "<|START_ACTION|>",
                "close": "<|END_ACTION|>",
                "content": "json",
                "transform_each": True,
                "transform": {
                    "type": "function",
                    "function": {"name": "{tool_name}", "arguments": "{parameters}"},
                },
            },
        },
    },
    "gemma-4": {
        "defaults": {"role": "assistant"},
        "start_anchor": ["<|turn>model\n", "<tool_response|>"],
        "fields": {
            "reasoning_content": {
                "open_pattern": "<\\|channel>thought\\n?",
                "close": "<channel|>",
                "content": "text",
            },
            "tool_calls": {
                "open_pattern": "<\\|tool_call>call:(?P<name>[\\w.-]+)",
                "close": "<tool_call|>",
                "repeats": True,
                "content": "json",
                "content_args": {"unquoted_keys": True, "string_delims": [['<|"|>', '<|"|>']]},
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
            },
            "content": {"close": ["<turn|>", "<|tool_response>", "<eos>"], "content": "text"},
        },
    },
    "hermes": {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|im_start|>assistant\n",
        "fields": {
            "reasoning_content": {"open": "<think>", "close": "</think>", "content": "text"},
            "tool_calls": {
                "open": "<tool_call>",
                "close": "</tool_call>",
                "repeats": True,
                "content": "json",
                "transform": {"type": "function", "function": "{content}"},
            },
            "content": {"close": "<|im_end|>", "content": "text"},
        },
    },
    "granite-4": {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|start_of_role|>assistant<|end_of_role|>",
        "fields": {
            "reasoning_content": {"open": "<think>", "close": "</think>", "content": "text"},
            "tool_calls": {
                "open": "<tool_call>",
                "close": "</tool_call>",
                "repeats": True,
                "content": "json",
                "transform": {"type": "function", "function": "{content}"},
            },
            "content": {"close": "<|end_of_text|>", "content": "text"},
        },
    },
    "seed-oss": {
        "defaults": {"role": "assistant"},
        "start_anchor": "<seed:bos>assistant\n",
        "fields": {
            "reasoning_content": {"open": "<seed:think>", "close": "</seed:think>", "content": "text"},
            "tool_calls": {
                "open_pattern": "(?:<seed:tool_call>\\s*)?<function=(?P<name>[^>\\n]+)>",
                "close_pattern": "</function>(?:\\s*</seed:tool_call>)?",
                "repeats": True,
                "content": "xml-inline",
                "content_args": {
                    "tag_pattern": "<parameter=(?P<key>[^>\\n]+)>(?P<value>.*?)</parameter>",
                    "value_parser": {"name": "json", "args": {"allow_non_json": True}},
                },
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
            },
            "content": {"close": "<seed:eos>", "content": "text"},
        },
    },
    "deepseek-v3.1": {
        "defaults": {"role": "assistant"},
        "start_anchor": "<｜Assistant｜>",
        "fields": {
            "reasoning_content": {
                "open_pattern": "<think>|^(?=</think>)",
                "close": "</think>",
                "content": "text",
            },
            "tool_calls": {
                "open_pattern": "(?:<｜tool▁calls▁begin｜>\\s*)?<｜tool▁call▁begin｜>(?P<name>[^<\\n]+?)<｜tool▁sep｜>",
                "close_pattern": "\\s*<｜tool▁call▁end｜>(?:\\s*<｜tool▁calls▁end｜>)?",
                "repeats": True,
                "content": "json",
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
            },
            "content": {"close": "<｜end▁of▁sentence｜>", "content": "text"},
        },
    },
    "deepseek-v3.2-dsml": {
        "defaults": {"role": "assistant"},
        "start_anchor": "<｜Assistant｜>",
        "fields": {
            "reasoning_content": {
                "open_pattern": "<think>|^(?=</think>)",
                "close_pattern": "</think>|(?=<｜DSML｜function_calls>)",
                "content": "text",
            },
            "tool_calls": {
                "open_pattern": '(?:<｜DSML｜function_calls>\\s*)?<｜DSML｜invoke name=\\"(?P<name>[^\\"]+)\\">',
                "close_pattern": "</｜DSML｜invoke>(?:\\s*</｜DSML｜function_calls>)?",
                "repeats": True,
                "content": "xml-inline",
                "content_args": {
                    "tag_pattern": '<｜DSML｜parameter name=\\"(?P<key>[^\\"]+)\\" string=\\"(?:true|false)\\">(?P<value>.*?)</｜DSML｜parameter>',
                    "value_parser": {"name": "json", "args": {"allow_non_json": True}},
                },
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
            },
            "content": {"close": "<｜end▁of▁sentence｜>", "content": "text"},
        },
    },
    "deepseek-v4-dsml": {
        "defaults": {"role": "assistant"},
        "start_anchor": "<｜Assistant｜>",
        "fields": {
            "reasoning_content": {
                "open_pattern": "<think>|^(?=</think>)",
                "close_pattern": "</think>|(?=<｜DSML｜tool_calls>)",
                "content": "text",
            },
            "tool_calls": {
                "open_pattern": '(?:<｜DSML｜tool_calls>\\s*)?<｜DSML｜invoke name=\\"(?P<name>[^\\"]+)\\">',
                "close_pattern": "</｜DSML｜invoke>(?:\\s*</｜DSML｜tool_calls>)?",
                "repeats": True,
                "content": "xml-inline",
                "content_args": {
                    "tag_pattern": '<｜DSML｜parameter name=\\"(?P<key>[^\\"]+)\\" string=\\"(?:true|false)\\">(?P<value>.*?)</｜DSML｜parameter>',
                    "value_parser": {"name": "json", "args": {"allow_non_json": True}},
                },
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
            },
            "content": {"close": "<｜end▁of▁sentence｜>", "content": "text"},
        },
    },
    "glm-4.5/4.6": {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|assistant|>",
        "fields": {
            "reasoning_content": {
                "open_pattern": "<think>|^(?=</think>)",
                "close": "</think>",
                "repeats": True,
                "join": "",
                "content": "text",
            },
            "tool_calls": {
                "open_pattern": "<tool_call>\\s*(?P<name>[^\\s<]+)\\s*",
                "close": "</tool_call>",
                "repeats": True,
                "content": "xml-inline",
                "content_args": {
                    "tag_pattern": "<arg_key>(?P<key>.*?)</arg_key>\\s*<arg_value>(?P<value>.*?)</arg_value>",
                    "value_parser": {"name": "json", "args": {"allow_non_json": True}},
                },
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
            },
            "content": {"close": ["<|user|>", "<|observation|>", "<|endoftext|>"], "content": "text"},
        },
    },
    "glm-4.7": {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|assistant|>",
        "fields": {
            "reasoning_content": {
                "open_pattern": "<think>|^(?=</think>)",
                "close": "</think>",
                "repeats": True,
                "join": "",
                "content": "text",
            },
            "tool_calls": {
                "open_pattern": "<tool_call>\\s*(?P<name>[^\\s<]+)\\s*",
                "close": "</tool_call>",
                "repeats": True,
                "content": "xml-inline",
                "content_args": {
                    "tag_pattern": "<arg_key>(?P<key>.*?)</arg_key>\\s*<arg_value>(?P<value>.*?)</arg_value>",
                    "value_parser": {"name": "json", "args": {"allow_non_json": True}},
                },
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
            },
            "content": {"close": ["<|user|>", "<|observation|>", "<|endoftext|>"], "content": "text"},
        },
    },
    "kimi-k2": {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|im_assistant|>assistant<|im_middle|>",
        "fields": {
            "reasoning_content": {
                "open": "<think>",
                "close_pattern": "</think>|(?=<\\|tool_calls?_section_begin\\|>|<\\|tool_call_begin\\|>)",
                "content": "text",
            },
            "tool_calls": {
                "open_pattern": "(?:<\\|tool_calls?_section_begin\\|>\\s*)?<\\|tool_call_begin\\|>\\s*(?P<id>(?:functions\\.)?(?P<name>[\\w.\\-]+?)(?::\\d+)?)\\s*<\\|tool_call_argument_begin\\|>",
                "close_pattern": "\\s*<\\|tool_call_end\\|>(?:\\s*<\\|tool_calls?_section_end\\|>)?|(?=<\\|tool_call_begin\\|>)",
                "repeats": True,
                "content": "json",
                "transform": {
                    "type": "function",
                    "id": "{id}",
                    "function": {"name": "{name}", "arguments": "{content}"},
                },
            },
            "content": {"close": "<|im_end|>", "content": "text"},
        },
    },
    "reka-edge": {
        "defaults": {"role": "assistant"},
        "start_anchor": "assistant:",
        "fields": {
            "reasoning_content": {"open": "<think>", "close": "</think>", "content": "text"},
            "tool_calls": {
                "open": "<tool_call>",
                "close": "</tool_call>",
                "repeats": True,
                "content": "json",
                "transform": {"type": "function", "function": "{content}"},
            },
            "content": {"close": "<sep>", "content": "text"},
        },
    },
    "minimax-m2": {
        "defaults": {"role": "assistant"},
        "start_anchor": "]~b]ai\n",
        "fields": {
            "reasoning_content": {"open": "<think>", "close": "</think>", "content": "text"},
            "tool_calls": {
                "open_pattern": '(?:<minimax:tool_call>\\s*)?<invoke name=\\"(?P<name>[^\\"]+)\\">',
                "close_pattern": "</invoke>(?:\\s*</minimax:tool_call>)?",
                "repeats": True,
                "content": "xml-inline",
                "content_args": {
                    "tag_pattern": '<parameter name=\\"(?P<key>[^\\"]+)\\">(?P<value>.*?)</parameter>',
                    "value_parser": {"name": "json", "args": {"allow_non_json": True}},
                },
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
            },
            "content": {"close": "[e~[", "content": "text"},
        },
    },
    "minimax-m3": {
        "defaults": {"role": "assistant"},
        "start_anchor": "]~b]ai\n",
        "fields": {
            "reasoning_content": {
                "open_pattern": "<mm:think>|^(?=</mm:think>)",
                "close": "</mm:think>",
                "content": "text",
            },
            "tool_calls": {
                "open_pattern": '(?:\\]<\\]minimax\\[>\\[<tool_call>\\s*)?\\]<\\]minimax\\[>\\[<invoke name=\\"(?P<name>[^\\"]+)\\">',
                "close_pattern": "\\]<\\]minimax\\[>\\[</invoke>(?:\\s*\\]<\\]minimax\\[>\\[</tool_call>)?",
                "repeats": True,
                "content": "xml-inline",
                "content_args": {
                    "tag_pattern": "\\]<\\]minimax\\[>\\[<(?P<key>[^/>\\s]+)>(?P<value>.*?)\\]<\\]minimax\\[>\\[</(?P=key)>",
                    "value_parser": {"name": "json", "args": {"allow_non_json": True}},
                },
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
            },
            "content": {"close": "[e~[", "content": "text"},
        },
    },
    "nemotron-nano-v2": {
        "defaults": {"role": "assistant"},
        "start_anchor": "<SPECIAL_11>Assistant\n",
        "fields": {
            "reasoning_content": {"open": "<think>", "close": "</think>", "content": "text"},
            "tool_calls": {
                "open": "<TOOLCALL>",
                "close": "</TOOLCALL>",
                "content": "json",
                "transform_each": True,
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}},
            },
            "content": {"close": "<SPECIAL_12>", "content": "text"},
        },
    },
    "mistral-pre-v11": {
        "defaults": {"role": "assistant"},
        "start_anchor": "[/INST]",
        "fields": {
            "tool_calls": {
                "open": "[TOOL_CALLS]",
                "close": "</s>",
                "content": "json",
                "transform_each": True,
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}},
            },
            "content": {"close": "</s>", "content": "text"},
        },
    },
    "functionary-v3.1": {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|start_header_id|>assistant<|end_header_id|>\n\n",
        "fields": {
            "tool_calls": {
                "open_pattern": "<function=(?P<name>[^>]+)>",
                "close": "</function>",
                "repeats": True,
                "content": "json",
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
            },
            "content": {"close": ["<|eot_id|>", "<|eom_id|>"], "content": "text"},
        },
    },
    "functionary-v3.2": {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|start_header_id|>assistant<|end_header_id|>\n\n",
        "fields": {
            "content": {
                "open_pattern": "(?:>>>)?all\\n",
                "close_pattern": "(?=>>>)|<\\|eot_id\\|>",
                "repeats": True,
                "join": "",
                "content": "text",
            },
            "tool_calls": {
                "open_pattern": "(?:>>>)?(?!all\\n)(?P<name>[\\w.-]+)\\n",
                "close_pattern": "(?=>>>)|<\\|eot_id\\|>|<\\|eom_id\\|>",
                "repeats": True,
                "content": "json",
                "content_args": {"allow_non_json": True},
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
            },
        },
    },
    "firefunction-v2": {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|start_header_id|>assistant<|end_header_id|>\n\n",
        "fields": {
            "tool_calls": {
                "open": "functools",
                "close": "<|eot_id|>",
                "content": "json",
                "transform_each": True,
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}},
            },
            "content": {"close": "<|eot_id|>", "content": "text"},
        },
    },
    "deepseek-r1": {
        "defaults": {"role": "assistant"},
        "start_anchor": "<｜Assistant｜>",
        "fields": {
            "reasoning_content": {"open": "<think>", "close": "</think>", "content": "text"},
            "tool_calls": {
                "open_pattern": "(?:(?:<｜tool▁calls▁begin｜>|<｜tool_calls_begin｜>|<｜tool calls "
                "begin｜>|<｜tool\\\\_calls\\\\_begin｜>|<｜tool▁calls｜>)\\s*)?(?:<｜tool▁call▁begin｜>)?\\w+<｜tool▁sep｜>(?P<name>[^\\n]+)\\n```(?:json)?\\n",
                "close_pattern": "\\s*```\\s*<｜tool▁call▁end｜>(?:\\s*<｜tool▁calls▁end｜>)?",
                "repeats": True,
                "content": "json",
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
            },
            "content": {"close": "<｜end▁of▁sentence｜>", "content": "text"},
        },
    },
    "apriel-1.5": {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|assistant|>\n",
        "fields": {
            "reasoning_content": {"open": "<thinking>", "close": "</thinking>", "content": "text"},
            "tool_calls": {
                "open": "<tool_calls>",
                "close": "</tool_calls>",
                "content": "json",
                "transform_each": True,
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}},
            },
            "content": {"close": "<|end|>", "content": "text"},
        },
    },
    "llama-3.x-json": {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|start_header_id|>assistant<|end_header_id|>\n\n",
        "fields": {
            "reasoning_content": {"open": "<think>", "close": "</think>", "content": "text"},
            "tool_calls": {
                "open_pattern": '(?:<\\|python_tag\\|>)?\\s*(?=\\{\\s*\\"(?:type|name)\\"\\s*:)',
                "close_pattern": "\\s*(?:;|<\\|eom_id\\|>|<\\|eot_id\\|>)",
                "repeats": True,
                "content": "json",
                "transform": {
                    "type": "function",
                    "function": {"name": "{content.name}", "arguments": "{content.parameters}"},
                },
            },
            "content": {"close": ["<|eot_id|>", "<|eom_id|>"], "content": "text"},
        },
    },
    "gpt-oss-harmony": {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|start|>assistant",
        "fields": {
            "reasoning_content": {
                "open_pattern": "(?:<\\|start\\|>assistant)?<\\|channel\\|>analysis<\\|message\\|>",
                "close": "<|end|>",
                "repeats": True,
                "join": "\n",
                "content": "text",
            },
            "content": {
                "open_pattern": "(?:<\\|start\\|>assistant)?<\\|channel\\|>(?:final|commentary)(?:\\s*(?:<\\|constrain\\|>)?\\s*[\\w-]+)?\\s*<\\|message\\|>",
                "close": ["<|end|>", "<|return|>"],
                "repeats": True,
                "join": "\n",
                "content": "text",
            },
            "tool_calls": {
                "open_pattern": "(?:<\\|start\\|>assistant)?(?: to=functions\\.(?P<name>[^\\s<]+)\\s*<\\|channel\\|>(?:commentary|analysis)|<\\|channel\\|>(?:commentary|analysis) "
                "to=functions\\.(?P<name>[^\\s<]+))(?:\\s*(?:<\\|constrain\\|>)?\\s*[\\w-]+)?\\s*<\\|message\\|>",
                "close": ["<|call|>", "<|end|>"],
                "repeats": True,
                "content": "json",
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
            },
        },
    },
    "gigachat3": {
        "defaults": {"role": "assistant"},
        "start_anchor": "assistant<|role_sep|>\n",
        "fields": {
            "tool_calls": {
                "open_pattern": "(?:<\\|message_sep\\|>\\s*)?function call<\\|role_sep\\|>\\s*|<\\|function_call\\|>",
                "close": "</s>",
                "content": "json",
                "repeats": True,
                "transform": {"type": "function", "function": "{content}"},
            },
            "content": {"close": ["<|message_sep|>", "</s>"], "content": "text"},
        },
    },
    "gigachat3.1": {
        "defaults": {"role": "assistant"},
        "start_anchor": "assistant<|role_sep|>\n",
        "fields": {
            "tool_calls": {
                "open": "<|function_call|>",
                "content": "json",
                "repeats": True,
                "transform": {"type": "function", "function": "{content}"},
            },
            "content": {"content": "text"},
        },
    },
    "minicpm5": {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|im_start|>assistant\n",
        "fields": {
            "reasoning_content": {"open": "<think>", "close": "</think>", "content": "text"},
            "tool_calls": {
                "open_pattern": '<function name=\\"(?P<name>[^\\"]+)\\">',
                "close": "</function>",
                "repeats": True,
                "content": "xml-inline",
                "content_args": {
                    "tag_pattern": '<param name=\\"(?P<key>[^\\"]+)\\">(?P<value>.*?)</param>',
                    "value_parser": {"name": "json", "args": {"allow_non_json": True}},
                },
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
            },
            "content": {"close": "<|im_end|>", "content": "text"},
        },
    },
    "lfm2-json(legacy)": {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|im_start|>assistant\n",
        "fields": {
            "tool_calls": {
                "open": "<|tool_call_start|>",
                "close": "<|tool_call_end|>",
                "repeats": True,
                "content": "json",
                "transform_each": True,
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}},
            },
            "content": {"close": "<|im_end|>", "content": "text"},
        },
    },
    "ernie-4.5": {
        "defaults": {"role": "assistant"},
        "start_anchor": "Assistant:",
        "fields": {
            "reasoning_content": {
                "open_pattern": "(?:^|<think>\\s*)",
                "close": "</think>",
                "content": "text",
            },
            "content": {"open": "<response>\n", "close_pattern": "\\n?</response>", "content": "text"},
            "tool_calls": {
                "open": "<tool_call>",
                "close": "</tool_call>",
                "repeats": True,
                "content": "json",
                "transform": {"type": "function", "function": "{content}"},
            },
        },
    },
    "hunyuan-a13b": {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|extra_0|>",
        "fields": {
            "reasoning_content": {"open": "<think>", "close": "</think>", "content": "text"},
            "content": {"open": "<answer>", "close": "</answer>", "content": "text"},
            "tool_calls": {
                "open": "<tool_calls>",
                "close": "</tool_calls>",
                "content": "json",
                "transform_each": True,
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}},
            },
        },
    },
    "hunyuan-hy3": {
        "defaults": {"role": "assistant"},
        "start_anchor_pattern": "<｜hy_Assistant(?::\\w+)?｜>",
        "fields": {
            "reasoning_content": {
                "open_pattern": "<think(?::\\w+)?>",
                "close_pattern": "</think(?::\\w+)?>",
                "content": "text",
            },
            "tool_calls": {
                "open_pattern": "(?:<tool_calls(?::\\w+)?>\\s*)?<tool_call(?::\\w+)?>\\s*(?P<name>[^<\\s]+)\\s*<tool_sep(?::\\w+)?>",
                "close_pattern": "</tool_call(?::\\w+)?>(?:\\s*</tool_calls(?::\\w+)?>)?",
                "repeats": True,
                "content": "xml-inline",
                "content_args": {
                    "tag_pattern": "<arg_key(?::\\w+)?>(?P<key>.*?)</arg_key(?::\\w+)?>\\s*<arg_value(?::\\w+)?>(?P<value>.*?)</arg_value(?::\\w+)?>",
                    "value_parser": {"name": "json", "args": {"allow_non_json": True}},
                },
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
            },
            "content": {"content": "text"},
        },
    },
    "granite-20b-fc": {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|assistant|>\n",
        "fields": {
            "tool_calls": {
                "open_pattern": "<function_call>\\s*",
                "close_pattern": "(?=<function_call>)|<\\|endoftext\\|>",
                "repeats": True,
                "content": "json",
                "transform": {"type": "function", "function": "{content}"},
            },
            "content": {"close": "<|endoftext|>", "content": "text"},
        },
    },
    "granite-3.x": {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|start_of_role|>assistant<|end_of_role|>",
        "fields": {
            "reasoning_content": {
                "open_pattern": "<think>|Here(?:'s| is) my thought process:",
                "close_pattern": "</think>|Here(?:'s| is) my response:",
                "content": "text",
            },
            "tool_calls": {
                "open": "<|tool_call|>",
                "close": "<|end_of_text|>",
                "content": "json",
                "transform_each": True,
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}},
            },
            "content": {"close": "<|end_of_text|>", "content": "text"},
        },
    },
    "internlm2": {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|im_start|>assistant\n",
        "fields": {
            "tool_calls": {
                "open_pattern": "<\\|action_start\\|>\\s*<\\|plugin\\|>\\s*",
                "close": "<|action_end|>",
                "repeats": True,
                "content": "json",
                "transform": {
                    "type": "function",
                    "function": {"name": "{content.name}", "arguments": "{content.parameters}"},
                },
            },
            "content": {"close": "<|im_end|>", "content": "text"},
        },
    },
    "jamba": {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|bom|><|assistant|>",
        "fields": {
            "tool_calls": {
                "open": "<tool_calls>",
                "close": "</tool_calls>",
                "content": "json",
                "transform_each": True,
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}},
            },
            "content": {"close": "<|eom|>", "content": "text"},
        },
    },
    "longcat": {
        "defaults": {"role": "assistant"},
        "start_anchor": "ASSISTANT:",
        "fields": {
            "reasoning_content": {"open": "<longcat_think>", "close": "</longcat_think>", "content": "text"},
            "tool_calls": {
                "open": "<longcat_tool_call>",
                "close": "</longcat_tool_call>",
                "repeats": True,
                "content": "json",
                "transform": {"type": "function", "function": "{content}"},
            },
            "content": {"content": "text"},
        },
    },
    "phi-4-mini": {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|assistant|>",
        "fields": {
            "tool_calls": {
                "open": "functools",
                "close": "<|end|>",
                "content": "json",
                "transform_each": True,
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}},
            },
            "content": {"close": "<|end|>", "content": "text"},
        },
    },
    "step-3": {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|BOT|>assistant\n",
        "fields": {
            "reasoning_content": {"open": "<think>", "close": "</think>", "content": "text"},
            "tool_calls": {
                "open_pattern": '(?:<｜tool_calls_begin｜>\\s*)?<｜tool_call_begin｜>(?:function<｜tool_sep｜>)?<steptml:invoke name=\\"(?P<name>[^\\"]+)\\">',
                "close_pattern": "</steptml:invoke>\\s*<｜tool_call_end｜>(?:\\s*<｜tool_calls_end｜>)?",
                "repeats": True,
                "content": "xml-inline",
                "content_args": {
                    "tag_pattern": '<steptml:parameter name=\\"(?P<key>[^\\"]+)\\">(?P<value>.*?)</steptml:parameter>',
                    "value_parser": {"name": "json", "args": {"allow_non_json": True}},
                },
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
            },
            "content": {"content": "text"},
        },
    },
    "jsonarray-xlam": {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|im_start|>assistant\n",
        "fields": {
            "reasoning_content": {"open": "<think>", "close": "</think>", "content": "text"},
            "tool_calls": {
                "open_pattern": '(?:```(?:json)?\\s*)?(?=\\[\\s*\\{\\s*\\"name\\")',
                "close_pattern": "\\s*```|<\\|im_end\\|>",
                "content": "json",
                "transform_each": True,
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}},
            },
            "content": {"close": "<|im_end|>", "content": "text"},
        },
    },
    "inkling": {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|message_model|>",
        "fields": {
            "reasoning_content": {
                "open_pattern": "(?:<\\|message_model\\|>)?[^<]*<\\|content_thinking\\|>",
                "close": "<|end_message|>",
                "repeats": True,
                "join": "",
                "content_args": {"strip": False},
            },
            "content": {
                "open_pattern": "(?:<\\|message_model\\|>)?[^<]*<\\|content_text\\|>",
                "close": "<|end_message|>",
                "repeats": True,
                "join": "",
                "content_args": {"strip": False},
            },
            "tool_calls": {
                "open_pattern": "(?:<\\|message_model\\|>)?[^<]*<\\|content_invoke_tool_json\\|>",
                "close": "<|end_message|>",
                "repeats": True,
                "content": "json",
                "transform": {
                    "type": "function",
                    "function": {"name": "{content.name}", "arguments": "{content.args}"},
                },
            },
        },
    },
    "kimi-k1.5": {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|im_assistant|>assistant<|im_middle|>",
        "fields": {
            "reasoning_content": {"open": "◁think▷", "close": "◁/think▷", "content": "text"},
            "content": {"close": "<|im_end|>", "content": "text"},
        },
    },
}

case(
    "sample/qwen3-coder-1",
    SAMPLE_TEMPLATES["qwen3-coder"],
    "<tool_call>\n<function=get_current_weather>\n<parameter=city>\nDallas\n</parameter>\n<parameter=state>\nTX\n</parameter>\n<parameter=unit>\nfahrenheit\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=get_current_weather>\n<parameter=city>\nOrlando\n</parameter>\n<parameter=state>\nFL\n</parameter>\n<parameter=unit>\nfahrenheit\n</parameter>\n</function>\n</tool_call>",
    notes="model_output_samples.jsonl line 799 (qwen3-coder)",
)
case(
    "sample/qwen3-coder-2",
    SAMPLE_TEMPLATES["qwen3-coder"],
    "<tool_call>\n<function=tool_2req_5opt>\n<parameter=req1>\ntest\n</parameter>\n<parameter=req2>\n99\n</parameter>\n<parameter=opt3>\nc\n</parameter>\n<parameter=opt1>\na\n</parameter>\n<parameter=opt5>\ne\n</parameter>\n<parameter=opt4>\n4\n</parameter>\n<parameter=opt2>\n2\n</parameter>\n</function>\n</tool_call>",
    prefix="<|im_start|>assistant\n",
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 118 (qwen3-coder)",
)
case(
    "sample/qwen3-coder-3",
    SAMPLE_TEMPLATES["qwen3-coder"],
    "Sure! Let me check the weather for you.<tool_call>\n<function=get_current_weather>\n<parameter=city>\nDallas\n</parameter>\n<parameter=state>\nTX\n</parameter>\n<parameter=unit>\nfahrenheit\n</parameter>\n</function>\n</tool_call>",
    notes="model_output_samples.jsonl line 797 (qwen3-coder)",
)
case(
    "sample/qwen3-coder-4",
    SAMPLE_TEMPLATES["qwen3-coder"],
    "Let me check the weather for you.\n\n<tool_call>\n<function=get_weather>\n<parameter=city>Tokyo</parameter>\n</function>\n</tool_call>\n\nI will get that information.",
    difference="implicit-concat",
    expected={
        "role": "assistant",
        "content": "Let me check the weather for you.\n\n\n\nI will get that information.",
        "tool_calls": [
            {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Tokyo"}}}
        ],
    },
    notes="model_output_samples.jsonl line 818 (qwen3-coder)",
)
case(
    "sample/mistral-v11-1",
    SAMPLE_TEMPLATES["mistral-v11+"],
    '[THINK]Let me think about [TOOL_CALLS]special_function[ARGS]{"arg1":1} and more[/THINK][TOOL_CALLS]special_function[ARGS]{"arg1": 1}',
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 43 (mistral-v13-ministral3-reasoning)",
)
case(
    "sample/mistral-v11-2",
    SAMPLE_TEMPLATES["mistral-v11+"],
    '[TOOL_CALLS]special_function[ARGS]{"arg1": 1}[TOOL_CALLS]special_function_with_opt[ARGS]{"arg1": 1, "arg2": 2}',
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 41 (mistral-v13-ministral3-reasoning)",
)
case(
    "sample/mistral-v11-3",
    SAMPLE_TEMPLATES["mistral-v11+"],
    '[TOOL_CALLS]get_current_weather{"city": "San Francisco", "state": "CA", "unit": "celsius"}',
    notes="model_output_samples.jsonl line 756 (mistral)",
)
case(
    "sample/mistral-v11-4",
    SAMPLE_TEMPLATES["mistral-v11+"],
    "Before\n[THINK]This is a reasoning section[/THINK]\nThis is the rest",
    difference="implicit-concat",
    expected={
        "role": "assistant",
        "content": "Before\n\nThis is the rest",
        "reasoning_content": "This is a reasoning section",
    },
    notes="model_output_samples.jsonl line 521 (magistral)",
)
case(
    "sample/cohere-command-r7b-1",
    SAMPLE_TEMPLATES["cohere-command-r7b"],
    '<|START_THINKING|>I should call a tool.<|END_THINKING|><|START_ACTION|>[\n    {"tool_call_id": "0", "tool_name": "simple_tool", "parameters": {"temperature_format": "Celsius"}}\n]<|END_ACTION|><|END_OF_TURN_TOKEN|>',
    notes="model_output_samples.jsonl line 1046 (cohere-command-r7b)",
)
case(
    "sample/cohere-command-r7b-2",
    SAMPLE_TEMPLATES["cohere-command-r7b"],
    "<|START_THINKING|>I'm\nthinking<|END_THINKING|><|START_RESPONSE|>Hello, world!\nWhat's up?<|END_RESPONSE|>",
    notes="model_output_samples.jsonl line 52 (cohere-command-r7b)",
)
case(
    "sample/cohere-command-r7b-3",
    SAMPLE_TEMPLATES["cohere-command-r7b"],
    "<|START_RESPONSE|>Hello, world!\nWhat's up?<|END_RESPONSE|>",
    notes="model_output_samples.jsonl line 51 (cohere-command-r7b)",
)
case(
    "sample/cohere-command-a-reasoning-1",
    SAMPLE_TEMPLATES["cohere-command-a-reasoning"],
    'I need to output the invoice details in JSON<|END_THINKING|><|START_TEXT|>{"amount": 123.45, "date": "2025-12-03"}<|END_TEXT|>',
    prefix="<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|><|START_THINKING|>",
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 58 (cohere-command-a-reasoning(cohere2moe))",
)
case(
    "sample/cohere-command-a-reasoning-2",
    SAMPLE_TEMPLATES["cohere-command-a-reasoning"],
    "I'm\nthinking<|END_THINKING|><|START_TEXT|>Hello, world!\nWhat's up?<|END_TEXT|>",
    prefix="<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|><|START_THINKING|>",
    notes="model_output_samples.jsonl line 56 (cohere-command-a-reasoning(cohere2moe))",
)
case(
    "sample/cohere-command-a-reasoning-3",
    SAMPLE_TEMPLATES["cohere-command-a-reasoning"],
    "<|END_THINKING|><|START_TEXT|>Hello, world!\nWhat's up?<|END_TEXT|>",
    prefix="<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|><|START_THINKING|>",
    notes="model_output_samples.jsonl line 57 (cohere-command-a-reasoning(cohere2moe))",
)
case(
    "sample/gemma-4-1",
    SAMPLE_TEMPLATES["gemma-4"],
    '<|channel>thought\nThe user is asking for the current temperature in Paris. I should check the available tools to see if there\'s a function that can provide this information.<channel|><|tool_call>call:get_current_temperature{detail_level:0,location:<|"|>Paris, France<|"|>,unit:<|"|>celsius<|"|>}<tool_call|><|tool_response>',
    notes="model_output_samples.jsonl line 1051 (gemma-4)",
)
case(
    "sample/gemma-4-2",
    SAMPLE_TEMPLATES["gemma-4"],
    '<|tool_call>call:get_time{city:<|"|>London<|"|>}<tool_call|><|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|>',
    prefix="<|turn>model\n",
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 72 (gemma-4)",
)
case(
    "sample/gemma-4-3",
    SAMPLE_TEMPLATES["gemma-4"],
    'Hello, world!\nWhat\'s up?<|tool_call>call:get_time{city:<|"|>Paris<|"|>}<tool_call|>',
    prefix="<|turn>model\n",
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 71 (gemma-4)",
)
case(
    "sample/gemma-4-4",
    SAMPLE_TEMPLATES["gemma-4"],
    "<|channel><|channel>thought\n<channel|>Hello, world!\nWhat's up?",
    prefix="<|turn>model\n",
    difference="implicit-concat",
    expected={"role": "assistant", "content": "<|channel>Hello, world!\nWhat's up?"},
    notes="model_output_samples.jsonl line 87 (gemma-4)",
)
case(
    "sample/hermes-1",
    SAMPLE_TEMPLATES["hermes"],
    'Hello, world!\nWhat\'s up?<tool_call>\n{"name": "special_function", "arguments": {"arg1": 1}}\n</tool_call>',
    notes="model_output_samples.jsonl line 295 (hermes-2-pro)",
)
case(
    "sample/hermes-2",
    SAMPLE_TEMPLATES["hermes"],
    '<tool_call>\n{"name": "python", "arguments": {"code":"# This is a program:\\nprint(\'hey\')"}}\n</tool_call>',
    notes="model_output_samples.jsonl line 319 (qwen2.5(hermes))",
)
case(
    "sample/hermes-3",
    SAMPLE_TEMPLATES["hermes"],
    'Hello, world!\nWhat\'s up?<tool_call>\n{"name": "special_function", "arguments": {"arg1": 1}}</tool_call>',
    prefix="<|im_start|>assistant\n",
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 91 (hermes-2-pro)",
)
case(
    "sample/granite-4-1",
    SAMPLE_TEMPLATES["granite-4"],
    '<tool_call>\n{"name": "special_function", "arguments": {"arg1": 1}}\n</tool_call>',
    prefix="<|start_of_role|>assistant<|end_of_role|>",
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 95 (granite-4.0)",
)
case(
    "sample/granite-4-2",
    SAMPLE_TEMPLATES["granite-4"],
    "Hello, world!\nWhat's up?",
    prefix="<|start_of_role|>assistant<|end_of_role|>",
    notes="model_output_samples.jsonl line 94 (granite-4.0)",
)
case(
    "sample/seed-oss-1",
    SAMPLE_TEMPLATES["seed-oss"],
    "<seed:tool_call>\n<function=special_function>\n<parameter=arg1>1</parameter>\n</function>\n</seed:tool_call>\n<seed:tool_call>\n<function=special_function_with_opt>\n<parameter=arg1>1</parameter>\n<parameter=arg2>2</parameter>\n</function>\n</seed:tool_call>",
    prefix="<seed:bos>assistant\n",
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 101 (seed-oss)",
)
case(
    "sample/seed-oss-2",
    SAMPLE_TEMPLATES["seed-oss"],
    "<seed:tool_call>\n<function=get_weather>\n<parameter=location>Barcelona, Spain</parameter>\n</function>\n</seed:tool_call>",
    notes="model_output_samples.jsonl line 822 (seed-oss)",
)
case(
    "sample/seed-oss-3",
    SAMPLE_TEMPLATES["seed-oss"],
    "<seed:think>I'm thinking about the answer</seed:think>\nHello, world!",
    prefix="<seed:bos>assistant\n",
    notes="model_output_samples.jsonl line 99 (seed-oss)",
)
case(
    "sample/deepseek-v3-1-1",
    SAMPLE_TEMPLATES["deepseek-v3.1"],
    'REASONING</think>CONTENT<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
    prefix="<｜Assistant｜><think>",
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 125 (deepseek-v3.1)",
)
case(
    "sample/deepseek-v3-1-2",
    SAMPLE_TEMPLATES["deepseek-v3.1"],
    'REASONING</think><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{"city": "Tokyo"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
    prefix="<｜Assistant｜><think>",
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 124 (deepseek-v3.1)",
)
case(
    "sample/deepseek-v3-1-3",
    SAMPLE_TEMPLATES["deepseek-v3.1"],
    'REASONING<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{"city": "Tokyo"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
    notes="model_output_samples.jsonl line 368 (deepseek-v3.1)",
)
case(
    "sample/deepseek-v3-1-4",
    SAMPLE_TEMPLATES["deepseek-v3.1"],
    'some prefix text<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>foo<｜tool▁sep｜>{"x":1}<｜tool▁call▁end｜><｜tool▁call▁begin｜>bar<｜tool▁sep｜>{"y":2}<｜tool▁call▁end｜><｜tool▁calls▁end｜> some suffix text',
    difference="implicit-concat",
    expected={
        "role": "assistant",
        "content": "some prefix text some suffix text",
        "tool_calls": [
            {"type": "function", "function": {"name": "foo", "arguments": {"x": 1}}},
            {"type": "function", "function": {"name": "bar", "arguments": {"y": 2}}},
        ],
    },
    notes="model_output_samples.jsonl line 576 (deepseek-v3.1)",
)
case(
    "sample/deepseek-v3-2-dsml-1",
    SAMPLE_TEMPLATES["deepseek-v3.2-dsml"],
    'Calling both</think>\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_time">\n<｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>\n</｜DSML｜invoke>\n<｜DSML｜invoke name="get_weather">\n<｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>',
    prefix="<｜Assistant｜><think>",
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 132 (deepseek-v3.2-dsml)",
)
case(
    "sample/deepseek-v3-2-dsml-2",
    SAMPLE_TEMPLATES["deepseek-v3.2-dsml"],
    'Thinking about it</think>Let me call the function.\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="special_function">\n<｜DSML｜parameter name="arg1" string="false">1</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>',
    prefix="<｜Assistant｜><think>",
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 133 (deepseek-v3.2-dsml)",
)
case(
    "sample/deepseek-v3-2-dsml-3",
    SAMPLE_TEMPLATES["deepseek-v3.2-dsml"],
    '</think>\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_time">\n<｜DSML｜parameter name="city" string="true">XYZCITY</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>',
    prefix="<｜Assistant｜><think>",
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 139 (deepseek-v3.2-dsml)",
)
case(
    "sample/deepseek-v3-2-dsml-4",
    SAMPLE_TEMPLATES["deepseek-v3.2-dsml"],
    'I\'ll help you with information about San Francisco and get its favorite tourist spot for you.\n\n\n        <｜DSML｜function_calls>\n\n            <｜DSML｜invoke name="get_favorite_tourist_spot">\n\n                <｜DSML｜parameter name="city" string="true">San Francisco</｜DSML｜parameter>\n\n            </｜DSML｜invoke>\n\n            <｜DSML｜invoke name="search">\n                <｜DSML｜parameter name="query" string="true">WebNav benchmark</｜DSML｜parameter>\n                <｜DSML｜parameter name="topn" string="false">10</｜DSML｜parameter>\n                <｜DSML｜parameter name="source" string="true">web</｜DSML｜parameter>\n            </｜DSML｜invoke>\n        </｜DSML｜function_calls>\n        ',
    difference="implicit-concat",
    expected={
        "role": "assistant",
        "tool_calls": [
            {
                "type": "function",
                "function": {"name": "get_favorite_tourist_spot", "arguments": {"city": "San Francisco"}},
            },
            {
                "type": "function",
                "function": {
                    "name": "search",
                    "arguments": {"query": "WebNav benchmark", "topn": 10, "source": "web"},
                },
            },
        ],
        "content": "I'll help you with information about San Francisco and get its favorite tourist spot for you.",
    },
    notes="model_output_samples.jsonl line 893 (deepseek-v3.2-dsml)",
)
case(
    "sample/deepseek-v3-2-dsml-5",
    SAMPLE_TEMPLATES["deepseek-v3.2-dsml"],
    'I\'ll help you with information about San Francisco and get its favorite tourist spot for you.\n\n        <｜DSML｜function_calls>\n            <｜DSML｜invoke name="get_favorite_tourist_spot">\n            {\n                "city": "San Francisco"\n            }\n        </｜DSML｜invoke>\n            <｜DSML｜invoke name="search">\n            {\n                "query": "WebNav benchmark",\n                "topn": 10,\n                "source": "web"\n            }\n        </｜DSML｜invoke>\n        </｜DSML｜function_calls>\n        ',
    difference="xml-inline-unread-text",
    expected=Raises("ParseError"),  # the JSON arguments inside each invoke are no <parameter> tags
    notes="model_output_samples.jsonl line 894 (deepseek-v3.2-dsml)",
)
case(
    "sample/deepseek-v4-dsml-1",
    SAMPLE_TEMPLATES["deepseek-v4-dsml"],
    'Calling both</think>\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name="get_time">\n<｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>\n</｜DSML｜invoke>\n<｜DSML｜invoke name="get_weather">\n<｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>',
    prefix="<｜Assistant｜><think>",
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 145 (deepseek-v4-dsml)",
)
case(
    "sample/deepseek-v4-dsml-2",
    SAMPLE_TEMPLATES["deepseek-v4-dsml"],
    'Thinking about it</think>Let me call the function.\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name="special_function">\n<｜DSML｜parameter name="arg1" string="false">1</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>',
    prefix="<｜Assistant｜><think>",
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 146 (deepseek-v4-dsml)",
)
case(
    "sample/deepseek-v4-dsml-3",
    SAMPLE_TEMPLATES["deepseek-v4-dsml"],
    '\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name="special_function">\n<｜DSML｜parameter name="arg1" string="false">1</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>',
    prefix="<｜Assistant｜></think>",
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 149 (deepseek-v4-dsml)",
)
case(
    "sample/deepseek-v4-dsml-4",
    SAMPLE_TEMPLATES["deepseek-v4-dsml"],
    'I\'ll help you with information about San Francisco and get its favorite tourist spot for you.\n\n\n        <｜DSML｜tool_calls>\n\n            <｜DSML｜invoke name="get_favorite_tourist_spot">\n\n                <｜DSML｜parameter name="city" string="true">San Francisco</｜DSML｜parameter>\n\n            </｜DSML｜invoke>\n\n            <｜DSML｜invoke name="search">\n                <｜DSML｜parameter name="query" string="true">WebNav benchmark</｜DSML｜parameter>\n                <｜DSML｜parameter name="topn" string="false">10</｜DSML｜parameter>\n                <｜DSML｜parameter name="source" string="true">web</｜DSML｜parameter>\n            </｜DSML｜invoke>\n        </｜DSML｜tool_calls>\n        ',
    difference="implicit-concat",
    expected={
        "role": "assistant",
        "tool_calls": [
            {
                "type": "function",
                "function": {"name": "get_favorite_tourist_spot", "arguments": {"city": "San Francisco"}},
            },
            {
                "type": "function",
                "function": {
                    "name": "search",
                    "arguments": {"query": "WebNav benchmark", "topn": 10, "source": "web"},
                },
            },
        ],
        "content": "I'll help you with information about San Francisco and get its favorite tourist spot for you.",
    },
    notes="model_output_samples.jsonl line 901 (deepseek-v4-dsml)",
)
case(
    "sample/glm-4-5-4-6-1",
    SAMPLE_TEMPLATES["glm-4.5/4.6"],
    "<tool_call>get_current_weather\n    <arg_key>city</arg_key>\n    <arg_value>Dallas</arg_value>\n    <arg_key>state</arg_key>\n    <arg_value>TX</arg_value>\n    <arg_key>unit</arg_key>\n    <arg_value>fahrenheit</arg_value>\n    </tool_call>\n    <tool_call>get_current_weather\n    <arg_key>city</arg_key>\n    <arg_value>Orlando</arg_value>\n    <arg_key>state</arg_key>\n    <arg_value>FL</arg_value>\n    <arg_key>unit</arg_key>\n    <arg_value>fahrenheit</arg_value>\n    </tool_call>",
    notes="model_output_samples.jsonl line 627 (glm-4.5/4.6)",
)
case(
    "sample/glm-4-5-4-6-2",
    SAMPLE_TEMPLATES["glm-4.5/4.6"],
    "I will help you get the weather.<tool_call>get_weather\n    <arg_key>city</arg_key>\n    <arg_value>Beijing</arg_value>\n    <arg_key>date</arg_key>\n    <arg_value>2025-08-01</arg_value>\n    </tool_call>",
    notes="model_output_samples.jsonl line 630 (glm-4.5/4.6)",
)
case(
    "sample/glm-4-5-4-6-3",
    SAMPLE_TEMPLATES["glm-4.5/4.6"],
    "\n<think>I'm\nthinking</think>Hello, world!\nWhat's up?\n<tool_call>special_function\n<arg_key>arg1</arg_key>\n<arg_value>1</arg_value>\n</tool_call>",
    notes="model_output_samples.jsonl line 392 (glm-4.5/4.6)",
)
case(
    "sample/glm-4-5-4-6-4",
    SAMPLE_TEMPLATES["glm-4.5/4.6"],
    "\n<think>I'm\nthinking</think>Hello, world!\n<think>Thinking2</think>What's up?\n<tool_call>special_function\n<arg_key>arg1</arg_key>\n<arg_value>1</arg_value>\n</tool_call>",
    difference="implicit-concat",
    expected={
        "role": "assistant",
        "content": "Hello, world!\nWhat's up?",
        "reasoning_content": "I'm\nthinkingThinking2",
        "tool_calls": [
            {"type": "function", "function": {"name": "special_function", "arguments": {"arg1": 1}}}
        ],
    },
    notes="model_output_samples.jsonl line 397 (glm-4.5/4.6)",
)
case(
    "sample/glm-4-5-4-6-5",
    SAMPLE_TEMPLATES["glm-4.5/4.6"],
    "I will help you get the weather info.\n\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Beijing</arg_value>\n<arg_key>date</arg_key>\n<arg_value>2025-08-01</arg_value>\n</tool_call>\n\nmeaningwhile, I will also check the weather in Shanghai.\n\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Shanghai</arg_value>\n<arg_key>date</arg_key>\n<arg_value>2025-08-01</arg_value>\n</tool_call>",
    difference="implicit-concat",
    expected={
        "role": "assistant",
        "content": "I will help you get the weather info.\n\n\n\nmeaningwhile, I will also check the weather in Shanghai.",
        "tool_calls": [
            {
                "type": "function",
                "function": {"name": "get_weather", "arguments": {"city": "Beijing", "date": "2025-08-01"}},
            },
            {
                "type": "function",
                "function": {"name": "get_weather", "arguments": {"city": "Shanghai", "date": "2025-08-01"}},
            },
        ],
    },
    notes="model_output_samples.jsonl line 634 (glm-4.5/4.6)",
)
case(
    "sample/glm-4-7-1",
    SAMPLE_TEMPLATES["glm-4.7"],
    "<tool_call>special_function<arg_key>arg1</arg_key><arg_value>1</arg_value></tool_call><tool_call>special_function_with_opt<arg_key>arg1</arg_key><arg_value>1</arg_value><arg_key>arg2</arg_key><arg_value>2</arg_value></tool_call>",
    prefix="<|assistant|></think>",
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 155 (glm-4.7)",
)
case(
    "sample/glm-4-7-2",
    SAMPLE_TEMPLATES["glm-4.7"],
    "I'm\nthinking</think><tool_call>special_function<arg_key>arg1</arg_key><arg_value>1</arg_value></tool_call>",
    prefix="<|assistant|><think>",
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 154 (glm-4.7)",
)
case(
    "sample/glm-4-7-3",
    SAMPLE_TEMPLATES["glm-4.7"],
    "I'm\nthinking</think>Hello, world!\nWhat's up?",
    prefix="<|assistant|><think>",
    notes="model_output_samples.jsonl line 152 (glm-4.7)",
)
case(
    "sample/kimi-k2-1",
    SAMPLE_TEMPLATES["kimi-k2"],
    '<|tool_calls_section_begin|><|tool_call_begin|>functions.special_function:0<|tool_call_argument_begin|>{"arg1": 1}<|tool_call_end|><|tool_call_begin|>functions.python:1<|tool_call_argument_begin|>{"code": "print(1)"}<|tool_call_end|><|tool_call_begin|>functions.html:2<|tool_call_argument_begin|>{"markup": "<p>test</p>"}<|tool_call_end|><|tool_calls_section_end|>',
    prefix="<|im_assistant|>assistant<|im_middle|>",
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 166 (kimi-k2-thinking)",
)
case(
    "sample/kimi-k2-2",
    SAMPLE_TEMPLATES["kimi-k2"],
    '<think>I need to call two functions</think><|tool_calls_section_begin|><|tool_call_begin|>functions.special_function:0<|tool_call_argument_begin|>{"arg1": 1}<|tool_call_end|><|tool_call_begin|>functions.python:1<|tool_call_argument_begin|>{"code": "print(\'hey\')"}<|tool_call_end|><|tool_calls_section_end|>',
    prefix="<|im_assistant|>assistant<|im_middle|>",
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 162 (kimi-k2-thinking)",
)
case(
    "sample/kimi-k2-3",
    SAMPLE_TEMPLATES["kimi-k2"],
    'Hello, world!\nWhat\'s up?<|tool_calls_section_begin|><|tool_call_begin|>functions.special_function:0<|tool_call_argument_begin|>{"arg1": 1}<|tool_call_end|><|tool_calls_section_end|>',
    prefix="<|im_assistant|>assistant<|im_middle|>",
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 160 (kimi-k2-thinking)",
)
case(
    "sample/kimi-k2-4",
    SAMPLE_TEMPLATES["kimi-k2"],
    "<think>I'm\nthinking\n</think>\n\nHello, world!\nWhat's up?\n\n<|tool_calls_section_begin|><|tool_call_begin|>functions.special_function:0<|tool_call_argument_begin|>{\"arg1\": 1}<|tool_call_end|><|tool_calls_section_end|>\n",
    difference="implicit-concat",
    expected={
        "role": "assistant",
        "reasoning_content": "I'm\nthinking",
        "tool_calls": [
            {
                "type": "function",
                "id": "functions.special_function:0",
                "function": {"name": "special_function", "arguments": {"arg1": 1}},
            }
        ],
        "content": "Hello, world!\nWhat's up?",
    },
    notes="model_output_samples.jsonl line 408 (kimi-k2)",
)
case(
    "sample/reka-edge-1",
    SAMPLE_TEMPLATES["reka-edge"],
    'Let me think about <tool_call>\n{"name": "special_function", "arguments": {"arg1": 2}}</tool_call> hmm\n</think>\n\n<tool_call>\n{"name": "special_function", "arguments": {"arg1": 1}}</tool_call>',
    prefix="assistant: <think>\n",
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 183 (reka-edge)",
)
case(
    "sample/reka-edge-2",
    SAMPLE_TEMPLATES["reka-edge"],
    '<tool_call>\n{"name": "special_function", "arguments": {"arg1": 1}}\n</tool_call>\n<tool_call>\n{"name": "special_function_with_opt", "arguments": {"arg1": 1, "arg2": 2}}\n</tool_call>',
    prefix="assistant:",
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 230 (reka-edge)",
)
case(
    "sample/reka-edge-3",
    SAMPLE_TEMPLATES["reka-edge"],
    'I need to call a function\n</think>\n\nLet me check the time.<tool_call>\n{"name": "get_time", "arguments": {"city": "XYZCITY"}}</tool_call>',
    prefix="assistant: <think>\n",
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 180 (reka-edge)",
)
case(
    "sample/minimax-m2-1",
    SAMPLE_TEMPLATES["minimax-m2"],
    '<think>I\'m\nthinking\n</think>Hello, world!\nWhat\'s up?\n<minimax:tool_call><invoke name="special_function"><parameter name="arg1">1</parameter></invoke></minimax:tool_call>',
    notes="model_output_samples.jsonl line 381 (minimax-m2)",
)
case(
    "sample/minimax-m2-2",
    SAMPLE_TEMPLATES["minimax-m2"],
    '<minimax:tool_call>\n<invoke name="special_function_with_opt">\n<parameter name="arg1">1</parameter>\n<parameter name="arg2">2</parameter>\n</invoke>\n</minimax:tool_call>',
    notes="model_output_samples.jsonl line 384 (minimax-m2)",
)
case(
    "sample/minimax-m2-3",
    SAMPLE_TEMPLATES["minimax-m2"],
    '<think>I\'m\nthinking</think><minimax:tool_call><invoke name="special_function"><parameter name="arg1">1</parameter></invoke></minimax:tool_call>',
    notes="model_output_samples.jsonl line 378 (minimax-m2)",
)
case(
    "sample/minimax-m2-4",
    SAMPLE_TEMPLATES["minimax-m2"],
    '<think>I\'m\nthinking\n</think>\n\nHello, world!\nWhat\'s up?\n\n<minimax:tool_call>\n<invoke name="special_function">\n<parameter name="arg1">1</parameter>\n</invoke>\n</minimax:tool_call>\n',
    difference="implicit-concat",
    expected={
        "role": "assistant",
        "reasoning_content": "I'm\nthinking",
        "tool_calls": [
            {"type": "function", "function": {"name": "special_function", "arguments": {"arg1": 1}}}
        ],
        "content": "Hello, world!\nWhat's up?",
    },
    notes="model_output_samples.jsonl line 383 (minimax-m2)",
)
case(
    "sample/minimax-m3-1",
    SAMPLE_TEMPLATES["minimax-m3"],
    '<mm:think>Calling both</mm:think>]<]minimax[>[<tool_call>\n]<]minimax[>[<invoke name="get_time">]<]minimax[>[<city>Paris]<]minimax[>[</city>]<]minimax[>[</invoke>\n]<]minimax[>[<invoke name="get_weather">]<]minimax[>[<city>Paris]<]minimax[>[</city>]<]minimax[>[</invoke>\n]<]minimax[>[</tool_call>',
    prefix="]~b]ai\n",
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 194 (minimax-m3)",
)
case(
    "sample/minimax-m3-2",
    SAMPLE_TEMPLATES["minimax-m3"],
    '<mm:think>Thinking about it</mm:think>Let me call the function.]<]minimax[>[<tool_call>\n]<]minimax[>[<invoke name="special_function">]<]minimax[>[<arg1>1]<]minimax[>[</arg1>]<]minimax[>[</invoke>\n]<]minimax[>[</tool_call>',
    prefix="]~b]ai\n",
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 195 (minimax-m3)",
)
case(
    "sample/minimax-m3-3",
    SAMPLE_TEMPLATES["minimax-m3"],
    '<mm:think></mm:think>]<]minimax[>[<tool_call>\n]<]minimax[>[<invoke name="get_time">]<]minimax[>[<city>XYZCITY]<]minimax[>[</city>]<]minimax[>[</invoke>\n]<]minimax[>[</tool_call>',
    prefix="]~b]ai\n",
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 207 (minimax-m3)",
)
case(
    "sample/nemotron-nano-v2-1",
    SAMPLE_TEMPLATES["nemotron-nano-v2"],
    '<think>I\'m\nthinking</think><TOOLCALL>[{"name": "special_function", "arguments": {"arg1": 1}}]</TOOLCALL>Hello, world!\nWhat\'s up?',
    notes="model_output_samples.jsonl line 362 (nemotron-nano-v2)",
)
case(
    "sample/nemotron-nano-v2-2",
    SAMPLE_TEMPLATES["nemotron-nano-v2"],
    '<think>I\'m\nthinking</think><TOOLCALL>[{"name": "special_function", "arguments": {"arg1": 1}}]</TOOLCALL>',
    notes="model_output_samples.jsonl line 360 (nemotron-nano-v2)",
)
case(
    "sample/nemotron-nano-v2-3",
    SAMPLE_TEMPLATES["nemotron-nano-v2"],
    'I\'m\nthinking\n</think>\n\n<TOOLCALL>[{"name": "special_function", "arguments": {"arg1": 1}}]</TOOLCALL>\n',
    prefix="<SPECIAL_11>Assistant\n<think>\n",
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 209 (nemotron-nano-v2)",
)
case(
    "sample/mistral-pre-v11-1",
    SAMPLE_TEMPLATES["mistral-pre-v11"],
    "Hello, world!\nWhat's up?",
    notes="model_output_samples.jsonl line 212 (mistral-pre-v11(nemo))",
)
case(
    "sample/functionary-v3-1-1",
    SAMPLE_TEMPLATES["functionary-v3.1"],
    '<function=special_function>{"arg1": 1}</function>',
    prefix="<|start_header_id|>assistant<|end_header_id|>\n\n",
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 215 (functionary-v3.1)",
)
case(
    "sample/functionary-v3-1-2",
    SAMPLE_TEMPLATES["functionary-v3.1"],
    "Hello, world!\nWhat's up?",
    prefix="<|start_header_id|>assistant<|end_header_id|>\n\n",
    notes="model_output_samples.jsonl line 214 (functionary-v3.1)",
)
case(
    "sample/functionary-v3-2-1",
    SAMPLE_TEMPLATES["functionary-v3.2"],
    'all\nHello, world!\nnono\nWhat\'s up?>>>special_function\n{"arg1": 1}\n',
    notes="model_output_samples.jsonl line 325 (functionary-v3.2)",
)
case(
    "sample/functionary-v3-2-2",
    SAMPLE_TEMPLATES["functionary-v3.2"],
    'special_function\n{"arg1": 1} \n                    ',
    notes="model_output_samples.jsonl line 327 (functionary-v3.2)",
)
case(
    "sample/functionary-v3-2-3",
    SAMPLE_TEMPLATES["functionary-v3.2"],
    "all\nHello, world!\nWhat's up?",
    prefix="<|start_header_id|>assistant<|end_header_id|>\n\n>>>",
    notes="model_output_samples.jsonl line 216 (functionary-v3.2)",
)
case(
    "sample/firefunction-v2-1",
    SAMPLE_TEMPLATES["firefunction-v2"],
    ' functools[{"name": "special_function", "arguments": {"arg1": 1}}]',
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 219 (firefunction-v2)",
)
case(
    "sample/firefunction-v2-2",
    SAMPLE_TEMPLATES["firefunction-v2"],
    "Hello, world!\nWhat's up?",
    notes="model_output_samples.jsonl line 218 (firefunction-v2)",
)
case(
    "sample/deepseek-r1-1",
    SAMPLE_TEMPLATES["deepseek-r1"],
    '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{"city": "Tokyo", "unit": "celsius"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
    notes="model_output_samples.jsonl line 590 (deepseek-v3/r1)",
)
case(
    "sample/deepseek-r1-2",
    SAMPLE_TEMPLATES["deepseek-r1"],
    '</think><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>special_function\n```json\n{"arg1": 1}```<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
    prefix="<｜Assistant｜><think>\n",
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 222 (deepseek-r1)",
)
case(
    "sample/deepseek-r1-3",
    SAMPLE_TEMPLATES["deepseek-r1"],
    "<think>This is a reasoning section</think>This is the rest",
    notes="model_output_samples.jsonl line 435 (deepseek-r1)",
)
case(
    "sample/apriel-1-5-1",
    SAMPLE_TEMPLATES["apriel-1.5"],
    '<tool_calls>[{"name": "special_function", "arguments": {"arg1": 1}}]</tool_calls>',
    prefix="<|assistant|>\n",
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 233 (apriel-1.5)",
)
case(
    "sample/apriel-1-5-2",
    SAMPLE_TEMPLATES["apriel-1.5"],
    "Hello, world!\nWhat's up?",
    prefix="<|assistant|>\n",
    notes="model_output_samples.jsonl line 232 (apriel-1.5)",
)
case(
    "sample/llama-3-x-json-1",
    SAMPLE_TEMPLATES["llama-3.x-json"],
    '{"name": "special_function", "parameters": {"arg1": 1}}',
    notes="model_output_samples.jsonl line 321 (llama-3.x-json)",
)
case(
    "sample/llama-3-x-json-2",
    SAMPLE_TEMPLATES["llama-3.x-json"],
    "Hello, world!\nWhat's up?",
    prefix="<|start_header_id|>assistant<|end_header_id|>\n\n",
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 242 (llama-3.x-json)",
)
case(
    "sample/gpt-oss-harmony-1",
    SAMPLE_TEMPLATES["gpt-oss-harmony"],
    '<|channel|>analysis<|message|>Thinking about edit...<|end|><|start|>assistant<|channel|>commentary to=functions.edit <|constrain|>json<|message|>{"oldString": "if (part < railCount - 1) {", "newString": "if (part < 4) {", "replaceAll": false}',
    prefix="<|start|>assistant",
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 252 (gpt-oss-harmony)",
)
case(
    "sample/gpt-oss-harmony-2",
    SAMPLE_TEMPLATES["gpt-oss-harmony"],
    '<|channel|>analysis<|message|>Let me check.<|end|><|start|>assistant<|channel|>commentary to=functions.get_current_weather <|constrain|>json<|message|>{"location": "San Francisco, CA"}<|call|>',
    notes="model_output_samples.jsonl line 1055 (gpt-oss-harmony)",
)
case(
    "sample/gpt-oss-harmony-3",
    SAMPLE_TEMPLATES["gpt-oss-harmony"],
    '<|channel|>analysis<|message|>I need to output the invoice details in JSON<|end|><|start|>assistant<|channel|>final <|constrain|>json<|message|>{"amount": 123.45, "date": "2025-12-03"}',
    prefix="<|start|>assistant",
    notes="model_output_samples.jsonl line 253 (gpt-oss-harmony)",
)
case(
    "sample/gigachat3-1",
    SAMPLE_TEMPLATES["gigachat3"],
    '<|message_sep|>\n\nfunction call<|role_sep|>\n{"name": "manage_user_memory", "arguments": {"action": "create", "id": "preferences", "content": {"short_answers": true, "hate_emojis": true, "english_ui": false, "russian_math_explanations": true}}}',
    notes="model_output_samples.jsonl line 618 (gigachat3)",
)
case(
    "sample/gigachat3-2",
    SAMPLE_TEMPLATES["gigachat3"],
    'I\'ll check that for you.<|message_sep|>\n\nfunction call<|role_sep|>\n{"name": "manage_user_memory", "arguments": {"action": "create", "id": "preferences"}}</s>',
    notes="model_output_samples.jsonl line 620 (gigachat3)",
)
case(
    "sample/gigachat3-3",
    SAMPLE_TEMPLATES["gigachat3"],
    'Hello, world!\nWhat\'s up?<|message_sep|>\n\nfunction call<|role_sep|>\n{"name": "special_function", "arguments": {"arg1": 1}}',
    prefix="assistant<|role_sep|>\n",
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 271 (gigachat3)",
)
case(
    "sample/gigachat3-1-1",
    SAMPLE_TEMPLATES["gigachat3.1"],
    'Hello, world!\nWhat\'s up?<|function_call|>{"name": "special_function", "arguments": {"arg1": 1}}',
    prefix="assistant<|role_sep|>\n",
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 274 (gigachat3.1)",
)
case(
    "sample/gigachat3-1-2",
    SAMPLE_TEMPLATES["gigachat3.1"],
    '<|function_call|>{"name": "special_function", "arguments": {"arg1": 1}}',
    prefix="assistant<|role_sep|>\n",
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 273 (gigachat3.1)",
)
case(
    "sample/gigachat3-1-3",
    SAMPLE_TEMPLATES["gigachat3.1"],
    "Hello, world!\nWhat's up?",
    prefix="assistant<|role_sep|>\n",
    notes="model_output_samples.jsonl line 272 (gigachat3.1)",
)
case(
    "sample/minicpm5-1",
    SAMPLE_TEMPLATES["minicpm5"],
    '<function name="python"><param name="code">print(\'x\')</param></function>\n<function name="python"><param name="code">print(\'y\')</param></function>',
    prefix="<|im_start|>assistant\n<think>\n\n</think>\n\n",
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 281 (minicpm5)",
)
case(
    "sample/minicpm5-2",
    SAMPLE_TEMPLATES["minicpm5"],
    'I\'m thinking</think><function name="python"><param name="code">print(\'hey\')</param></function>',
    prefix="<|im_start|>assistant\n<think>\n",
    tools=SAMPLE_TOOLS,
    notes="model_output_samples.jsonl line 280 (minicpm5)",
)
case(
    "sample/minicpm5-3",
    SAMPLE_TEMPLATES["minicpm5"],
    "Hello, world!\nWhat's up?",
    prefix="<|im_start|>assistant\n<think>\n\n</think>\n\n",
    notes="model_output_samples.jsonl line 275 (minicpm5)",
)
case(
    "sample/minicpm5-4",
    SAMPLE_TEMPLATES["minicpm5"],
    'Intro before.\n<function name="get_weather"><param name="city">上海</param><param name="date">2024-06-27</param></function>\nOutro after.\n',
    difference="implicit-concat",
    expected={
        "role": "assistant",
        "content": "Intro before.\n\nOutro after.",
        "tool_calls": [
            {
                "type": "function",
                "function": {"name": "get_weather", "arguments": {"city": "上海", "date": "2024-06-27"}},
            }
        ],
    },
    notes="model_output_samples.jsonl line 984 (minicpm5)",
)
case(
    "sample/minicpm5-5",
    SAMPLE_TEMPLATES["minicpm5"],
    'Head\n<function name="get_weather"><param name="city">北京</param></function>\nTXT\n<function name="sum_values"><param name="nums">[7,8,9]</param><param name="exact">false</param></function>\nTail\n',
    difference="implicit-concat",
    expected={
        "role": "assistant",
        "content": "Head\n\nTXT\n\nTail",
        "tool_calls": [
            {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "北京"}}},
            {
                "type": "function",
                "function": {"name": "sum_values", "arguments": {"nums": [7, 8, 9], "exact": False}},
            },
        ],
    },
    notes="model_output_samples.jsonl line 988 (minicpm5)",
)
case(
    "sample/lfm2-json-legacy-1",
    SAMPLE_TEMPLATES["lfm2-json(legacy)"],
    "Hello, world!\nWhat's up?",
    notes="model_output_samples.jsonl line 374 (lfm2-json(legacy))",
)
case(
    "sample/ernie-4-5-1",
    SAMPLE_TEMPLATES["ernie-4.5"],
    '<tool_call>\n{"name": "get_current_temperature", "arguments": {"location": "Beijing"}}\n</tool_call>\n<tool_call>\n{"name": "get_temperature_unit", "arguments": {"location": "Guangzhou", "unit": "c"}}\n</tool_call>\n',
    notes="model_output_samples.jsonl line 600 (ernie-4.5)",
)
case(
    "sample/ernie-4-5-2",
    SAMPLE_TEMPLATES["ernie-4.5"],
    "abc</think>",
    notes="model_output_samples.jsonl line 443 (ernie-4.5)",
)
case(
    "sample/hunyuan-a13b-1",
    SAMPLE_TEMPLATES["hunyuan-a13b"],
    "<think>\nThis is a reasoning section\n</think>\n<answer>\nThis is the rest\n</answer>",
    notes="model_output_samples.jsonl line 486 (hunyuan-a13b)",
)
case(
    "sample/hunyuan-a13b-2",
    SAMPLE_TEMPLATES["hunyuan-a13b"],
    "<think>\nThis is a reasoning section!\n</think>\n<answer>\n",
    notes="model_output_samples.jsonl line 488 (hunyuan-a13b)",
)
case(
    "sample/hunyuan-a13b-3",
    SAMPLE_TEMPLATES["hunyuan-a13b"],
    "<think>\n\n</think>\n<answer>\nThis is the rest\n</answer>",
    notes="model_output_samples.jsonl line 485 (hunyuan-a13b)",
)
case(
    "sample/hunyuan-hy3-1",
    SAMPLE_TEMPLATES["hunyuan-hy3"],
    "This is the rest",
    notes="model_output_samples.jsonl line 493 (hunyuan-hy3)",
)
case(
    "sample/granite-20b-fc-1",
    SAMPLE_TEMPLATES["granite-20b-fc"],
    '<function_call> {"name": "get_weather", "arguments": {"city": "Tokyo"}}',
    notes="model_output_samples.jsonl line 649 (granite-20b-fc)",
)
case(
    "sample/granite-20b-fc-2",
    SAMPLE_TEMPLATES["granite-20b-fc"],
    "This is a regular response without any tool calls.",
    notes="model_output_samples.jsonl line 648 (granite-20b-fc)",
)
case(
    "sample/granite-3-x-1",
    SAMPLE_TEMPLATES["granite-3.x"],
    '<|tool_call|> [{"name": "get_weather", "arguments": {"city": "Tokyo"}}]',
    notes="model_output_samples.jsonl line 660 (granite-3.x)",
)
case(
    "sample/granite-3-x-2",
    SAMPLE_TEMPLATES["granite-3.x"],
    "This is a regular response without any tool calls.",
    notes="model_output_samples.jsonl line 659 (granite-3.x)",
)
case(
    "sample/internlm2-1",
    SAMPLE_TEMPLATES["internlm2"],
    '<|action_start|><|plugin|>{"name": "get_weather", "parameters": {"city": "Tokyo"}}<|action_end|>',
    notes="model_output_samples.jsonl line 679 (internlm2)",
)
case(
    "sample/internlm2-2",
    SAMPLE_TEMPLATES["internlm2"],
    "This is a regular response without any tool calls.",
    notes="model_output_samples.jsonl line 678 (internlm2)",
)
case(
    "sample/jamba-1",
    SAMPLE_TEMPLATES["jamba"],
    ' <tool_calls>[\n    {"name": "get_current_weather", "arguments": {"city": "Dallas", "state": "TX", "unit": "fahrenheit"}},\n    {"name": "get_current_weather", "arguments": {"city": "Orlando", "state": "FL", "unit": "fahrenheit"}}\n]</tool_calls>',
    notes="model_output_samples.jsonl line 691 (jamba)",
)
case(
    "sample/jamba-2",
    SAMPLE_TEMPLATES["jamba"],
    "This is a test",
    notes="model_output_samples.jsonl line 692 (jamba)",
)
case(
    "sample/longcat-1",
    SAMPLE_TEMPLATES["longcat"],
    '<longcat_tool_call>{"name": "get_weather", "arguments": {"city": "Tokyo"}}</longcat_tool_call>',
    notes="model_output_samples.jsonl line 723 (longcat)",
)
case(
    "sample/longcat-2",
    SAMPLE_TEMPLATES["longcat"],
    "This is a regular response without any tool calls.",
    notes="model_output_samples.jsonl line 722 (longcat)",
)
case(
    "sample/longcat-3",
    SAMPLE_TEMPLATES["longcat"],
    'Let me check the weather for you.\n<longcat_tool_call>{"name": "get_weather", "arguments": {"city": "Tokyo"}}</longcat_tool_call>\nHere is the result.',
    difference="implicit-concat",
    expected={
        "role": "assistant",
        "content": "Let me check the weather for you.\n\nHere is the result.",
        "tool_calls": [
            {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Tokyo"}}}
        ],
    },
    notes="model_output_samples.jsonl line 727 (longcat)",
)
case(
    "sample/phi-4-mini-1",
    SAMPLE_TEMPLATES["phi-4-mini"],
    'functools[{"name": "get_weather", "arguments": {"city": "Tokyo"}}]',
    notes="model_output_samples.jsonl line 777 (phi-4-mini)",
)
case(
    "sample/phi-4-mini-2",
    SAMPLE_TEMPLATES["phi-4-mini"],
    "This is a regular response without any tool calls.",
    notes="model_output_samples.jsonl line 776 (phi-4-mini)",
)
case(
    "sample/step-3-1",
    SAMPLE_TEMPLATES["step-3"],
    '<｜tool_calls_begin｜><｜tool_call_begin｜><steptml:invoke name="get_weather"><steptml:parameter name="city">Tokyo</steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>',
    notes="model_output_samples.jsonl line 827 (step-3)",
)
case(
    "sample/step-3-2",
    SAMPLE_TEMPLATES["step-3"],
    "This is a regular response without any tool calls.",
    notes="model_output_samples.jsonl line 826 (step-3)",
)
case(
    "sample/step-3-3",
    SAMPLE_TEMPLATES["step-3"],
    'Let me check the weather for you.\n\n<｜tool_calls_begin｜><｜tool_call_begin｜><steptml:invoke name="get_weather"><steptml:parameter name="city">Tokyo</steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>\n\nI\'ll get that information.',
    difference="implicit-concat",
    expected={
        "role": "assistant",
        "content": "Let me check the weather for you.\n\n\n\nI'll get that information.",
        "tool_calls": [
            {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Tokyo"}}}
        ],
    },
    notes="model_output_samples.jsonl line 831 (step-3)",
)
case(
    "sample/jsonarray-xlam-1",
    SAMPLE_TEMPLATES["jsonarray-xlam"],
    '[{"name": "get_current_weather", "arguments": {"city": "Dallas", "state": "TX", "unit": "fahrenheit"}}, {"name": "get_current_weather", "arguments": {"city": "Orlando", "state": "FL", "unit": "fahrenheit"}}]',
    notes="model_output_samples.jsonl line 849 (xlam)",
)
case(
    "sample/jsonarray-xlam-2",
    SAMPLE_TEMPLATES["jsonarray-xlam"],
    'I\'ll help you with that.\n```json\n[{"name": "get_current_weather", "arguments": {"city": "Dallas", "state": "TX", "unit": "fahrenheit"}}]\n```',
    notes="model_output_samples.jsonl line 851 (xlam)",
)
case(
    "sample/inkling-1",
    SAMPLE_TEMPLATES["inkling"],
    '<|content_thinking|>Consider the weather.<|end_message|><|message_model|><|content_thinking|> Tokyo, probably.<|end_message|><|message_model|><|content_text|>Checking the weather now.<|end_message|><|message_model|>get_weather<|content_invoke_tool_json|>{"name":"get_weather","args":{"city":"Tokyo","units":"C"}}<|end_message|><|content_model_end_sampling|>',
    notes="model_output_samples.jsonl line 1053 (inkling)",
)
case(
    "sample/kimi-k1-5-1",
    SAMPLE_TEMPLATES["kimi-k1.5"],
    "◁think▷Let me analyze this problem. I need to consider multiple factors.◁/think▷The answer is 42.",
    notes="model_output_samples.jsonl line 1056 (kimi-k1.5(◁think▷))",
)


# ---------------------------------------------------------------------------------------------
# ref524/: behaviour that changed in transformers 5.24 (kept in 5.25, the reference these cases run against).
# Where 5.23 read the template differently, its result is recorded in the case's notes (5.23 is
# not installed for the suite).
# ---------------------------------------------------------------------------------------------

_CALL_OPEN_CLOSE = {
    "open_pattern": r"<call (?P<name>\w+)>",
    "close_pattern": r"</call(?: (?P<name>\w+))?(?: id=(?P<cid>\d+))?>",
    "repeats": True,
    "transform": {"name": "{name}", "id": "{cid}", "text": "{content}"},
}
# "transform": null is no transform, in the reference as here.
case(
    "feature/transform-null-is-no-transform",
    tpl({"x": {"open": "<x>", "close": "</x>", "transform": None}}),
    "<x> v </x>",
)
case(
    "feature/transform-null-with-repeats",
    tpl({"x": {"open": "<x>", "close": "</x>", "repeats": True, "transform": None}}),
    "<x>v</x><x>w</x>",
)
case(
    "ref524/close-capture-overrides-open-capture",
    tpl({"calls": _CALL_OPEN_CLOSE}),
    "<call f>a</call g id=1><call h>b</call id=2>",
)
case(
    "ref524/close-capture-not-participating-keeps-open-capture",
    tpl({"calls": {**_CALL_OPEN_CLOSE, "transform": {"name": "{name}", "text": "{content}"}}}),
    "<call f>a</call><call h>b</call id=2>",
)
case(
    "ref524/close-capture-named-content-loses-to-content",
    tpl({"v": {"open": "<v>", "close_pattern": r"</v (?P<content>\w+)>", "transform": {"c": "{content}"}}}),
    "<v>body</v tail>",
)
case(
    "ref524/close-capture-with-transform-each",
    tpl(
        {
            "calls": {
                "open": "<calls>",
                "close_pattern": r"</calls (?P<batch>\w+)>",
                "content": "json",
                "transform_each": True,
                "transform": {"name": "{name}", "batch": "{batch}"},
            }
        }
    ),
    '<calls>[{"name": "a"}, {"name": "b", "batch": "own"}]</calls b7>',
)
case(
    "ref524/close-capture-in-open-and-close-pattern-with-tool-call",
    tpl(
        {
            "tool_calls": {
                "open_pattern": r"<invoke name=\"(?P<name>[^\"]+)\">",
                "close_pattern": r"</invoke id=\"(?P<id>[^\"]+)\">",
                "repeats": True,
                "content": "json",
                "transform": {
                    "type": "function",
                    "id": "{id}",
                    "function": {"name": "{name}", "arguments": "{content}"},
                },
            },
            "content": {},
        }
    ),
    'Sure.<invoke name="get">{"q": 1}</invoke id="c1">',
)
case(
    "ref524/dollar-close-before-final-newline",
    tpl({"m": {"open": "<m>", "close_pattern": r"</m>|$"}, "content": {}}),
    "<m>one\ntwo\n",
)
case(
    "ref524/dollar-close-newline-then-more",
    tpl({"m": {"open": "<m>", "close_pattern": r"</m>|$"}, "content": {}}),
    "<m>x\nmore</m>after",
)
case(
    "ref524/newline-dollar-close",
    tpl({"r": {"open": "<r>", "close_pattern": r"\n$"}, "content": {}}),
    "<r>one\ntwo\n",
)
case(
    "ref524/negative-lookahead-close",
    tpl({"r": {"open": "<r>", "close_pattern": r"x(?!yz)"}, "content": {}}),
    "<r>axyz then x.",
)
case(
    "ref524/positive-lookahead-close",
    tpl(
        {
            "r": {"open": "<r>", "close_pattern": r"(?=<tool_call>)|</r>"},
            "tool_calls": HERMES_CALL,
            "content": {},
        }
    ),
    '<r>plan<tool_call>{"name": "f", "arguments": {}}</tool_call>done',
)
case(
    "ref524/lookahead-close-at-every-split",
    tpl({"r": {"open": "<r>", "close_pattern": r"\n(?=\S)"}, "content": {}}),
    "<r>a\n b\n\nc\nd",
)
case(
    "ref524/unquoted-keys-spaced-around",
    one("json", {"unquoted_keys": True}),
    "<v>{ a : 1,\n  b\t:\t[2] }</v>",
)
case(
    "ref524/unquoted-keys-key-like-text-in-string",
    one("json", {"unquoted_keys": True}),
    '<v>{code: "{x:1}", b: "p, q: r"}</v>',
)
case(
    "ref524/unquoted-keys-escaped-quote-in-string",
    one("json", {"unquoted_keys": True}),
    '<v>{a: "say \\"{b:1}\\", c:2"}</v>',
)
case(
    "ref524/unquoted-keys-in-string-delims",
    one("json", {"unquoted_keys": True, "string_delims": [['<|"|>', '<|"|>']]}),
    '<v>{a:<|"|>{b:1},c:2<|"|>, d: 3}</v>',
)
_P_TAGS = {
    "tag_pattern": r"<p=(?P<key>\w+)>(?P<value>.*?)</p>",
    "merge_duplicates": True,
    "value_parser": {"name": "json"},
}
case("ref524/xml-merge-wraps-list-values", one("xml-inline", _P_TAGS), "<v><p=a>[1]</p><p=a>[2]</p></v>")
case(
    "ref524/xml-merge-list-then-scalar",
    one("xml-inline", _P_TAGS),
    "<v><p=a>[1, 2]</p><p=b>0</p><p=a>3</p><p=a>[]</p></v>",
)
case(
    "ref524/xml-merge-single-list-stays",
    one("xml-inline", _P_TAGS),
    "<v><p=a>[1, 2]</p></v>",
)

# ---------------------------------------------------------------------------------------------
# ref525/: what transformers 5.25 reads in text mode that 5.24 did not: `value_parser_by` (a value
# parser per `xml-inline` tag), arguments of `json`/`python-call-list` fields that a string schema
# admits kept as written, and bound methods as tools. Each case's notes record what 5.24 gave.
# ---------------------------------------------------------------------------------------------

_DSML_TAG = (
    r'<｜DSML｜parameter name="(?P<key>[^"]+)"(?: string="(?P<string>true|false)")?>(?P<value>.*?)'
    r"</｜DSML｜parameter>"
)


def _dsml(**args: Any) -> dict:
    return tpl(
        {
            "tool_calls": {
                "open_pattern": r'<｜DSML｜invoke name="(?P<name>[^"]+)">',
                "close": "</｜DSML｜invoke>",
                "repeats": True,
                "content": "xml-inline",
                "content_args": {"tag_pattern": _DSML_TAG, **args},
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
            },
            "content": {},
        }
    )


def _dsml_param(key: str, value: str, string: str | None = None) -> str:
    attr = f' string="{string}"' if string is not None else ""
    return f'<｜DSML｜parameter name="{key}"{attr}>{value}</｜DSML｜parameter>'


def _dsml_call(*params: str) -> str:
    return '<｜DSML｜invoke name="f">' + "".join(params) + "</｜DSML｜invoke>"


_BY_STRING = {"group": "string", "parsers": {"false": {"name": "json"}}}
_F_TOOLS = [fn("f", {"a": {"type": "array"}, "b": {"type": "integer"}, "c": {"type": "integer"}})]
_IGNORED_524 = "transformers 5.24: value_parser_by ignored (every value a string, then typed by the tools)"

case(
    "ref525/value-parser-by-picks-per-tag",
    _dsml(value_parser_by=_BY_STRING),
    _dsml_call(_dsml_param("a", "[1, 2]", "false"), _dsml_param("b", "7", "true")),
    notes="transformers 5.24: {'a': '[1, 2]', 'b': '7'}",
)
case(
    "ref525/value-parser-by-turns-schema-typing-off",
    _dsml(value_parser_by=_BY_STRING),
    _dsml_call(_dsml_param("a", "[1, 2]", "false"), _dsml_param("b", "7", "true"), _dsml_param("c", "8")),
    tools=_F_TOOLS,
    notes="transformers 5.24: {'a': [1, 2], 'b': 7, 'c': 8} (typed by the schema)",
)
case(
    "ref525/value-parser-by-falls-back-to-value-parser",
    _dsml(value_parser_by=_BY_STRING, value_parser={"name": "int"}),
    _dsml_call(_dsml_param("a", "[3]", "false"), _dsml_param("b", "9", "true"), _dsml_param("c", "8")),
    notes="transformers 5.24: ValueError (int of '[3]')",
)
case(
    "ref525/value-parser-by-no-value-parser-keeps-raw-text",
    _dsml(value_parser_by=_BY_STRING),
    _dsml_call(_dsml_param("c", " 9 ", "true"), _dsml_param("d", " x ")),
    tools=_F_TOOLS,
    notes=_IGNORED_524,
)
case(
    "ref525/value-parser-by-null-entry-keeps-raw-text",
    _dsml(
        value_parser_by={"group": "string", "parsers": {"false": {"name": "json"}, "true": None}},
        value_parser={"name": "int"},
    ),
    _dsml_call(_dsml_param("a", "5", "true"), _dsml_param("b", "6")),
    notes="transformers 5.24: {'a': 5, 'b': 6}",
)
case(
    "ref525/value-parser-by-empty-parsers",
    _dsml(value_parser_by={"group": "string", "parsers": {}}),
    _dsml_call(_dsml_param("b", "5", "true")),
    tools=_F_TOOLS,
    notes=_IGNORED_524,
)
case(
    "ref525/value-parser-by-key-group",
    _dsml(value_parser_by={"group": "key", "parsers": {"a": {"name": "json"}, "c": {"name": "int"}}}),
    _dsml_call(_dsml_param("a", "[1]", "true"), _dsml_param("c", "4"), _dsml_param("b", "5")),
    tools=_F_TOOLS,
    notes="transformers 5.24: {'a': [1], 'c': 4, 'b': 5}",
)
case(
    "ref525/value-parser-by-parser-args",
    _dsml(
        value_parser_by={
            "group": "string",
            "parsers": {
                "true": {"name": "text", "args": {"strip": False}},
                "false": {"name": "json", "args": {"allow_non_json": True}},
            },
        }
    ),
    _dsml_call(_dsml_param("a", " x ", "true"), _dsml_param("b", " nope ", "false"), _dsml_param("c", " 3 ")),
    notes="transformers 5.24: {'a': ' x ', 'b': ' nope ', 'c': ' 3 '}",
)
case(
    "ref525/value-parser-by-merge-duplicates",
    _dsml(value_parser_by=_BY_STRING, merge_duplicates=True),
    _dsml_call(
        _dsml_param("a", "1", "false"), _dsml_param("a", "2", "true"), _dsml_param("a", "[3]", "false")
    ),
    notes="transformers 5.24: {'a': ['1', '2', '[3]']}",
)
case(
    "ref525/value-parser-by-null-is-absent-but-typing-off",
    _dsml(value_parser_by=None),
    _dsml_call(_dsml_param("b", "7", "true")),
    tools=_F_TOOLS,
    notes="transformers 5.24: {'b': 7}",
)
case(
    "ref525/value-parser-by-in-a-value-parser",
    one(
        "xml-inline",
        {
            "tag_pattern": r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>",
            "value_parser": {
                "name": "xml-inline",
                "args": {
                    "tag_pattern": r"\[(?P<key>\w+)(?: (?P<t>j))?\](?P<value>[^\[]*)",
                    "value_parser_by": {"group": "t", "parsers": {"j": {"name": "json"}}},
                },
            },
        },
    ),
    "<v><x>[a j]1[b]2</x></v>",
    notes="transformers 5.24: {'v': {'x': {'a': '1', 'b': '2'}}}",
)
_KV_CALLS = tpl(
    {
        "tool_calls": {
            "open_pattern": r"<call (?P<name>\w+)>",
            "close": "</call>",
            "repeats": True,
            "content": "kv-lines",
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        },
        "content": {},
    }
)
_KV_BY = copy.deepcopy(_KV_CALLS)
_KV_BY["fields"]["tool_calls"]["content_args"] = {"value_parser_by": {"group": "string", "parsers": {}}}
case(
    "ref525/kv-lines-value-parser-by-only-turns-typing-off",
    _KV_BY,
    "<call f>b: 7\nc: 8</call>",
    tools=_F_TOOLS,
    notes="transformers 5.24: {'b': 7, 'c': 8}",
)
_JSON_BY = copy.deepcopy(QWEN3)
_JSON_BY["fields"]["tool_calls"]["content_args"] = {"value_parser_by": ["anything"]}
case(
    "ref525/json-value-parser-by-only-turns-typing-off",
    _JSON_BY,
    '<tool_call>{"name": "f", "arguments": {"b": "7"}}</tool_call>',
    tools=_F_TOOLS,
    notes="transformers 5.24: {'b': 7}",
)
# Both refuse a group tag_pattern does not define, once a tag is read (ours at load, 5.25 at the tag).
case(
    "ref525/value-parser-by-group-not-in-pattern",
    _dsml(value_parser_by={"group": "kind", "parsers": {}}),
    _dsml_call(_dsml_param("a", "1")),
    error="TemplateError",
    notes=_IGNORED_524,
)
case(
    "ref525/value-parser-by-parsers-not-an-object",
    _dsml(value_parser_by={"group": "string", "parsers": ["json"]}),
    _dsml_call(_dsml_param("a", "1")),
    error="TemplateError",
    notes=_IGNORED_524,
)
# value-parser-by-at-load: refused when the template loads; 5.25 fails only where a tag needs it, and
# then with AttributeError or KeyError.
_AT_LOAD = {"difference": "value-parser-by-at-load", "expected": Raises("TemplateError")}
case(
    "ref525/value-parser-by-group-not-in-pattern-unused",
    _dsml(value_parser_by={"group": "kind", "parsers": {}}),
    "just text",
    notes="transformers 5.25: {'content': 'just text'} (never checked)",
    **_AT_LOAD,
)
case(
    "ref525/value-parser-by-not-an-object",
    _dsml(value_parser_by=["string"]),
    _dsml_call(_dsml_param("a", "1")),
    notes="transformers 5.25: AttributeError ('list' object has no attribute 'get')",
    **_AT_LOAD,
)
case(
    "ref525/value-parser-by-unknown-parser",
    _dsml(value_parser_by={"group": "string", "parsers": {"false": {"name": "yaml"}}}),
    _dsml_call(_dsml_param("a", "1", "false")),
    notes="transformers 5.25: KeyError 'yaml'",
    **_AT_LOAD,
)
case(
    "ref525/value-parser-by-unknown-parser-unused",
    _dsml(value_parser_by={"group": "string", "parsers": {"false": {"name": "yaml"}}}),
    _dsml_call(_dsml_param("a", "1", "true")),
    notes="transformers 5.25: {'a': '1'} (the entry is never used)",
    **_AT_LOAD,
)
case(
    "ref525/value-parser-by-entry-not-an-object",
    _dsml(value_parser_by={"group": "string", "parsers": {"false": "json"}}),
    _dsml_call(_dsml_param("a", "1", "false")),
    notes="transformers 5.25: AttributeError ('str' object has no attribute 'get')",
    **_AT_LOAD,
)

# Arguments of json / python-call-list fields that a string schema admits stay as written.
_UNION_TOOLS = [
    fn(
        "f",
        {
            "sl": {"type": ["string", "integer"]},
            "ls": {"type": ["integer", "string"]},
            "any": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "one": {"oneOf": [{"type": "object"}, {"type": "string"}]},
            "ns": {"type": "string", "nullable": True},
            "as": {"type": ["array", "string"]},
            "bs": {"type": ["boolean", "string"]},
            "inull": {"type": ["integer", "null"]},
            "i": {"type": "integer"},
            "ni": {"type": "integer", "nullable": True},
            "s": {"type": "string"},
        },
    )
]
_UNION_ARGS = {
    "sl": "7",
    "ls": "7",
    "any": "7",
    "one": '{"a": 1}',
    "ns": "null",
    "as": "[1, 2]",
    "bs": "true",
    "inull": "7",
    "i": "7",
    "ni": "None",
    "s": "7",
}
_UNION_524 = (
    "transformers 5.24: {'sl': 7, 'ls': 7, 'any': 7, 'one': {'a': 1}, 'ns': None, 'as': [1, 2], 'bs': True, "
    "'inull': 7, 'i': 7, 'ni': None, 's': '7'}"
)
case(
    "ref525/json-arguments-a-string-schema-admits-stay",
    QWEN3,
    "<tool_call>" + json.dumps({"name": "f", "arguments": _UNION_ARGS}) + "</tool_call>",
    tools=_UNION_TOOLS,
    notes=_UNION_524,
)
case(
    "ref525/json-each-arguments-a-string-schema-admits-stay",
    tpl(
        {
            "tool_calls": {
                "open": "<calls>",
                "close": "</calls>",
                "content": "json",
                "transform_each": True,
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}},
            },
            "content": {},
        }
    ),
    '<calls>[{"name": "f", "arguments": {"sl": "7", "i": "8"}}]</calls>',
    tools=_UNION_TOOLS,
    notes="transformers 5.24: {'sl': 7, 'i': 8}",
)
_CALL_LIST_CALLS = tpl(
    {
        "tool_calls": {
            "open": "[TOOL_CALLS]",
            "close": "</s>",
            "content": "python-call-list",
            "transform_each": True,
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}},
        },
        "content": {},
    }
)
case(
    "ref525/python-call-list-arguments-a-string-schema-admits-stay",
    _CALL_LIST_CALLS,
    "[TOOL_CALLS][f(" + ", ".join(f"{k}={json.dumps(v)}" for k, v in _UNION_ARGS.items()) + ")]</s>",
    tools=_UNION_TOOLS,
    notes=_UNION_524,
)
case(
    "ref525/xml-inline-still-casts-unions",
    XML_CALLS,
    xml_call("f", **_UNION_ARGS),
    tools=_UNION_TOOLS,
    notes="transformers 5.24: the same (xml-inline casts as before)",
)
case(
    "ref525/kv-lines-still-casts-unions",
    _KV_CALLS,
    "<call f>" + "\n".join(f"{k}: {v}" for k, v in _UNION_ARGS.items()) + "</call>",
    tools=_UNION_TOOLS,
    notes="transformers 5.24: the same (kv-lines casts as before)",
)


def lookup(item_id: int | str, label: str | None = None, count: int | None = None) -> None:
    """Look an item up.

    Args:
        item_id: The item.
        label: A label.
        count: How many.
    """


case(
    "ref525/callable-unions-in-json-stay-strings",
    QWEN3,
    '<tool_call>{"name": "lookup", "arguments": {"item_id": "42", "label": "None", "count": "5"}}</tool_call>',
    tools=[lookup],
    notes="transformers 5.24: {'item_id': 42, 'label': None, 'count': 5}",
)
case(
    "ref525/callable-unions-in-xml-are-cast",
    XML_CALLS,
    xml_call("lookup", item_id="42", label="None"),
    tools=[lookup],
    notes="transformers 5.24: the same",
)


class Thermostat:
    """A tool owner whose method annotates ``self`` (a bound method is a tool since 5.25)."""

    def set_temp(self: Thermostat, celsius: float) -> None:
        """Set the temperature.

        Args:
            celsius: The target in degrees.
        """


case(
    "ref525/bound-method-tool-json",
    QWEN3,
    '<tool_call>{"name": "set_temp", "arguments": {"celsius": "21.5"}}</tool_call>',
    tools=[Thermostat().set_temp],
    notes="transformers 5.24: TypeHintParsingException (the hint of self)",
)
case(
    "ref525/bound-method-tool-xml",
    XML_CALLS,
    xml_call("set_temp", celsius="21.5"),
    tools=[Thermostat().set_temp],
    notes="transformers 5.24: TypeHintParsingException (the hint of self)",
)

# ---------------------------------------------------------------------------------------------
# implicit/: the implicit field with `repeats` (one item per segment, `join` joins them) and with a
# context-bound zero-width close (`$`, a lookahead), as transformers 5.24 reads them.
# ---------------------------------------------------------------------------------------------

_T = {"open": "<t>", "close": "</t>", "repeats": True}


def _implicit(content: dict, **other: Any) -> dict:
    return tpl({"t": _T, **other, "content": content})


case("implicit/repeats-join-space", _implicit({"repeats": True, "join": " "}), "a<t>x</t>b<t>y</t>c")
case("implicit/repeats-list", _implicit({"repeats": True}), "a<t>x</t>b<t>y</t>c")
case("implicit/repeats-whitespace-segment", _implicit({"repeats": True}), "a<t>x</t>\n<t>y</t>c")
case(
    "implicit/repeats-join-whitespace-segment",
    _implicit({"repeats": True, "join": "|"}),
    "a<t>x</t> <t>y</t>c",
)
case("implicit/repeats-touching-regions", _implicit({"repeats": True}), "a<t>x</t><t>y</t>c")
case("implicit/repeats-single-segment", _implicit({"repeats": True, "join": " "}), "<t>x</t>only")
case("implicit/repeats-no-segment", _implicit({"repeats": True}), "<t>x</t>")
case("implicit/repeats-only-whitespace", _implicit({"repeats": True}), " \n ")
case(
    "implicit/repeats-strip-false",
    _implicit({"repeats": True, "content_args": {"strip": False}}),
    " a <t>x</t> b ",
)
case("implicit/repeats-int", _implicit({"repeats": True, "content": "int"}), "1<t>x</t> 2 ")
case(
    "implicit/repeats-int-whitespace-segment-fails",
    _implicit({"repeats": True, "content": "int"}),
    "1<t>x</t> <t>y</t>2",
    error="ParseError",
)
case(
    "implicit/repeats-join-needs-strings",
    _implicit({"repeats": True, "join": ",", "content": "int"}),
    "1<t>x</t>2",
    error="ParseError",
)
case("implicit/repeats-json", _implicit({"repeats": True, "content": "json"}), '{"a": 1}<t>x</t>[2]')
case(
    "implicit/repeats-with-close",
    _implicit({"repeats": True, "close": "<|im_end|>"}),
    "a<|im_end|>b<t>x</t>c",
)
case(
    "implicit/repeats-segment-in-prefix",
    _implicit({"repeats": True, "join": " "}),
    "b<t>y</t>c",
    prefix=CHATML + "a<t>x</t>",
)
case(
    "implicit/repeats-close-captures-per-segment",
    _implicit(
        {
            "repeats": True,
            "close_pattern": r"<end (?P<k>\w+)>",
            "transform": {"k": "{k}", "text": "{content}"},
        }
    ),
    "a<end 1>b<end 2>",
)
case(
    "implicit/repeats-with-tool-calls",
    tpl({"reasoning_content": THINK, "tool_calls": HERMES_CALL, "content": {"repeats": True, "join": "\n"}}),
    '<think>plan</think>First.<tool_call>{"name": "f", "arguments": {}}</tool_call>Then.',
)
case("implicit/close-dollar", _implicit({"close_pattern": "$"}), "<t>x</t>answer")
case(
    "implicit/close-dollar-final-newline",
    _implicit({"close_pattern": "$"}),
    "answer\n",
    events_difference="empty-delimiters",
)
case(
    "implicit/close-dollar-strip-false",
    _implicit({"close_pattern": "$", "content_args": {"strip": False}}),
    "answer\n",
    events_difference="empty-delimiters",
)
case(
    "implicit/close-dollar-repeats",
    _implicit({"close_pattern": "$", "repeats": True}),
    "a<t>x</t>b\n",
    events_difference="empty-delimiters",
)
case(
    "implicit/close-dollar-repeats-join",
    _implicit({"close_pattern": "$", "repeats": True, "join": " "}),
    "a<t>x</t>b\n",
    events_difference="empty-delimiters",
)
_TRL_CLOSE = r"<\|im_end\|>\s*|$"
case("implicit/close-trl-im-end", _implicit({"close_pattern": _TRL_CLOSE}), "<t>x</t>Answer.<|im_end|>\n")
case("implicit/close-trl-end-of-text", _implicit({"close_pattern": _TRL_CLOSE}), "<t>x</t>Answer.")
case(
    "implicit/close-trl-end-of-text-newline",
    _implicit({"close_pattern": _TRL_CLOSE}),
    "<t>x</t>Answer.\n",
    events_difference="empty-delimiters",
)
case(
    "implicit/close-trl-qwen3",
    tpl({"reasoning_content": THINK, "tool_calls": HERMES_CALL, "content": {"close_pattern": _TRL_CLOSE}}),
    '<think>plan</think>\n\n<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call><|im_end|>\n',
)
case(
    "implicit/close-trl-repeats",
    _implicit({"close_pattern": _TRL_CLOSE, "repeats": True}),
    "one<|im_end|>\ntwo<t>x</t>three",
)
case(
    "implicit/close-lookahead",
    tpl({"tool_calls": HERMES_CALL, "content": {"close_pattern": "(?=<tool_call>)"}}),
    'Let me call.<tool_call>{"name": "f", "arguments": {}}</tool_call>',
)
case(
    "implicit/close-lookahead-repeats",
    tpl({"tool_calls": HERMES_CALL, "content": {"close_pattern": "(?=<tool_call>)", "repeats": True}}),
    'A.<tool_call>{"name": "f", "arguments": {}}</tool_call>B.<tool_call>{"name": "g", "arguments": {}}</tool_call>C.',
)
case(
    "difference/zero-width-close-keeps-reading",
    _implicit({"close_pattern": r"(?=\n)"}),
    "one\ntwo\n\nthree",
    difference="empty-delimiters",
    expected=msg(content="one\ntwo\n\nthree"),
    notes="the reference stops reading after the second zero-width close and returns 'one'",
)
case(
    "difference/zero-width-close-keeps-reading-repeats",
    _implicit({"close_pattern": r"(?=\n)", "repeats": True}),
    "x\ny",
    difference="empty-delimiters",
    expected=msg(content=["x", "y"]),
    notes="the reference returns ['x']",
)
case(
    "difference/zero-width-close-final-newline-after-region",
    _implicit({"close_pattern": "$", "repeats": True}),
    "a<t>x</t>\n",
    difference="empty-delimiters",
    expected=msg(t=["x"], content=["a", ""]),
    notes="the reference does not read the final newline after the region and returns ['a']",
)


# ---------------------------------------------------------------------------------------------
# args/: content_args that cannot change the result are read as the reference reads them (ignored,
# and reported by lint); xml-inline tag patterns without a value group (flag tags).
# ---------------------------------------------------------------------------------------------

case("args/float-strip-false", one("float", {"strip": False}), "<v> 2.5\n</v>")
case("args/int-unknown-arg", one("int", {"base": 16}), "<v>10</v>")
case("args/bool-strip-false-exact-word", one("bool", {"strip": False}), "<v>true</v>")
case(
    "difference/bool-strip-false-keeps-whitespace",
    one("bool", {"strip": False}),
    "<v> true</v>",
    difference="strict-bool",
    expected=Raises("ParseError"),
    notes="the reference reads ' true' (not stripped) as False",
)
case("args/json-strip-without-allow-non-json", one("json", {"strip": False}), '<v> {"a": 1}\n</v>')
case(
    "args/json-allow-non-json-strip-false-valid",
    one("json", {"allow_non_json": True, "strip": False}),
    "<v> [1] </v>",
)
case("args/json-unknown-arg", one("json", {"unquoted_key": True}), '<v>{"a": 1}</v>')
case("args/text-unknown-arg", tpl({"content": {"content_args": {"strip": False, "lang": "en"}}}), " text ")
case("args/kv-lines-unknown-arg", one("kv-lines", {"merge_duplicates": True}), "<v>a: 1\na: 2</v>")
case(
    "args/value-parser-extra-key",
    one("kv-lines", {"value_parser": {"name": "int", "note": "counts"}}),
    "<v>a: 1\nb: 2</v>",
)
case(
    "args/value-parser-unknown-arg",
    one("kv-lines", {"value_parser": {"name": "int", "args": {"strip": False}}}),
    "<v>a: 1\nb:  2 </v>",
)
case(
    "args/xml-inline-unknown-arg",
    one("xml-inline", {"tag_pattern": r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>", "strip": True}),
    "<v><a> 1 </a></v>",
)
_FLAG = r"<(?P<key>\w+)/>"
case("args/xml-inline-flag-tags", one("xml-inline", {"tag_pattern": _FLAG}), "<v><urgent/> \n <silent/></v>")
case(
    "args/xml-inline-flag-tags-text-value-parser",
    one("xml-inline", {"tag_pattern": _FLAG, "value_parser": {"name": "text"}}),
    "<v><urgent/></v>",
)
case(
    "args/xml-inline-flag-tags-int-value-parser",
    one("xml-inline", {"tag_pattern": _FLAG, "value_parser": {"name": "int"}}),
    "<v><urgent/></v>",
    error="ParseError",
)
case(
    "args/xml-inline-flag-tags-merge",
    one("xml-inline", {"tag_pattern": _FLAG, "merge_duplicates": True}),
    "<v><a/><b/><a/></v>",
)
case(
    "args/xml-inline-flag-tags-mixed-pattern",
    one("xml-inline", {"tag_pattern": r"<(?P<key>\w+)(?:/>|>.*?</(?P=key)>)"}),
    "<v><a/><b>ignored</b></v>",
)
case("args/xml-inline-flag-tags-none", one("xml-inline", {"tag_pattern": _FLAG}), "<v>\n</v>")
case(
    "args/xml-inline-flag-tags-words",
    one("xml-inline", {"tag_pattern": _FLAG}),
    "<v><urgent/> text <silent/></v>",
    difference="xml-inline-unread-text",
    expected=Raises("ParseError"),
)

# ---------------------------------------------------------------------------------------------
# Disagreements with the reference that docs/spec.md does not list as intended differences. Each one
# is an expected (strict) failure of the reference comparison until the lead decides.
# ---------------------------------------------------------------------------------------------

# Disagreements found by this suite and reviewed by the lead: each is an intended difference (see
# docs/differences.md), applied to the case as its ``difference`` slug and our expected result.
_BIG = 999999999999999999999999999999


def _call(arguments: dict) -> dict:
    return {
        **ROLE,
        "tool_calls": [{"type": "function", "function": {"name": "typed", "arguments": arguments}}],
    }


RESOLVED: dict[str, tuple[str, Any]] = {
    "probe/json-deep-nesting-600": ("json-depth-limit", Raises("ParseError")),
    "probe/defaults-join-seed-empty": ("defaults-replaced", {**ROLE, "r": "a\nb"}),
    "probe/defaults-join-seed-text": ("defaults-replaced", {**ROLE, "r": "a"}),
    "probe/defaults-repeats-seed-list": ("defaults-replaced", {**ROLE, "r": ["a"]}),
    "probe/defaults-repeats-seed-string": ("defaults-replaced", {**ROLE, "r": ["a"]}),
    "probe/defaults-required-empty-default": ("required-after-drop", Raises("ParseError")),
    "tools/number-big-integer-text": ("exact-number-typing", _call({"n": _BIG})),
    "tools/number-big-exponent": ("exact-number-typing", _call({"n": 10**50})),
    "tools/integer-almost-integral": (
        "exact-number-typing",
        _call({"i": "1.999999999999999999999999999999"}),
    ),
    "probe/tool-not-a-schema": ("strict-tools", Raises("ToolSpecError")),
    "probe/tool-without-name": ("strict-tools", Raises("ToolSpecError")),
    "probe/xml-inline-missing-tag-pattern-unused": ("strict-content-args", Raises("TemplateError")),
    "probe/repeats-not-bool": ("strict-field-types", Raises("TemplateError")),
    "probe/json-sentinel-chars": ("json-no-sentinels", {**ROLE, "v": {"a": "x\x01y"}}),
    "probe/unresolvable-placeholder-field-unused": ("static-placeholders", Raises("TemplateError")),
}


def _apply_resolved() -> None:
    import dataclasses

    by_id = {c.id: i for i, c in enumerate(CASES)}
    for case_id, (slug, expected) in RESOLVED.items():
        i = by_id[case_id]
        CASES[i] = dataclasses.replace(CASES[i], difference=slug, expected=expected, pending=None)


_apply_resolved()


# What transformers 5.23 gave where 5.24 reads the case differently (recorded by running 5.23 once; it is
# not a test dependency). Merged into each case's notes.
_KEY_ERROR_523 = "transformers 5.23: KeyError (close-pattern captures did not reach transforms)"
_UNQUOTED_523 = "transformers 5.23: ValueError (unquoted_keys rewrote text inside strings / needed no spaces)"
RESULTS_523: dict[str, str] = {
    "feature/close-captures-in-transform": _KEY_ERROR_523,
    "feature/close-captures-only-close": _KEY_ERROR_523,
    "ref524/close-capture-overrides-open-capture": _KEY_ERROR_523,
    "ref524/close-capture-with-transform-each": _KEY_ERROR_523,
    "ref524/close-capture-in-open-and-close-pattern-with-tool-call": _KEY_ERROR_523,
    "stream/dollar-before-newline-at-prefix-end": "transformers 5.23: {'m': 'x', 'content': 'more</m>after'}",
    "content/json-unquoted-keys-spaced": _UNQUOTED_523,
    "content/json-unquoted-keys-colon-in-string": _UNQUOTED_523,
    "ref524/unquoted-keys-spaced-around": _UNQUOTED_523,
    "ref524/unquoted-keys-key-like-text-in-string": _UNQUOTED_523,
    "ref524/unquoted-keys-escaped-quote-in-string": _UNQUOTED_523,
    "ref524/unquoted-keys-in-string-delims": _UNQUOTED_523,
    "ref524/xml-merge-wraps-list-values": "transformers 5.23: {'v': {'a': [1, [2]]}} (a list value was extended)",
    "ref524/xml-merge-list-then-scalar": "transformers 5.23: {'v': {'a': [1, 2, 3, []], 'b': 0}}",
}


def _apply_results_523() -> None:
    import dataclasses

    by_id = {c.id: i for i, c in enumerate(CASES)}
    for case_id, result in RESULTS_523.items():
        i = by_id[case_id]
        notes = "; ".join(part for part in (CASES[i].notes, result) if part)
        CASES[i] = dataclasses.replace(CASES[i], notes=notes)


_apply_results_523()
