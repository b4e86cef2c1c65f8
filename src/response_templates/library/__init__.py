"""The model library: built-in response templates for the model families people run.

Each family is one JSON file in this package (data, not code) holding the response template and what is
known about the family: the model ids it serves, the chat-template markers that identify it, the
reasoning and tool-call syntax, the variants of its prompt (thinking on/off, a pre-opened think block)
and notes on what the template language can and cannot express for it.

>>> from response_templates import library
>>> library.family("qwen3").same_format_as
'hermes'
>>> library.family_for_model("Qwen/Qwen3-8B").name
'qwen3'
>>> library.get("qwen3").fields is library.get("hermes").fields  # one template, compiled once
True
>>> library.get("qwen3")  # each family's copy names the family it was asked for
<ResponseTemplate family='qwen3' fields=['reasoning_content', 'tool_calls', 'content']>
>>> library.family("gemma-3").status  # a template for part of the format; the rest needs extensions
'partial'
>>> library.family("apertus").uses  # supported through a declared extension (docs/extensions.md)
('E2',)

The usual entry points are the thin functions re-exported from :mod:`response_templates.templates`
(``rt.templates.names()``, ``get``, ``for_model``, ``detect``).
"""

from __future__ import annotations

import dataclasses
import difflib
import fnmatch
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from ..errors import ResponseTemplateError
from ..language import ResponseTemplate, load_template
from ..language.loader import set_name_resolver
from . import detection

__all__ = [
    "EXTENSIONS",
    "STATUSES",
    "AmbiguousChatTemplateError",
    "Candidate",
    "ExtensionRequiredError",
    "Family",
    "UnknownModelError",
    "Variant",
    "detect",
    "detect_all",
    "detect_family",
    "families",
    "family",
    "family_for_model",
    "family_or_model",
    "fingerprint",
    "for_model",
    "get",
    "names",
]

#: What a family's ``status`` means.
STATUSES: Mapping[str, str] = {
    "supported": "the template reads the format as the model writes it",
    "approximate": "the template reads the common case; documented corner cases need an extension",
    "partial": "a template for part of the format only (see the notes); the rest needs an extension",
    "needs-extension": "not expressible in the template language yet; no template",
}

#: The template-language extensions proposed in ``docs/design/extensions.md`` (E1-E8), plus E9.
EXTENSIONS: Mapping[str, str] = {
    "E1": "python-calls: Python-call syntax for tool calls ([f(a=1), g()])",
    "E2": "item-transform: tool name as the key of a single-key object",
    "E3": "json-value-end: a region that ends where its JSON value ends",
    "E4": "xml-values: typed, escaped, CDATA and nested XML argument values",
    "E5": "interleaved: tool calls inside an open reasoning block",
    "E6": "implicit-wrapper: content either bare or inside a wrapper",
    "E7": "json-envelope: one JSON object routed into several fields by key",
    "E8": "into: several syntaxes feeding one output key",
    "E9": "optional-placeholders: a transform placeholder omitted when its path does not resolve",
}


class UnknownModelError(ResponseTemplateError, LookupError):
    """No family in the library matches a name, model id or chat template.

    ``query`` is what was looked up and ``near_matches`` the closest family names or model patterns.
    """

    def __init__(self, message: str, *, query: str, near_matches: Sequence[str] = ()) -> None:
        if near_matches:
            message += "; near matches: " + ", ".join(near_matches)
        super().__init__(message)
        self.query = query
        self.near_matches = list(near_matches)


class ExtensionRequiredError(ResponseTemplateError, LookupError):
    """The family is known, but its format needs a template-language extension not built yet."""

    def __init__(self, family: Family) -> None:
        needs = ", ".join(f"{e} ({EXTENSIONS.get(e, '?')})" for e in family.needs) or "an extension"
        super().__init__(
            f"model family {family.name!r} ({family.title}) is known but has no template yet: its format "
            f"needs {needs}. See docs/models.md."
        )
        self.family = family


@dataclass(frozen=True)
class Variant:
    """One way the family's chat template can end the prompt (e.g. thinking on, thinking off)."""

    name: str
    #: What the rendered prompt ends with (the generation prompt) in this variant.
    generation_prompt: str
    #: Whether this prompt leaves a reasoning block open, so the output starts inside it.
    pre_opens_reasoning: bool = False
    note: str = ""


