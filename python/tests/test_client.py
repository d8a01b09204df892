"""The Python client against the real coordinator (Swift and Python workers)."""
from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path

import pytest
import zmq

from conftest import Cluster, wait_until
from opqueue import (AsyncClient, AuthenticationFailed, Client, OperationCancelled, OperationFailed, SubmitRejected,
                     Timeout, Unauthorized, UnknownOperation)
from opqueue import opqueue_pb2 as pb
from opqueue.wire import decode


def test_the_asyncio_client_builds_a_graph_and_awaits_results(cluster: Cluster) -> None:
    cluster.swift_worker("swift")
    cluster.python_worker("testworker:make", "py")

    async def main() -> None:
        async with AsyncClient(cluster.endpoint) as c:
            run = c.run("async-graph")
            a = run.add("py.asleep", {"seconds": 0.2}, id="a")
            b = run.add("py.add", {"add": 1}, id="b", after=[a])
            f = run.add("fail", b"no luck", id="f", after=[b])
            await run.submit()
            assert run.id == "async-graph"
            assert await asyncio.gather(a.result(10), b.result(10)) == [0.2, 1.2]
            with pytest.raises(OperationFailed) as e:
                await f.result(10)
            assert e.value.message == "no luck"
            # A second batch in the same run depends on the first.
            c2 = run.add("py.add", {"add": 10}, id="c", after=[b])
            await run.submit()
            assert await c2.result(10) == 11.2
            w = await run.wait(timeout=10)
            assert w.finished and (w.succeeded, w.failed) == (3, 1)
            # An async watch, subscribed before the submit, sees every op of a new run finish.
            run2 = c.run()
            ids = {run2.add("py.echo", i, id="w%d" % i).id for i in range(3)}
            async with await c.watch(run=run2.name or "", results=True) as events:
                await run2.submit()
                finished = set()
                while finished != ids:
                    e = await events.next(timeout=10)
                    if e.state == "finished" and e.run == run2.id:
                        assert e.outcome is not None and e.outcome.result == int(e.op_id[1:])
                        finished.add(e.op_id)
    asyncio.run(main())


def test_results_wait_status_and_typed_errors(cluster: Cluster) -> None:
    cluster.swift_worker("swift")
    c = cluster.admin()
    run = c.run()
    e = run.add("echo", {"k": [1, "two"]}, id="e")
    s = run.add("sleep", 60000, id="s", queue="slow")
    run.submit()
    assert e.result(timeout=20) == {"k": [1, "two"]}
    with pytest.raises(Timeout):
        s.result(timeout=0.2)
    assert s.cancel(reason="enough") == 1
    with pytest.raises(OperationCancelled) as err:
        s.result(timeout=20)
    assert err.value.reason == "enough"
    with pytest.raises(UnknownOperation):
        c.status(["nope"], run=run.id)
    with pytest.raises(UnknownOperation):
        c.wait(["nope"], run=run.id, timeout=1)
    bad = c.run()
    bad.add("echo", id="x", after=["missing"])
    with pytest.raises(SubmitRejected) as rej:
        bad.submit()
    assert rej.value.errors[0]["problem"] == "SUBMIT_PROBLEM_UNKNOWN_DEPENDENCY"
    assert [r.id for r in c.runs()][:1] == [run.id]


def test_queue_controls_priority_and_watch(cluster: Cluster) -> None:
    c = cluster.admin()
    with pytest.raises(UnknownOperation, match="unknown queue q"):
        c.suspend("q")
    run = c.run(queues=[{"name": "q"}])
    ops = [run.add("echo", i, id="o%d" % i, queue="q") for i in range(3)]
    c.run(queues=[{"name": "q"}]).add("noop", id="first", queue="q")  # never submitted
    run.submit()
    c.suspend("q")
    assert c.set_priority(["o2"], "veryHigh", run=run.id) == 1
    c.limit("q", 1)
    cluster.swift_worker("swift", slots=2)
    events: list = []
    done = threading.Event()
    stream = c.watch(run=run.id, results=True)  # subscribed when it returns

    def watch() -> None:
        with stream:
            for ev in stream:
                events.append(ev)
                if sum(1 for x in events if x.state == "finished") == 3:
                    done.set()
                    return
    t = threading.Thread(target=watch, daemon=True)
    t.start()
    assert c.status(run=run.id)[0].state in ("ready", "pending")
    c.resume("q")
    assert [o.result(timeout=20) for o in ops] == [0, 1, 2]
    assert done.wait(20), events
    finished = [e for e in events if e.state == "finished"]
    assert finished[0].op_id == "o2", "the very high priority op ran first (limit 1): %s" % [e.op_id for e in finished]
    assert {e.outcome.result for e in finished} == {0, 1, 2}


