"""Clients: `AsyncClient` (asyncio) and `Client` (the same, blocking, on a private event loop thread).

    with Client("tcp://coordinator:7600") as client:
        run = client.run()
        dl = run.add("download", payload={"url": u})
        op = run.add("resize", payload={"side": 128}, after=[dl], priority="high", retries=3, queue="images")
        run.submit()
        print(op.result(timeout=60))     # the result, JSON-decoded (bytes when it is not JSON)

One DEALER socket per client; requests carry ids and their replies are matched by id, so many may be
outstanding (from many threads with `Client`, many tasks with `AsyncClient`).

High availability (docs/PROTOCOL.md §14): the endpoint may list several coordinators of an `--ha` group
(`tcp://a:7600,tcp://b:7600`); a standby's ERROR NOT_LEADER sends the request to the leader it names, one
that cannot be reached to the next of the list; replies and events of a replaced leader (a lower epoch)
are ignored.
"""
from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import secrets
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Awaitable, Callable, Iterable, Iterator, Sequence, TypeVar

import zmq
import zmq.asyncio

from . import codec
from . import keys as keyfiles
from . import opqueue_pb2 as pb
from ._leadership import NEXT_ENDPOINT_AFTER, NOT_LEADER_PAUSE, Endpoints, EpochFence, Leadership, epoch_of, not_leader
from .errors import (AuthenticationFailed, OperationCancelled, OperationFailed, OpqueueError, RequestRefused,
                     SubmitRejected, Timeout, Unauthorized, UnknownOperation)
from .wire import WireError, decode, encode

__all__ = ["AsyncClient", "Client", "Run", "Op", "AsyncRun", "AsyncOp", "OpStatus", "Outcome", "Event",
           "PRIORITIES", "QOS", "Watch", "WatchStream", "WaitResult"]

PRIORITIES = {"veryLow": -8, "low": -4, "normal": 0, "high": 4, "veryHigh": 8}
QOS = {"userInteractive": pb.QOS_USER_INTERACTIVE, "userInitiated": pb.QOS_USER_INITIATED, "default": pb.QOS_DEFAULT,
       "utility": pb.QOS_UTILITY, "background": pb.QOS_BACKGROUND}
STATES = {pb.OP_STATE_PENDING: "pending", pb.OP_STATE_READY: "ready", pb.OP_STATE_DISPATCHED: "dispatched",
          pb.OP_STATE_EXECUTING: "executing", pb.OP_STATE_FINISHED: "finished", pb.OP_STATE_UNSPECIFIED: "unknown"}
SUBMIT_BATCH = 4096
T = TypeVar("T")
logger = logging.getLogger("opqueue.client")


def priority_value(p: int | str) -> int:
    if isinstance(p, str):
        if p not in PRIORITIES:
            raise ValueError("priority %r is not one of %s" % (p, ", ".join(PRIORITIES)))
        return PRIORITIES[p]
    if p not in PRIORITIES.values():
        raise ValueError("priority %r is not one of -8, -4, 0, 4, 8" % p)
    return p


def qos_value(q: str | None) -> Any:  # a QoS enum value
    if q is None:
        return pb.QOS_UNSPECIFIED
    if q not in QOS:
        raise ValueError("qos %r is not one of %s" % (q, ", ".join(QOS)))
    return QOS[q]


# -- what replies say, as plain Python


@dataclass(frozen=True)
class Outcome:
    """A finished operation: `status` is "succeeded", "failed" or "cancelled"; `result` the decoded
    result (JSON, else bytes; None when empty), `error` the failure or cancel text."""
    op_id: str
    run: str
    status: str
    result: Any = None
    raw: bytes = b""
    error: str = ""

    @staticmethod
    def of(op_id: str, run: str, o: Any) -> "Outcome":
        which = o.WhichOneof("result")
        if which == "succeeded":
            return Outcome(op_id, run, "succeeded", codec.decode_value(o.succeeded), bytes(o.succeeded))
        if which == "failed":
            return Outcome(op_id, run, "failed", error=o.failed)
        if which == "cancelled":
            return Outcome(op_id, run, "cancelled", error=o.cancelled)
        return Outcome(op_id, run, "unknown")

    def value(self) -> Any:
        """The result, or OperationFailed / OperationCancelled."""
        if self.status == "succeeded":
            return self.result
        if self.status == "failed":
            raise OperationFailed(self.op_id, self.error)
        if self.status == "cancelled":
            raise OperationCancelled(self.op_id, self.error)
        raise OpqueueError("operation %s has no outcome" % self.op_id)


@dataclass(frozen=True)
class OpStatus:
    id: str
    run: str
    queue: str
    state: str                  # pending, ready, dispatched, executing, finished
    cancelled: bool
    attempts: int
    worker_id: str
    error: str
    outcome: Outcome | None     # when finished
    attempt_errors: list[str] = field(default_factory=list)
    priority: int = 0

    @staticmethod
    def of(s: Any) -> "OpStatus":
        finished = s.state == pb.OP_STATE_FINISHED
        return OpStatus(s.id, s.run, s.queue, STATES.get(s.state, "unknown"), s.cancelled, s.attempts, s.worker_id,
                        s.error, Outcome.of(s.id, s.run, s.outcome) if finished else None, list(s.attempt_errors),
                        s.priority)