@dataclass(frozen=True)
class Family:
    """One model family of the library (the contents of one JSON file)."""

    name: str
    title: str
    #: Row of the family in research/formats.md (several library entries may share one row).
    formats_md: int | None
    aliases: tuple[str, ...]
    #: Model-id patterns (shell-style, case-insensitive), e.g. ``Qwen/Qwen3-*``.
    models: tuple[str, ...]
    #: File names of real chat templates of the family (test data, used for round-trip checks).
    chat_templates: tuple[str, ...]
    #: Detection rules: the family matches a chat template that contains every string of one rule.
    markers: tuple[tuple[str, ...], ...]
    #: SHA-256 fingerprints (see :func:`fingerprint`) of chat templates known to belong to the family.
    fingerprints: tuple[str, ...]
    status: str
    #: Extensions without which there can be no (full) template.
    needs: tuple[str, ...]
    #: Extensions that would make the template lossless in corner cases it handles only approximately.
    would_use: tuple[str, ...]
    #: Implemented extensions (E1-E9) the family's template uses (declared in its ``extensions``).
    uses: tuple[str, ...]
    reasoning: str
    tool_calls: str
    parallel_calls: bool | None
    #: The plain start of the assistant turn as the chat template renders it (no pre-opened blocks).
    generation_prompt: str
    variants: tuple[Variant, ...]
    notes: tuple[str, ...]
    #: ``family`` names in research/model_output_samples.jsonl that belong to this family.
    sample_families: tuple[str, ...]
    #: Name of the family whose template this one shares (the formats are identical), if any.
    same_format_as: str | None
    template_data: Mapping[str, Any] | None

    @property
    def has_template(self) -> bool:
        """Whether :meth:`template` returns a template (its own or the one it shares)."""
        return self.resolved().template_data is not None

    def resolved(self) -> Family:
        """The family whose template this one uses (itself unless ``same_format_as`` is set)."""
        return family(self.same_format_as) if self.same_format_as else self

    def template(self) -> ResponseTemplate:
        """The compiled response template; :class:`ExtensionRequiredError` if there is none."""
        if self.resolved().template_data is None:
            raise ExtensionRequiredError(self)
        return _compiled(self.name)

    def template_dict(self) -> dict[str, Any]:
        """The response template as plain JSON data (a copy)."""
        return self.template().to_dict()

    def pre_open_prompt(self) -> str | None:
        """The generation prompt of the first variant that pre-opens a reasoning block, if any."""
        for variant in self.variants:
            if variant.pre_opens_reasoning:
                return variant.generation_prompt
        return None

    def to_dict(self) -> dict[str, Any]:
        """The family as JSON data (as in its file)."""
        data: dict[str, Any] = json.loads(_raw_files()[self.name])
        return data

    def round_trip_options(self) -> dict[str, Any]:
        """Keyword arguments for :func:`response_templates.verify.round_trip` with this family's chat
        templates (template variables per case, stop strings, call-id shape, ...)."""
        settings = dict(self.to_dict().get("round_trip", {}))
        settings.pop("known_issues", None)
        if "kwargs" in settings:
            settings["template_kwargs"] = settings.pop("kwargs")
        return settings

    def known_round_trip_issues(self, chat_template: str) -> dict[str, str]:
        """Reviewed round-trip failures for one of the family's chat template files: case name (or ``*``
        for every case) -> reason."""
        issues = self.to_dict().get("round_trip", {}).get("known_issues", {})
        return dict(issues.get(chat_template, {}))


# ------------------------------------------------------------------------------------------ loading

_REQUIRED = ("name", "title", "status")


@cache
def _raw_files() -> dict[str, str]:
    """File contents of every family, by family name."""
    out: dict[str, str] = {}
    for entry in sorted(resources.files(__name__).iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".json"):
            continue
        text = entry.read_text(encoding="utf-8")
        data = json.loads(text)
        name = data.get("name")
        if name != entry.name.removesuffix(".json"):
            raise ResponseTemplateError(
                f"library file {entry.name}: 'name' must be the file name, got {name!r}"
            )
        out[name] = text
    return out


