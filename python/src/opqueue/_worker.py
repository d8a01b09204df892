"""A worker whose handlers are plain or `async def` functions.

    worker = Worker("tcp://coordinator:7600", slots=8, tags=["gpu"])

    @worker.operation("resize")
    def resize(payload, ctx):            # payload: decoded JSON (or bytes with payload="bytes")
        ...
        return {"side": 128}             # the result, as JSON (or bytes with result="bytes")

    worker.run()                         # or: python -m opqueue.worker mymodule:worker

One asyncio loop owns the socket (ZeroMQ sockets are not thread-safe): it reads DISPATCH and CANCEL,
sends STARTED/FINISHED/PROGRESS in batches, and heartbeats every interval, also while handlers run.
`async def` handlers run as tasks on it; plain functions on a pool of `slots` threads, so a long or
CPU-bound one does not stop the heartbeats. SIGTERM or SIGINT: a graceful stop (`stop()`).

High availability (docs/PROTOCOL.md §14): `endpoint` may list several coordinators of an `--ha` group;
a standby's NOT_LEADER (ERROR to HELLO, or DISCONNECT) sends the worker to the leader it names, a
coordinator it cannot reach to the next of the list, re-registering with the parts it holds (§7.4);
WELCOME, DISPATCH, CANCEL and DISCONNECT of a replaced leader (a lower epoch) are ignored.
"""
from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextvars
import functools
import importlib
import inspect
import logging
import os
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Iterable

import zmq
import zmq.asyncio

from . import codec
from . import keys as keyfiles
from . import opqueue_pb2 as pb
from ._leadership import NEXT_ENDPOINT_AFTER, NOT_LEADER_PAUSE, NOT_LEADER_PREFIX, Endpoints, EpochFence, Leadership, epoch_of, not_leader
from .errors import Cancelled, OpqueueError, TypedFailure
from .wire import WireError, decode, encode

__all__ = ["Worker", "Context", "WorkerRefused"]

MAX_TEXT = 64 << 10      # failure and cancel texts (WireLimits.maxTextLength)
MAX_RESULT = 1 << 20     # result bytes (WireLimits.maxResultSize)
BATCH_RECORDS = 4096     # records per STARTED/FINISHED (the wire allows 8192)
BATCH_BYTES = 8 << 20    # result bytes per FINISHED (the body limit is 16 MiB)


class WorkerRefused(OpqueueError):
    """The coordinator will not have this worker: REJECT, or a refused key. The worker ends (exit 2)."""


def now_us() -> int:
    return time.monotonic_ns() // 1000


def clip(text: str, limit: int = MAX_TEXT - 64) -> str:
    """Keeps the end of an over-long text (a typed failure's `opq-typed/1` line is its last line)."""
    data = text.encode()
    if len(data) <= limit:
        return text
    return "…" + data[-limit:].decode("utf-8", errors="ignore")


class Context:
    """What a handler knows about the part it runs. Thread-safe where a sync handler needs it."""

    def __init__(self, worker: "Worker", part: "_Part", inputs: dict[str, Any]) -> None:
        rec = part.rec
        self.key: str = rec.op_id                       # "RUN/OP", unique on the coordinator
        self.run, _, self.op_id = rec.op_id.rpartition("/")
        self.part: int = rec.part
        self.attempt: int = rec.attempt
        self.kind: str = rec.kind
        self.name: str = rec.name or self.op_id
        self.priority: int = rec.priority
        self.inputs: dict[str, Any] = inputs           # dependency id -> its result (JSON decoded, else bytes)
        self.raw_inputs: dict[str, bytes] = {i.dependency_id: i.result for i in rec.inputs}
        self.cancelled: threading.Event = part.cancel   # set on CANCEL (and when the worker gives the part up)
        self.logger: logging.Logger = worker._ops[rec.kind].logger
        self._worker, self._part = worker, part

    @property
    def cancel_reason(self) -> str:
        return self._part.reason

    def raise_if_cancelled(self) -> None:
        """Raises `Cancelled` once the part is cancelled: the part ends cancelled."""
        if self.cancelled.is_set():
            raise Cancelled(self._part.reason)

    def progress(self, fraction: float | None = None, *, done: int = 0, total: int = 0, message: str = "") -> None:
        """Reports progress (a fraction in [0, 1], or done out of total). Lossy: the latest per part wins."""
        rec = pb.ProgressRecord(op_id=self._part.rec.op_id, part=self._part.rec.part, attempt=self._part.rec.attempt,
                                message=message[:4096])
        if total:
            rec.done, rec.total = done, total
        elif fraction is not None:
            rec.fraction = min(1.0, max(0.0, float(fraction)))
        self._worker._call_in_loop(self._worker._queue_progress, self._part, rec)


