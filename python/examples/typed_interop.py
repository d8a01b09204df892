#!/usr/bin/env python3
"""Typed Swift operations and Python, each way (docs/HANDLERS.md, "The wire form": a typed operation's
kind is its Swift type's name, its input and output are JSON, a typed failure ends in an `opq-typed/1` line).

    python examples/typed_interop.py client ENDPOINT
        With `example-worker` (examples/Typed/Worker) connected: submits the Swift-handled typed operations
        `Work` and `SquareRoots`, and a Python-handled `py.summary` that depends on both and gets their
        outputs decoded; then `SquareRoots(count: 0)`, whose typed failure `SquareRootsError.countTooSmall`
        arrives decoded in `OperationFailed.typed`. Exits 1 if anything differs from that.
    python examples/typed_interop.py worker ENDPOINT
        A Python worker serving the typed kinds `SquareRoots` and `Work` in place of the Swift one, for Swift
        clients (`queue.addOperation(SquareRoots(count: 10))` gets a Double; count 0 throws
        SquareRootsError.countTooSmall(0) as itself).
"""
import math
import sys
import threading
import time

from opqueue import Client, OperationFailed, TypedFailure, Worker


def python_worker(endpoint, typed_kinds):
    w = Worker(endpoint, slots=2, name="py-typed-interop", drain=1)

    @w.operation("py.summary")
    def summary(payload, ctx):
        work, roots = ctx.inputs["work"], ctx.inputs["roots"]   # WorkReport and Double, as JSON
        return {"label": work["label"], "attempt": work["attempt"], "sum": round(roots, 3)}

    if typed_kinds:
        @w.operation("SquareRoots")
        def square_roots(op, ctx):
            if op["count"] < 1:
                # Swift encodes `case countTooSmall(Int)` as {"countTooSmall": {"_0": N}}.
                raise TypedFailure("count must be at least 1 (was %d)" % op["count"], "SquareRootsError",
                                   {"countTooSmall": {"_0": op["count"]}})
            return sum(math.sqrt(i) for i in range(op["count"]))

        @w.operation("Work")
        def work(op, ctx):
            started = time.monotonic()
            ctx.cancelled.wait(op["milliseconds"] / 1000)
            return {"label": op["label"], "elapsedMs": int((time.monotonic() - started) * 1000), "attempt": ctx.attempt}
    return w


def client(endpoint):
    worker = python_worker(endpoint, typed_kinds=False)
    t = threading.Thread(target=worker.run, kwargs={"install_signal_handlers": False}, daemon=True)
    t.start()
    ok = True
    with Client(endpoint, timeout=10) as c:
        run = c.run()
        work = run.add("Work", {"label": "from Python", "milliseconds": 50}, id="work")
        roots = run.add("SquareRoots", {"count": 1000}, id="roots")
        s = run.add("py.summary", id="summary", after=[work, roots])
        bad = run.add("SquareRoots", {"count": 0}, id="bad")
        run.submit()
        result = s.result(timeout=60)
        print("summary:", result)
        ok &= result == {"label": "from Python", "attempt": 1, "sum": round(sum(math.sqrt(i) for i in range(1000)), 3)}
        try:
            bad.result(timeout=60)
            ok = False
        except OperationFailed as e:
            print("typed failure:", e.typed)
            ok &= e.typed == {"error": "failure", "type": "SquareRootsError", "value": {"countTooSmall": {"_0": 0}}}
        ran_on = {x.id: x.worker_id for x in c.status(run=run.id)}
        names = {w.worker_id: w.name for w in c.workers()}
        print("ran on:", {k: names.get(v, v) for k, v in sorted(ran_on.items())})
        ok &= names.get(ran_on["summary"]) == "py-typed-interop" and names.get(ran_on["work"]) != "py-typed-interop"
    worker.stop()
    t.join(10)
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("client", "worker"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    if sys.argv[1] == "client":
        sys.exit(client(sys.argv[2]))
    sys.exit(python_worker(sys.argv[2], typed_kinds=True).run())
