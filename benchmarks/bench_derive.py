"""Response templates derived from chat templates, measured against the library's hand-written ones.

For each of the 70 chat templates in ``../shared/chat_templates/`` (``--dir``): whether
``rt.templates.derive`` gives a template, its confidence, how its reasoning and tool-call markers compare
with the template of the library family the chat template belongs to (the library is only the oracle
here: ``derive`` never reads it), and how many of the family's recorded outputs (the samples the
library's harness ``tests/library_samples.py`` loads: ``tests/data/model_output_samples.jsonl`` and
``tests/data/family_samples/*.jsonl``) the derived template reads exactly as the library's template
does (the same prompt and tools; messages compared the way the harness compares them).

Then the same on a renamed fork of every chat template (``<think>`` -> ``<reflect>``, ``<tool_call>``
-> ``<invoke>``, in the chat template and in the outputs alike): the case of a new family whose markers
nobody has seen.

Prints the table and the two target figures: the share of chat templates a template is derived for
(target 90%) and the share of them whose derived template reads at least 95% of the family's outputs as
the library does (target 85%; a chat template whose family has no recorded outputs counts when the
derived template reads its own probe renders back, confidence 1).

With ``--llamacpp DRIVER`` (``benchmarks/llamacpp/derive_driver.cpp``, built by ``make
bench-derive-llamacpp``) every output is also read by llama.cpp's chat parsing, the way llama-server
reads a completion of a request with tools: the chat template's text, the sample's tools, reasoning
format ``deepseek``, parallel tool calls, no special tokens (the derivation gets none either). The
sample's ``enable_thinking`` is passed when recorded; else the driver takes the value whose generation
prompt the sample's prompt shows (true when both or neither do). llama.cpp's parser reads the output
after its own generation prompt, so the driver moves what the sample's prompt adds after it into the
output (a pre-opened ``<think>``), and a trailing end-of-generation token is cut off (llama-server stops
at it and does not pass it on). The message is compared with the library's as the harness compares
messages (``library_samples.same``: arguments as objects, an id compared only when the library's call
has one), in the column "llama.cpp read alike" and four summary lines: the chat templates llama.cpp
gives a parser for, those it reads >=95% alike, and those it reads more outputs of alike than ours.

Usage::

    python benchmarks/bench_derive.py
    python benchmarks/bench_derive.py --json out.json --only Qwen
    python benchmarks/bench_derive.py --llamacpp .cache/llamacpp/build/derive_driver
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import library_samples as ls  # noqa: E402 -- the tests' sample harness
import response_templates as rt  # noqa: E402
from _common import format_table  # noqa: E402
from marker_renames import RENAMES, rename  # noqa: E402
from response_templates import library  # noqa: E402

CHAT_TEMPLATES = ROOT.parent / "shared" / "chat_templates"


def family_of_file() -> dict[str, str]:
    out: dict[str, str] = {}
    for fam in library.families():
        for name in fam.chat_templates:
            out.setdefault(name, fam.name)
    return out


def samples_by_family() -> dict[str, list[tuple[dict[str, Any], str, Any, Any]]]:
    """Library family -> [(sample, prefix, tools, the library's message)] for the applicable samples."""
    table = ls.load_tools()
    exceptions = ls.load_exceptions()
    out: dict[str, list[tuple[dict[str, Any], str, Any, Any]]] = {}
    for sample in ls.load_samples():
        verdict = ls.judge(sample, table, exceptions.get(sample["id"]))
        if verdict.status not in ("pass", "fail") or verdict.family is None or "error" in (verdict.got or {}):
            continue
        fam = library.family(verdict.family)
        prefix, _ = ls.prefix_for(sample, fam)
        tools, _ = ls.tools_for(sample, table)
        out.setdefault(fam.name, []).append((sample, prefix, tools, verdict.got))
    return out


#: A marker in an output: a tag (``<think>``, ``<|tool_call_begin|>``, ``<｜tool▁sep｜>``) or a bracketed
#: control word (``[THINK]``).
MARKER = re.compile(r"<[|｜]?[^<>\s\"'{}]{1,40}[|｜]?>|\[[A-Z_]{2,30}\]")
#: End-of-sequence spellings a template writes as ``eos_token`` (derivation guesses them by rule).
EOS_SPELLINGS = ("</s>", "<|endoftext|>", "<|end_of_text|>", "<｜end▁of▁sentence｜>", "<|im_end|>")


def unshown_markers(chat_template: str, text: str) -> list[str]:
    """The markers of an output (with its prompt) that the chat template never writes: not in its text, not as the head of
    a marker it builds (``<function=`` of ``<function=get_weather>``), not its end-of-sequence token
    where it writes ``eos_token``. An output with one cannot be read from the chat template alone (the
    model writes a syntax the template does not show); an output without one may still need what no
    marker shows (raw code after ``<|python_tag|>``, plain-text headers), so the count is a lower bound
    of what no derivation can see."""
    out = []
    for marker in dict.fromkeys(MARKER.findall(text)):
        if marker in chat_template or marker.replace("｜", "|") in chat_template:
            continue
        if marker in EOS_SPELLINGS and "eos_token" in chat_template:
            continue
        head = re.split(r"[=:\s]", marker)[0]
        if head != marker and len(head) > 2 and head in chat_template:
            continue
        out.append(marker)
    return out


def _literal_of(spec: Mapping[str, Any], key: str) -> list[str]:
    value = spec.get(key)
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def marker_agreement(derived: Mapping[str, Any], lib: Mapping[str, Any], renamed: bool) -> str:
    """``same`` / ``differs`` / ``none`` for reasoning and tool calls: does the library's open pattern
    match the derived opener's text (renamed back for the fork)?"""
    import regex

    out = []
    for name in ("reasoning_content", "tool_calls"):
        d, lspec = derived["fields"].get(name), lib["fields"].get(name)
        if d is None and lspec is None:
            out.append("none")
            continue
        if d is None or lspec is None:
            out.append("missing" if d is None else "extra")
            continue
        probe = d.get("open") or d.get("open_pattern") or ""
        probe = probe if isinstance(probe, str) else probe[0]
        text = regex.sub(r"\\(.)", r"\1", regex.sub(r"\(\?[^)]*\)|\(\?P<\w+>[^)]*\)|[*?|]|\\s", "", probe))
        if renamed:
            for old, new in RENAMES:
                text = text.replace(new, old)
        pattern = lspec.get("open_pattern") or "|".join(map(regex.escape, _literal_of(lspec, "open")))
        out.append("same" if pattern and regex.search(pattern, text) else "differs")
    return "/".join(out)


class LlamaCpp:
    """One long-lived driver process: a JSON request per line in, a JSON reply per line out."""

    def __init__(self, driver: str) -> None:
        self.driver = driver
        self.proc: subprocess.Popen[str] | None = None

    def _start(self) -> subprocess.Popen[str]:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen(
                [self.driver],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                encoding="utf-8",
                bufsize=1,
            )
        return self.proc

    def ask(self, request: Mapping[str, Any]) -> dict[str, Any]:
        proc = self._start()
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps(request, ensure_ascii=False) + "\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
        except (BrokenPipeError, OSError):
            line = ""
        if not line:  # the driver died (an abort inside llama.cpp): count it as an error, start afresh
            proc.kill()
            proc.wait()
            self.proc = None
            return {"ok": False, "stage": "crash", "error": "driver exited"}
        reply: dict[str, Any] = json.loads(line)
        return reply

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait()


#: A tool for the request that checks a chat template whose family has no recorded outputs.
PROBE_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def llamacpp_message(reply: Mapping[str, Any]) -> dict[str, Any]:
    """The driver's message in the shape of the library's (arguments as objects, an empty id left out)."""
    msg = reply["message"]
    out: dict[str, Any] = {"role": "assistant"}
    for key in ("reasoning_content", "content"):
        if msg.get(key):
            out[key] = msg[key]
    calls = []
    for call in msg.get("tool_calls") or []:
        args = call.get("arguments")
        if isinstance(args, str):
            with contextlib.suppress(ValueError):
                args = json.loads(args)
        entry: dict[str, Any] = {
            "type": "function",
            "function": {"name": call.get("name"), "arguments": args},
        }
        if call.get("id"):
            entry["id"] = call["id"]
        calls.append(entry)
    if calls:
        out["tool_calls"] = calls
    return out


def enable_thinking(sample: Mapping[str, Any]) -> bool | None:
    """The sample's recorded ``enable_thinking``; None (the driver follows the prompt) when not recorded."""
    value = sample["context"].get("enable_thinking")
    if value is None or isinstance(value, bool):
        return value
    return str(value).lower() != "false"


#: Closers of the library's ``content`` fields that are not the tokenizer's end of generation.
NOT_END_TOKENS = frozenset(
    {
        "[END FINAL RESPONSE]",
        "[/THINK]",
        "<|tool_calls_section_end|>",
        "<|START_OF_TURN_TOKEN|>",
        "<|CHATBOT_TOKEN|>",
        "<channel|>",
        "<|tool_response>",
        "<start_function_response>",
        "</tool_calls>",
    }
)


def end_of_generation(family: str | None) -> Any:
    """A regex for the end-of-generation tokens ending an output of ``family`` (the closers of the
    library's ``content`` field that are tokens a server stops at), or None."""
    import regex

    if not family or not library.family(family).has_template:
        return None
    spec = library.family(family).template_dict()["fields"].get("content") or {}
    alts = [regex.escape(c) for c in _literal_of(spec, "close") if c not in NOT_END_TOKENS]
    if spec.get("close_pattern") and "(?=" not in spec["close_pattern"]:
        alts.append(spec["close_pattern"])
    return regex.compile(f"(?:\\s*(?:{'|'.join(alts)}))+\\s*$") if alts else None


def without_end_token(raw: str, end: Any) -> str:
    """``raw`` as a server hands it to its parser: a trailing end-of-generation token is not part of it."""
    return raw if end is None else str(end.sub("", raw))


def llamacpp_row(
    llama: LlamaCpp, text: str, cases: list[tuple[str, str, Any, Any, bool | None]], row: dict[str, Any]
) -> None:
    """Reads ``cases`` (output, prefix, tools, the library's message, enable_thinking) with llama.cpp
    into ``row``; a family without recorded outputs gets one plain answer as a check that it parses."""
    row["llama_samples"] = len(cases)
    if not cases:
        reply = llama.ask(
            {
                "chat_template": text,
                "bos": "",
                "eos": "",
                "tools": [PROBE_TOOL],
                "enable_thinking": True,
                "output": "Sunny skies ahead.",
            }
        )
        row.update(llama_parses=reply.get("ok", False) or reply.get("stage") == "parse", llama_read_same=0)
        row["llama_ok_probe"] = bool(reply.get("ok"))
        if not reply.get("ok"):
            row["llama_error"] = reply.get("error", "")[:160]
        return
    parses = same = 0
    errors: dict[str, int] = {}
    formats: set[str] = set()
    for raw, prefix, tools, got_lib, thinking in cases:
        reply = llama.ask(
            {
                "chat_template": text,
                "bos": "",
                "eos": "",
                "tools": tools,
                "enable_thinking": thinking,
                "output": raw,
                "prefix": prefix,
            }
        )
        if reply.get("ok") or reply.get("stage") == "parse":
            parses += 1
        if not reply.get("ok"):
            stage = reply.get("stage", "?")
            errors[stage] = errors.get(stage, 0) + 1
            row.setdefault("llama_error", f"{stage}: {reply.get('error', '')[:160]}")
            continue
        formats.add(reply.get("format", "?"))
        same += ls.same(llamacpp_message(reply), got_lib)
    row.update(
        llama_parses=parses > 0, llama_read_same=same, llama_errors=errors, llama_formats=sorted(formats)
    )


def run(only: str | None, llama: LlamaCpp | None = None) -> dict[str, Any]:
    fam_of = family_of_file()
    samples = samples_by_family()
    rows: list[dict[str, Any]] = []
    for path in sorted(CHAT_TEMPLATES.glob("*.jinja")):
        if only and only not in path.name:
            continue
        source = path.read_text(encoding="utf-8")
        family = fam_of.get(path.name)
        for renamed in (False, True):
            text = rename(source) if renamed else source
            row: dict[str, Any] = {"chat_template": path.name, "renamed": renamed, "family": family}
            if llama is not None:
                cases = []
                end = end_of_generation(family)
                for sample, prefix, tools, got_lib in samples.get(family or "", []):
                    raw = without_end_token(sample["raw"], end)
                    if renamed:
                        raw, prefix, got_lib = rename(raw), rename(prefix), rename(got_lib)
                    cases.append((raw, prefix, tools, got_lib, enable_thinking(sample)))
                llamacpp_row(llama, text, cases, row)
            try:
                d = rt.templates.derive(text)
            except rt.ResponseTemplateError as exc:
                row.update(derived=False, error=str(exc)[:120])
                rows.append(row)
                continue
            row.update(derived=True, confidence=d.confidence)
            lib = (
                library.family(family).template_dict()
                if family and library.family(family).has_template
                else None
            )
            row["markers"] = marker_agreement(d.template, lib, renamed) if lib else "no family"
            same = total = unshown = 0
            for sample, prefix, tools, got_lib in samples.get(family or "", []):
                raw = sample["raw"]
                if renamed:
                    raw, prefix, got_lib = rename(raw), rename(prefix), rename(got_lib)
                total += 1
                try:
                    got: Any = rt.parse_response(raw, d.template, prefix=prefix, tools=tools)
                except rt.ResponseTemplateError:
                    got = None
                alike = isinstance(got, dict) and ls.normalize(got) == ls.normalize(got_lib)
                same += alike
                # an output read otherwise that writes what the chat template never shows
                unshown += not alike and bool(unshown_markers(text, prefix + raw))
            row.update(samples=total, read_same=same, unshown=unshown)
            rows.append(row)
    return {"rows": rows, "summary": {k: summarize(rows, k == "renamed") for k in ("real", "renamed")}}


def ok_row(row: Mapping[str, Any]) -> bool:
    if not row.get("derived"):
        return False
    if row["samples"]:
        return bool(row["read_same"] >= 0.95 * row["samples"])
    return bool(row["confidence"] >= 1.0)


def reachable_row(row: Mapping[str, Any]) -> bool:
    """Whether reading alike also every output now read otherwise whose markers the chat template shows
    would reach 95%: at most what any derivation from the chat template alone can do for this row."""
    if not row.get("samples"):
        return ok_row(row)
    return bool(row["samples"] - row.get("unshown", 0) >= 0.95 * row["samples"])


def llama_ok_row(row: Mapping[str, Any]) -> bool:
    if not row.get("llama_parses"):
        return False
    if row["llama_samples"]:
        return bool(row["llama_read_same"] >= 0.95 * row["llama_samples"])
    return bool(row.get("llama_ok_probe"))


def summarize(rows: list[dict[str, Any]], renamed: bool) -> dict[str, Any]:
    mine = [r for r in rows if r["renamed"] == renamed]
    derived = sum(bool(r.get("derived")) for r in mine)
    good = sum(ok_row(r) for r in mine)
    n = len(mine) or 1
    llama: dict[str, Any] = {}
    if any("llama_parses" in r for r in mine):
        llama = {
            "llama_parses": sum(bool(r.get("llama_parses")) for r in mine),
            "llama_read_95": sum(llama_ok_row(r) for r in mine),
            "llama_read_same": sum(r.get("llama_read_same", 0) for r in mine),
            "llama_samples": sum(r.get("llama_samples", 0) for r in mine),
            "llama_beats_ours": [
                r["chat_template"].removesuffix(".jinja")
                for r in mine
                if r.get("llama_read_same", 0) > (r.get("read_same", 0) if r.get("derived") else 0)
            ],
        }
    return {
        **llama,
        "chat_templates": len(mine),
        "derived": derived,
        "derived_pct": round(100 * derived / n, 1),
        "read_95": good,
        "read_95_pct": round(100 * good / n, 1),
        "reachable_95": sum(reachable_row(r) for r in mine),
        "unshown": sum(r.get("unshown", 0) for r in mine),
        "samples": sum(r.get("samples", 0) for r in mine),
        "read_same": sum(r.get("read_same", 0) for r in mine),
    }


def llama_cell(row: Mapping[str, Any]) -> str:
    if not row.get("llama_parses"):
        return "error"
    if not row["llama_samples"]:
        return "parses" if row.get("llama_ok_probe") else "-"
    return f"{row['llama_read_same']}/{row['llama_samples']}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", help="write the rows and the summary to this file")
    ap.add_argument("--only", help="only the chat templates whose file name contains this")
    ap.add_argument(
        "--llamacpp", metavar="DRIVER", help="also read every output with llama.cpp through DRIVER"
    )
    args = ap.parse_args()
    llama = LlamaCpp(args.llamacpp) if args.llamacpp else None
    try:
        result = run(args.only, llama)
    finally:
        if llama is not None:
            llama.close()
    headers = [
        "chat template",
        "family",
        "derived",
        "conf.",
        "reasoning/tools markers",
        "outputs read alike",
        "not shown",
    ]
    if llama is not None:
        headers.append("llama.cpp read alike")
    table = [
        [
            r["chat_template"].removesuffix(".jinja")[:44],
            r["family"] or "-",
            "yes" if r.get("derived") else "no",
            f"{r['confidence']:.2f}" if r.get("derived") else "-",
            r.get("markers", "-"),
            f"{r['read_same']}/{r['samples']}" if r.get("derived") else "-",
            str(r.get("unshown", "-")),
        ]
        + ([llama_cell(r)] if llama is not None else [])
        for r in result["rows"]
        if not r["renamed"]
    ]
    print(format_table(headers, table))
    for key in ("real", "renamed"):
        s = result["summary"][key]
        n = s["chat_templates"] or 1
        print(
            f"{key}: derived {s['derived']}/{s['chat_templates']} ({s['derived_pct']}%, target 90%); "
            f"reading >=95% of the family's outputs as the library does: {s['read_95']}/{s['chat_templates']} "
            f"({s['read_95_pct']}%, target 85%); outputs read alike {s['read_same']}/{s['samples']}\n"
            f"{key}, ceiling: {s['unshown']} of the {s['samples'] - s['read_same']} outputs read otherwise "
            "use a marker their chat template never writes; reading every other output alike would bring "
            f"{s['reachable_95']}/{s['chat_templates']} chat templates to >=95% "
            f"({100 * s['reachable_95'] / n:.1f}%)"
        )
    if llama is not None:
        for key in ("real", "renamed"):
            s = result["summary"][key]
            n = s["chat_templates"]
            print(
                f"{key}, llama.cpp: parses {s['llama_parses']}/{n} (errors on {n - s['llama_parses']}); "
                f"reading >=95% of the family's outputs as the library does: {s['llama_read_95']}/{n}; "
                f"outputs read alike {s['llama_read_same']}/{s['llama_samples']} "
                f"(ours: {s['read_95']}/{n}, {s['read_same']}/{s['samples']})"
            )
        for key in ("real", "renamed"):
            beats = result["summary"][key]["llama_beats_ours"]
            print(f"{key}, llama.cpp reads more outputs alike than ours: {', '.join(beats) or 'none'}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    main()