@dataclass
class _Operation:
    kind: str
    fn: Callable[..., Any]
    payload: codec.Mode
    result: codec.Mode
    is_async: bool
    takes_context: bool
    logger: logging.Logger


@dataclass(eq=False)
class _Part:
    rec: pb.DispatchRecord
    session: int
    cancel: threading.Event = field(default_factory=threading.Event)
    reason: str = "cancelled"
    task: asyncio.Task[None] | None = None
    abandoned: bool = False  # given back to the coordinator: its outcome is not reported
    started_us: int = 0      # when its handler began (worker's monotonic clock); 0 = not yet
    cancelled_by_coordinator: bool = False  # not listed as running in a later HELLO (§7.4)

    @property
    def key(self) -> tuple[str, int, int]:
        return (self.rec.op_id, self.rec.part, self.rec.attempt)


class Worker(Leadership):
    """Registers with the coordinator at `endpoint` (several of an `--ha` group separated by commas; None:
    $OPCOORD, else tcp://127.0.0.1:7600), offers the kinds given to `operation`, runs up to
    `slots` parts at once. `key`/`coordinator_key`: CURVE key files (`opctl keys new`); without them,
    $OPQ_KEY and $OPQ_COORDINATOR_KEY, else no keys. `drain`: seconds a graceful stop lets running
    handlers finish before it hands what is left back to the coordinator."""

    # What the next flush sends (per session; see _reset_reports).
    _started: dict[tuple[str, int, int], int]
    _finished: list[pb.FinishedRecord]
    _uncredited: list[pb.FinishedRecord]
    _progress: dict[tuple[str, int, int], pb.ProgressRecord]

    def __init__(self, endpoint: str | None = None, *, slots: int = 8, tags: Iterable[str] = (), name: str | None = None,
                 key: str | None = None, coordinator_key: str | None = None, drain: float = 10.0,
                 logger: logging.Logger | None = None) -> None:
        if slots < 1:
            raise ValueError("slots must be at least 1, not %d" % slots)
        self.endpoints = Endpoints(endpoint)  # ValueError for a bad list
        self.slots, self.tags = slots, list(tags)
        # (1.9) The highest leadership epoch seen, over every session: a replaced leader's messages are
        # ignored (`fenced` counts them).
        self.fence = EpochFence()
        # Why the last registration ended, for where the next goes: ("redirect", leader or None) after a
        # standby's NOT_LEADER, ("unreachable", None) after a lost link with other coordinators to try.
        self._hop: tuple[str, str | None] | None = None
        self.name = name or "%s:%d" % (socket.gethostname(), os.getpid())
        self.drain = drain
        self.logger = logger or logging.getLogger("opqueue.worker")
        self._key_args = (key, coordinator_key)
        self._ops: dict[str, _Operation] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_requests = 0
        self.exit_reason = ""

    # -- handlers

    def operation(self, kind: str, *, payload: str = "json", result: str = "json") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorator: `fn(payload)` or `fn(payload, ctx)` handles `kind`. `payload="bytes"` passes the
        bytes as they came; `result="bytes"` sends the returned bytes as they are (else the return value
        is sent as JSON; None is an empty result)."""
        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            self.add(kind, fn, payload=payload, result=result)
            return fn
        return register

    def add(self, kind: str, fn: Callable[..., Any], *, payload: str = "json", result: str = "json") -> None:
        if not kind or len(kind.encode()) > 256:
            raise ValueError("a kind is 1 to 256 bytes, not %r" % kind)
        if kind in self._ops:
            raise ValueError("kind %r has a handler already" % kind)
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]
        takes_context = len(params) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in params)
        self._ops[kind] = _Operation(kind, fn, codec.check_mode(payload, "payload"), codec.check_mode(result, "result"),
                                     inspect.iscoroutinefunction(fn), takes_context, self.logger.getChild(kind))

    @property
    def kinds(self) -> list[str]:
        return list(self._ops)

    # -- running

    def run(self, install_signal_handlers: bool = True) -> int:
        """Serves until stopped; 0 after a graceful stop, 2 when the coordinator refused the worker."""
        try:
            asyncio.run(self._main(install_signal_handlers))
        except WorkerRefused as e:
            self.exit_reason = str(e)
            self.logger.error("%s", e)
            return 2
        return 0

    def stop(self) -> None:
        """A graceful stop (SIGTERM, SIGINT): no new parts; running handlers get `drain` seconds to
        finish and report; what is left is cancelled here and handed back with DISCONNECT (the
        coordinator re-queues it at once: nothing is lost, and the worker shows as left, not lost).
        A second stop() skips the wait. Callable from any thread."""
        self._call_in_loop(self._request_stop)

    async def _main(self, install_signal_handlers: bool) -> None:
        loop = asyncio.get_running_loop()
        installed = []
        if install_signal_handlers and threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self._request_stop)
                installed.append(sig)
        try:
            await self.serve()
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)

    async def serve(self) -> None:
        """The worker on the running loop, until stop() (or WorkerRefused)."""
        if not self._ops:
            raise ValueError("no operations: register a handler with @worker.operation(kind) first")
        keys = keyfiles.resolve(*self._key_args)  # KeyFileError before connecting
        self._loop = asyncio.get_running_loop()
        self._wakeup = asyncio.Event()
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=self.slots, thread_name_prefix="opqueue-part")
        self._ctx = zmq.asyncio.Context()
        self._held: dict[tuple[str, int, int], _Part] = {}
        self._session_no = 0
        self._sock: zmq.asyncio.Socket | None = None
        # §7.4: outcomes not reported in any session, and FINISHED records sent lately (with when): both are
        # listed in the next HELLO, as a coordinator that died may not have kept them.
        self._unreported: list[pb.FinishedRecord] = []
        # (sent at, record, handler start): at most the 4,096 a HELLO lists
        self._recent: collections.deque[tuple[float, pb.FinishedRecord, int]] = collections.deque(maxlen=4096)
        self._window = 10.0
        self._reset_reports()
        backoff = 0.1
        try:
            while not self._stop_requests:
                sock, watch = self._connect(keys)
                try:
                    welcome = await self._await_welcome(sock, watch, 3.0)
                    if welcome is None:
                        if not self._stop_requests:
                            was = self.endpoint
                            wait = self._next_endpoint(backoff)
                            self.logger.info("no WELCOME from %s, retrying %s in %.1f s", was, self.endpoint, wait)
                            await self._pause(wait)
                        backoff = min(backoff * 2, 5.0)
                        continue
                    backoff = 0.1
                    if await self._session(sock, watch, welcome):
                        return
                    await self._pause(self._next_endpoint(backoff))
                finally:
                    self._sock = None
                    watch.close()
                    sock.close(linger=1000)  # a last DISCONNECT still goes out
        finally:
            self._abandon("worker shutting down")
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._ctx.term()

    def _next_endpoint(self, wait: float) -> float:
        """Where the next registration goes, and how long to wait first: to the leader a standby named (at
        once), else, with several coordinators, the next of the list (at most 0.2 s later: one is being
        elected)."""
        hop, self._hop = self._hop, None
        if hop is None and not self.endpoints.several:
            return wait
        was = self.endpoint
        if hop is not None and hop[0] == "redirect":
            moved = self.endpoints.redirect(hop[1])
        else:
            moved = self.endpoints.unreachable()
        if moved:
            self.logger.info("next coordinator: %s (was %s)", self.endpoint, was)
            return 0.0
        return min(wait, 2 * NOT_LEADER_PAUSE)

    def _admit(self, name: str, msg: Any) -> bool:
        """(1.9) Fencing: a message with an epoch below the highest seen is a replaced leader's, ignored."""
        if self.fence.admit(msg):
            return True
        self.logger.warning("ignored %s of epoch %d: a newer leader was seen (epoch %d)", name, epoch_of(msg),
                            self.fence.highest)
        return False

    def _link_down(self, watch: keyfiles.HandshakeWatch) -> bool:
        """With several coordinators: the link has been down for NEXT_ENDPOINT_AFTER (never made, or lost)."""
        down = watch.down_since
        return self.endpoints.several and down is not None and time.monotonic() - down >= NEXT_ENDPOINT_AFTER

    def _request_stop(self) -> None:
        self._stop_requests += 1
        self.logger.info("stopping%s", " now" if self._stop_requests > 1 else
                         " (running handlers get %g s; again to stop at once)" % self.drain)
        if getattr(self, "_wakeup", None) is not None:
            self._wakeup.set()

    def _call_in_loop(self, fn: Callable[..., None], *args: Any) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            fn(*args)
        else:
            loop.call_soon_threadsafe(fn, *args)

    async def _pause(self, seconds: float) -> None:
        self._wakeup.clear()
        try:
            await asyncio.wait_for(self._wakeup.wait(), seconds)
        except asyncio.TimeoutError:
            pass

    def _connect(self, keys: keyfiles.Keys | None) -> tuple[zmq.asyncio.Socket, keyfiles.HandshakeWatch]:
        sock = self._ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        watch = keyfiles.prepare(sock, keys, who="worker")  # keys before connect
        sock.connect(self.endpoint)
        # No look-ahead: credit = slots, so prefetch 0 (PROTOCOL.md §8).
        hello = pb.Hello(protocol_version=1, name=self.name, slots=self.slots, tags=self.tags, kinds=self.kinds,
                         prefetch=0)
        self._held_at_hello, self._listed_finished = self._held_lists(hello)
        self._unreported_at_hello = len(self._unreported)
        hello.sent_us = now_us()
        sock.send_multipart(encode("HELLO", hello))
        return sock, watch

    def _held_lists(self, hello: pb.Hello) -> tuple[int, list[pb.FinishedRecord]]:
        """Fills HELLO's `running` and `finished` (§7.4): what this worker holds from earlier sessions and
        what finished while away or lately. Returns how many parts it holds and which records it listed."""
        holding = sum(1 for p in self._held.values() if not p.abandoned)
        held = [p for p in self._held.values() if not p.cancelled_by_coordinator and not p.abandoned]
        held.sort(key=lambda p: (p.started_us == 0, p.started_us))  # started first, in start order
        held = held[:8192]
        for p in held:
            hello.running.add(op_id=p.rec.op_id, part=p.rec.part, attempt=p.rec.attempt, at_us=p.started_us)
        horizon = time.monotonic() - self._window
        while self._recent and self._recent[0][0] < horizon:
            self._recent.popleft()
        records = list(self._unreported)
        for _, sent, started in self._recent:
            r = pb.FinishedRecord()
            r.CopyFrom(sent)
            if started:
                r.started_at_us = started  # set whenever the handler started (§7.4)
            records.append(r)
        records.sort(key=lambda r: r.at_us)
        listed: list[pb.FinishedRecord] = []
        size = 0
        for r in reversed(records):  # the newest, within 4,096 records and 8 MiB
            size += len(r.op_id) + len(r.succeeded) + len(r.failed) + len(r.cancelled) + 64
            if len(listed) >= 4096 or size > (8 << 20):
                break
            listed.append(r)
        hello.finished.extend(listed)
        return holding, listed

    def _check_handshake(self, watch: keyfiles.HandshakeWatch) -> None:
        why = watch.refusal()
        if why is not None:
            raise WorkerRefused(why)

    async def _await_welcome(self, sock: zmq.asyncio.Socket, watch: keyfiles.HandshakeWatch, seconds: float) -> Any:
        deadline = time.monotonic() + seconds
        while not self._stop_requests:
            self._check_handshake(watch)
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            if self._link_down(watch):
                self._hop = ("unreachable", None)
                self.logger.info("cannot reach %s", self.endpoint)
                return None
            # Short polls: the handshake monitor and stop() are looked at between them.
            if not await sock.poll(int(min(left, 0.1) * 1000) + 1):
                continue
            try:
                name, _, msg = decode(await sock.recv_multipart())
            except WireError as e:
                self.logger.warning("dropping a bad message: %s", e)
                continue
            if not self._admit(name, msg):
                continue
            if name == "WELCOME":
                self.endpoints.reached()
                return msg
            if name == "REJECT":
                raise WorkerRefused("rejected by the coordinator: %s %s" % (pb.ErrorCode.Name(msg.code), msg.reason))
            if name == "ERROR" and msg.code == pb.ERROR_CODE_NOT_LEADER:
                self.logger.info("%s is a standby: %s", self.endpoint, msg.message)
                self._hop = ("redirect", not_leader(msg.message))
                return None
            if name == "ERROR":
                self.logger.warning("error from the coordinator: %s %s", pb.ErrorCode.Name(msg.code), msg.message)
        return None

    async def _session(self, sock: zmq.asyncio.Socket, watch: keyfiles.HandshakeWatch, welcome: Any) -> bool:
        """One registration, until it ends. True: the worker stops."""
        self._session_no += 1
        self._sock = sock
        self._session_end = ""
        interval = max(1, welcome.heartbeat_interval_ms) / 1000.0
        silence = interval * max(1, welcome.liveness)
        self.logger.info("registered as %s with %s: %d slots, kinds %s", welcome.worker_id, self.endpoint,
                         self.slots, ",".join(self.kinds))
        self._last_heard = self._last_sent = time.monotonic()
        self._window = max(10.0, 3 * interval * max(1, welcome.liveness))
        # What the HELLO listed counts as sent (and stays in the window); what it could not list goes out
        # now without credit; what finished after it went out, as usual (its part was counted as held).
        listed = set(id(r) for r in self._listed_finished)
        before, after = self._unreported[:self._unreported_at_hello], self._unreported[self._unreported_at_hello:]
        self._unreported = []
        sent_at = time.monotonic()
        self._recent.extend((sent_at, r, 0) for r in self._listed_finished)
        self._uncredited = [r for r in before if id(r) not in listed]
        if self._held_at_hello:
            self.logger.info("%d part(s) held from before", self._held_at_hello)
        # The first grant leaves room for the parts still held; they give credit back as they finish.
        if self.slots - self._held_at_hello > 0:
            self._send("CREDIT", pb.Credit(credit=self.slots - self._held_at_hello))
        self._finished.extend(after)
        if self._uncredited or after:
            self._schedule_flush()
        reader = asyncio.ensure_future(self._read(sock))
        woken: asyncio.Future[Any] | None = None  # one waiter on _wakeup at a time
        drain_until: float | None = None
        try:
            while True:
                if woken is None or woken.done():
                    self._wakeup.clear()
                    woken = asyncio.ensure_future(self._wakeup.wait())
                if not reader.done():
                    await asyncio.wait([reader, woken], timeout=interval / 2, return_when=asyncio.FIRST_COMPLETED)
                self._check_handshake(watch)
                now = time.monotonic()
                if not self._session_end and self._link_down(watch):
                    self._session_end = "the connection to %s closed; trying the next coordinator" % self.endpoint
                    self._hop = ("unreachable", None)
                if reader.done() and not self._session_end:
                    exc = reader.exception()
                    self._session_end = "reading the socket failed: %r" % exc
                if self._session_end:
                    self.logger.warning("session ended: %s", self._session_end)
                    self._detach()
                    return False
                if self._stop_requests:
                    if drain_until is None:
                        self._draining = True
                        drain_until = now + self.drain
                    if not self._running() or self._stop_requests > 1 or now >= drain_until:
                        self._leave()
                        return True
                if now - self._last_heard > silence:
                    self.logger.warning("coordinator silent for %.1f s, registering again", now - self._last_heard)
                    self._detach()
                    return False
                if now - self._last_sent >= interval:
                    self._send("HEARTBEAT")
        finally:
            reader.cancel()
            if woken is not None:
                woken.cancel()

    def _leave(self) -> None:
        """Reports what finished, then DISCONNECT: the coordinator re-queues the rest at once."""
        self._flush()
        held = len(self._held)
        self._send("DISCONNECT", pb.Disconnect(reason="worker shutting down"))
        self._abandon("worker shutting down")
        self.logger.info("left the coordinator%s", ", handing back %d part(s)" % held if held else "")

    def _detach(self) -> None:
        """The session ended without the worker stopping (§7.4): held parts keep running; outcomes not
        sent yet wait for the next session, whose HELLO lists them with the parts still held."""
        self._flush_scheduled = False
        self._unreported.extend(self._uncredited + self._finished)
        self._finished = []
        self._uncredited = []
        self._started.clear()   # HELLO's `running` carries their start times
        self._progress.clear()  # lossy by design
        self._sock = None

    def _abandon(self, reason: str) -> None:
        """Stops every held part without reporting it: the coordinator re-queues them (a departed
        worker's parts run again elsewhere at once)."""
        for p in list(self._held.values()):
            p.abandoned = True
            p.reason = reason
            p.cancel.set()
            op = self._ops.get(p.rec.kind)
            if p.task is not None and op is not None and op.is_async:
                p.task.cancel()
        self._held.clear()
        self._reset_reports()

    def _reset_reports(self) -> None:
        self._started = {}
        self._finished = []
        self._progress = {}
        self._flush_scheduled = False
        self._draining = False
        self._uncredited = []

    def _send(self, name: str, body: Any = None) -> None:
        if self._sock is None:
            return
        self._sock.send_multipart(encode(name, body), copy=False)
        self._last_sent = time.monotonic()

    async def _read(self, sock: zmq.asyncio.Socket) -> None:
        while True:
            frames = await sock.recv_multipart()
            try:
                name, _, msg = decode(frames)
            except WireError as e:
                self._last_heard = time.monotonic()
                self.logger.warning("dropping a bad message: %s", e)
                continue
            if not self._admit(name, msg):
                continue  # a replaced leader's: not even heard
            self._last_heard = time.monotonic()
            if name == "DISPATCH":
                for rec in msg.records:
                    self._dispatched(rec)
            elif name == "CANCEL":
                for c in msg.records:
                    # Parts already finished are no longer held: ignored (PROTOCOL.md §5.10).
                    for p in list(self._held.values()):
                        if p.rec.op_id == c.op_id and p.rec.attempt == c.attempt:
                            p.cancelled_by_coordinator = True
                            self._cancel(p, c.reason or "cancelled")
            elif name == "DISCONNECT":
                self._session_end = "the coordinator disconnected this worker: %s" % msg.reason
                if msg.reason.startswith(NOT_LEADER_PREFIX):  # a standby now: go to the leader it names
                    self._hop = ("redirect", not_leader(msg.reason))
                self._wakeup.set()
                return
            elif name == "ERROR" and msg.code == pb.ERROR_CODE_NOT_LEADER:
                self._session_end = "the coordinator is a standby: %s" % msg.message
                self._hop = ("redirect", not_leader(msg.message))
                self._wakeup.set()
                return
            elif name == "ERROR":
                self.logger.warning("error from the coordinator: %s %s", pb.ErrorCode.Name(msg.code), msg.message)
                if msg.code == pb.ERROR_CODE_UNEXPECTED:  # it forgot us: register again
                    self._session_end = "the coordinator no longer knows this worker"
                    self._wakeup.set()
                    return
            # HEARTBEAT, WELCOME again: nothing beyond last_heard.

    def _cancel(self, p: _Part, reason: str) -> None:
        p.reason = reason
        p.cancel.set()
        op = self._ops.get(p.rec.kind)
        # An async handler is cancelled where it awaits; a thread cannot be: it sees ctx.cancelled.
        if p.task is not None and op is not None and op.is_async and not p.task.done():
            p.task.cancel()

    def _dispatched(self, rec: pb.DispatchRecord) -> None:
        p = _Part(rec, self._session_no)
        self._held[p.key] = p
        if self._draining:
            return  # stopping: not started; handed back with the DISCONNECT (credit granted earlier let it come)
        assert self._loop is not None
        p.task = self._loop.create_task(self._run(p))

    def _running(self) -> bool:
        """Some held part has a handler that has not finished (not counting parts held back while stopping)."""
        return any(p.task is not None for p in self._held.values())

    async def _run(self, p: _Part) -> None:
        op = self._ops.get(p.rec.kind)
        if op is None:  # the coordinator sends only kinds of our HELLO; say it precisely anyway
            self._finish(p, "failed", "this worker has no handler for kind %r (it offers %s)" % (p.rec.kind, ", ".join(self.kinds)))
            return
        if p.cancel.is_set():  # cancelled before it started: reported without starting (§5.10)
            self._finish(p, "cancelled", p.reason)
            return
        p.started_us = now_us()
        if self._sock is not None:
            self._started[p.key] = p.started_us
            self._schedule_flush()
        try:
            try:
                payload = self._payload(op, p.rec)
            except ValueError as e:
                self._finish(p, "failed", str(e))
                return
            if op.takes_context:  # built only for handlers that take it (a noop's costs nothing)
                args: tuple[Any, ...] = (payload, Context(self, p, {i.dependency_id: codec.decode_value(i.result)
                                                                      for i in p.rec.inputs}))
            else:
                args = (payload,)
            if op.is_async:
                value = await op.fn(*args)
            else:
                assert self._loop is not None
                call = functools.partial(contextvars.copy_context().run, op.fn, *args)
                value = await self._loop.run_in_executor(self._pool, call)
        except asyncio.CancelledError:
            if not p.abandoned:
                self._finish(p, "cancelled", p.reason)
            return
        except Cancelled as e:
            self._finish(p, "cancelled", p.reason if p.cancel.is_set() else (str(e) or "cancelled by its handler"))
            return
        except TypedFailure as e:
            self._finish(p, "failed", clip(e.text))
            return
        except Exception as e:  # a handler's exception fails the part, not the worker
            if p.cancel.is_set():
                self._finish(p, "cancelled", p.reason)
            else:
                ctx_logger = self.logger.getChild(p.rec.kind)
                ctx_logger.debug("%s attempt %d failed", p.rec.op_id, p.rec.attempt, exc_info=True)
                self._finish(p, "failed", clip("%s: %s" % (type(e).__name__, e)))
            return
        if p.cancel.is_set():
            self._finish(p, "cancelled", p.reason)
            return
        try:
            data = self._result(op, value)
        except ValueError as e:
            self._finish(p, "failed", clip(str(e)))
            return
        self._finish(p, "succeeded", data)

    @staticmethod
    def _payload(op: _Operation, rec: pb.DispatchRecord) -> Any:
        if op.payload == "bytes":
            return bytes(rec.payload)
        try:
            return codec.decode_json(rec.payload)
        except ValueError as e:
            raise ValueError("the payload of %s (kind %r) is not JSON, which its handler declares (payload='json'): %s; "
                             "payload %s" % (rec.op_id, rec.kind, e, codec.excerpt(rec.payload))) from None

    @staticmethod
    def _result(op: _Operation, value: Any) -> bytes:
        name = getattr(op.fn, "__qualname__", repr(op.fn))
        if op.result == "bytes":
            if value is None:
                return b""
            if not isinstance(value, (bytes, bytearray, memoryview)):
                raise ValueError("handler %s of kind %r returned %s, not bytes (it declares result='bytes')"
                                 % (name, op.kind, type(value).__name__))
            data = bytes(value)
        elif isinstance(value, (bytes, bytearray, memoryview)):
            data = bytes(value)
            try:
                codec.decode_json(data)
            except ValueError as e:
                raise ValueError("handler %s of kind %r returned bytes that are not JSON (it declares result='json'): "
                                 "%s; result %s" % (name, op.kind, e, codec.excerpt(data))) from None
        elif value is None:
            data = b""
        else:
            try:
                data = codec.encode_json(value)
            except (TypeError, ValueError) as e:
                raise ValueError("handler %s of kind %r returned a %s that cannot be sent as JSON (it declares "
                                 "result='json'): %s" % (name, op.kind, type(value).__name__, e)) from None
        if len(data) > MAX_RESULT:
            raise ValueError("handler %s of kind %r returned %d bytes, over the result limit of %d bytes"
                             % (name, op.kind, len(data), MAX_RESULT))
        return data

    def _token(self, key: tuple[str, int, int]) -> int:
        """(1.10) The token a held part's DISPATCH carried (0: none, or no longer held)."""
        held = self._held.get(key)
        return held.rec.token if held is not None else 0

    def _finish(self, p: _Part, outcome: str, value: Any) -> None:
        if p.abandoned or self._held.pop(p.key, None) is None:
            return  # handed back: the coordinator has re-queued it
        # (1.10) The DISPATCH's token, echoed: the coordinator finds the op without looking its id up.
        rec = pb.FinishedRecord(op_id=p.rec.op_id, part=p.rec.part, attempt=p.rec.attempt, at_us=now_us(),
                                token=p.rec.token)
        setattr(rec, outcome, value)
        began = self._started.pop(p.key, None)
        self._progress.pop(p.key, None)
        if self._sock is None:  # between sessions: listed in the next HELLO (§7.4), with its start
            if p.started_us:
                rec.started_at_us = p.started_us
            self._unreported.append(rec)
            return
        if began is not None:
            rec.started_at_us = began  # started and finished between two reports (§5.9)
        self._finished.append(rec)
        self._recent.append((time.monotonic(), rec, p.started_us))  # sent by the flush this loop pass
        self._schedule_flush()
        if self._draining and not self._running():
            self._wakeup.set()

    def _queue_progress(self, p: _Part, rec: pb.ProgressRecord) -> None:
        if p.key in self._held and self._sock is not None:
            self._progress[p.key] = rec
            self._schedule_flush()

    def _schedule_flush(self) -> None:
        if not self._flush_scheduled and self._loop is not None:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        """FINISHED first (a freed slot before a new start, so the coordinator never counts more running
        than slots), then STARTED and PROGRESS; one credit per finished part, none while stopping."""
        self._flush_scheduled = False
        sent = now_us()
        if self._uncredited:
            self._send("FINISHED", pb.Finished(records=self._uncredited[:BATCH_RECORDS], credit=0, sent_us=sent))
            del self._uncredited[:BATCH_RECORDS]
            if self._uncredited:
                self._schedule_flush()
        finished, self._finished = self._finished, []
        i = 0
        while i < len(finished):
            batch: list[pb.FinishedRecord] = []
            size = 0
            while i < len(finished) and len(batch) < BATCH_RECORDS and size < BATCH_BYTES:
                r = finished[i]
                i += 1
                batch.append(r)
                size += len(r.succeeded) + len(r.failed) + 64
            self._send("FINISHED", pb.Finished(records=batch, credit=0 if self._draining else len(batch), sent_us=sent))
        if self._started:
            items = list(self._started.items())
            self._started.clear()
            for i in range(0, len(items), BATCH_RECORDS):
                refs = [pb.PartRef(op_id=k[0], part=k[1], attempt=k[2], at_us=at, token=self._token(k))
                        for k, at in items[i:i + BATCH_RECORDS]]
                self._send("STARTED", pb.Started(parts=refs, sent_us=sent))
        if self._progress:
            records = list(self._progress.values())
            self._progress.clear()
            for i in range(0, len(records), BATCH_RECORDS):
                self._send("PROGRESS", pb.Progress(records=records[i:i + BATCH_RECORDS]))
