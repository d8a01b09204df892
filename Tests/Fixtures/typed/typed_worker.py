#!/usr/bin/env python3
"""python/examples/worker.py plus two typed kinds, on the `opqueue` package, written from docs/HANDLERS.md
("The wire form"): `Square` ({"n": N} -> N*N as JSON) and `Resize` ({"side": S, "format": F} -> "SxS" as
JSON, or the typed failure `ResizeError.tooSmall(side:)`). Same arguments as worker.py; run with the venv
scripts/setup makes. (TypedOperationTests.pythonWorkerServesTypedKinds.)"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python", "examples"))

import worker  # noqa: E402  python/examples/worker.py
from opqueue import TypedFailure  # noqa: E402


def typed(w):
    @w.operation("Square")
    def square(p):
        return p["n"] * p["n"]

    @w.operation("Resize")
    def resize(p):
        if p["side"] < 16:
            raise TypedFailure("tooSmall(side: %d)" % p["side"], "ResizeError", {"tooSmall": {"side": p["side"]}})
        return "%dx%d" % (p["side"], p["side"])


sys.exit(worker.main(extend=typed))
