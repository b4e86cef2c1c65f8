"""``response-templates serve`` from Python: the chat APIs in front of an engine's raw completions.

Run: pip install 'response-templates[serve]'
     python examples/serve_in_front_of_an_engine.py --upstream http://127.0.0.1:8001/v1 \\
         --model Qwen/Qwen3-8B --model-dir ~/models/Qwen3-8B [--port 8000]
with an engine serving OpenAI's ``/v1/completions`` at ``--upstream`` (``vllm serve``, ``llama-server``,
SGLang, TGI). OpenAI clients then use ``http://127.0.0.1:8000/v1`` (Chat Completions and Responses),
Anthropic clients ``http://127.0.0.1:8000`` (Messages). The same as the command line
``response-templates serve ...`` (docs/serve.md), as an app you can mount or wrap in your own.
"""

from __future__ import annotations

import argparse

from response_templates.serve import create_app, load_config


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument(
        "--upstream", required=True, help="the engine's base URL (requests go to URL/completions)"
    )
    options.add_argument(
        "--model", required=True, help="the model id: passed upstream, and finds its template"
    )
    options.add_argument("--model-dir", help="the model's tokenizer folder (chat template, special tokens)")
    options.add_argument("--chat-template", help="a Jinja chat template file instead")
    options.add_argument(
        "--upstream-kind", default="openai", choices=["openai", "vllm", "sglang", "llama.cpp"]
    )
    options.add_argument("--host", default="127.0.0.1")
    options.add_argument("--port", type=int, default=8000)
    args = options.parse_args()
    config = load_config(
        upstream=args.upstream,
        model=args.model,
        model_dir=args.model_dir,
        chat_template=args.chat_template,
        upstream_kind=args.upstream_kind,
    )
    import uvicorn

    uvicorn.run(create_app(config), host=args.host, port=args.port)


if __name__ == "__main__":
    main()
