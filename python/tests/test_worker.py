"""The Python worker against the real coordinator and a Swift worker (opworker)."""
from __future__ import annotations

import signal
import time

import pytest

from conftest import Cluster, wait_until
from opqueue import Client, OperationCancelled, OperationFailed


def executing(c: Client, run: str, *ids: str) -> bool:
    return all(s.state == "executing" for s in c.status(list(ids), run=run))


def test_a_graph_across_a_swift_and_a_python_worker_passes_results_on(cluster: Cluster) -> None:
    cluster.swift_worker("swift")
    cluster.python_worker("testworker:make", "py")
    c = cluster.admin()
    run = c.run()
    a = run.add("echo", b"5", id="a")                          # Swift: echo -> 5
    b = run.add("py.add", {"add": 2}, id="b", after=[a])       # Python: 5 + 2
    s = run.add("echo", b'{"x":[1,2]}', id="s", after=[b])      # Swift again, after Python
    d = run.add("py.inputs", id="d", after=[a, b, s])          # Python sees every input, decoded
    r = run.add("py.raw", b"\x00\x01\xff", id="r")             # bytes in, bytes out
    run.submit()
    assert b.result(timeout=30) == 7
    assert d.result(timeout=30) == {"op": "d", "run": run.id, "attempt": 1, "inputs": {"a": 5, "b": 7, "s": {"x": [1, 2]}}}
    assert r.result(timeout=30) == b"\xff\x01\x00"
    st = {x.id: x for x in c.status(["a", "b", "s", "d"], run=run.id)}
    workers = {w.name: w.worker_id for w in c.workers()}
    assert st["a"].worker_id == st["s"].worker_id == workers["swift"]
    assert st["b"].worker_id == st["d"].worker_id == workers["py"]


def test_retries_run_the_handler_again_and_the_last_failure_is_reported(cluster: Cluster) -> None:
    cluster.python_worker("testworker:make", "py")
    c = cluster.admin()
    run = c.run()
    ok = run.add("py.flaky", {"fail": 2}, retries=2, retry_delay=0)
    bad = run.add("py.flaky", {"fail": 5}, retries=1, retry_delay=0)
    run.submit()
    assert ok.result(timeout=30) == {"attempt": 3}
    with pytest.raises(OperationFailed) as e:
        bad.result(timeout=30)
    assert "RuntimeError: attempt 2 fails on purpose" in e.value.message
    st = bad.status()
    assert st.attempts == 2
    assert any("attempt 1 fails on purpose" in x for x in st.attempt_errors), st.attempt_errors


def test_cancel_stops_a_running_sync_and_a_running_async_handler(cluster: Cluster) -> None:
    cluster.python_worker("testworker:make", "py")
    c = cluster.admin()
    run = c.run()
    sync_op = run.add("py.block", {"seconds": 60}, id="sync")
    async_op = run.add("py.ablock", {"seconds": 60}, id="async")
    run.submit()
    wait_until("both handlers running", lambda: executing(c, run.id, "sync", "async"), logs=cluster.logs)
    started = time.monotonic()
    assert c.cancel(["sync", "async"], run=run.id, reason="stop it") >= 1
    for op in (sync_op, async_op):
        with pytest.raises(OperationCancelled) as e:
            op.result(timeout=10)
        assert e.value.reason == "stop it"
    assert time.monotonic() - started < 5, "the handlers stopped at once, not after their 60 s"
    # Their slots are free again: more work runs.
    more = c.run()
    e1 = more.add("py.echo", {"again": True})
    more.submit()
    assert e1.result(timeout=20) == {"again": True}