@dataclass(frozen=True)
class Event:
    """One state change from `watch` (PROTOCOL.md §5.22); `outcome` when state is "finished"."""
    sequence: int
    op_id: str
    run: str
    state: str
    cancelled: bool
    attempt: int
    worker_id: str
    outcome: Outcome | None
    fraction: float
    message: str

    @staticmethod
    def of(e: Any) -> "Event":
        finished = e.state == pb.OP_STATE_FINISHED
        return Event(e.sequence, e.op_id, e.run, STATES.get(e.state, "unknown"), e.cancelled, e.attempt, e.worker_id,
                     Outcome.of(e.op_id, e.run, e.outcome) if finished else None, e.fraction, e.message)


@dataclass(frozen=True)
class WaitResult:
    finished: bool
    outcomes: dict[str, Outcome]
    pending: list[str]
    succeeded: int
    failed: int
    cancelled: int


# -- graphs built in code


class _RunBase:
    """Operations added since the last submit; `submit` sends them (one keyed SUBMIT per 4,096)."""

    def __init__(self, name: str | None, queues: Sequence[dict[str, Any]] = ()) -> None:
        self.name = name or ""
        self.id = ""  # known after the first submit
        self._pending: list[pb.Operation] = []
        self._queues = [_queue_settings(q) for q in queues]
        self._ids: set[str] = set()
        self._counter = itertools.count(1)
        self._submitted = False

    def _add(self, kind: str, id: str | None, payload: Any, after: Iterable[Any], priority: int | str,
             retries: int, queue: str, name: str, parts: int, requires: Iterable[str], timeout: float | None,
             policy: str, loss_retries: int | None, retry_delay: float | None, retry_delay_max: float | None,
             qos: str | None, barrier: bool, share: str | None = None, concurrency_key: str | None = None) -> str:
        op_id = id or "%s-%d" % (kind, next(self._counter))
        while id is None and op_id in self._ids:
            op_id = "%s-%d" % (kind, next(self._counter))
        if op_id in self._ids:
            raise ValueError("operation id %r is in this run already" % op_id)
        if policy not in ("finished", "succeeded"):
            raise ValueError("policy must be 'finished' or 'succeeded', not %r" % policy)
        o = pb.Operation(id=op_id, kind=kind, payload=codec.encode_value(payload), priority=priority_value(priority),
                         retries=retries, queue=queue, name=name, parts=parts, requires=list(requires),
                         qos=qos_value(qos), barrier=barrier,
                         policy=pb.DEPENDENCY_POLICY_SUCCEEDED if policy == "succeeded" else pb.DEPENDENCY_POLICY_FINISHED,
                         after=[_dependency_id(a, self) for a in after])
        if timeout is not None:
            o.timeout_us = int(timeout * 1e6)
        if loss_retries is not None:
            o.loss_retries = loss_retries
        if retry_delay is not None:
            o.retry_delay_us = int(retry_delay * 1e6)
        if retry_delay_max is not None:
            o.retry_delay_max_us = int(retry_delay_max * 1e6)
        if share:
            o.share = share
        if concurrency_key:
            o.concurrency_key = concurrency_key
        self._ids.add(op_id)
        self._pending.append(o)
        return op_id

    def _batches(self) -> list[pb.Submit]:
        ops, self._pending = self._pending, []
        batches = []
        for i in range(0, max(len(ops), 1), SUBMIT_BATCH):
            batches.append(pb.Submit(operations=ops[i:i + SUBMIT_BATCH], queues=self._queues if i == 0 else []))
        self._queues = []
        return batches


def _dependency_id(a: Any, run: _RunBase) -> str:
    if isinstance(a, (Op, AsyncOp)):
        if a.run is run:
            return a.id
        if not a.run.id:
            raise ValueError("%s belongs to a run not submitted yet: submit it first" % a.id)
        return "%s/%s" % (a.run.id, a.id)
    if isinstance(a, str):
        return a
    raise TypeError("after takes ops or op ids, not %s" % type(a).__name__)


def _queue_settings(q: dict[str, Any]) -> pb.QueueSettings:
    s = pb.QueueSettings(name=q["name"])
    limit = q.get("maxConcurrent", q.get("max_concurrent"))
    if limit is not None:
        s.max_concurrent = int(limit)
    if "suspended" in q:
        s.suspended = bool(q["suspended"])
    if "qos" in q:
        s.qos = qos_value(q["qos"])
    fairness = _queue_fairness(q)
    if fairness is not None:
        s.fairness.CopyFrom(fairness)
    return s


_FAIRNESS_FIELDS = ("share", "weights", "keyLimit", "keyStrategy", "rate", "burst", "keyRate", "keyBurst", "ageing")
_SHARE_MODES = {"submitter": pb.SHARE_MODE_SUBMITTER, "run": pb.SHARE_MODE_RUN, "key": pb.SHARE_MODE_KEY,
                "fifo": pb.SHARE_MODE_FIFO}
_KEY_STRATEGIES = {"wait": pb.KEY_STRATEGY_WAIT, "cancel-newest": pb.KEY_STRATEGY_CANCEL_NEWEST,
                   "cancel-in-progress": pb.KEY_STRATEGY_CANCEL_IN_PROGRESS}


