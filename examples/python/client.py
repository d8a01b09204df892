#!/usr/bin/python3
"""A minimal opqueue client written from docs/PROTOCOL.md alone: submits operations and waits for them.

    /usr/bin/python3 client.py tcp://127.0.0.1:5555 [--key PATH --coordinator-key PUB-OR-FILE]
                               submit [--kind echo] [--queue Q] [--wait SECONDS] ID[=PAYLOAD] ...
    /usr/bin/python3 client.py tcp://127.0.0.1:5555 [--key ...] status ID ...

`submit` sends one SUBMIT (a new run) and prints "accepted N run RUN"; with --wait it then waits up
to SECONDS for every op and prints "ID succeeded RESULT" / "ID failed ERROR" / "ID cancelled REASON"
per op. `status` prints "ID STATE" per op. Keys (CURVE): --key and --coordinator-key, or $OPQ_KEY
and $OPQ_COORDINATOR_KEY (see opqueue_keys.py).

Exit status: 0 done; 1 refused (ERROR, rejected SUBMIT, "authentication failed: ..."), not finished
in time, or no reply within --timeout; 2 bad arguments or key files (said before connecting).
"""
import argparse
import os
import socket
import sys
import time

import zmq

import opqueue_keys
import opqueue_pb2 as pb
from opqueue_wire import WireError, decode, encode


class Refused(Exception):
    """The coordinator said no (ERROR reply or a refused key), or did not answer."""


class Client:
    def __init__(self, endpoint, keys=None, timeout_s=10.0):
        self.endpoint, self.timeout_s = endpoint, timeout_s
        self.ctx = zmq.Context.instance()
        self.sock = self.ctx.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.watch = opqueue_keys.prepare(self.sock, keys, who="client")  # keys before connect
        self.sock.connect(endpoint)
        self.next_id = 0

    def close(self):
        self.watch.close()
        self.sock.close(linger=0)

    def request(self, name, body, reply_name, extra_s=0.0):
        """Sends `name` and returns the body of its `reply_name` reply. A refused key is said at once."""
        self.next_id += 1
        rid = self.next_id
        self.sock.send_multipart(encode(name, body, rid))
        poller = zmq.Poller()
        poller.register(self.sock, zmq.POLLIN)
        poller.register(self.watch.socket, zmq.POLLIN)
        deadline = time.monotonic() + self.timeout_s + extra_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Refused("no reply to %s from %s within %.0f s" % (name, self.endpoint, self.timeout_s + extra_s))
            ready = dict(poller.poll(int(left * 1000) + 1))
            if self.watch.socket in ready:
                why = self.watch.refusal()
                if why is not None:
                    raise Refused("%s at %s" % (why, self.endpoint))
            if self.sock not in ready:
                continue
            try:
                got, got_id, msg = decode(self.sock.recv_multipart())
            except WireError as e:
                print("client: dropping bad message:", e, file=sys.stderr)
                continue
            if got_id != rid:
                continue  # an EVENT or a late reply to an earlier request
            if got == "ERROR":
                raise Refused("%s refused: %s %s" % (name, pb.ErrorCode.Name(msg.code), msg.message))
            if got == reply_name:
                return msg

    def submit(self, ops, queue=""):
        s = pb.Submit(operations=ops, submitter="%s@%s" % (os.environ.get("USER", "?"), socket.gethostname()))
        if queue:
            for o in s.operations:
                o.queue = queue
        r = self.request("SUBMIT", s, "SUBMIT-REPLY")
        if not r.accepted:
            raise Refused("SUBMIT rejected: " + "; ".join(
                "%s: %s %s" % (e.op_id, pb.SubmitProblem.Name(e.problem), e.message) for e in r.errors))
        return r

    def wait(self, ids, run, seconds):
        w = pb.Wait(op_ids=ids, run=run, timeout_us=int(seconds * 1e6), with_results=True)
        return self.request("WAIT", w, "WAIT-REPLY", extra_s=seconds)

    def status(self, ids, run=""):
        return self.request("STATUS", pb.Status(op_ids=ids, run=run, ops=True), "STATUS-REPLY")

    def logs(self, op_id, run="", attempt=0):
        """(1.5) The stdout/stderr tails the coordinator keeps of each attempt (LogsReply)."""
        return self.request("LOGS", pb.Logs(op_id=op_id, run=run, attempt=attempt), "LOGS-REPLY")

    def story(self, op_id, run=""):
        """(1.5) The operation's transitions, oldest first (StoryReply)."""
        return self.request("STORY", pb.Story(op_id=op_id, run=run), "STORY-REPLY")


def outcome_text(outcome):
    which = outcome.WhichOneof("result")
    if which == "succeeded":
        return "succeeded " + outcome.succeeded.decode("utf-8", errors="replace")
    if which == "failed":
        return "failed " + outcome.failed
    if which == "cancelled":
        return "cancelled " + outcome.cancelled
    return "unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("endpoint")
    opqueue_keys.add_arguments(ap)
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for each reply")
    sub = ap.add_subparsers(dest="command", required=True)
    s = sub.add_parser("submit")
    s.add_argument("--kind", default="echo")
    s.add_argument("--queue", default="")
    s.add_argument("--wait", type=float, default=None, metavar="SECONDS")
    s.add_argument("ops", nargs="+", metavar="ID[=PAYLOAD]")
    st = sub.add_parser("status")
    st.add_argument("ids", nargs="+")
    args = ap.parse_args()

    try:
        keys = opqueue_keys.resolve(args.key, args.coordinator_key)
    except opqueue_keys.KeyFileError as e:
        print("client:", e, file=sys.stderr)
        return 2
    c = Client(args.endpoint, keys, args.timeout)
    try:
        if args.command == "submit":
            ops = []
            for spec in args.ops:
                op_id, _, payload = spec.partition("=")
                ops.append(pb.Operation(id=op_id, kind=args.kind, payload=payload.encode()))
            r = c.submit(ops, args.queue)
            print("accepted %d run %s" % (r.accepted_count, r.run), flush=True)
            if args.wait is not None:
                w = c.wait([o.id for o in ops], r.run, args.wait)
                for o in w.outcomes:
                    print(o.op_id, outcome_text(o.outcome))
                if not w.finished:
                    print("client: not finished within %g s: %s" % (args.wait, " ".join(w.pending)), file=sys.stderr)
                    return 1
        else:
            r = c.status(args.ids)
            for o in r.ops:
                print(o.id, pb.OpState.Name(o.state))
            for i in r.not_found:
                print(i, "not-found")
    except Refused as e:
        print("client:", e, file=sys.stderr)
        return 1
    finally:
        c.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
