#!/usr/bin/python3
"""A minimal opqueue worker written from docs/PROTOCOL.md alone.

    /usr/bin/python3 worker.py tcp://127.0.0.1:5555 [--name N] [--slots 4]

Runs the built-in kinds `echo` (result = payload) and `noop` (empty result);
any other kind fails with "unknown kind". Needs python3-zmq and python3-protobuf.
"""
import argparse
import os
import socket
import sys
import time

import zmq

import opqueue_pb2 as pb
from opqueue_wire import WireError, decode, encode

KINDS = ["echo", "noop"]


def run_part(rec):
    """Outcome fields for one dispatched record."""
    if rec.kind == "echo":
        return {"succeeded": rec.payload}
    if rec.kind == "noop":
        return {"succeeded": b""}
    return {"failed": "unknown kind %r" % rec.kind}


class Worker:
    def __init__(self, endpoint, name, slots, log=sys.stderr):
        self.endpoint, self.name, self.slots, self.log = endpoint, name, slots, log
        self.ctx = zmq.Context.instance()
        self.sock = None

    def say(self, *a):
        print("worker:", *a, file=self.log, flush=True)

    def send(self, name, body=None):
        self.sock.send_multipart(encode(name, body))
        self.last_sent = time.monotonic()

    def connect(self):
        if self.sock is not None:
            self.sock.close(linger=0)
        self.sock = self.ctx.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.connect(self.endpoint)
        hello = pb.Hello(protocol_version=1, name=self.name, slots=self.slots, kinds=KINDS)
        self.send("HELLO", hello)

    def await_welcome(self, timeout_s):
        """WELCOME body, None on timeout; raises SystemExit on REJECT."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.sock.poll(int(max(0, deadline - time.monotonic()) * 1000)):
                break
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
        while max_seconds is None or time.monotonic() - started_at < max_seconds:
            self.connect()
            welcome = self.await_welcome(timeout_s=3.0)
            if welcome is None:
                self.say("no WELCOME, retrying in %.1fs" % backoff)
                time.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
                continue
            backoff = 0.1
            self.say("registered as", welcome.worker_id)
            self.send("CREDIT", pb.Credit(credit=self.slots))
            if self.session(welcome.heartbeat_interval_ms / 1000.0, welcome.liveness, started_at, max_seconds):
                return
            time.sleep(backoff)

    def session(self, interval, liveness, started_at, max_seconds):
        """Runs until the coordinator is dead or says DISCONNECT. True = stop the worker."""
        last_heard = time.monotonic()
        while max_seconds is None or time.monotonic() - started_at < max_seconds:
            if self.sock.poll(int(interval * 1000)):
                try:
                    name, _, msg = decode(self.sock.recv_multipart())
                except WireError as e:
                    self.say("dropping bad message:", e)
                    continue
                last_heard = time.monotonic()
                if name == "DISPATCH":
                    self.run_batch(msg)
                elif name == "CANCEL":
                    # Every DISPATCH runs to the end as it arrives, and the coordinator sends a part's
                    # CANCEL after its DISPATCH: the part has finished already (PROTOCOL.md §4.1: ignore).
                    pass
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

    def run_batch(self, dispatch):
        started = pb.Started(parts=[pb.PartRef(op_id=r.op_id, part=r.part, attempt=r.attempt)
                                    for r in dispatch.records])
        self.send("STARTED", started)
        finished = pb.Finished(credit=len(dispatch.records))
        for r in dispatch.records:
            outcome = run_part(r)
            finished.records.add(op_id=r.op_id, part=r.part, attempt=r.attempt, **outcome)
        self.send("FINISHED", finished)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("endpoint")
    ap.add_argument("--name", default="%s:%d" % (socket.gethostname(), os.getpid()))
    ap.add_argument("--slots", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=None, help="stop after this long")
    args = ap.parse_args()
    Worker(args.endpoint, args.name, args.slots).serve(args.seconds)


if __name__ == "__main__":
    main()