def test_a_handler_running_10_s_is_not_declared_lost(make_cluster) -> None:  # type: ignore[no-untyped-def]
    cluster = make_cluster(heartbeat_ms=1000, liveness=3)
    cluster.python_worker("testworker:make", "py")
    c = cluster.admin()
    worker_id = next(w.worker_id for w in c.workers() if w.name == "py")
    run = c.run()
    slow = run.add("py.sleep", {"seconds": 10}, loss_retries=0)
    aslow = run.add("py.asleep", {"seconds": 10}, loss_retries=0)
    run.submit()
    assert slow.result(timeout=40) == 10
    assert aslow.result(timeout=10) == 10
    for op in (slow, aslow):
        st = op.status()
        assert st.attempts == 1 and st.worker_id == worker_id, st
    assert [w.worker_id for w in c.workers() if w.name == "py"] == [worker_id]
    assert c.request("STATUS", __import__("opqueue").opqueue_pb2.Status(), "STATUS-REPLY").fenced == 0


def test_sigterm_lets_running_handlers_finish_hands_back_the_rest_and_leaves(cluster: Cluster) -> None:
    a = cluster.python_worker("testworker:make_hold", "py-a", env={"DRAIN": "3", "SLOTS": "3"})
    c = cluster.admin()
    a_id = next(w.worker_id for w in c.workers() if w.name == "py-a")
    run = c.run()
    quick = run.add("py.asleep", {"seconds": 1}, id="quick")
    held = run.add("py.hold", id="held")
    run.submit()
    wait_until("both parts running on py-a", lambda: executing(c, run.id, "quick", "held"), logs=cluster.logs)
    a.send_signal(signal.SIGTERM)
    wait_until("py-a to start stopping", lambda: "stopping (running handlers get 3 s" in cluster.log("py-a"),
               logs=cluster.logs)
    # Sent to py-a on the credit it still had: held back, not started, handed back.
    late_run = c.run()
    late = late_run.add("py.add", {"add": 1}, id="late")
    late_run.submit()
    assert a.wait(15) == 0, cluster.log("py-a")
    log = cluster.log("py-a")
    assert "left the coordinator, handing back 2 part(s)" in log, log
    wait_until("the coordinator to say py-a left",
               lambda: "worker %s#1 left: worker shutting down" % a_id in cluster.log("opcoord"), logs=cluster.logs)
    assert "lost" not in cluster.log("opcoord"), cluster.log("opcoord")
    assert not any(w.name == "py-a" for w in c.workers())
    # What finished during the drain was reported by py-a; what it held runs again elsewhere.
    assert quick.result(timeout=5) == 1
    assert quick.status().worker_id == a_id
    cluster.python_worker("testworker:make_hold", "py-b")
    b_id = next(w.worker_id for w in c.workers() if w.name == "py-b")
    assert held.result(timeout=30) == "done on attempt 2"
    assert late.result(timeout=30) == 1
    assert held.status().worker_id == late.status().worker_id == b_id


@pytest.mark.parametrize("kind, expected", [
    ("py.nonjson", "returned a set that cannot be sent as JSON (it declares result='json'): "
                   "Object of type set is not JSON serializable"),
    ("py.nonjsonbytes", "returned bytes that are not JSON (it declares result='json'): "),
    ("py.nan", "returned a float that cannot be sent as JSON (it declares result='json'): "
               "Out of range float values are not JSON compliant"),
])
def test_a_result_that_is_not_json_where_json_is_declared_fails_precisely(cluster: Cluster, kind: str,
                                                                           expected: str) -> None:
    cluster.python_worker("testworker:make", "py")
    run = cluster.admin().run()
    op = run.add(kind, None)
    run.submit()
    with pytest.raises(OperationFailed) as e:
        op.result(timeout=20)
    assert expected in e.value.message
    assert "of kind %r" % kind in e.value.message


def test_a_payload_that_is_not_json_fails_precisely(cluster: Cluster) -> None:
    cluster.python_worker("testworker:make", "py")
    run = cluster.admin().run()
    op = run.add("py.echo", b"{oops", id="bad-payload")
    run.submit()
    with pytest.raises(OperationFailed) as e:
        op.result(timeout=20)
    assert "the payload of %s/bad-payload (kind 'py.echo') is not JSON, which its handler declares (payload='json')" \
        % op.run.id in e.value.message
    assert "b'{oops'" in e.value.message


