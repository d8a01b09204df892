"""Leadership (docs/PROTOCOL.md §14, issue 29) in the Python package: epoch fencing, several endpoints,
NOT_LEADER redirects. Fake coordinators are pyzmq ROUTER sockets on loopback speaking opqueue.wire, each
served on its own thread; every wait is bounded."""
from __future__ import annotations

import os
import queue
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import zmq

from conftest import Cluster, wait_until
from opqueue import Client, Timeout, Worker
from opqueue import opqueue_pb2 as pb
from opqueue._leadership import Endpoints, EpochFence, not_leader
from opqueue.wire import decode, encode

Reply = tuple[str, Any, int]  # (command, body, request id)
Handler = Callable[[str, int, Any], list[Reply]]


class FakeCoordinator:
    """A ROUTER on 127.0.0.1 that records what it receives (`received`: (name, request id, body)) and answers
    with `handler(name, rid, body)`; `send` pushes a message to the last peer heard (from any thread)."""

    def __init__(self, handler: Handler | None = None) -> None:
        self.handler: Handler = handler or (lambda name, rid, msg: [])
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.ROUTER)
        self.sock.setsockopt(zmq.LINGER, 0)
        port = self.sock.bind_to_random_port("tcp://127.0.0.1")
        self.endpoint = "tcp://127.0.0.1:%d" % port
        self.received: list[tuple[str, int, Any]] = []
        self._outbox: queue.Queue[Reply] = queue.Queue()
        self._peer: bytes | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            if self.sock.poll(20):
                frames = self.sock.recv_multipart()
                self._peer = frames[0]
                name, rid, msg = decode(frames[1:])
                self.received.append((name, rid, msg))
                for reply in self.handler(name, rid, msg):
                    self._send(reply)
            while self._peer is not None and not self._outbox.empty():
                self._send(self._outbox.get())

    def _send(self, reply: Reply) -> None:
        name, body, rid = reply
        assert self._peer is not None
        self.sock.send_multipart([self._peer] + encode(name, body, rid))

    def send(self, name: str, body: Any, rid: int = 0) -> None:
        self._outbox.put((name, body, rid))

    def got(self, name: str) -> list[Any]:
        return [m for n, _, m in list(self.received) if n == name]

    def close(self) -> None:
        if self._stop.is_set():
            return
        self._stop.set()
        self._thread.join(5)
        self.sock.close(linger=0)
        self.ctx.term()


@pytest.fixture
def fakes() -> Iterator[Callable[..., FakeCoordinator]]:
    made: list[FakeCoordinator] = []

    def make(handler: Handler | None = None) -> FakeCoordinator:
        f = FakeCoordinator(handler)
        made.append(f)
        return f
    yield make
    for f in made:
        f.close()


