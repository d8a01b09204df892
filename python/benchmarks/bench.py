#!/usr/bin/env python3
"""The Python side's throughput (`scripts/bench python`; figures in docs/BENCHMARKS.md, "python").

    bench.py --bin DIR [--ops 100000] [--workers 2] [--slots 64] [--handler async|sync] [--json]

Starts a release `opcoord` (journal on, in a temporary state directory) and WORKERS Python worker processes
(`python -m opqueue.worker`, a `noop` kind, bytes in and out), then with the asyncio client:
  submit   OPS independent `noop`s, 4,096 per keyed SUBMIT, each waiting for its reply: ops/s of the client
  e2e      from the first SUBMIT until WAIT on the run says finished: ops/s through the Python workers
and the CPU time (user + system, from /proc) per op of the workers, the coordinator and the client.
Every process it starts is ended by PID; every wait is bounded (--limit seconds).
"""
import argparse
import asyncio
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time

from opqueue import AsyncClient

HERE = os.path.dirname(os.path.abspath(__file__))
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime


def self_cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


async def measure(endpoint, ops, limit, workers):
    async with AsyncClient(endpoint, timeout=limit) as c:
        for _ in range(int(limit * 20)):
            if len(await c.workers()) == workers:
                break
            await asyncio.sleep(0.05)  # polling the registration, bounded; not measured
        else:
            raise SystemExit("bench: the workers did not register within %g s" % limit)
        worker_pids = None
        cpu0 = self_cpu()
        start = time.perf_counter()
        run = c.run()
        for i in range(ops):
            run.add("noop", id="n%d" % i)
        await run.submit()
        submitted = time.perf_counter()
        cpu_submit = self_cpu() - cpu0
        w = await run.wait(timeout=limit)
        finished = time.perf_counter()
        if not w.finished or w.succeeded != ops:
            raise SystemExit("bench: not all finished within %g s: %s" % (limit, w))
        return dict(submit_s=submitted - start, e2e_s=finished - start, client_cpu_submit_s=cpu_submit,
                    client_cpu_s=self_cpu() - cpu0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--ops", type=int, default=100_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--slots", type=int, default=64)
    ap.add_argument("--handler", choices=["async", "sync"], default="async")
    ap.add_argument("--limit", type=float, default=300.0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="opq-pybench-")
    procs = []
    try:
        endpoint_file = os.path.join(tmp, "endpoint")
        procs.append(subprocess.Popen([os.path.join(args.bin, "opcoord"), "--bind", "tcp://127.0.0.1:*", "--endpoint-file",
                                       endpoint_file, "--state-dir", os.path.join(tmp, "state"), "--http", "off",
                                       "--log-level", "warning"]))
        deadline = time.monotonic() + 20
        while not (os.path.exists(endpoint_file) and open(endpoint_file).read().startswith("tcp://")):
            if time.monotonic() > deadline or procs[0].poll() is not None:
                raise SystemExit("bench: opcoord did not start")
            time.sleep(0.02)
        endpoint = open(endpoint_file).read().strip()
        env = dict(os.environ, OPQ_ENDPOINT=endpoint, BENCH_SLOTS=str(args.slots), BENCH_HANDLER=args.handler,
                   PYTHONPATH=HERE)
        env.pop("OPQ_KEY", None)
        env.pop("OPQ_COORDINATOR_KEY", None)
        for i in range(args.workers):
            procs.append(subprocess.Popen([sys.executable, "-m", "opqueue.worker", "noop_worker:make", "--log-level",
                                           "warning"], env=dict(env, BENCH_NAME="py-bench-%d" % i)))
        coord_cpu0 = cpu_seconds(procs[0].pid)
        worker_cpu0 = [cpu_seconds(p.pid) for p in procs[1:]]
        r = asyncio.run(measure(endpoint, args.ops, args.limit, args.workers))
        worker_cpu = sum(cpu_seconds(p.pid) for p in procs[1:]) - sum(worker_cpu0)
        coord_cpu = cpu_seconds(procs[0].pid) - coord_cpu0
        out = {
            "ops": args.ops, "workers": args.workers, "slots": args.slots, "handler": args.handler,
            "submit_ops_per_s": round(args.ops / r["submit_s"]), "e2e_ops_per_s": round(args.ops / r["e2e_s"]),
            "submit_s": round(r["submit_s"], 3), "e2e_s": round(r["e2e_s"], 3),
            "worker_cpu_us_per_op": round(worker_cpu / args.ops * 1e6, 1),
            "coordinator_cpu_us_per_op": round(coord_cpu / args.ops * 1e6, 1),
            "client_cpu_us_per_op": round(r["client_cpu_s"] / args.ops * 1e6, 1),
            "client_submit_cpu_us_per_op": round(r["client_cpu_submit_s"] / args.ops * 1e6, 1),
        }
        if args.json:
            print(json.dumps(out))
        else:
            print("python: %(ops)d independent noop through %(workers)d Python worker processes × %(slots)d slots "
                  "(%(handler)s handler)" % out)
            print("  client submit   %(submit_ops_per_s)9d ops/s  (%(submit_s)s s; client CPU %(client_submit_cpu_us_per_op)s µs/op)" % out)
            print("  end to end      %(e2e_ops_per_s)9d ops/s  (%(e2e_s)s s)" % out)
            print("  CPU per op      workers %(worker_cpu_us_per_op)s µs, coordinator %(coordinator_cpu_us_per_op)s µs, "
                  "client %(client_cpu_us_per_op)s µs" % out)
    finally:
        # The workers leave first (SIGTERM: a graceful stop), then the coordinator stops.
        for group in (procs[1:], procs[:1]):
            for p in group:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
            for p in group:
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(5)
        subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()
