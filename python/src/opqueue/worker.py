"""`python -m opqueue.worker MODULE:WORKER`: runs the `Worker` that MODULE defines (the worker itself
is in `opqueue._worker`; this module re-exports it, so `from opqueue.worker import Worker` works)."""
from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys

from . import keys as keyfiles
from ._worker import Context, Worker, WorkerRefused

__all__ = ["Worker", "Context", "WorkerRefused", "load", "main"]


def load(target: str) -> Worker:
    """The Worker named by "module:attribute" (or "module", which must have a `worker`)."""
    module_name, _, attr = target.partition(":")
    sys.path.insert(0, os.getcwd())
    module = importlib.import_module(module_name)
    obj = getattr(module, attr or "worker", None)
    if callable(obj) and not isinstance(obj, Worker):
        obj = obj()
    if not isinstance(obj, Worker):
        raise SystemExit("opqueue.worker: %s is not an opqueue.Worker (got %s)" % (target, type(obj).__name__))
    return obj


def main(argv: list[str] | None = None) -> int:
    """`python -m opqueue.worker module:worker`: runs that worker until SIGTERM/SIGINT."""
    ap = argparse.ArgumentParser(prog="python -m opqueue.worker", description=main.__doc__)
    ap.add_argument("target", metavar="MODULE:ATTRIBUTE", help="where the Worker is (a factory function works too)")
    ap.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    args = ap.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(name)s %(levelname)s: %(message)s",
                        stream=sys.stderr)
    try:
        worker = load(args.target)
        return worker.run()
    except keyfiles.KeyFileError as e:
        logging.getLogger("opqueue.worker").error("%s", e)
        return 2



if __name__ == "__main__":
    sys.exit(main())
