"""The handlers the tests run in `python -m opqueue.worker testworker:make` processes."""
from __future__ import annotations

import asyncio
import os
import time

from opqueue import Worker

CALLS: dict[str, int] = {}


def make() -> Worker:
    w = Worker(os.environ["OPQ_ENDPOINT"], slots=int(os.environ.get("SLOTS", "4")), name=os.environ["WORKER_NAME"],
               key=os.environ.get("TEST_KEY"), coordinator_key=os.environ.get("TEST_COORDINATOR_KEY"),
               drain=float(os.environ.get("DRAIN", "10")), tags=["py"])

    @w.operation("py.add")
    def add(payload, ctx):
        # payload {"add": N}; adds N to the sum of its inputs (results of dependencies, JSON).
        total = payload["add"] + sum(v for v in ctx.inputs.values() if isinstance(v, (int, float)))
        return total

    @w.operation("py.inputs")
    def inputs(payload, ctx):
        return {"op": ctx.op_id, "run": ctx.run, "attempt": ctx.attempt, "inputs": ctx.inputs}

    @w.operation("py.flaky")
    def flaky(payload, ctx):
        # fails its first `fail` attempts
        if ctx.attempt <= payload["fail"]:
            raise RuntimeError("attempt %d fails on purpose" % ctx.attempt)
        return {"attempt": ctx.attempt}

    @w.operation("py.block")
    def block(payload, ctx):
        # a sync handler that runs until cancelled (at most `seconds`)
        ctx.progress(0.5, message="blocking")
        if ctx.cancelled.wait(payload.get("seconds", 60)):
            ctx.raise_if_cancelled()
        return "not cancelled"

    @w.operation("py.ablock")
    async def ablock(payload, ctx):
        await asyncio.sleep(payload.get("seconds", 60))
        return "not cancelled"

    @w.operation("py.sleep")
    def sleep(payload):
        # busy with the GIL released, like real work: `seconds` of wall time
        time.sleep(payload["seconds"])
        return payload["seconds"]

    @w.operation("py.asleep")
    async def asleep(payload):
        await asyncio.sleep(payload["seconds"])
        return payload["seconds"]

    @w.operation("py.nonjson")
    def nonjson(payload):
        return {1, 2, 3}  # a set: not JSON

    @w.operation("py.nonjsonbytes")
    def nonjsonbytes(payload):
        return b"\xffnot json"

    @w.operation("py.nan")
    def nan(payload):
        return float("nan")

    @w.operation("py.raw", payload="bytes", result="bytes")
    def raw(payload):
        return payload[::-1]

    @w.operation("py.echo")
    def echo(payload):
        return payload

    return w


def make_hold() -> Worker:
    """A worker whose `py.hold` blocks its first attempt until cancelled (or handed back) and succeeds
    on the next: the graceful-stop test."""
    w = make()

    @w.operation("py.hold")
    def hold(payload, ctx):
        if ctx.attempt == 1:
            ctx.cancelled.wait(60)
            ctx.raise_if_cancelled()
        return "done on attempt %d" % ctx.attempt

    return w


def make_marking() -> Worker:
    """`py.mark` sleeps `seconds`, then writes `path` (the test's sign that the handler finished)."""
    w = make()

    @w.operation("py.mark")
    def mark(payload, ctx):
        time.sleep(payload["seconds"])
        with open(payload["path"], "w") as f:
            f.write("done")
        return "marked"

    return w
