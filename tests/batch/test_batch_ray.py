"""Ray Data: ``map_batches(ColumnParser, ...)`` on a real local Ray runtime (``ray.init(num_cpus=2)``).

The runtime starts once for the module (a few seconds); it binds to the loopback address only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest

import response_templates as rt
from response_templates.batch import ColumnParser

ray = pytest.importorskip("ray")
pytest.importorskip("ray.data")

PROMPT = "<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n"


@pytest.fixture(scope="module")
def local_ray() -> Iterator[Any]:
    env = {
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
        "RAY_AUTH_MODE": "disabled",
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    try:
        yield ray
    finally:
        ray.shutdown()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def test_map_batches_with_an_actor_pool(local_ray: Any) -> None:
    n = 40
    items = [
        {"id": i, "prompt": PROMPT, "output": None if i % 7 == 0 else f"<think>r{i}</think>c{i}<|im_end|>"}
        for i in range(n)
    ]
    ds = local_ray.data.from_items(items)
    parsed = ds.map_batches(
        ColumnParser,
        fn_constructor_kwargs={"model": "Qwen/Qwen3-8B", "keep_columns": ["id"]},
        batch_size=8,
        compute=local_ray.data.ActorPoolStrategy(size=2),
        num_cpus=0.5,  # two parser actors, and CPU left for any task Ray Data schedules beside them
    )
    rows = sorted(parsed.take_all(), key=lambda row: row["id"])
    assert [row["id"] for row in rows] == list(range(n))
    template = rt.templates.get("qwen3")
    for i, row in enumerate(rows):
        if i % 7 == 0:
            assert row["ok"] is False and row["message"] is None and "null" in row["error"]
        else:
            message = rt.parse_response(items[i]["output"], template, prefix=PROMPT)
            assert row["ok"] is True and json.loads(row["message"]) == message
            assert (row["reasoning_content"], row["content"]) == (f"r{i}", f"c{i}")