def _variant(data: Mapping[str, Any]) -> Variant:
    return Variant(
        name=data["name"],
        generation_prompt=data["generation_prompt"],
        pre_opens_reasoning=bool(data.get("pre_opens_reasoning", False)),
        note=data.get("note", ""),
    )


def _family(data: Mapping[str, Any]) -> Family:
    missing = [key for key in _REQUIRED if key not in data]
    if missing:
        raise ResponseTemplateError(f"library family {data.get('name')!r} lacks {missing}")
    if data["status"] not in STATUSES:
        raise ResponseTemplateError(f"library family {data['name']!r}: unknown status {data['status']!r}")
    return Family(
        name=data["name"],
        title=data["title"],
        formats_md=data.get("formats_md"),
        aliases=tuple(data.get("aliases", ())),
        models=tuple(data.get("models", ())),
        chat_templates=tuple(data.get("chat_templates", ())),
        markers=tuple(tuple(rule) for rule in data.get("markers", ())),
        fingerprints=tuple(data.get("fingerprints", ())),
        status=data["status"],
        needs=tuple(data.get("needs", ())),
        would_use=tuple(data.get("would_use", ())),
        uses=tuple(data.get("uses", ())),
        reasoning=data.get("reasoning", ""),
        tool_calls=data.get("tool_calls", ""),
        parallel_calls=data.get("parallel_calls"),
        generation_prompt=data.get("generation_prompt", ""),
        variants=tuple(_variant(v) for v in data.get("variants", ())),
        notes=tuple(data.get("notes", ())),
        sample_families=tuple(data.get("sample_families", ())),
        same_format_as=data.get("same_format_as"),
        template_data=data.get("template"),
    )


@cache
def _families() -> dict[str, Family]:
    fams = {name: _family(json.loads(text)) for name, text in _raw_files().items()}
    for fam in fams.values():
        if fam.same_format_as is not None:
            target = fams.get(fam.same_format_as)
            if target is None or target.same_format_as is not None:
                raise ResponseTemplateError(
                    f"library family {fam.name!r}: same_format_as {fam.same_format_as!r} must name a family "
                    "with its own template"
                )
            if fam.template_data is not None:
                raise ResponseTemplateError(
                    f"library family {fam.name!r} has both a template and same_format_as"
                )
    return fams


@cache
def _lookup() -> dict[str, str]:
    """Lower-cased name or alias -> family name."""
    table: dict[str, str] = {}
    for fam in _families().values():
        for key in (fam.name, *fam.aliases):
            low = key.lower()
            if low in table and table[low] != fam.name:
                raise ResponseTemplateError(f"library: {key!r} names both {table[low]!r} and {fam.name!r}")
            table[low] = fam.name
    return table


@cache
def _compiled(name: str) -> ResponseTemplate:
    data = _families()[name].resolved().template_data
    assert data is not None
    # A copy that names its family (one per family, also for families that share a format): the loader's
    # cached template for the same data stays anonymous.
    return dataclasses.replace(load_template(data), family=name)


# ------------------------------------------------------------------------------------------- lookup


def families() -> list[Family]:
    """Every family in the library, sorted by name (including those that need an extension)."""
    return [fam for _, fam in sorted(_families().items())]


def names(*, include_unsupported: bool = False) -> list[str]:
    """Names of the families that have a template (all families with ``include_unsupported=True``)."""
    return [f.name for f in families() if include_unsupported or f.has_template]


def family(name: str) -> Family:
    """The family called ``name`` (or one of its aliases, any letter case)."""
    if not isinstance(name, str):
        raise TypeError(f"a family name is a string, got {type(name).__name__}")
    found = _lookup().get(name.strip().lower())
    if found is None:
        close = difflib.get_close_matches(name.strip().lower(), list(_lookup()), n=5, cutoff=0.5)
        near = list(dict.fromkeys(_lookup()[c] for c in close))
        raise UnknownModelError(
            f"no model family called {name!r} in the library", query=name, near_matches=near
        )
    return _families()[found]


