#!/usr/bin/env python3
"""The e2e workloads of `scripts/bench e2e` on Dask distributed or Ray, for `--peers`.

    python dask_bench.py --framework dask|ray [--workers 2] [--threads 2] [--independent N] [--chain N]
                         [--layers L] [--width W] [--cancel N] [--budget S]

Prints one JSON object per workload per line ({"framework", "name", figures…, "note"}), like
`opbench --json`. Every workload is bounded by --budget seconds: when it runs out, the figures are
computed from what finished by then (ops/s = finished / elapsed) and the note says so. The whole
script is bounded too (a watchdog shuts the cluster down and exits).

Workloads (same shapes as Sources/Tools/opbench/E2EBench.swift):
  independent  N no-op tasks, all submitted, then waited for; ops/s from the first submit to the last result.
  chain        N tasks, each taking the previous one's result. Each task returns (start, end) wall-clock
               times taken inside the task; hop = end(i) - end(i-1) (finished to finished, as ours), and
               start_hop = start(i) - end(i-1) (finished on one worker process to started on the next).
  layered      L layers x W tasks, each taking 2 results of the previous layer; ops/s.
  cancel       a running sleep task (2 s on Dask, 60 s on Ray) is cancelled; time from the cancel call until
               the client sees the task cancelled. Only cancels that took effect are timed; the others are
               counted. (Dask does not interrupt a running task: its thread keeps sleeping; Ray's plain
               cancel did not interrupt time.sleep in 2.60, so force=True is used: it kills the worker
               process.)
"""
import argparse
import json
import os
import sys
import threading
import time


def emit(framework, name, note="", **fields):
    out = {"framework": framework, "name": name}
    for k, v in fields.items():
        if isinstance(v, float):
            v = None if v != v or v in (float("inf"), float("-inf")) else round(v, 3)  # JSON has no NaN
        out[k] = v
    if note:
        out["note"] = note
    print(json.dumps(out), flush=True)


def quantile(xs, q):
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, int(round((len(s) - 1) * q)))]


def report_rate(fw, name, note, n, done, t0, t1, budget):
    """A throughput workload's line: the rate over what finished, and a note if it gave up."""
    if done < n:
        note += f"; gave up after {budget} s: {done} of {n} finished (rate over those)"
    emit(fw, name, note, ops=n, finished=done, ops_per_s=done / (t1 - t0), total_s=t1 - t0)


def report_chain(fw, times, n, t0, t1, budget):
    """The chain's line from each finished task's in-task (start, end) wall-clock times, in order."""
    hop = [(times[i][1] - times[i - 1][1]) * 1e6 for i in range(1, len(times))]
    start_hop = [(times[i][0] - times[i - 1][1]) * 1e6 for i in range(1, len(times))]
    note = "hop = end(i)-end(i-1) from in-task wall clocks"
    if len(times) < n:
        note += f"; gave up after {budget} s: {len(times)} of {n} finished"
    emit(fw, "chain", note, ops=n, finished=len(times), hop_p50_us=quantile(hop, 0.5),
         hop_p99_us=quantile(hop, 0.99), start_hop_p50_us=quantile(start_hop, 0.5),
         client_us_per_op=(t1 - t0) * 1e6 / max(1, len(times)))


def report_cancel(fw, note, lat, missed):
    if missed:
        note += f"; {missed} cancels did not take effect within the budget (not timed)"
    emit(fw, "cancel", note, n=len(lat), p50_us=quantile(lat, 0.5), p99_us=quantile(lat, 0.99), missed=missed)


def noop(*args):
    return None


def timed(prev=None):
    start = time.time()
    return (start, time.time())


def sleeper(seconds):
    time.sleep(seconds)
    return None


# ---------------------------------------------------------------------------- Dask