def test_a_graph_file_is_submitted(cluster: Cluster, tmp_path: Path) -> None:
    cluster.swift_worker("swift")
    cluster.python_worker("testworker:make", "py")
    f = tmp_path / "graph.yaml"
    f.write_text("""
queues:
  - name: gq
    maxConcurrent: 1
operations:
  - id: one
    kind: echo
    payload: {"n": 1}
    queue: gq
  - id: two
    kind: py.inputs
    after: [one]
  - id: sh
    command: echo hi
""")
    c = cluster.admin()
    run = c.submit_file(str(f))
    w = run.wait(timeout=30)
    assert w.finished and w.succeeded == 3, w
    st = {s.id: s for s in c.status(run=run.id)}
    assert st["two"].outcome.result["inputs"] == {"one": {"n": 1}}
    assert st["sh"].outcome.result == b"hi\n" or st["sh"].outcome.status == "succeeded"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"operations": [{"id": "x", "kind": "echo", "colour": "red"}]}))
    with pytest.raises(ValueError, match=r"bad.json: operations\[0\] \(x\): unknown field\(s\) colour"):
        c.submit_file(str(bad))


def test_a_keyed_submit_is_sent_again_after_a_lost_reply_and_applied_once(cluster: Cluster) -> None:
    """A proxy between client and coordinator drops the first SUBMIT-REPLY: the client sends the same
    SUBMIT (same key) again, and the coordinator answers it as a duplicate without adding anything."""
    ctx = zmq.Context.instance()
    front = ctx.socket(zmq.ROUTER)
    port = front.bind_to_random_port("tcp://127.0.0.1")
    back = ctx.socket(zmq.DEALER)
    back.connect(cluster.endpoint)
    stop = threading.Event()
    seen = {"submits": 0, "dropped": 0}

    def proxy() -> None:
        poller = zmq.Poller()
        poller.register(front, zmq.POLLIN)
        poller.register(back, zmq.POLLIN)
        client_id = None
        while not stop.is_set():
            for s, _ in poller.poll(50):
                if s is front:
                    client_id, *frames = front.recv_multipart()
                    if decode(frames)[0] == "SUBMIT":
                        seen["submits"] += 1
                    back.send_multipart(frames)
                else:
                    frames = back.recv_multipart()
                    if decode(frames)[0] == "SUBMIT-REPLY" and not seen["dropped"]:
                        seen["dropped"] += 1
                        continue
                    front.send_multipart([client_id] + frames)
    t = threading.Thread(target=proxy, daemon=True)
    t.start()
    try:
        with Client("tcp://127.0.0.1:%d" % port, resend_after=0.5, timeout=10) as c:
            run = c.run("once")
            run.add("echo", 1, id="a")
            run.submit()
            assert run.id == "once"
            assert c.duplicates == 1
        assert seen == {"submits": 2, "dropped": 1}
        assert len(cluster.admin().status(run="once")) == 1, "applied once"
    finally:
        stop.set()
        t.join(5)
        front.close(0)
        back.close(0)


def test_keys_accepted_and_refused(make_cluster) -> None:  # type: ignore[no-untyped-def]
    cluster = make_cluster(keys=True)
    cluster.allow("pyworker", "worker")
    cluster.allow("viewer", "view")
    cluster.python_worker("testworker:make", "py-keyed", env={
        "TEST_KEY": cluster.key_options("pyworker")["key"],
        "TEST_COORDINATOR_KEY": cluster.key_options("pyworker")["coordinator_key"]})
    c = cluster.admin()
    run = c.run()
    op = run.add("py.add", {"add": 1})
    run.submit()
    assert op.result(timeout=20) == 1
    assert op.status().worker_id == next(w.worker_id for w in c.workers() if w.name == "py-keyed")

    # A view key may read but not submit: UNAUTHORIZED, typed.
    with Client(cluster.endpoint, timeout=10, **cluster.key_options("viewer")) as viewer:
        assert viewer.status(run=run.id)[0].state == "finished"
        r = viewer.run()
        r.add("echo", 1)
        with pytest.raises(Unauthorized):
            r.submit()

    # A key the allow file does not list: refused at the handshake, said at once.
    stranger = cluster.new_key("stranger")
    started = time.monotonic()
    with Client(cluster.endpoint, timeout=30, key=str(stranger),
                coordinator_key=cluster.key_options("admin")["coordinator_key"]) as s:
        with pytest.raises(AuthenticationFailed, match="does not allow this client's key"):
            s.runs()
    assert time.monotonic() - started < 10

    # A worker with that key ends (exit status 2) saying why.
    w = cluster.python_worker("testworker:make", "py-stranger", wait=False, env={
        "TEST_KEY": str(stranger), "TEST_COORDINATOR_KEY": cluster.key_options("admin")["coordinator_key"]})
    assert w.wait(15) == 2
    assert "authentication failed: the coordinator does not allow this worker's key" in cluster.log("py-stranger")
