#!/usr/bin/env python3
"""A command-line client on the `opqueue` package: submits operations and waits for them.

    python examples/client.py tcp://127.0.0.1:7600 [--key PATH --coordinator-key PUB-OR-FILE] [--timeout S]
                              submit [--kind echo] [--queue Q] [--wait SECONDS] ID[=PAYLOAD] ...
    python examples/client.py tcp://127.0.0.1:7600 [...] status ID ...

`submit` sends one SUBMIT (a new run; keyed, so re-sent safely after a lost reply) and prints
"accepted N run RUN"; with --wait it then waits up to SECONDS and prints "ID succeeded RESULT" /
"ID failed ERROR" / "ID cancelled REASON" per op. `status` prints "ID STATE" per op.

Exit status: 0 done; 1 refused (ERROR, a rejected SUBMIT, "authentication failed: ..."), not finished
in time, or no reply within --timeout; 2 bad arguments or key files (said before connecting).
"""
import argparse
import sys

from opqueue import Client, KeyFileError, OpqueueError, UnknownOperation
from opqueue.keys import add_arguments


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("endpoint")
    add_arguments(ap)
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
        client = Client(args.endpoint, key=args.key, coordinator_key=args.coordinator_key, timeout=args.timeout)
    except KeyFileError as e:
        print("client:", e, file=sys.stderr)
        return 2
    try:
        if args.command == "submit":
            run = client.run()
            ops = []
            for spec in args.ops:
                op_id, _, payload = spec.partition("=")
                ops.append(run.add(args.kind, payload.encode(), id=op_id, queue=args.queue))
            run.submit()
            print("accepted %d run %s" % (len(ops), run.id), flush=True)
            if args.wait is not None:
                w = client.wait([o.id for o in ops], run=run.id, timeout=args.wait)
                for o in ops:
                    out = w.outcomes.get(o.id)
                    if out is None:
                        continue
                    text = out.raw.decode("utf-8", errors="replace") if out.status == "succeeded" else out.error
                    print(o.id, out.status, text)
                if not w.finished:
                    print("client: not finished within %g s: %s" % (args.wait, " ".join(w.pending)), file=sys.stderr)
                    return 1
        else:
            try:
                for s in client.status(args.ids):
                    print(s.id, s.state + (" cancelled" if s.cancelled else ""))
            except UnknownOperation as e:
                print("client:", e, file=sys.stderr)
                return 1
    except OpqueueError as e:
        print("client:", e, file=sys.stderr)
        return 1
    finally:
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