def free_endpoint() -> str:
    """A loopback port nothing listens on (bound, then closed)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return "tcp://127.0.0.1:%d" % port


def welcome(epoch: int) -> pb.Welcome:
    return pb.Welcome(worker_id="w-1", heartbeat_interval_ms=1000, liveness=30, epoch=epoch)


def dispatch(op_id: str, epoch: int) -> pb.Dispatch:
    return pb.Dispatch(records=[pb.DispatchRecord(op_id="r/" + op_id, part=0, attempt=1, kind="t.echo", payload=b'"x"')],
                       epoch=epoch)


class RunningWorker:
    """A Worker with handler `t.echo` (records the ops it ran; blocks while `hold` is clear) on a thread."""

    def __init__(self, endpoint: str) -> None:
        self.ran: list[str] = []
        self.hold = threading.Event()
        self.hold.set()
        self.worker = Worker(endpoint, slots=2, name="py-ha", drain=0.5)

        @self.worker.operation("t.echo")
        def echo(payload: Any, ctx: Any) -> Any:
            self.ran.append(ctx.op_id)
            if not self.hold.wait(20):
                raise RuntimeError("never released")
            return payload
        self.thread = threading.Thread(target=self.worker.run, kwargs={"install_signal_handlers": False}, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.hold.set()
        self.worker.stop()
        self.thread.join(10)
        assert not self.thread.is_alive(), "the worker did not stop"


def finished_ops(fake: FakeCoordinator) -> list[str]:
    return [r.op_id for m in fake.got("FINISHED") for r in m.records]


# -- (1.10) the dispatch token (PROTOCOL.md §5.6-5.9): not leadership, but this file has the fake coordinator


def test_a_worker_echoes_the_dispatch_token_in_started_and_finished(fakes: Callable[..., FakeCoordinator]) -> None:
    fake = fakes(lambda name, rid, msg: [("WELCOME", welcome(0), 0)] if name == "HELLO" else [])
    w = RunningWorker(fake.endpoint)
    try:
        wait_until("the worker's CREDIT after WELCOME", lambda: fake.got("CREDIT"), timeout=10)
        w.hold.clear()   # "held" runs until released, so its STARTED goes out alone
        d = dispatch("held", epoch=0)
        d.records[0].token = 42
        plain = dispatch("plain", epoch=0)   # a 1.9 coordinator's: no token
        fake.send("DISPATCH", d)
        wait_until("the STARTED of r/held", lambda: any(p.op_id == "r/held" for m in fake.got("STARTED") for p in m.parts),
                   timeout=10)
        assert [p.token for m in fake.got("STARTED") for p in m.parts if p.op_id == "r/held"] == [42]
        w.hold.set()
        fake.send("DISPATCH", plain)
        wait_until("both finished", lambda: {"r/held", "r/plain"} <= set(finished_ops(fake)), timeout=10)
        tokens = {r.op_id: r.token for m in fake.got("FINISHED") for r in m.records}
        assert tokens == {"r/held": 42, "r/plain": 0}
    finally:
        w.stop()


# -- (a) the worker fences a replaced leader


def test_a_worker_ignores_a_dispatch_of_a_lower_epoch_and_runs_the_current_leaders(fakes: Callable[..., FakeCoordinator]) -> None:
    hellos: list[Any] = []

    def handler(name: str, rid: int, msg: Any) -> list[Reply]:
        if name != "HELLO":
            return []
        hellos.append(msg)  # the second registration is answered by the replaced leader first
        return [("WELCOME", welcome(5), 0)] if len(hellos) == 1 else [("WELCOME", welcome(3), 0), ("WELCOME", welcome(5), 0)]
    fake = fakes(handler)
    w = RunningWorker(fake.endpoint)
    try:
        wait_until("the worker's CREDIT after WELCOME (epoch 5)", lambda: fake.got("CREDIT"), timeout=10)
        assert w.worker.epoch == 5
        fake.send("DISPATCH", dispatch("stale", epoch=3))        # the replaced leader's, arriving late
        wait_until("the stale DISPATCH fenced", lambda: w.worker.fenced == 1, timeout=10)
        fake.send("CANCEL", pb.Cancel(records=[pb.CancelRecord(op_id="r/stale", attempt=1)], epoch=2))
        fake.send("DISCONNECT", pb.Disconnect(reason="stale leader", epoch=4))  # would end the session
        fake.send("DISPATCH", dispatch("fresh", epoch=5))
        wait_until("the current leader's op finished", lambda: "r/fresh" in finished_ops(fake), timeout=10)
        # Same connection, in order: the stale DISPATCH was read before the fresh one, and never ran.
        assert w.ran == ["fresh"]
        assert w.worker.fenced == 3
        assert "r/stale" not in finished_ops(fake)
        assert all(p.op_id != "r/stale" for m in fake.got("STARTED") for p in m.parts)
        assert len(fake.got("HELLO")) == 1, "a fenced DISCONNECT ended the session"
        # Epoch 0 (a coordinator without --ha) is never fenced.
        fake.send("DISPATCH", dispatch("plain", epoch=0))
        wait_until("the epoch-0 op finished", lambda: "r/plain" in finished_ops(fake), timeout=10)
        assert w.worker.fenced == 3 and w.worker.epoch == 5
        # A stale WELCOME is not a registration: the worker waits for the current leader's.
        fake.send("DISCONNECT", pb.Disconnect(reason="register again", epoch=5))
        wait_until("registered again", lambda: len(fake.got("CREDIT")) == 2, timeout=10)
        assert w.worker.fenced == 4 and len(hellos) == 2
    finally:
        w.stop()


def test_a_worker_told_not_leader_registers_with_the_named_leader_and_keeps_its_running_part(
        fakes: Callable[..., FakeCoordinator]) -> None:
    leader = fakes(lambda name, rid, msg: [("WELCOME", welcome(7), 0)] if name == "HELLO" else [])
    # A standby refuses HELLO with NOT_LEADER naming the leader; after it served (it led, then lost the
    # lease) it sends DISCONNECT with the same text.
    standby_text = "not the leader; leader: " + leader.endpoint
    standby = fakes(lambda name, rid, msg: [("ERROR", pb.ErrorReply(code=pb.ERROR_CODE_NOT_LEADER,
                                                                     message=standby_text), rid)] if name == "HELLO" else [])
    old = fakes(lambda name, rid, msg: [("WELCOME", welcome(6), 0)] if name == "HELLO" else [])
    w = RunningWorker(old.endpoint + "," + standby.endpoint)
    w.hold.clear()
    try:
        wait_until("registered with the old leader", lambda: old.got("CREDIT"), timeout=10)
        old.send("DISPATCH", dispatch("long", epoch=6))
        wait_until("the part started", lambda: w.ran == ["long"], timeout=10)
        # The old leader lost its lease: it tells the worker who leads now (not in the worker's list).
        old.send("DISCONNECT", pb.Disconnect(reason=standby_text, epoch=6))
        wait_until("HELLO at the named leader", lambda: leader.got("HELLO"), timeout=10)
        hello = leader.got("HELLO")[0]
        assert [(p.op_id, p.attempt) for p in hello.running] == [("r/long", 1)]  # re-registered with what it holds
        assert w.worker.endpoint == leader.endpoint
        w.hold.set()
        wait_until("the held part reported to the new leader", lambda: "r/long" in finished_ops(leader), timeout=10)
        assert w.ran == ["long"]  # not run again
        assert not standby.got("HELLO")
    finally:
        w.stop()


def test_a_worker_whose_hello_a_standby_refuses_goes_to_the_leader_it_names(fakes: Callable[..., FakeCoordinator]) -> None:
    leader = fakes(lambda name, rid, msg: [("WELCOME", welcome(3), 0)] if name == "HELLO" else [])
    text = "not the leader; leader: " + leader.endpoint
    standby = fakes(lambda name, rid, msg: [("ERROR", pb.ErrorReply(code=pb.ERROR_CODE_NOT_LEADER, message=text), rid)]
                    if name == "HELLO" else [])
    start = time.monotonic()
    w = RunningWorker(standby.endpoint)
    try:
        wait_until("registered with the named leader", lambda: leader.got("CREDIT"), timeout=10)
        assert len(standby.got("HELLO")) == 1 and time.monotonic() - start < 3  # no backoff, no WELCOME timeout
        leader.send("DISPATCH", dispatch("one", epoch=3))
        wait_until("the op ran", lambda: "r/one" in finished_ops(leader), timeout=10)
    finally:
        w.stop()


def test_a_worker_skips_an_unreachable_first_endpoint(fakes: Callable[..., FakeCoordinator]) -> None:
    live = fakes(lambda name, rid, msg: [("WELCOME", welcome(0), 0)] if name == "HELLO" else [])
    start = time.monotonic()
    w = RunningWorker(free_endpoint() + "," + live.endpoint)
    try:
        wait_until("registered with the second endpoint", lambda: live.got("CREDIT"), timeout=10)
        assert time.monotonic() - start < 2.5, "waited out the 3 s WELCOME timeout instead of moving on"
        assert w.worker.endpoint == live.endpoint
    finally:
        w.stop()


# -- (b) the client fences a replaced leader's replies and events


def workers_reply(name: str, epoch: int) -> pb.WorkersReply:
    return pb.WorkersReply(workers=[pb.WorkerInfo(worker_id=name, name=name)], epoch=epoch)


def test_a_client_ignores_a_reply_of_a_lower_epoch_and_takes_the_current_leaders(fakes: Callable[..., FakeCoordinator]) -> None:
    # Choice: a stale reply is dropped and the request keeps waiting, so a fresh reply still answers it;
    # with none the request ends in Timeout, which says that replies of a replaced leader were ignored.
    script: dict[int, list[tuple[str, int]]] = {1: [("fresh-1", 5)], 2: [("stale", 3), ("fresh-2", 5)],
                                                3: [("zero", 0)], 4: [("stale-only", 4)]}
    calls = iter(range(1, 100))

    def handler(name: str, rid: int, msg: Any) -> list[Reply]:
        if name == "WATCH":
            if msg.stop:
                return []
            return [("ACK", pb.Ack(epoch=5), rid),
                    ("EVENT", pb.Events(events=[pb.Event(sequence=1, op_id="r/old", run="r")], epoch=4), rid),
                    ("EVENT", pb.Events(events=[pb.Event(sequence=2, op_id="r/new", run="r")], epoch=5), rid)]
        return [("WORKERS-REPLY", workers_reply(n, e), rid) for n, e in script.get(next(calls), [])]
    fake = fakes(handler)
    with Client(fake.endpoint, timeout=2) as c:
        assert [w.name for w in c.workers()] == ["fresh-1"] and c.epoch == 5
        assert [w.name for w in c.workers()] == ["fresh-2"]
        assert c.fenced == 1
        assert [w.name for w in c.workers()] == ["zero"]  # epoch 0 is never fenced
        c._inner.timeout = 0.5
        with pytest.raises(Timeout) as e:
            c.workers()
        assert "1 message(s) of a replaced leader were ignored: epoch below 5" in str(e.value)
        assert c.fenced == 2
        c._inner.timeout = 2
        with c.watch() as events:
            assert events.next(timeout=5).op_id == "r/new"  # the epoch-4 EVENT was dropped
        assert c.fenced == 3


# -- (c) NOT_LEADER redirects, (d) an unreachable endpoint


def not_leader_error(rid: int, leader: str | None) -> Reply:
    text = "not the leader; leader: " + leader if leader else "not the leader; no leader elected yet"
    return ("ERROR", pb.ErrorReply(code=pb.ERROR_CODE_NOT_LEADER, message=text), rid)


def test_a_standbys_not_leader_sends_the_request_to_the_leader_it_names(fakes: Callable[..., FakeCoordinator],
                                                                       cluster: Cluster) -> None:
    standby = fakes(lambda name, rid, msg: [not_leader_error(rid, cluster.endpoint)])
    with Client(standby.endpoint, timeout=10) as c:
        run = c.run()
        op = run.add("echo", {"n": 1}, id="e")
        run.submit()
        assert c.endpoint == cluster.endpoint
        assert [n for n, _, _ in standby.received] == ["SUBMIT"]  # one more round trip, no more
        assert op.status().state in ("ready", "pending")          # the leader has it
        # A watch is redirected too (the client is on the leader now: no second refusal needed).
        with c.watch(run=run.id) as events:
            cluster.swift_worker("swift")
            seen = set()
            while "finished" not in seen:
                seen.add(events.next(timeout=20).state)
        assert op.result(timeout=20) == {"n": 1}


def test_a_standby_without_a_leader_is_asked_again_within_the_timeout(fakes: Callable[..., FakeCoordinator]) -> None:
    answers = iter([None, None])

    def handler(name: str, rid: int, msg: Any) -> list[Reply]:
        if next(answers, "elected") is None:
            return [not_leader_error(rid, None)]
        return [("WORKERS-REPLY", workers_reply("w", 9), rid)]
    fake = fakes(handler)
    start = time.monotonic()
    with Client(fake.endpoint, timeout=5) as c:
        assert [w.name for w in c.workers()] == ["w"]
    assert len(fake.got("WORKERS")) == 3 and time.monotonic() - start < 2


def test_not_leader_with_no_leader_for_ever_ends_in_the_refusal_at_the_timeout(fakes: Callable[..., FakeCoordinator]) -> None:
    from opqueue import RequestRefused
    fake = fakes(lambda name, rid, msg: [not_leader_error(rid, None)])
    start = time.monotonic()
    with Client(fake.endpoint, timeout=0.6) as c:
        with pytest.raises(RequestRefused) as e:
            c.workers()
    assert e.value.code == "NOT_LEADER" and "no leader elected yet" in str(e.value)
    assert 0.5 <= time.monotonic() - start < 3 and len(fake.got("WORKERS")) >= 3


def test_a_client_given_an_unreachable_first_endpoint_uses_the_second(cluster: Cluster) -> None:
    start = time.monotonic()
    with Client(free_endpoint() + "," + cluster.endpoint, timeout=10) as c:
        assert c.workers() == []
        assert c.endpoint == cluster.endpoint
    assert time.monotonic() - start < 3, "waited for the dead endpoint instead of moving on"


def test_a_watch_subscribes_again_on_the_next_coordinator_when_its_link_is_lost(fakes: Callable[..., FakeCoordinator]) -> None:
    def answer(epoch: int) -> Handler:
        def handler(name: str, rid: int, msg: Any) -> list[Reply]:
            if name != "WATCH" or msg.stop:
                return []
            return [("ACK", pb.Ack(epoch=epoch), rid),
                    ("EVENT", pb.Events(events=[pb.Event(sequence=epoch, op_id="r/e%d" % epoch, run="r")], epoch=epoch), rid)]
        return handler
    a, b = fakes(answer(1)), fakes(answer(2))
    with Client(a.endpoint + "," + b.endpoint, timeout=5) as c:
        with c.watch() as events:
            assert events.next(timeout=5).op_id == "r/e1"
            a.close()                                     # the leader dies: its connection closes
            assert events.next(timeout=5).op_id == "r/e2"  # subscribed again at the next one
            assert events.stream.restarts == 1 and c.endpoint == b.endpoint and c.epoch == 2


def test_a_python_worker_process_given_two_endpoints_registers_with_the_live_one(cluster: Cluster) -> None:
    cluster.python_worker("testworker:make", "py", env={"OPQ_ENDPOINT": free_endpoint() + "," + cluster.endpoint})
    c = cluster.admin()
    run = c.run()
    op = run.add("py.add", {"add": 2}, id="a")
    run.submit()
    assert op.result(timeout=20) == 2


# -- the pieces, alone


def test_endpoint_lists_parse_normalise_and_refuse_bad_entries() -> None:
    e = Endpoints("tcp://a:1, b:2 ,")
    assert e.all == ["tcp://a:1", "tcp://b:2"] and e.current == "tcp://a:1" and e.several
    with pytest.raises(ValueError, match="no coordinator endpoint"):
        Endpoints(" , ")
    with pytest.raises(ValueError, match="'nohost'"):
        Endpoints("tcp://a:1,nohost")


def test_endpoints_move_round_robin_and_follow_redirects_with_patience() -> None:
    e = Endpoints("tcp://a:1,tcp://b:2,tcp://c:3")
    assert e.unreachable() and e.current == "tcp://b:2"
    assert e.redirect("tcp://x:9") and e.current == "tcp://x:9"      # the leader need not be in the list
    assert not e.redirect("tcp://x:9")                                # there already
    # a was unreachable: a standby naming it is not followed at once (it may not know a died)...
    refused = [e.redirect("tcp://a:1") for _ in range(Endpoints.REDIRECT_PATIENCE - 1)]
    assert refused == [False] * (Endpoints.REDIRECT_PATIENCE - 1) and e.current == "tcp://x:9"
    assert e.redirect("tcp://a:1") and e.current == "tcp://a:1"       # ...but after being named that often
    e.reached()
    assert e.failed == {}
    one = Endpoints("tcp://only:1")
    assert not one.unreachable() and one.current == "tcp://only:1"


def test_not_leader_texts_and_the_fence() -> None:
    assert not_leader("not the leader; leader: tcp://h:7600") == "tcp://h:7600"
    assert not_leader("not the leader; leader: h:7600") == "tcp://h:7600"
    assert not_leader("not the leader; no leader elected yet") is None
    f = EpochFence()
    assert f.admit(pb.Ack(epoch=4)) and f.admit(pb.Ack()) and f.admit(pb.Heartbeat())
    assert not f.admit(pb.Dispatch(epoch=3)) and f.admit(pb.Dispatch(epoch=4)) and f.admit(pb.Welcome(epoch=6))
    assert (f.highest, f.fenced) == (6, 1)


# -- (e) a real --ha group: two opcoords on a loopback etcd


class EtcdGroup:
    """A loopback etcd (short heartbeat and election timeout, so a 2 s lease works, as Tests/ClusterTestSupport's
    EtcdServer) and two `opcoord --ha` of one group, each with its own state directory and log."""

    def __init__(self, cluster_dir: Path, opcoord: Path, etcd: str) -> None:
        self.dir, self.opcoord = cluster_dir, opcoord
        self.procs: list[subprocess.Popen[bytes]] = []
        client, peer = free_endpoint().rsplit(":", 1)[1], free_endpoint().rsplit(":", 1)[1]
        self.etcd_url = "http://127.0.0.1:%s" % client
        self.etcd = self._launch([etcd, "--name", "opq-py", "--data-dir", str(cluster_dir / "etcd-data"),
                                  "--listen-client-urls", self.etcd_url, "--advertise-client-urls", self.etcd_url,
                                  "--listen-peer-urls", "http://127.0.0.1:%s" % peer,
                                  "--initial-advertise-peer-urls", "http://127.0.0.1:%s" % peer,
                                  "--initial-cluster", "opq-py=http://127.0.0.1:%s" % peer,
                                  "--heartbeat-interval", "50", "--election-timeout", "500"], "etcd")
        wait_until("etcd to answer /health", self._healthy, timeout=20, logs=self.logs)
        self.group = "py%d" % os.getpid()
        self.endpoints = [free_endpoint(), free_endpoint()]
        self.coordinators: list[subprocess.Popen[bytes] | None] = [self.start(i) for i in range(2)]

    def _launch(self, argv: list[str], log: str) -> subprocess.Popen[bytes]:
        with open(self.dir / ("%s.log" % log), "ab") as out:
            p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=self.dir)
        self.procs.append(p)
        return p

    def _healthy(self) -> bool:
        if self.etcd.poll() is not None:
            pytest.fail("etcd exited with %s:\n%s" % (self.etcd.returncode, self.logs()))
        try:
            with urllib.request.urlopen(self.etcd_url + "/health", timeout=1) as r:
                return b'"true"' in r.read()
        except OSError:
            return False

    def start(self, i: int) -> subprocess.Popen[bytes]:
        e = self.endpoints[i]
        return self._launch([str(self.opcoord), "--bind", e, "--advertise", e, "--ha", "etcd=" + self.etcd_url,
                             "--ha-group", self.group, "--ha-lease-ttl", "2", "--http", "off",
                             "--state-dir", str(self.dir / ("state-%d" % i))], "opcoord-%d" % i)

    def ha(self, i: int) -> Any:
        """Coordinator i's HA-REPLY on a plain DEALER (no redirect followed), or None within 0.5 s."""
        ctx = zmq.Context()
        s = ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        try:
            s.connect(self.endpoints[i])
            s.send_multipart(encode("HA", pb.HighAvailability(), 1))
            if not s.poll(500):
                return None
            name, _, msg = decode(s.recv_multipart())
            return msg if name == "HA-REPLY" else None
        finally:
            s.close(linger=0)
            ctx.term()

    def leader(self, except_: int | None = None) -> int:
        found: list[int] = []

        def elected() -> bool:
            for i, p in enumerate(self.coordinators):
                r = self.ha(i) if p is not None and i != except_ else None
                if r is not None and r.leading:
                    found.append(i)
                    return True
            return False
        wait_until("a leader among %s" % self.endpoints, elected, timeout=20, logs=self.logs)
        return found[0]

    def kill(self, i: int) -> None:
        p = self.coordinators[i]
        assert p is not None
        p.send_signal(signal.SIGKILL)
        p.wait(10)
        self.coordinators[i] = None

    def logs(self) -> str:
        return "\n".join("--- %s\n%s" % (f.name, "\n".join(f.read_text(errors="replace").splitlines()[-30:]))
                         for f in sorted(self.dir.glob("*.log")))

    def stop(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                pass


def ha_opcoord() -> Path | None:
    """opcoord from $OPQ_BIN_DIR if it has --ha (a build of 1.9), else None."""
    d = os.environ.get("OPQ_BIN_DIR")
    if not d or not (Path(d) / "opcoord").exists():
        return None
    help_text = subprocess.run([str(Path(d) / "opcoord"), "--help"], capture_output=True, text=True, timeout=20)
    return Path(d) / "opcoord" if "--ha-group" in help_text.stdout + help_text.stderr else None


def test_a_client_and_a_worker_given_both_coordinators_keep_working_after_the_leader_is_killed() -> None:
    etcd, opcoord = shutil.which("etcd"), ha_opcoord()
    if etcd is None or opcoord is None:
        pytest.skip("needs etcd on the PATH and an opcoord with --ha in $OPQ_BIN_DIR")
    tmp = Path(tempfile.mkdtemp(prefix="opq-py-ha-"))
    group = EtcdGroup(tmp, opcoord, etcd)
    w: RunningWorker | None = None
    try:
        first = group.leader()
        standby = 1 - first
        both = group.endpoints[standby] + "," + group.endpoints[first]  # the standby first: it redirects
        w = RunningWorker(both)
        with Client(both, timeout=20) as c:
            run = c.run("before")
            op = run.add("t.echo", "one", id="a")
            run.submit()
            assert op.result(timeout=20) == "one"
            assert c.endpoint == group.endpoints[first] and w.worker.endpoint == group.endpoints[first]
            epoch = c.epoch
            assert epoch > 0 and w.worker.epoch == epoch
            group.kill(first)
            killed = time.monotonic()
            run2 = c.run("after")
            op2 = run2.add("t.echo", "two", id="b")
            run2.submit()                                  # reaches the new leader within the timeout
            assert op2.result(timeout=20) == "two"        # run by the worker, moved to the new leader too
            took = time.monotonic() - killed
            assert group.leader(except_=first) == standby
            assert c.endpoint == group.endpoints[standby] and w.worker.endpoint == group.endpoints[standby]
            assert c.epoch > epoch and w.worker.epoch == c.epoch, (epoch, c.epoch, w.worker.epoch)
            assert c.status(["a"], run=run.id)[0].state == "finished"  # the standby had followed the journal
            print("failover: the op submitted after the SIGKILL finished %.2f s after it" % took)
    except BaseException:
        print(group.logs())
        raise
    finally:
        if w is not None:
            w.stop()
        group.stop()
        shutil.rmtree(tmp, ignore_errors=True)