def rate_per_second(text: Any) -> float:
    """`100/s`, `30/m`, `500/h`, or a bare number (per second), as docs/GRAPHS.md writes a queue's rate."""
    number, _, unit = str(text).partition("/")
    seconds = {"": 1, "s": 1, "m": 60, "h": 3600}.get(unit.strip())
    if seconds is None:
        raise ValueError("unknown rate unit %r in %r (use /s, /m or /h)" % ("/" + unit, text))
    rate = float(number) / seconds
    if not 0 < rate <= 1_000_000:
        raise ValueError("rate must be more than 0 and at most 1000000/s, got %r" % (text,))
    return rate


def ageing_us(text: Any) -> int:
    """`500ms`, `30s`, `5m`, `1h`, or a bare number (seconds), as docs/GRAPHS.md writes a queue's ageing; 1ms...24h."""
    t = str(text).strip()
    scale = 1_000_000
    for unit, s in (("ms", 1_000), ("s", 1_000_000), ("m", 60_000_000), ("h", 3_600_000_000)):
        if t.endswith(unit):
            t, scale = t[: -len(unit)], s
            break
    try:
        micros = round(float(t) * scale)
    except ValueError:
        raise ValueError("expected a period like 500ms, 30s, 5m or 1h, got %r" % (text,)) from None
    if not 1_000 <= micros <= 86_400_000_000:
        raise ValueError("ageing must be 1ms to 24h, got %r" % (text,))
    return micros


def _queue_fairness(q: dict[str, Any]) -> pb.QueueFairness | None:
    """A graph file's queue fair-share fields as a whole setting (every field set, GRAPHS.md), or None."""
    if not any(k in q for k in _FAIRNESS_FIELDS):
        return None
    mode = q.get("share", "submitter")
    strategy = q.get("keyStrategy", "wait")
    if mode not in _SHARE_MODES:
        raise ValueError("unknown share mode %r (known: submitter, run, key, fifo)" % mode)
    if strategy not in _KEY_STRATEGIES:
        raise ValueError("unknown key strategy %r (known: wait, cancel-newest, cancel-in-progress)" % strategy)
    f = pb.QueueFairness(share=_SHARE_MODES[mode], key_strategy=_KEY_STRATEGIES[strategy], replace_weights=True,
                         key_limit=int(q.get("keyLimit", 0)),
                         weights=[pb.ShareWeight(share=str(k), weight=int(w))
                                  for k, w in sorted((q.get("weights") or {}).items())])
    if "rate" in q:
        f.rate_per_second = rate_per_second(q["rate"])
        f.burst = int(q.get("burst", 1))
    elif "burst" in q:
        raise ValueError("burst needs a rate (rate: 100/s, burst: %s)" % q["burst"])
    else:
        f.no_rate = True
    if "keyRate" in q:
        f.key_rate_per_second = rate_per_second(q["keyRate"])
        f.key_burst = int(q.get("keyBurst", 1))
    elif "keyBurst" in q:
        raise ValueError("keyBurst needs a keyRate (keyRate: 10/s, keyBurst: %s)" % q["keyBurst"])
    else:
        f.no_key_rate = True
    if "ageing" in q:
        f.ageing_us = ageing_us(q["ageing"])
    else:
        f.no_ageing = True
    return f


class AsyncRun(_RunBase):
    def __init__(self, client: "AsyncClient", name: str | None, queues: Sequence[dict[str, Any]] = ()) -> None:
        super().__init__(name, queues)
        self.client = client

    def add(self, kind: str, payload: Any = None, *, id: str | None = None, after: Iterable[Any] = (),
            priority: int | str = 0, retries: int = 0, queue: str = "", name: str = "", parts: int = 1,
            requires: Iterable[str] = (), timeout: float | None = None, policy: str = "finished",
            loss_retries: int | None = None, retry_delay: float | None = None, retry_delay_max: float | None = None,
            qos: str | None = None, barrier: bool = False, share: str | None = None,
            concurrency_key: str | None = None) -> "AsyncOp":
        """Adds an operation (sent by the next `submit`). `payload`: bytes as they are, anything else as
        JSON. `after`: ops (or ids) it depends on. `timeout`, `retry_delay`: seconds. `share`: its share key
        in a queue whose fair-share mode is `key`; `concurrency_key`: at most the queue's `keyLimit` ops with
        one key run at once (docs/GRAPHS.md)."""
        op_id = self._add(kind, id, payload, after, priority, retries, queue, name, parts, requires, timeout, policy,
                          loss_retries, retry_delay, retry_delay_max, qos, barrier, share, concurrency_key)
        return AsyncOp(self, op_id)

    async def submit(self, timeout: float | None = None) -> "AsyncRun":
        for batch in self._batches():
            if not batch.operations:
                break
            batch.run = self.id or self.name
            batch.append = self._submitted or False
            reply = await self.client._submit(batch, timeout)
            self.id, self._submitted = reply.run, True
        return self

    async def wait(self, timeout: float | None = None) -> WaitResult:
        """Waits for every operation of the run (the whole run, also ops added by other clients)."""
        return await self.client.wait(run=self.id, timeout=timeout)

    async def cancel(self, reason: str = "") -> int:
        return await self.client.cancel(run=self.id, reason=reason)


