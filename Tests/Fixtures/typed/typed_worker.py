#!/usr/bin/python3
"""examples/python/worker.py plus two typed kinds, written from docs/HANDLERS.md ("The wire form") alone:
`Square` ({"n": N} -> N*N as JSON) and `Resize` ({"side": S, "format": F} -> "SxS" as JSON, or the typed
failure `ResizeError.tooSmall(side:)` in an `opq-typed/1` line). Same arguments as worker.py; PYTHONPATH
must hold examples/python. (TypedOperationTests.pythonWorkerServesTypedKinds.)"""
import json

import worker


def run_typed(part, fallback=worker.run_part):
    rec = part.rec
    if rec.kind == "Square":
        n = json.loads(rec.payload)["n"]
        return {"succeeded": json.dumps(n * n).encode()}
    if rec.kind == "Resize":
        r = json.loads(rec.payload)
        if r["side"] < 16:
            line = json.dumps({"error": "failure", "type": "ResizeError", "value": {"tooSmall": {"side": r["side"]}}})
            return {"failed": "tooSmall(side: %d)\nopq-typed/1 %s" % (r["side"], line)}
        return {"succeeded": json.dumps("%dx%d" % (r["side"], r["side"])).encode()}
    return fallback(part)


worker.KINDS += ["Square", "Resize"]
worker.run_part = run_typed
worker.main()
