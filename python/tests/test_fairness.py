"""Fair share (docs/GRAPHS.md): an op's `share` and `concurrency_key` go out in SUBMIT, from `add` and from
a graph file; an op without them encodes as before (no extra bytes)."""
from __future__ import annotations

import json
from pathlib import Path

from opqueue import AsyncRun
from opqueue import opqueue_pb2 as pb
from opqueue.client import _queue_settings
from opqueue.graph import load_graph


def test_share_and_concurrency_key_travel_in_submit_ops(tmp_path: Path) -> None:
    run = AsyncRun(None, None)  # type: ignore[arg-type]  # no client: only the batches are built
    run.add("noop", id="a", share="customer-42", concurrency_key="k1")
    run.add("noop", id="b")
    ops = run._batches()[0].operations
    assert (ops[0].share, ops[0].concurrency_key) == ("customer-42", "k1")
    assert (ops[1].share, ops[1].concurrency_key) == ("", "")
    assert ops[1].ByteSize() == pb.Operation(id="b", kind="noop", parts=1).ByteSize()

    graph = tmp_path / "g.json"
    graph.write_text(json.dumps({
        "queues": [{"name": "q", "share": "key", "weights": {"team-a": 3}, "keyLimit": 2, "rate": "30/m", "burst": 4,
                    "ageing": "30s"},
                   {"name": "plain"}],
        "operations": [{"id": "x", "kind": "noop", "queue": "q", "share": "team-a", "concurrencyKey": "c"}]}))
    queues, gops = load_graph(str(graph))
    assert (gops[0].share, gops[0].concurrency_key) == ("team-a", "c")
    fair = _queue_settings(queues[0]).fairness
    assert (fair.share, fair.key_limit, fair.rate_per_second, fair.burst) == (pb.SHARE_MODE_KEY, 2, 0.5, 4)
    assert [(w.share, w.weight) for w in fair.weights] == [("team-a", 3)] and fair.replace_weights
    assert fair.ageing_us == 30_000_000 and not fair.no_ageing
    assert not _queue_settings(queues[1]).HasField("fairness")  # no fair-share field: the queue keeps its own


def test_key_rate_and_key_burst_travel_like_rate_and_burst() -> None:
    fair = _queue_settings({"name": "q", "keyRate": "10/s", "keyBurst": 3}).fairness
    assert (fair.key_rate_per_second, fair.key_burst, fair.no_key_rate) == (10, 3, False)
    assert fair.no_rate and _queue_settings({"name": "q", "rate": 5}).fairness.no_key_rate
    try:
        _queue_settings({"name": "q", "keyBurst": 3})
    except ValueError as e:
        assert "keyBurst needs a keyRate" in str(e)
    else:
        raise AssertionError("keyBurst without keyRate was accepted")