def run_dask(a):
    import dask
    from distributed import Client, LocalCluster, wait

    cluster = LocalCluster(n_workers=a.workers, threads_per_worker=a.threads, processes=True,
                           dashboard_address=None, silence_logs=40)
    client = Client(cluster)
    fw = "dask"
    state = {"closed": False}

    def close():
        if not state["closed"]:
            state["closed"] = True
            try:
                client.close(timeout=10)
                cluster.close(timeout=10)
            except Exception:
                pass
    try:
        conf = f"dask {dask.__version__}, LocalCluster {a.workers} worker processes x {a.threads} threads, default config"

        # independent
        t0 = time.time()
        futs = []
        deadline = t0 + a.budget
        step = 8192
        for i in range(0, a.independent, step):
            futs += client.map(noop, range(i, min(a.independent, i + step)), pure=False)
            if time.time() > deadline:
                break
        try:
            wait(futs, timeout=max(0.0, deadline - time.time()))
        except Exception:
            pass
        t1 = time.time()
        done = sum(1 for f in futs if f.status == "finished")
        report_rate(fw, "independent", conf, a.independent, done, t0, t1, a.budget)
        if done < a.independent:
            client.cancel(futs)  # no dependencies here, so no deep recursion in the scheduler
        del futs

        # chain
        t0 = time.time()
        deadline = t0 + a.budget
        futs = []
        prev = None
        for i in range(a.chain):
            prev = client.submit(timed, prev, pure=False)
            futs.append(prev)
        try:
            wait(futs, timeout=max(0.0, deadline - time.time()))
        except Exception:
            pass
        t1 = time.time()
        done = [f for f in futs if f.status == "finished"]
        times = client.gather(done) if done else []
        report_chain(fw, times, a.chain, t0, t1, a.budget)
        # Not cancelled when it gave up: cancelling a 2,000-deep chain raises RecursionError in the
        # scheduler (seen with dask 2026.8.0); the rest of the chain runs out on its own.
        del futs, prev, done

        # layered
        t0 = time.time()
        deadline = t0 + a.budget
        futs = []
        prev_layer = None
        for l in range(a.layers):
            if prev_layer is None:
                layer = client.map(noop, range(a.width), pure=False)
            else:
                layer = [client.submit(noop, prev_layer[j], prev_layer[(j + 1) % a.width], pure=False)
                         for j in range(a.width)]
            futs += layer
            prev_layer = layer
            if time.time() > deadline:
                break
        try:
            wait(futs, timeout=max(0.0, deadline - time.time()))
        except Exception:
            pass
        t1 = time.time()
        n = a.layers * a.width
        done = sum(1 for f in futs if f.status == "finished")
        report_rate(fw, "layered", "each task takes 2 results of the previous layer", n, done, t0, t1, a.budget)
        if done < n:
            client.cancel(futs)  # at most `layers` deep
        del futs, prev_layer, layer

        # cancel: wait until the scheduler says a worker is processing it, then 50 ms for it to start.
        # Dask cannot interrupt a running task, so the task sleeps 2 s, not 60 (a 60 s sleep would hold
        # its thread for a minute after the cancel; restarting workers instead proved fragile here).
        lat, missed = [], 0
        deadline = time.time() + a.budget
        for i in range(a.cancel):
            if time.time() > deadline:
                break
            f = client.submit(sleeper, 2, pure=False)
            while time.time() < deadline and not any(f.key in v for v in client.processing().values()):
                time.sleep(0.001)
            time.sleep(0.05)
            t0 = time.perf_counter()
            f.cancel()
            while f.status != "cancelled" and time.time() < deadline:
                time.sleep(0.0001)
            if f.status == "cancelled":
                lat.append((time.perf_counter() - t0) * 1e6)
            else:
                missed += 1
        report_cancel(fw, "future.cancel() → future.status == cancelled; the running task is NOT interrupted "
                      "(its thread sleeps on; a 2 s sleep is used for that reason)", lat, missed)
    finally:
        close()


# ---------------------------------------------------------------------------- Ray

