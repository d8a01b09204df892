#!/usr/bin/env python3
"""A worker with opqueue's built-in demo kinds, on the `opqueue` package:

    python examples/worker.py tcp://127.0.0.1:7600 [--name N] [--slots 4] [--seconds S]
                              [--key PATH --coordinator-key PUB-OR-FILE]

`echo` (result = payload, bytes), `noop` (empty result) and `sleep` (payload: milliseconds, `1500` or
{"milliseconds": 1500}; waits, ends at once when cancelled). Keys: the options, or $OPQ_KEY and
$OPQ_COORDINATOR_KEY. Exit status 2 when the coordinator refuses it (a key it does not allow). SIGTERM
or SIGINT, or --seconds: a graceful stop (PROTOCOL.md §5.12: the worker leaves, nothing is lost).
"""
import argparse
import logging
import os
import socket
import sys
import threading

from opqueue import KeyFileError, Worker
from opqueue.keys import add_arguments


def make(endpoint, name, slots, key=None, coordinator_key=None):
    worker = Worker(endpoint, name=name, slots=slots, key=key, coordinator_key=coordinator_key, drain=5)

    @worker.operation("echo", payload="bytes", result="bytes")
    def echo(payload):
        return payload

    @worker.operation("noop", payload="bytes", result="bytes")
    def noop(payload):
        return None

    @worker.operation("sleep", result="bytes")
    def sleep(ms, ctx):
        if isinstance(ms, dict):
            ms = ms.get("milliseconds")
        if not isinstance(ms, (int, float)) or ms < 0:
            raise ValueError('sleep: payload must be milliseconds, e.g. 1500 or {"milliseconds": 1500}')
        ctx.cancelled.wait(ms / 1000.0)
        ctx.raise_if_cancelled()

    return worker


def main(extend=None):
    """The command line; `extend(worker)` may register more kinds (Tests/Fixtures/typed/typed_worker.py)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("endpoint")
    ap.add_argument("--name", default="%s:%d" % (socket.gethostname(), os.getpid()))
    ap.add_argument("--slots", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=None, help="stop (gracefully) after this long")
    add_arguments(ap)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="worker: %(message)s", stream=sys.stderr)
    worker = make(args.endpoint, args.name, args.slots, args.key, args.coordinator_key)
    if extend is not None:
        extend(worker)
    if args.seconds is not None:
        timer = threading.Timer(args.seconds, worker.stop)
        timer.daemon = True
        timer.start()
    try:
        return worker.run()
    except KeyFileError as e:
        print("worker:", e, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