def get(name: str) -> ResponseTemplate:
    """The compiled response template of the family ``name`` (or an alias).

    Raises :class:`UnknownModelError` (with near matches) for an unknown name and
    :class:`ExtensionRequiredError` for a family whose format needs an extension.
    """
    return family(name).template()


def _pattern_score(pattern: str) -> int:
    """How specific a model pattern is: the number of literal characters before the first wildcard."""
    for i, ch in enumerate(pattern):
        if ch in "*?[":
            return i
    return len(pattern) + 1000  # an exact id beats any wildcard pattern


def family_for_model(model_id: str) -> Family:
    """The family serving ``model_id`` (``org/name`` as on the Hugging Face Hub, or just ``name``).

    The most specific matching pattern wins (the longest literal part). Matching ignores letter case, a
    local path prefix (``/models/Qwen/Qwen3-8B``) and a quantization suffix after a colon.
    """
    if not isinstance(model_id, str) or not model_id.strip():
        raise UnknownModelError("a model id is a non-empty string", query=str(model_id))
    query = model_id.strip().rstrip("/").lower()
    candidates = [query]
    parts = query.split("/")
    if len(parts) > 2:
        candidates.append("/".join(parts[-2:]))
    if ":" in candidates[-1]:
        candidates.append(candidates[-1].split(":", 1)[0])
    best: tuple[int, str] | None = None
    for fam in families():
        for pattern in fam.models:
            pat = pattern.lower()
            bare = pat.split("/", 1)[1] if "/" in pat else pat
            for cand in candidates:
                name_only = cand.split("/")[-1]
                if fnmatch.fnmatchcase(cand, pat) or (
                    "/" not in cand and fnmatch.fnmatchcase(name_only, bare)
                ):
                    score = _pattern_score(pat if "/" in cand else bare)
                    if best is None or score > best[0]:
                        best = (score, fam.name)
    if best is None:
        raise UnknownModelError(
            f"unknown model {model_id!r}: no family in the library lists it",
            query=model_id,
            near_matches=_near_models(query),
        )
    return _families()[best[1]]


def _near_models(query: str) -> list[str]:
    name_only = query.split("/")[-1]
    scored: list[tuple[float, str]] = []
    for fam in families():
        for pattern in fam.models:
            bare = pattern.lower().split("/")[-1].replace("*", "")
            ratio = difflib.SequenceMatcher(None, name_only, bare).ratio()
            if ratio >= 0.5:
                scored.append((ratio, f"{pattern} ({fam.name})"))
    scored.sort(key=lambda item: -item[0])
    return list(dict.fromkeys(s for _, s in scored))[:5]


def for_model(model_id: str) -> ResponseTemplate:
    """The response template for a model id, e.g. ``"Qwen/Qwen3-8B"``."""
    return family_for_model(model_id).template()


def family_or_model(name: str) -> Family:
    """The family called ``name`` (or an alias), else the family serving the model id ``name``.

    An unknown name raises :class:`UnknownModelError` saying that neither fits, with the near matches of
    both lookups.
    """
    try:
        return family(name)
    except UnknownModelError as by_name:
        try:
            return family_for_model(name)
        except UnknownModelError as by_model:
            near = list(dict.fromkeys([*by_name.near_matches[:3], *by_model.near_matches[:3]]))
            raise UnknownModelError(
                f"{name!r} is neither a model family of the library nor a model id it knows (a template "
                "given as a string is a family name, a model id or JSON text)",
                query=name,
                near_matches=near,
            ) from None


def _template_by_name(name: str) -> ResponseTemplate:
    return family_or_model(name).template()


set_name_resolver(_template_by_name)  # load_template("qwen3"), rt.parse_response(out, "Qwen/Qwen3-8B", ...)


# ---------------------------------------------------------------------------------------- detection