def run_ray(a):
    import ray

    ray.init(num_cpus=a.workers, include_dashboard=False, log_to_driver=False,
             object_store_memory=256 * 1024 * 1024, logging_level="ERROR")
    fw = "ray"
    try:
        conf = f"ray {ray.__version__}, ray.init(num_cpus={a.workers}) on this machine"
        rnoop = ray.remote(noop)
        rtimed = ray.remote(timed)
        rsleep = ray.remote(sleeper)
        ray.get([rnoop.remote() for _ in range(100)])  # warm the worker processes

        # independent
        t0 = time.time()
        deadline = t0 + a.budget
        refs = []
        for i in range(a.independent):
            refs.append(rnoop.remote())
            if i % 1024 == 0 and time.time() > deadline:
                break
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=max(0.0, deadline - time.time()))
        t1 = time.time()
        done = len(ready)
        report_rate(fw, "independent", conf, a.independent, done, t0, t1, a.budget)
        if done < len(refs):
            readyset = set(ready)
            for r in refs:
                if r not in readyset:
                    ray.cancel(r)
        del refs, ready

        # chain
        t0 = time.time()
        deadline = t0 + a.budget
        refs = []
        prev = None
        for i in range(a.chain):
            prev = rtimed.remote(prev)
            refs.append(prev)
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=max(0.0, deadline - time.time()))
        t1 = time.time()
        readyset = set(ready)
        times = ray.get([r for r in refs if r in readyset])
        report_chain(fw, times, a.chain, t0, t1, a.budget)
        del refs, ready, prev

        # layered
        t0 = time.time()
        deadline = t0 + a.budget
        refs = []
        prev_layer = None
        for l in range(a.layers):
            if prev_layer is None:
                layer = [rnoop.remote() for _ in range(a.width)]
            else:
                layer = [rnoop.remote(prev_layer[j], prev_layer[(j + 1) % a.width]) for j in range(a.width)]
            refs += layer
            prev_layer = layer
            if time.time() > deadline:
                break
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=max(0.0, deadline - time.time()))
        t1 = time.time()
        n = a.layers * a.width
        done = len(ready)
        report_rate(fw, "layered", "each task takes 2 results of the previous layer", n, done, t0, t1, a.budget)
        del refs, ready, prev_layer, layer

        # cancel: ray.cancel of a running sleep task.
        lat, missed = [], 0
        deadline = time.time() + a.budget
        for i in range(a.cancel):
            if time.time() > deadline:
                break
            r = rsleep.remote(60)
            time.sleep(0.2)  # Ray has no cheap "is it running" query; 200 ms is ample for a warm worker
            t0 = time.perf_counter()
            # force=True: a plain ray.cancel did not interrupt time.sleep within 10 s in Ray 2.60
            # (checked by hand); force kills the worker process running it (Ray starts a new one).
            ray.cancel(r, force=True)
            try:
                ray.get(r, timeout=max(0.1, min(10.0, deadline - time.time())))
                missed += 1  # it ran to the end
            except (ray.exceptions.TaskCancelledError, ray.exceptions.WorkerCrashedError):
                lat.append((time.perf_counter() - t0) * 1e6)
            except Exception:
                missed += 1  # e.g. GetTimeoutError: not cancelled within the wait
        report_cancel(fw, "ray.cancel(ref, force=True) → ray.get raises TaskCancelledError; force kills the "
                      "worker process (a plain cancel did not stop time.sleep); submitted 200 ms before", lat, missed)
    finally:
        ray.shutdown()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--framework", choices=["dask", "ray"], required=True)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--independent", type=int, default=100_000)
    p.add_argument("--chain", type=int, default=2_000)
    p.add_argument("--layers", type=int, default=100)
    p.add_argument("--width", type=int, default=1_000)
    p.add_argument("--cancel", type=int, default=50)
    p.add_argument("--budget", type=float, default=120)
    a = p.parse_args()

    # The whole run is bounded: 4 workloads plus start-up and shutdown.
    def watchdog():
        print(json.dumps({"framework": a.framework, "name": "watchdog",
                          "note": "whole peer run exceeded its time bound; exiting"}), flush=True)
        os._exit(3)
    t = threading.Timer(a.budget * 4 + 90, watchdog)
    t.daemon = True
    t.start()
    try:
        import importlib
        importlib.import_module("distributed" if a.framework == "dask" else "ray")
    except Exception as e:
        emit(a.framework, "skipped", f"{a.framework} not importable: {e}")
        return 0
    try:
        (run_dask if a.framework == "dask" else run_ray)(a)
    except Exception as e:
        emit(a.framework, "failed", f"{type(e).__name__}: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