class AsyncOp:
    def __init__(self, run: AsyncRun, op_id: str) -> None:
        self.run, self.id = run, op_id

    def __repr__(self) -> str:
        return "AsyncOp(%s/%s)" % (self.run.id or "?", self.id)

    async def outcome(self, timeout: float | None = None) -> Outcome:
        r = await self.run.client.wait([self.id], run=self.run.id, timeout=timeout)
        if not r.finished:
            raise Timeout("operation %s/%s has not finished within %g s" % (self.run.id, self.id, timeout or 0))
        return r.outcomes[self.id]

    async def result(self, timeout: float | None = None) -> Any:
        """The result (JSON-decoded, else bytes); OperationFailed, OperationCancelled or Timeout."""
        return (await self.outcome(timeout)).value()

    async def cancel(self, reason: str = "", cascade: bool = False) -> int:
        return await self.run.client.cancel([self.id], run=self.run.id, reason=reason, cascade=cascade)

    async def status(self) -> OpStatus:
        return (await self.run.client.status([self.id], run=self.run.id))[0]


class AsyncClient(Leadership):
    """An asyncio client. `endpoint`: the coordinator, or several of an `--ha` group separated by commas
    (None: $OPCOORD, else tcp://127.0.0.1:7600). `key`/`coordinator_key`: CURVE key files (else
    $OPQ_KEY/$OPQ_COORDINATOR_KEY, else none). `timeout`: seconds to wait for each reply (waits add their
    own); a standby's redirect and a move to the next coordinator happen within it. `resend_after`: a
    SUBMIT (always keyed) not answered this long is sent again, as opctl does after a lost reply: the
    coordinator applies a key once."""

    def __init__(self, endpoint: str | None = None, *, key: str | None = None, coordinator_key: str | None = None,
                 timeout: float = 30.0, resend_after: float = 5.0, submitter: str | None = None) -> None:
        self.endpoints = Endpoints(endpoint)  # ValueError for a bad list, before anything connects
        self.timeout, self.resend_after = timeout, resend_after
        self.submitter = submitter or "%s@%s" % (os.environ.get("USER", "?"), socket.gethostname())
        self._keys = keyfiles.resolve(key, coordinator_key)  # KeyFileError now, not at the first request
        self._ctx: zmq.asyncio.Context | None = None
        self._sock: zmq.asyncio.Socket | None = None
        # (1.9) The highest leadership epoch seen, over every connection of this client: replies and events
        # with a lower one come from a replaced leader and are ignored (`fenced` counts them).
        self.fence = EpochFence()
        self._generation = 0  # connections made: a request sent on an earlier one is sent again
        self._ids = itertools.count(1)
        self._replies: dict[int, asyncio.Future[tuple[str, Any]]] = {}
        self._streams: dict[int, asyncio.Queue[tuple[str, Any]]] = {}
        self._reader: asyncio.Task[None] | None = None
        self.duplicates = 0  # SUBMITs the coordinator had applied already (a re-send after a lost reply)

    async def __aenter__(self) -> "AsyncClient":
        self._open()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    def _open(self) -> zmq.asyncio.Socket:
        if self._sock is None:
            if self._ctx is None:
                self._ctx = zmq.asyncio.Context()
            sock = self._sock = self._ctx.socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 0)
            # Unlimited, as the Swift client: a send that would wait then means only that libzmq dropped the
            # connection (`_send_now`), never a queue full of requests made while the coordinator is away.
            sock.setsockopt(zmq.SNDHWM, 0)
            self._watch = keyfiles.prepare(sock, self._keys, who="client")
            sock.connect(self.endpoint)
            self._reader = asyncio.ensure_future(self._read(sock))
        return self._sock

    def _drop_socket(self) -> None:
        if self._sock is None:
            return
        if self._reader is not None:
            self._reader.cancel()
            self._reader = None
        self._watch.close()
        self._sock.close(linger=0)
        self._sock = None

    async def close(self) -> None:
        if self._sock is None:
            return
        self._drop_socket()
        assert self._ctx is not None
        self._ctx.term()
        self._ctx = None

    def _move(self, was: str, why: str) -> None:
        """Connects to `endpoints.current` anew (a fresh link): requests waiting for a reply are sent again
        there (`_exchange`), watches subscribe again."""
        logger.info("next coordinator: %s (was %s: %s)", self.endpoint, was, why)
        self._drop_socket()
        self._generation += 1
        for q in self._streams.values():
            q.put_nowait(("MOVED", None))
        self._open()

    def _coordinator_gone(self) -> bool:
        """With several coordinators: the link to this one has been down for NEXT_ENDPOINT_AFTER (never made,
        or lost: most likely a leader that died) — go on at the next one. True when the client moved."""
        if not self.endpoints.several or self._sock is None:
            return False
        down = self._watch.down_since
        if down is None or time.monotonic() - down < NEXT_ENDPOINT_AFTER:
            return False
        was = self.endpoint
        if not self.endpoints.unreachable():
            return False
        self._move(was, "cannot reach it")
        return True

    async def _not_leader(self, text: str, generation: int, deadline: float) -> None:
        """ERROR NOT_LEADER (`text`) to a request sent on connection `generation`: go to the leader it names
        (one more round trip); naming none (or one that failed), ask this standby again shortly. A refusal
        from a connection left since needs nothing: the request is sent again on the current one."""
        if generation != self._generation:
            return
        was = self.endpoint
        if self.endpoints.redirect(not_leader(text)):
            self._move(was, text)
        else:
            await asyncio.sleep(max(0.0, min(NOT_LEADER_PAUSE, deadline - time.monotonic())))

    def _admit(self, name: str, msg: Any) -> bool:
        """(1.9) Fencing: a reply or event with an epoch below the highest seen is a replaced leader's."""
        if self.fence.admit(msg):
            return True
        logger.warning("ignored %s of epoch %d from %s: a newer leader was seen (epoch %d)", name, epoch_of(msg),
                       self.endpoint, self.fence.highest)
        return False

    async def _read(self, sock: zmq.asyncio.Socket) -> None:
        while True:
            frames = await sock.recv_multipart()
            try:
                name, rid, msg = decode(frames)
            except WireError:
                continue
            if not self._admit(name, msg):
                continue
            stream = self._streams.get(rid)
            if stream is not None:
                stream.put_nowait((name, msg))
                continue
            f = self._replies.pop(rid, None)
            if f is not None and not f.done():
                f.set_result((name, msg))

    def _refused(self, name: str) -> None:
        why = self._watch.refusal()
        if why is not None:
            raise AuthenticationFailed("%s at %s" % (why, self.endpoint), "UNAUTHORIZED")

    async def request(self, name: str, body: Any, reply: str, extra: float = 0.0, resend: bool = False) -> Any:
        """Sends `name` and returns the body of its `reply`; ERROR becomes RequestRefused (or a subclass).
        `resend`: send the same bytes again every `resend_after` s until answered (keyed SUBMIT only).
        Told NOT_LEADER, or with several coordinators one unreachable, the request goes to the leader
        named, or to the next coordinator, within the same timeout."""
        rid = next(self._ids) & 0xFFFFFFFF
        frames = encode(name, body, rid)
        limit = self.timeout + extra
        deadline = time.monotonic() + limit
        fenced = self.fence.fenced
        refused: Any = None  # the last NOT_LEADER: what the caller hears if no leader answers in time
        try:
            while True:
                try:
                    got, msg, generation = await self._exchange(name, rid, frames, deadline, limit, resend, fenced)
                except Timeout:
                    if refused is None:
                        raise
                    got, msg = "ERROR", refused
                    break
                if got == "ERROR" and msg.code == pb.ERROR_CODE_NOT_LEADER and time.monotonic() < deadline:
                    refused = msg
                    await self._not_leader(msg.message, generation, deadline)
                    continue
                break
        finally:
            self._replies.pop(rid, None)
        if got != "ERROR" and generation == self._generation:
            self.endpoints.reached()  # answered: forget the coordinators that failed
        if got == "ERROR":
            raise _refusal(name, msg)
        if got != reply:
            raise OpqueueError("%s: expected %s, got %s" % (name, reply, got))
        return msg

    async def _exchange(self, name: str, rid: int, frames: list[bytes], deadline: float, limit: float, resend: bool,
                        fenced: int) -> tuple[str, Any, int]:
        """Sends request `rid` and waits for its reply: (reply, body, the connection it came on). Sent again
        on a new connection when the client moved meanwhile (another request's redirect, or this one's
        coordinator unreachable)."""
        future: asyncio.Future[tuple[str, Any]] = asyncio.get_running_loop().create_future()
        self._replies[rid] = future
        generation, dropped = -1, 0
        while not future.done():
            if generation != self._generation:  # the first send, or on the connection the client moved to
                sock = self._open()
                generation = self._generation
                if not await self._send_now(sock, frames, name):
                    dropped += 1
                    if dropped > 1:
                        raise OpqueueError("%s: %s failed the ZeroMQ handshake twice: not an opqueue coordinator?"
                                           % (name, self.endpoint))
                    self._move(self.endpoint, "libzmq dropped the connection after a failed handshake")
                    continue
                sent_at, handshakes = time.monotonic(), self._watch.handshakes
                continue
            self._refused(name)
            now = time.monotonic()
            if now >= deadline:
                raise Timeout(self._no_reply(name, limit, fenced))
            if self._coordinator_gone():
                continue
            # A reconnection (a new handshake) or a quiet while may mean the reply was lost.
            if resend and (now - sent_at >= self.resend_after + (limit - self.timeout)
                           or self._watch.handshakes > handshakes > 0):
                if await self._send_now(sock, frames, name):
                    sent_at, handshakes = now, self._watch.handshakes
                else:
                    self._move(self.endpoint, "libzmq dropped the connection after a failed handshake")
            await asyncio.wait([future], timeout=min(0.1, deadline - now))
        got, msg = future.result()
        return got, msg, generation

    async def _send_now(self, sock: zmq.asyncio.Socket, frames: list[bytes], name: str) -> bool:
        """Sends without waiting; False when libzmq has no connection to queue into. It drops one whose
        handshake failed with a protocol error (our keys, or a peer that is no coordinator) and never
        reconnects it, so a waiting send would wait for ever. Raises AuthenticationFailed if it was the keys."""
        try:
            await sock.send_multipart(frames, flags=zmq.NOBLOCK)
            return True
        except zmq.Again:
            self._refused(name)
            return False

    def _no_reply(self, name: str, limit: float, fenced: int) -> str:
        text = "no reply to %s from %s within %g s" % (name, self.endpoint, limit)
        if self.fence.fenced > fenced:
            text += " (meanwhile %d message(s) of a replaced leader were ignored: epoch below %d)" % (
                self.fence.fenced - fenced, self.fence.highest)
        return text

    # -- runs and operations

    def run(self, name: str | None = None, queues: Sequence[dict[str, Any]] = ()) -> AsyncRun:
        """A new run (named by the coordinator unless `name` is given); `queues`: settings applied with
        its first SUBMIT, e.g. [{"name": "images", "maxConcurrent": 2}]."""
        return AsyncRun(self, name, queues)

    async def _submit(self, s: pb.Submit, timeout: float | None) -> Any:
        s.submitter = self.submitter
        s.submission_key = secrets.token_hex(16)  # one per batch: re-sent as it is (PROTOCOL.md §5.13)
        extra = 0.0 if timeout is None else max(0.0, timeout - self.timeout)
        r = await self.request("SUBMIT", s, "SUBMIT-REPLY", extra=extra, resend=True)
        if not r.accepted:
            raise SubmitRejected([{"op_id": e.op_id, "problem": pb.SubmitProblem.Name(e.problem), "field": e.field,
                                   "message": e.message, "related": list(e.related)} for e in r.errors])
        if r.duplicate:
            self.duplicates += 1
        return r

    async def submit_file(self, path: str, run: str | None = None) -> AsyncRun:
        """Submits a graph file (docs/GRAPHS.md: JSON, or YAML with PyYAML installed) as a new run."""
        from .graph import load_graph
        queues, ops = load_graph(path)
        r = self.run(run, queues)
        for o in ops:
            if o.id in r._ids:
                raise ValueError("%s: operation id %r is repeated" % (path, o.id))
            r._ids.add(o.id)
            r._pending.append(o)
        return await r.submit()

    async def wait(self, ops: Sequence[str] = (), *, run: str = "", queue: str = "", timeout: float | None = None,
                   results: bool = True) -> WaitResult:
        """Waits until the ops (or the run, or the queue) finished, at most `timeout` s (None: no bound)."""
        w = pb.Wait(op_ids=list(ops), run=run, queue=queue, with_results=results)
        if timeout is not None:
            w.timeout_us = int(max(0.0, timeout) * 1e6)
        extra = 10 * 365 * 86400.0 if timeout is None else timeout
        r = await self.request("WAIT", w, "WAIT-REPLY", extra=extra)
        outcomes = {}
        for o in r.outcomes:
            outcomes[o.op_id.rpartition("/")[2] if o.run and o.op_id.startswith(o.run + "/") else o.op_id] = \
                Outcome.of(o.op_id, o.run, o.outcome)
        return WaitResult(r.finished, outcomes, list(r.pending), r.succeeded_count, r.failed_count, r.cancelled_count)

    async def status(self, ops: Sequence[str] = (), *, run: str = "", queue: str = "", results: bool = True,
                     limit: int = 0) -> list[OpStatus]:
        """Status of the ops (or of a run's or queue's ops), every page; UnknownOperation names unknown ids."""
        out: list[OpStatus] = []
        after = ""
        while True:
            r = await self.request("STATUS", pb.Status(op_ids=list(ops), run=run, queue=queue, with_results=results,
                                                       ops=True, after=after, limit=limit), "STATUS-REPLY")
            if r.not_found:
                raise UnknownOperation("unknown operation(s): %s" % ", ".join(r.not_found), "NOT_FOUND", r.not_found[0])
            out += [OpStatus.of(s) for s in r.ops]
            if not r.next_after or ops:
                return out
            after = r.next_after

    async def runs(self, limit: int = 0) -> list[Any]:
        """The retained runs, newest first (RunInfo messages: id, submitter, total, succeeded, failed…)."""
        return list((await self.request("RUNS", pb.Runs(limit=limit), "RUNS-REPLY")).runs)

    async def workers(self) -> list[Any]:
        """The registered workers (WorkerInfo messages: worker_id, name, slots, kinds, running…)."""
        return list((await self.request("WORKERS", pb.Workers(), "WORKERS-REPLY")).workers)

    async def cancel(self, ops: Sequence[str] = (), *, run: str = "", queue: str = "", reason: str = "",
                     cascade: bool = False) -> int:
        """Cancels ops (ids resolved in `run`), a whole run, or every op of a queue."""
        r = await self.request("CANCEL-OPS", pb.CancelOps(op_ids=list(ops), run=run, queue=queue, reason=reason,
                                                          cascade=cascade), "ACK")
        return r.affected

    async def suspend(self, queue: str) -> None:
        await self.request("QUEUE", pb.QueueControl(settings=pb.QueueSettings(name=queue, suspended=True)), "ACK")

    async def resume(self, queue: str) -> None:
        await self.request("QUEUE", pb.QueueControl(settings=pb.QueueSettings(name=queue, suspended=False)), "ACK")

    async def limit(self, queue: str, max_concurrent: int | None) -> None:
        """Caps the queue's running operations cluster-wide (None: unlimited)."""
        n = -1 if max_concurrent is None else max_concurrent
        await self.request("QUEUE", pb.QueueControl(settings=pb.QueueSettings(name=queue, max_concurrent=n)), "ACK")

    async def set_priority(self, ops: Sequence[str], priority: int | str, *, run: str = "", inherit: bool = False) -> int:
        r = await self.request("SET-PRIORITY", pb.SetPriority(op_ids=list(ops), priority=priority_value(priority),
                                                              run=run, inherit=inherit), "ACK")
        return r.affected

    async def watch(self, *, queue: str = "", run: str = "", results: bool = False,
                    progress: bool = False) -> "WatchStream":
        """Subscribes (returns once the coordinator acknowledged, so no later change is missed) and
        returns an async iterator of `Event`s; `close()` it (or `async with`) to unsubscribe. A
        subscription the coordinator ends for reading too slowly (ERROR BUSY) is made again by itself;
        events in between are lost: re-read with `status`. `sequence` numbers the events of a stream,
        which watchers with the same filters share (protocol 1.7), so the first one may be any number."""
        stream = WatchStream(self, pb.Watch(queue=queue, run=run, with_results=results, progress=progress))
        await stream._subscribe()
        return stream

    async def _next(self, stream: "asyncio.Queue[tuple[str, Any]]", timeout: float | None, name: str) -> tuple[str, Any]:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            self._refused(name)
            self._coordinator_gone()  # a move puts MOVED in every stream: the watch subscribes again
            wait = 0.1 if deadline is None else min(0.1, deadline - time.monotonic())
            if wait <= 0:
                raise Timeout("no reply to %s from %s within %g s" % (name, self.endpoint, timeout or 0))
            try:
                return await asyncio.wait_for(stream.get(), wait)
            except asyncio.TimeoutError:
                continue