def fingerprint(chat_template: str) -> str:
    """SHA-256 of a chat template's text with line endings normalized and outer whitespace stripped."""
    text = chat_template.replace("\r\n", "\n").strip()
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _chat_template_texts(source: Any) -> list[str]:
    """The chat template text(s) of a string, a tokenizer, a tokenizer config, or named templates."""
    if isinstance(source, str):
        return [source]
    if isinstance(source, Mapping):
        if "chat_template" in source:  # a tokenizer_config.json
            return _chat_template_texts(source["chat_template"])
        # Named templates {"default": ..., "tool_use": ...}: the default first.
        return [v for _, v in sorted(source.items(), key=lambda kv: kv[0] != "default") if isinstance(v, str)]
    if isinstance(source, Sequence):  # [{"name": ..., "template": ...}, ...] as in tokenizer_config.json
        return [
            item["template"] if isinstance(item, Mapping) else item
            for item in source
            if isinstance(item, str) or (isinstance(item, Mapping) and isinstance(item.get("template"), str))
        ]
    template = getattr(source, "chat_template", None)
    if template is None:
        raise UnknownModelError(
            f"cannot detect a family from {type(source).__name__}: pass a chat template string or a "
            "tokenizer with a chat_template",
            query=type(source).__name__,
        )
    return _chat_template_texts(template)


@cache
def _fingerprint_table() -> dict[str, str]:
    return {fp: fam.name for fam in families() for fp in fam.fingerprints}


@dataclass(frozen=True)
class Candidate:
    r"""One family a chat template may belong to, with how sure detection is and why.

    ``confidence`` is 1.0 for a known fingerprint; for a match by markers it is the family's ``score``
    (the share of its best marker rule present in the template, whitespace ignored, topped up by the
    delimiters of its response template) lowered by how close the best family of another format comes
    (``score * (1 - (rival / score) ** 2)``; docs/detection.md). ``matched`` and ``missing`` are the
    markers of the best rule found and not found, ``delimiters`` the response-template tokens found.

    >>> from response_templates import library
    >>> text = "{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    >>> best = library.detect_all(text + "{{ '<tool_call>' }}")[0]
    >>> best.family.name, best.matched_by, best.matched
    ('hermes', 'markers', ('<|im_start|>', '<tool_call>'))
    """

    family: Family
    confidence: float
    #: ``"fingerprint"`` (the exact text of a known chat template) or ``"markers"``.
    matched_by: str
    score: float
    matched: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    delimiters: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return (
            f"Candidate({self.family.name!r}, confidence={self.confidence}, matched_by={self.matched_by!r}, "
            f"score={self.score}, matched={self.matched!r}, missing={self.missing!r})"
        )

    def to_dict(self) -> dict[str, Any]:
        """The candidate as JSON data (the family by name)."""
        return {
            "name": self.family.name,
            "format": self.family.resolved().name,
            "confidence": self.confidence,
            "matched_by": self.matched_by,
            "score": self.score,
            "matched": list(self.matched),
            "missing": list(self.missing),
            "delimiters": list(self.delimiters),
        }


class AmbiguousChatTemplateError(UnknownModelError):
    """Several families of different formats match a chat template about equally well.

    ``candidates`` are the contenders, best first (:class:`Candidate`); ``near_matches`` their names.
    """

    def __init__(self, candidates: Sequence[Candidate]) -> None:
        shown = ", ".join(
            f"{c.family.name} (score {c.score:.2f}; found {', '.join(c.matched)}"
            + (f"; missing {', '.join(c.missing)})" if c.missing else ")")
            for c in candidates
        )
        super().__init__(
            "ambiguous chat template: its markers fit several library families of different formats "
            f"about equally well: {shown}. Pick one by name (rt.templates.get(NAME))",
            query="<chat template>",
        )
        self.near_matches = [c.family.name for c in candidates]
        self.candidates = list(candidates)


@cache
def _profiles() -> tuple[detection.Profile, ...]:
    out = []
    for fam in families():
        if not fam.markers:
            continue
        prompts = [fam.generation_prompt, *(v.generation_prompt for v in fam.variants)]
        source = fam.resolved()
        out.append(
            detection.Profile(
                fam.name, source.name, fam.markers, detection.profile_tokens(source.template_data, prompts)
            )
        )
    return tuple(out)


