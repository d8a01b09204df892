#!/usr/bin/python3
"""A minimal opqueue worker written from docs/PROTOCOL.md alone.

    /usr/bin/python3 worker.py tcp://127.0.0.1:5555 [--name N] [--slots 4]
                               [--key PATH --coordinator-key PUB-OR-FILE]

Runs the built-in kinds `echo` (result = payload), `noop` (empty result) and `sleep` (payload:
milliseconds, `1500` or {"milliseconds": 1500}; empty result); any other kind fails with
"unknown kind". Needs python3-zmq and python3-protobuf. With a coordinator that uses keys (CURVE), pass
the worker's key file and the coordinator's public key (or $OPQ_KEY, $OPQ_COORDINATOR_KEY; see
opqueue_keys.py); a refused key ends the worker with "authentication failed: ..." (exit status 2).

Threads: the main thread owns the socket (ZeroMQ sockets are not thread-safe) and keeps
heartbeating; parts run on a pool of `slots` threads, which hand their STARTED/FINISHED events
back through a queue and wake the main thread's poll with a byte on a pipe.
"""
import argparse
import json
import os
import queue
import socket
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import zmq

import opqueue_keys
import opqueue_pb2 as pb
from opqueue_wire import WireError, decode, encode

KINDS = ["echo", "noop", "sleep"]


class Part:
    """One dispatched record. `cancel` is set by the socket thread on CANCEL; handlers that wait
    should wait on it, so a cancel ends them at once."""

    def __init__(self, rec):
        self.rec, self.cancel, self.reason = rec, threading.Event(), "cancelled"

    def key(self):
        return (self.rec.op_id, self.rec.part, self.rec.attempt)


def run_part(part):
    """Outcome fields for one dispatched record. Runs on a pool thread."""
    rec = part.rec
    if rec.kind == "echo":
        return {"succeeded": rec.payload}
    if rec.kind == "noop":
        return {"succeeded": b""}
    if rec.kind == "sleep":
        ms = json.loads(rec.payload.decode() or "null")
        if isinstance(ms, dict):
            ms = ms.get("milliseconds")
        if not isinstance(ms, (int, float)) or ms < 0:
            return {"failed": "sleep: payload must be milliseconds, e.g. 1500 or {\"milliseconds\": 1500}"}
        if part.cancel.wait(ms / 1000.0):
            return {"cancelled": part.reason}
        return {"succeeded": b""}
    return {"failed": "unknown kind %r" % rec.kind}