class WatchStream:
    """The events of one WATCH subscription (see AsyncClient.watch)."""

    def __init__(self, client: AsyncClient, request: Any) -> None:
        self.client, self.request = client, request
        self.rid = 0
        self.restarts = 0  # subscriptions made again after ERROR BUSY or on another coordinator
        self._queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self._ready: list[Event] = []

    async def _subscribe(self) -> None:
        c = self.client
        deadline = time.monotonic() + c.timeout
        while True:
            sock = c._open()
            c._streams.pop(self.rid, None)
            self.rid = next(c._ids) & 0xFFFFFFFF
            self._queue = asyncio.Queue()
            c._streams[self.rid] = self._queue
            generation = c._generation
            await sock.send_multipart(encode("WATCH", self.request, self.rid))
            name, msg = await c._next(self._queue, max(0.001, deadline - time.monotonic()), "WATCH")
            if name == "MOVED":
                continue  # on another coordinator now: subscribe there
            if name == "ERROR" and msg.code == pb.ERROR_CODE_NOT_LEADER and time.monotonic() < deadline:
                await c._not_leader(msg.message, generation, deadline)
                continue
            if name == "ERROR":
                raise _refusal("WATCH", msg)
            return

    def __aiter__(self) -> "WatchStream":
        return self

    async def __anext__(self) -> Event:
        return await self.next()

    async def next(self, timeout: float | None = None) -> Event:
        """The next event; `Timeout` when none came within `timeout` s (None: wait without bound)."""
        while not self._ready:
            name, msg = await self.client._next(self._queue, timeout, "WATCH events")
            if name == "CLOSED":
                raise StopAsyncIteration
            if name == "EVENT":
                self._ready = [Event.of(e) for e in msg.events]
            elif (name == "ERROR" and msg.code == pb.ERROR_CODE_BUSY) or name == "MOVED":
                self.restarts += 1
                await self._subscribe()  # too slow, or another coordinator: subscribe again
            elif name == "ERROR" and msg.code == pb.ERROR_CODE_NOT_LEADER:
                self.restarts += 1
                await self.client._not_leader(msg.message, self.client._generation, time.monotonic() + 1)
                await self._subscribe()
            elif name == "ERROR":
                raise _refusal("WATCH", msg)
        return self._ready.pop(0)

    async def close(self) -> None:
        c = self.client
        self._queue.put_nowait(("CLOSED", None))  # ends an __anext__ waiting in another task or thread
        if c._streams.pop(self.rid, None) is not None and c._sock is not None:
            await c._sock.send_multipart(encode("WATCH", pb.Watch(stop=True), next(c._ids) & 0xFFFFFFFF))

    async def __aenter__(self) -> "WatchStream":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