def _candidates(text: str) -> list[Candidate]:
    found = _fingerprint_table().get(fingerprint(text))
    out: list[Candidate] = []
    if found is not None:
        out.append(Candidate(_families()[found], 1.0, "fingerprint", 1.0))
    for s in detection.rank(_profiles(), text):
        if s.name == found:
            continue
        out.append(
            Candidate(
                _families()[s.name], s.confidence, "markers", s.score, s.matched, s.missing, s.delimiters
            )
        )
    return out


def detect_all(chat_template: Any) -> list[Candidate]:
    """Every family whose markers occur in a chat template, best first, with confidence and evidence.

    ``chat_template`` is a string, a tokenizer or tokenizer config carrying one, or named templates; with
    several templates each family keeps its best candidate. A known fingerprint comes first with
    confidence 1.0. Matching ignores whitespace and weighs what the template renders (markers,
    delimiters), not its exact text, so edited forks are still recognised (docs/detection.md).

    >>> from response_templates import library
    >>> library.detect_all("{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}")
    []
    """
    best: dict[str, Candidate] = {}
    for text in _chat_template_texts(chat_template):
        for cand in _candidates(text):
            kept = best.get(cand.family.name)
            if kept is None or (cand.confidence, cand.score) > (kept.confidence, kept.score):
                best[cand.family.name] = cand
    return sorted(best.values(), key=lambda c: (-c.confidence, -c.score, c.matched_by != "fingerprint"))


def _decide(text: str, candidates: Sequence[Candidate]) -> Candidate | None:
    """The clearly best candidate; ``None`` if none is good enough; raises when it is ambiguous."""
    if candidates and candidates[0].matched_by == "fingerprint":
        return candidates[0]
    winner, contenders = detection.decide(detection.rank(_profiles(), text))
    by_name = {c.family.name: c for c in candidates}
    if winner is not None:
        return by_name[winner.name]
    named: dict[str, Candidate] = {}
    for score in contenders:
        named.setdefault(_families()[score.name].resolved().name, by_name[score.name])
    if len(named) > 1:
        raise AmbiguousChatTemplateError(list(named.values())[:5])
    return None


def detect_family(chat_template: Any) -> Family:
    r"""The family of a chat template (a string, or a tokenizer / tokenizer config that carries one).

    An exact fingerprint of a known chat template wins; otherwise the family whose markers and
    delimiters the template renders best (:func:`detect_all`), when it is clearly ahead of every family
    of another format. With several templates (a tokenizer with named templates) the first one that is
    recognized counts. Raises :class:`AmbiguousChatTemplateError` (an :class:`UnknownModelError`) naming
    the candidates when families of different formats fit about equally, and :class:`UnknownModelError`
    with near matches when none fits well enough.

    >>> from response_templates import library
    >>> fork = "{#- our fork #}{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>"
    >>> library.detect_family(fork + "{% if tools %}<tool_call>{% endif %}").name
    'hermes'
    """
    texts = _chat_template_texts(chat_template)
    ambiguous: AmbiguousChatTemplateError | None = None
    partial: dict[str, float] = {}
    for text in texts:
        candidates = _candidates(text)
        try:
            chosen = _decide(text, candidates)
        except AmbiguousChatTemplateError as exc:
            ambiguous = ambiguous or exc
            continue
        if chosen is not None:
            return chosen.family
        for cand in candidates:
            partial[cand.family.name] = max(partial.get(cand.family.name, 0.0), cand.score)
    if ambiguous is not None:
        raise ambiguous
    near = [name for name, _ in sorted(partial.items(), key=lambda kv: (-kv[1], kv[0]))][:5]
    raise UnknownModelError(
        "unknown model: the chat template matches no family in the library (no known fingerprint, and no "
        "family's markers are present clearly enough)",
        query="<chat template>",
        near_matches=near,
    )


def detect(chat_template: Any) -> ResponseTemplate:
    """The response template for a chat template (string) or a tokenizer that has one.

    Raises like :func:`detect_family`; an ambiguous match between families that share one template
    (``same_format_as``) is no ambiguity here.
    """
    return detect_family(chat_template).template()


def sample_family_map() -> dict[str, str]:
    """``family`` names used in research/model_output_samples.jsonl -> library family name."""
    table: dict[str, str] = {}
    for fam in families():
        for sample_family in fam.sample_families:
            table[sample_family] = fam.name
    return table
