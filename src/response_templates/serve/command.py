"""Internal: the options and the run of ``response-templates serve`` (the command is :mod:`response_templates.cli`'s).

:func:`add_arguments` declares the options, :func:`run` starts the server; the command line registers
them, reads ``--template`` its usual way and turns a :class:`~.config.ConfigError` into its usage error.
Importing this module needs nothing beyond the core (and imports nothing of the command line): Starlette,
uvicorn, the HTTP client and jinja2 are imported when the server starts, and a missing one is a
:class:`~.config.ConfigError` naming the extra to install.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
from typing import Any, TextIO

from .config import UPSTREAM_KINDS, ConfigError, load_config

__all__ = ["DESCRIPTION", "EPILOG", "HELP", "add_arguments", "run"]

HELP = "serve OpenAI and Anthropic APIs in front of an engine's /v1/completions"
DESCRIPTION = (
    "An OpenAI- and Anthropic-compatible server (/v1/chat/completions, /v1/responses, "
    "/v1/messages) in front of any engine that streams raw completions (POST {URL}/completions: "
    "llama.cpp's server, vLLM, SGLang, TGI). It renders the model's chat template, forwards the prompt, "
    "and parses the streamed text with the model's response template: reasoning, content, tool calls, "
    "usage and finish reasons. See docs/serve.md."
)
EPILOG = (
    "exit codes: 0 the server stopped; 2 usage error, unreadable chat template, no response template for "
    "the model, or the serve extra is not installed"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``serve`` (``--template`` is read by the command line, as in its other commands)."""
    parser.add_argument(
        "--upstream",
        required=True,
        metavar="URL",
        help="the engine's OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1 (requests go to "
        "URL/completions)",
    )
    parser.add_argument(
        "--model",
        required=True,
        metavar="MODEL",
        help="the model id: sent upstream, and used to find the library's response template",
    )
    parser.add_argument(
        "--model-dir",
        metavar="DIR",
        help="the model's tokenizer folder: chat_template.jinja or tokenizer_config.json (chat template, "
        "BOS/EOS tokens, special tokens, and its response_template if set)",
    )
    parser.add_argument(
        "--chat-template", metavar="FILE", help="the chat template (Jinja); overrides the folder's"
    )
    parser.add_argument(
        "--template",
        metavar="NAME|FILE",
        help="the response template: a library family name or a JSON file (default: the folder's "
        "response_template, else the library's by model id, else by chat template)",
    )
    parser.add_argument(
        "--upstream-kind",
        choices=UPSTREAM_KINDS,
        default="openai",
        help="what the upstream accepts beyond OpenAI's completions: vllm (structured_outputs), sglang "
        "(response_format), llama.cpp (grammar, built with llguidance) carry the grammar that forces a "
        "tool choice; openai (default) has none: forced tool choice is refused",
    )
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="the port to listen on (default: 8000)")
    parser.add_argument(
        "--max-concurrency",
        type=int,
        default=8,
        metavar="N",
        help="requests generating at once (default: 8)",
    )
    parser.add_argument(
        "--max-queue",
        type=int,
        default=32,
        metavar="N",
        help="requests waiting for a slot (default: 32); more get a 429",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        metavar="SECONDS",
        help="how long to wait for the upstream (its answer, each piece of its stream) and for a slot "
        "(default: 600)",
    )
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=4096,
        metavar="N",
        help="the completion's max_tokens when a request gives none (default: 4096)",
    )
    parser.add_argument(
        "--chat-template-kwargs",
        metavar="JSON",
        help="variables for the chat template in every request, e.g. '{\"enable_thinking\": false}'",
    )
    parser.add_argument(
        "--reasoning-key",
        choices=("reasoning_content", "reasoning", "both"),
        default="reasoning_content",
        help="the Chat Completions key of the reasoning: reasoning_content (default; DeepSeek, SGLang, "
        "llama.cpp), reasoning (vLLM 0.16 and later, Ollama, OpenRouter) or both",
    )
    parser.add_argument(
        "--log-level",
        default="info",
        choices=("critical", "error", "warning", "info", "debug"),
        help="uvicorn's log level (default: info)",
    )


def _missing_modules() -> list[str]:
    return [m for m in ("starlette", "uvicorn", "httpx2", "jinja2") if importlib.util.find_spec(m) is None]


def run(args: argparse.Namespace, template: Any, stderr: TextIO) -> None:
    """Start the server the options ``args`` describe, until it is stopped (Ctrl-C, SIGTERM).

    ``template`` is the response template of ``--template`` (compiled, or a library name), or None.
    Raises :class:`~.config.ConfigError` when the server cannot start.
    """
    missing = _missing_modules()
    if missing:
        raise ConfigError(f"serve needs {', '.join(missing)}: pip install 'response-templates[serve]'")
    if args.max_concurrency < 1 or args.max_queue < 0 or args.timeout <= 0 or args.max_tokens < 1:
        raise ConfigError(
            "--max-concurrency and --max-tokens must be at least 1, --max-queue at least 0 and "
            "--timeout positive"
        )
    if args.model_dir is None and args.chat_template is None:
        raise ConfigError("give the model's chat template: --model-dir DIR or --chat-template FILE")
    kwargs: Any = {}
    if args.chat_template_kwargs is not None:
        try:
            kwargs = json.loads(args.chat_template_kwargs)
        except ValueError as exc:
            raise ConfigError(f"--chat-template-kwargs is not JSON: {exc}") from None
        if not isinstance(kwargs, dict):
            raise ConfigError("--chat-template-kwargs must be a JSON object")
    config = load_config(
        upstream=args.upstream,
        model=args.model,
        model_dir=args.model_dir,
        chat_template=args.chat_template,
        template=template,
        upstream_kind=args.upstream_kind,
        timeout=args.timeout,
        max_concurrency=args.max_concurrency,
        max_queue=args.max_queue,
        default_max_tokens=args.max_tokens,
        chat_template_kwargs=kwargs,
        reasoning_key=args.reasoning_key,
    )

    import uvicorn

    from .app import create_app

    stderr.write(
        f"serving {args.model} on http://{args.host}:{args.port}/v1 (upstream {config.upstream}, "
        f"{args.upstream_kind})\n"
    )
    stderr.flush()
    uvicorn.run(create_app(config), host=args.host, port=args.port, log_level=args.log_level)