def _refusal(name: str, msg: Any) -> RequestRefused:
    code = pb.ErrorCode.Name(msg.code).removeprefix("ERROR_CODE_")
    text = "%s refused: %s %s" % (name, code, msg.message)
    cls = {"NOT_FOUND": UnknownOperation, "UNAUTHORIZED": Unauthorized}.get(code, RequestRefused)
    return cls(text, code, msg.op_id)


# -- the blocking form


class _LoopThread:
    """An event loop on a daemon thread, for the blocking client."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="opqueue-client", daemon=True)
        self.thread.start()

    def call(self, coro: Awaitable[T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()  # type: ignore[arg-type]

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        if not self.thread.is_alive():
            self.loop.close()


class Run:
    """A run being built and submitted with a blocking `Client` (see `AsyncRun` for the arguments)."""

    def __init__(self, client: "Client", inner: AsyncRun) -> None:
        self.client, self._inner = client, inner

    @property
    def id(self) -> str:
        return self._inner.id

    def add(self, kind: str, payload: Any = None, **options: Any) -> "Op":
        options["after"] = [a._inner if isinstance(a, Op) else a for a in options.get("after", ())]
        return Op(self, self._inner.add(kind, payload, **options))

    def submit(self, timeout: float | None = None) -> "Run":
        self.client._call(self._inner.submit(timeout))
        return self

    def wait(self, timeout: float | None = None) -> WaitResult:
        return self.client._call(self._inner.wait(timeout))

    def cancel(self, reason: str = "") -> int:
        return self.client._call(self._inner.cancel(reason))

    def __enter__(self) -> "Run":
        return self

    def __exit__(self, exc_type: Any, *rest: Any) -> None:
        if exc_type is None:
            self.submit()


class Op:
    def __init__(self, run: Run, inner: AsyncOp) -> None:
        self.run, self._inner = run, inner

    @property
    def id(self) -> str:
        return self._inner.id

    def __repr__(self) -> str:
        return "Op(%s/%s)" % (self.run.id or "?", self.id)

    def result(self, timeout: float | None = None) -> Any:
        return self.run.client._call(self._inner.result(timeout))

    def outcome(self, timeout: float | None = None) -> Outcome:
        return self.run.client._call(self._inner.outcome(timeout))

    def cancel(self, reason: str = "", cascade: bool = False) -> int:
        return self.run.client._call(self._inner.cancel(reason, cascade))

    def status(self) -> OpStatus:
        return self.run.client._call(self._inner.status())


class Client:
    """The blocking client: `AsyncClient`'s methods, each waiting for its reply. Thread-safe."""

    def __init__(self, endpoint: str | None = None, **options: Any) -> None:
        self._inner = AsyncClient(endpoint, **options)
        self._thread = _LoopThread()

    def _call(self, coro: Awaitable[T]) -> T:
        return self._thread.call(coro)

    def close(self) -> None:
        self._call(self._inner.close())
        self._thread.stop()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def duplicates(self) -> int:
        return self._inner.duplicates

    @property
    def endpoint(self) -> str:
        """The coordinator in use (see AsyncClient.endpoint)."""
        return self._inner.endpoint

    @property
    def fenced(self) -> int:
        """Replies and events of a replaced leader that were ignored (see AsyncClient.fenced)."""
        return self._inner.fenced

    @property
    def epoch(self) -> int:
        return self._inner.epoch

    def run(self, name: str | None = None, queues: Sequence[dict[str, Any]] = ()) -> Run:
        return Run(self, self._inner.run(name, queues))

    def submit_file(self, path: str, run: str | None = None) -> Run:
        return Run(self, self._call(self._inner.submit_file(path, run)))

    def wait(self, ops: Sequence[str] = (), **kw: Any) -> WaitResult:
        return self._call(self._inner.wait(ops, **kw))

    def status(self, ops: Sequence[str] = (), **kw: Any) -> list[OpStatus]:
        return self._call(self._inner.status(ops, **kw))

    def runs(self, limit: int = 0) -> list[Any]:
        return self._call(self._inner.runs(limit))

    def workers(self) -> list[Any]:
        return self._call(self._inner.workers())

    def cancel(self, ops: Sequence[str] = (), **kw: Any) -> int:
        return self._call(self._inner.cancel(ops, **kw))

    def suspend(self, queue: str) -> None:
        self._call(self._inner.suspend(queue))

    def resume(self, queue: str) -> None:
        self._call(self._inner.resume(queue))

    def limit(self, queue: str, max_concurrent: int | None) -> None:
        self._call(self._inner.limit(queue, max_concurrent))

    def set_priority(self, ops: Sequence[str], priority: int | str, **kw: Any) -> int:
        return self._call(self._inner.set_priority(ops, priority, **kw))

    def request(self, name: str, body: Any, reply: str) -> Any:
        return self._call(self._inner.request(name, body, reply))

    def watch(self, **kw: Any) -> "Watch":
        """Subscribes now (see AsyncClient.watch) and returns a blocking iterator of events; `close()`
        it, or use it in a `with` block, to unsubscribe."""
        return Watch(self, self._call(self._inner.watch(**kw)))


class Watch:
    """Blocking iterator over a WatchStream."""

    def __init__(self, client: Client, stream: WatchStream) -> None:
        self.client, self.stream = client, stream

    def __iter__(self) -> "Watch":
        return self

    def __next__(self) -> Event:
        return self.client._call(self.stream.__anext__())

    def next(self, timeout: float | None = None) -> Event:
        """The next event; `Timeout` when none came within `timeout` s."""
        return self.client._call(self.stream.next(timeout))

    def close(self) -> None:
        self.client._call(self.stream.close())


    def __enter__(self) -> "Watch":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