class Worker:
    def __init__(self, endpoint, name, slots, log=sys.stderr, keys=None):
        self.endpoint, self.name, self.slots, self.log = endpoint, name, slots, log
        self.keys = keys  # opqueue_keys.Keys, or None without CURVE
        self.ctx = zmq.Context.instance()
        self.sock = None
        self.watch = None  # the socket's handshake monitor (a refused key is said, not retried blind)
        # At most `slots` parts run at once: credit keeps it so, and the pool enforces it anyway.
        self.pool = ThreadPoolExecutor(max_workers=slots, thread_name_prefix="part")
        self.events = queue.SimpleQueue()  # (session, Part, outcome or None for "started")
        self.wake_r, self.wake_w = os.pipe()  # a byte per event wakes the socket thread's poll
        os.set_blocking(self.wake_w, False)  # never block a part thread; a full pipe wakes anyway
        self.session_no = 0  # events of an earlier session are dropped: those parts were re-queued
        self.parts = {}  # (op_id, part, attempt) -> Part, dispatched in this session, not finished

    def say(self, *a):
        print("worker:", *a, file=self.log, flush=True)

    def send(self, name, body=None):
        self.sock.send_multipart(encode(name, body))
        self.last_sent = time.monotonic()

    def connect(self):
        if self.sock is not None:
            self.watch.close()
            self.sock.close(linger=0)
        self.sock = self.ctx.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.watch = opqueue_keys.prepare(self.sock, self.keys, who="worker")  # keys before connect
        self.sock.connect(self.endpoint)
        # No look-ahead: it grants credit = slots (PROTOCOL.md §8), so it says prefetch 0.
        hello = pb.Hello(protocol_version=1, name=self.name, slots=self.slots, kinds=KINDS, prefetch=0)
        self.send("HELLO", hello)

    def check_handshake(self):
        """Raises SystemExit(2) once the coordinator has refused our key (or its absence)."""
        why = self.watch.refusal()
        if why is not None:
            self.say(why)
            raise SystemExit(2)

    def await_welcome(self, timeout_s):
        """WELCOME body, None on timeout; raises SystemExit on REJECT or a refused key."""
        deadline = time.monotonic() + timeout_s
        poller = zmq.Poller()
        poller.register(self.sock, zmq.POLLIN)
        poller.register(self.watch.socket, zmq.POLLIN)
        while time.monotonic() < deadline:
            ready = dict(poller.poll(int(max(0, deadline - time.monotonic()) * 1000)))
            if self.watch.socket in ready:
                self.check_handshake()
            if self.sock not in ready:
                continue
            try:
                name, _, msg = decode(self.sock.recv_multipart())
            except WireError as e:
                self.say("dropping bad message:", e)
                continue
            if name == "WELCOME":
                return msg
            if name == "REJECT":
                self.say("rejected:", msg.reason)
                raise SystemExit(2)
            if name == "ERROR":
                self.say("error:", pb.ErrorCode.Name(msg.code), msg.message)
        return None

    def serve(self, max_seconds=None):
        backoff = 0.1
        started_at = time.monotonic()
        try:
            while max_seconds is None or time.monotonic() - started_at < max_seconds:
                self.connect()
                welcome = self.await_welcome(timeout_s=3.0)
                if welcome is None:
                    self.say("no WELCOME, retrying in %.1fs" % backoff)
                    time.sleep(backoff)
                    backoff = min(backoff * 2, 5.0)
                    continue
                backoff = 0.1
                self.session_no += 1
                self.say("registered as", welcome.worker_id)
                self.send("CREDIT", pb.Credit(credit=self.slots))
                stop = self.session(welcome.heartbeat_interval_ms / 1000.0, welcome.liveness, started_at, max_seconds)
                self.abandon_parts()
                if stop:
                    return
                time.sleep(backoff)
        finally:
            self.abandon_parts()
            self.pool.shutdown(wait=False, cancel_futures=True)

    def abandon_parts(self):
        """The coordinator re-queues a lost session's parts (PROTOCOL.md §5.12), so stop ours: queued
        ones never start, waiting ones end at once, and their late events are dropped."""
        for p in self.parts.values():
            p.reason = "abandoned"
            p.cancel.set()
        self.parts.clear()

    def session(self, interval, liveness, started_at, max_seconds):
        """Runs until the coordinator is dead or says DISCONNECT. True = stop the worker."""
        poller = zmq.Poller()
        poller.register(self.sock, zmq.POLLIN)
        poller.register(self.wake_r, zmq.POLLIN)
        poller.register(self.watch.socket, zmq.POLLIN)
        last_heard = time.monotonic()
        while max_seconds is None or time.monotonic() - started_at < max_seconds:
            # Sleep no longer than until the next heartbeat is due, so one goes out every interval.
            timeout = max(0.0, self.last_sent + interval - time.monotonic())
            ready = dict(poller.poll(int(timeout * 1000) + 1))
            if self.watch.socket in ready:
                self.check_handshake()
            if self.wake_r in ready:
                self.report()
            if self.sock in ready:
                try:
                    name, _, msg = decode(self.sock.recv_multipart())
                except WireError as e:
                    self.say("dropping bad message:", e)
                    name = None
                if name is not None:
                    last_heard = time.monotonic()
                if name == "DISPATCH":
                    for r in msg.records:
                        p = Part(r)
                        self.parts[p.key()] = p
                        self.pool.submit(self.run, self.session_no, p)
                elif name == "CANCEL":
                    # Parts already finished are no longer in self.parts: ignored (PROTOCOL.md §4.1).
                    for c in msg.records:
                        for p in self.parts.values():
                            if p.rec.op_id == c.op_id and p.rec.attempt == c.attempt:
                                p.reason = c.reason or "cancelled"
                                p.cancel.set()
                elif name == "DISCONNECT":
                    self.say("coordinator disconnected us:", msg.reason)
                    return False
                elif name == "ERROR":
                    self.say("error:", pb.ErrorCode.Name(msg.code), msg.message)
                    if msg.code == pb.ERROR_CODE_UNEXPECTED:
                        return False  # the coordinator forgot us (declared dead): register again
                # HEARTBEAT: nothing to do beyond last_heard.
            now = time.monotonic()
            if now - last_heard > interval * liveness:
                self.say("coordinator silent for %.1fs, reconnecting" % (now - last_heard))
                return False
            if now - self.last_sent >= interval:
                self.send("HEARTBEAT")
        self.send("DISCONNECT", pb.Disconnect(reason="worker stopping"))
        return True

    def run(self, session_no, part):
        """On a pool thread: runs one part; never touches the socket."""
        if part.cancel.is_set():  # cancelled while queued: report it without starting (§5.10)
            self.hand_over(session_no, part, {"cancelled": part.reason})
            return
        self.hand_over(session_no, part, None)
        try:
            outcome = run_part(part)
        except Exception as e:  # a handler bug fails the part, not the worker
            outcome = {"failed": "%s: %s" % (type(e).__name__, e)}
        self.hand_over(session_no, part, outcome)

    def hand_over(self, session_no, part, outcome):
        # Stamped where it happens, on the monotonic clock (µs): the coordinator shows these times.
        self.events.put((session_no, part, outcome, time.monotonic_ns() // 1000))
        try:
            os.write(self.wake_w, b"!")
        except BlockingIOError:
            pass  # the pipe is full of wake-ups already

    def report(self):
        """On the socket thread: sends every event the part threads queued, as one FINISHED and one
        STARTED batch (PROTOCOL.md §5.9: finished first, so the coordinator never counts more running
        parts than slots; a part that started and finished since the last report carries its start
        time in FINISHED), granting one credit per finished record."""
        os.read(self.wake_r, 65536)
        started = {}  # key -> (ref, at_us), in the order they started
        finished = pb.Finished()
        while True:
            try:
                session_no, p, outcome, at_us = self.events.get_nowait()
            except queue.Empty:
                break
            if session_no != self.session_no:
                continue  # from a session we abandoned: the coordinator has re-queued that part
            ref = dict(op_id=p.rec.op_id, part=p.rec.part, attempt=p.rec.attempt)
            if outcome is None:
                started[p.key()] = (ref, at_us)
            else:
                began = started.pop(p.key(), None)
                finished.records.add(**ref, **outcome, at_us=at_us, started_at_us=began[1] if began else 0)
                self.parts.pop(p.key(), None)
        now_us = time.monotonic_ns() // 1000
        if finished.records:
            finished.credit = len(finished.records)
            finished.sent_us = now_us
            self.send("FINISHED", finished)
        if started:
            self.send("STARTED", pb.Started(parts=[pb.PartRef(**ref, at_us=at) for ref, at in started.values()],
                                            sent_us=now_us))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("endpoint")
    ap.add_argument("--name", default="%s:%d" % (socket.gethostname(), os.getpid()))
    ap.add_argument("--slots", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=None, help="stop after this long")
    opqueue_keys.add_arguments(ap)
    args = ap.parse_args()
    try:
        keys = opqueue_keys.resolve(args.key, args.coordinator_key)
    except opqueue_keys.KeyFileError as e:
        print("worker:", e, file=sys.stderr)
        sys.exit(2)
    Worker(args.endpoint, args.name, args.slots, keys=keys).serve(args.seconds)


if __name__ == "__main__":
    main()