def test_progress_reaches_a_watcher(cluster: Cluster) -> None:
    cluster.python_worker("testworker:make", "py")
    c = cluster.admin()
    run = c.run()
    op = run.add("py.block", {"seconds": 60}, id="p")
    with c.watch(run=run.id, progress=True) as events:  # subscribed before the submit: nothing is missed
        run.submit()
        deadline = time.monotonic() + 20
        while True:  # the handler reports 0.5 at once, with a message
            e = events.next(timeout=max(0.0, deadline - time.monotonic()))
            if e.fraction > 0:
                assert (e.fraction, e.message, e.op_id, e.state) == (0.5, "blocking", "p", "executing")
                break
    op.cancel()
    with pytest.raises(OperationCancelled):
        op.result(timeout=10)


def test_the_worker_registers_again_with_a_restarted_coordinator(cluster: Cluster) -> None:
    cluster.python_worker("testworker:make", "py")
    cluster.restart_coordinator()
    cluster.wait_registered("py")  # bounded: backoff from 100 ms, a session per coordinator
    run = cluster.admin().run()
    op = run.add("py.add", {"add": 3})
    run.submit()
    assert op.result(timeout=20) == 3
    assert "coordinator disconnected this worker" in cluster.log("py"), cluster.log("py")


def test_a_second_sigterm_stops_at_once(cluster: Cluster) -> None:
    a = cluster.python_worker("testworker:make_hold", "py-a", env={"DRAIN": "60"})
    c = cluster.admin()
    run = c.run()
    run.add("py.hold", id="held")
    run.submit()
    wait_until("the part running", lambda: executing(c, run.id, "held"), logs=cluster.logs)
    a.send_signal(signal.SIGTERM)
    wait_until("py-a to start stopping", lambda: "stopping (running handlers get 60 s" in cluster.log("py-a"),
               logs=cluster.logs)
    started = time.monotonic()
    a.send_signal(signal.SIGTERM)
    assert a.wait(10) == 0
    assert time.monotonic() - started < 5, "not after the 60 s drain"
    assert "left the coordinator, handing back 1 part(s)" in cluster.log("py-a")


def test_parts_keep_running_through_a_coordinator_restart_and_are_taken_back(make_cluster) -> None:  # type: ignore[no-untyped-def]
    """PROTOCOL.md §7.4: the worker keeps what it runs when its coordinator goes, and its next HELLO lists
    what still runs and what finished meanwhile; the restarted coordinator takes both back (one attempt)."""
    cluster = make_cluster(journal=True)
    cluster.python_worker("testworker:make_marking", "py")
    c = cluster.admin()
    run = c.run("held")
    marker = cluster.dir / "finished-while-away"
    away = run.add("py.mark", {"seconds": 0.5, "path": str(marker)}, id="away", loss_retries=0)
    through = run.add("py.asleep", {"seconds": 4}, id="through", loss_retries=0)
    run.submit()
    wait_until("both running", lambda: executing(c, run.id, "away", "through"), logs=cluster.logs)
    cluster.stop_coordinator(signal.SIGKILL)
    wait_until("the handler to finish while no coordinator is there", marker.exists, logs=cluster.logs)
    restarted_us = int(time.time() * 1e6)
    cluster.restart_coordinator(sig=None)
    c = cluster.admin()
    assert c.wait(["away", "through"], run="held", timeout=30).finished, cluster.logs()
    for s in c.status(["away", "through"], run="held"):
        assert s.outcome is not None and s.outcome.status == "succeeded" and s.attempts == 1, (s, cluster.logs())
    assert [s.outcome.result for s in c.status(["away", "through"], run="held")] == ["marked", 4]
    # Its finish time is the worker's (the HELLO's `finished` record), not when a late FINISHED arrived.
    reply = c.request("STATUS", __import__("opqueue").opqueue_pb2.Status(op_ids=["away"], run="held"), "STATUS-REPLY")
    assert reply.ops[0].finished_us < restarted_us, (reply.ops[0].finished_us, restarted_us)
    assert "2 part(s) held from before" not in cluster.log("py")  # one had finished: listed as finished
    assert "1 part(s) held from before" in cluster.log("py"), cluster.log("py")
