"""The benchmark's worker: `noop`, bytes in, nothing out (bench.py starts it with python -m opqueue.worker)."""
import os

from opqueue import Worker


def make():
    w = Worker(os.environ["OPQ_ENDPOINT"], slots=int(os.environ["BENCH_SLOTS"]), name=os.environ["BENCH_NAME"], drain=1)
    if os.environ.get("BENCH_HANDLER") == "sync":
        @w.operation("noop", payload="bytes", result="bytes")
        def noop(payload):
            return None
    else:
        @w.operation("noop", payload="bytes", result="bytes")
        async def anoop(payload):
            return None
    return w
