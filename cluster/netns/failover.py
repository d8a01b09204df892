#!/usr/bin/env python3
"""The failover run of issue 29 (cluster/netns/failover.sh sets up the hosts and calls this).

Usage: failover.py run BIN_DIR WORK TARGET    (TARGET: netns PREFIX BASE, or loopback PORT)
       failover.py probe ENDPOINT leader|not-leader TIMEOUT_S
         prints time.monotonic() when ENDPOINT first answers STATUS with STATUS-REPLY (leader) or with
         anything else (not-leader), or 'timeout'; run inside a namespace by `run`.

Hosts: 0 and 1 are heads (opcoord --ha, own state dir, --replication sync), 2 runs etcd, 3 and 4 run
opworker --connect HEAD_A,HEAD_B. OPQ_FAILOVER_OPS `shell` ops in layers of 200 (each after 2 of the
layer before; each appends its id to a file of its worker host), submitted with both endpoints. At
OPQ_FAILOVER_KILLS + OPQ_FAILOVER_CUTS seeded moments spread over the run (progress = ops run), the
leader is found (the head answering STATUS), its standby awaited in sync, then either SIGKILLed
(takeover = SIGKILL -> first STATUS-REPLY from the other head; then restarted on its own state dir)
or its link cut (veth down: it must stop serving, the other is elected; the link comes back and the
old one must follow as a standby, never serve). Checks: an `opctl wait` started before the faults sees the
run finish; every op succeeded with its own result, ran
exactly once (0 re-runs: no worker is lost here; OPQ_FAILOVER_MAX_RERUNS tolerates some); each takeover
within OPQ_FAILOVER_MAX_TAKEOVER_S (default 2 x TTL + 1 s); a cut-off leader stops serving within its lease
and before the other serves. Prints the takeover figures; exit 0 when everything holds.
"""
import collections
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import time
import urllib.request

SIGNATURE, VERSION, STATUS, STATUS_REPLY = b"OQ", 1, 38, 39


def probe_once(ctx, endpoint, timeout_ms=150):
    """The command byte of ENDPOINT's answer to an empty STATUS, or None (no answer in time)."""
    import zmq
    s = ctx.socket(zmq.DEALER)
    s.setsockopt(zmq.LINGER, 0)
    try:
        s.connect(endpoint)
        s.send_multipart([SIGNATURE + bytes([VERSION, STATUS]) + (1).to_bytes(4, "big"), b""])
        if s.poll(timeout_ms):
            frames = s.recv_multipart()
            return frames[0][3] if len(frames[0]) >= 4 else -1
        return None
    finally:
        s.close()


def probe_main(endpoint, want, timeout_s):
    import zmq
    ctx = zmq.Context()
    until = time.monotonic() + timeout_s
    while time.monotonic() < until:
        code = probe_once(ctx, endpoint)
        now = time.monotonic()
        if (want == "leader" and code == STATUS_REPLY) or (want == "not-leader" and code is not None and code != STATUS_REPLY):
            print(f"{now:.6f}")
            return 0
        time.sleep(0.01)
    print("timeout")
    return 1


class Cluster:
    def __init__(self, bin_dir, work, target):
        self.bin, self.work, self.target = bin_dir, work, target
        self.netns = target[0] == "netns"
        if self.netns:
            self.prefix, self.base = target[1], int(target[2])
            self.addr = [f"198.18.{self.base + n}.2" for n in range(5)]
            self.ports = [7600, 7600]
            self.etcd_ports = (2379, 2380)
        else:
            p = int(target[1])
            self.addr = ["127.0.0.1"] * 5
            self.ports = [p, p + 1]
            self.etcd_ports = (p + 2, p + 3)
        self.heads = [f"tcp://{self.addr[i]}:{self.ports[i]}" for i in (0, 1)]
        self.etcd_url = f"http://{self.addr[2]}:{self.etcd_ports[0]}"
        self.procs = {}
        self.logs = os.path.join(work, "logs")
        os.makedirs(self.logs, exist_ok=True)
        self.ttl = os.environ.get("OPQ_FAILOVER_LEASE_TTL", "1")
        self.group = f"failover{os.getpid()}"

    def ns(self, host):
        return f"{self.prefix}-h{host}"

    def launch(self, host, name, argv, env=None):
        cmd = (["ip", "netns", "exec", self.ns(host)] if self.netns else []) + argv
        log = open(os.path.join(self.logs, f"{name}.log"), "ab")
        e = {k: v for k, v in os.environ.items() if k not in ("OPQ_KEY", "OPQ_COORDINATOR_KEY", "OPCOORD")}
        e.update(env or {})
        # ip netns exec execs in place: the PID is the program's, so SIGKILL reaches it.
        self.procs[name] = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=e, start_new_session=True)

    def kill(self, name, sig=signal.SIGKILL):
        p = self.procs.get(name)
        if p and p.poll() is None:
            os.kill(p.pid, sig)
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.kill(p.pid, signal.SIGKILL)
                p.wait(timeout=5)

    def stop_all(self):
        for name in [n for n in self.procs if n.startswith("worker")] + [n for n in self.procs if not n.startswith("worker")]:
            self.kill(name, signal.SIGTERM)

    def start_etcd(self):
        c, p = self.etcd_ports
        a = self.addr[2]
        etcd = os.environ.get("OPQ_ETCD", "etcd")
        self.launch(2, "etcd", [etcd, "--name", "opq-failover", "--data-dir", os.path.join(self.work, "etcd"),
                                "--listen-client-urls", f"http://{a}:{c}", "--advertise-client-urls", f"http://{a}:{c}",
                                "--listen-peer-urls", f"http://{a}:{p}", "--initial-advertise-peer-urls", f"http://{a}:{p}",
                                "--initial-cluster", f"opq-failover=http://{a}:{p}",
                                "--heartbeat-interval", "50", "--election-timeout", "500"])
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        wait_for("etcd to answer /health", 30, lambda: b'"true"' in opener.open(self.etcd_url + "/health", timeout=1).read(),
                 lambda: tail(os.path.join(self.logs, "etcd.log")))

    def start_head(self, i):
        self.launch(i, f"head{i}", [f"{self.bin}/opcoord", "--bind", self.heads[i], "--advertise", self.heads[i],
                                    "--ha", f"etcd={self.etcd_url}", "--ha-group", self.group, "--ha-lease-ttl", self.ttl,
                                    "--state-dir", os.path.join(self.work, f"head{i}.state"), "--replication", "sync",
                                    "--http", "off"] + (["--insecure"] if self.netns else []))

    def start_worker(self, host):
        self.launch(host, f"worker{host}", [f"{self.bin}/opworker", "--connect", ",".join(self.heads), "--name", f"w{host}",
                                            "--slots", os.environ.get("OPQ_FAILOVER_SLOTS", "4"), "--allow-kinds", "all",
                                            "--pass-env", "OPQ_FAILOVER_HOST"], env={"OPQ_FAILOVER_HOST": f"h{host}"})

    def opctl(self, *args, endpoints=None, timeout=30):
        env = {k: v for k, v in os.environ.items() if k not in ("OPQ_KEY", "OPQ_COORDINATOR_KEY")}
        env["OPCOORD"] = endpoints or ",".join(self.heads)
        return subprocess.run([f"{self.bin}/opctl", *args], capture_output=True, text=True, env=env, timeout=timeout)

    def leader(self, ctx):
        for i in (0, 1):
            if self.procs[f"head{i}"].poll() is None and probe_once(ctx, self.heads[i]) == STATUS_REPLY:
                return i
        return None

    def standby_in_sync(self, leader):
        r = self.opctl("ha", "standbys", "--json", "--request-timeout", "2", endpoints=self.heads[leader], timeout=10)
        try:
            doc = json.loads(r.stdout)
        except ValueError:
            return False
        rows = doc if isinstance(doc, list) else doc.get("standbys", [])
        return any(s.get("state") == "sync" for s in rows)

    def head_log(self, i):
        return tail(os.path.join(self.logs, f"head{i}.log"), 40)


def tail(path, n=30):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError as e:
        return str(e)


class Failed(Exception):
    pass


def wait_for(what, timeout, cond, logs=lambda: "", interval=0.05):
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        try:
            if cond():
                return
        except Exception:
            pass
        time.sleep(interval)
    raise Failed(f"timed out after {timeout} s waiting for {what}\n{logs()}")


def ran(work):
    n = 0
    for h in (3, 4):
        try:
            with open(os.path.join(work, f"runs.h{h}.txt")) as f:
                n += sum(1 for _ in f)
        except OSError:
            pass
    return n


def graph(n, seed, work):
    rng = random.Random(seed)
    width = min(200, n)
    ops = []
    for i in range(n):
        layer = i // width
        after = sorted({f"o{(layer - 1) * width + rng.randrange(width)}" for _ in range(2)}) if layer else []
        ops.append({"id": f"o{i}", "kind": "shell", "queue": "failover", "after": after,
                    "payload": {"command": f'echo "$OPQ_OP_ID" >> {work}/runs.$OPQ_FAILOVER_HOST.txt; echo "$OPQ_OP_ID"'}})
    return {"operations": ops}


def run_main(bin_dir, work, target):
    import zmq
    ops = int(os.environ.get("OPQ_FAILOVER_OPS", "20000"))
    kills = int(os.environ.get("OPQ_FAILOVER_KILLS", "5"))
    cuts = int(os.environ.get("OPQ_FAILOVER_CUTS", "1"))
    seed = int(os.environ.get("OPQ_FAILOVER_SEED", "1"))
    max_reruns = int(os.environ.get("OPQ_FAILOVER_MAX_RERUNS", "0"))
    c = Cluster(bin_dir, work, target)
    if not c.netns and cuts:
        print("   (loopback: no link to cut; kills only)")
        cuts = 0
    ctx = zmq.Context()
    rng = random.Random(seed)
    faults = ["kill"] * kills
    for _ in range(cuts):  # never first: the first failover is a plain kill
        faults.insert(rng.randrange(1, len(faults) + 1), "cut")
    # Seeded moments spread over the run: fault k when the ops run pass (k + 1 ± 0.3) / (F + 1) of the total.
    marks = [int(ops * (k + 0.7 + 0.6 * rng.random()) / (len(faults) + 1)) for k in range(len(faults))]
    takeovers, cut_figures = [], []
    ok = True
    try:
        c.start_etcd()
        for i in (0, 1):
            c.start_head(i)
        wait_for("a leader", 30, lambda: c.leader(ctx) is not None, lambda: c.head_log(0) + c.head_log(1))
        first = c.leader(ctx)
        wait_for("the standby in sync", 30, lambda: c.standby_in_sync(first), lambda: c.head_log(0) + c.head_log(1))
        for h in (3, 4):
            c.start_worker(h)
        wait_for("both workers registered", 30,
                 lambda: len(json.loads(c.opctl("workers", "--json", "--request-timeout", "2").stdout)) >= 2,
                 lambda: tail(os.path.join(c.logs, "worker3.log")))
        with open(os.path.join(work, "graph.json"), "w") as f:
            json.dump(graph(ops, seed, work), f)
        for h in (3, 4):
            open(os.path.join(work, f"runs.h{h}.txt"), "a").close()
            os.chmod(os.path.join(work, f"runs.h{h}.txt"), 0o666)
        t_run = time.monotonic()
        r = c.opctl("submit", os.path.join(work, "graph.json"), "--run", "failover", timeout=300)
        if r.returncode != 0:
            raise Failed(f"submit failed: {r.stderr}")
        print(f"== {ops} shell ops submitted to {c.heads} in {time.monotonic() - t_run:.1f} s; faults {faults} at ops run {marks}")
        # A client waiting through every failover (given both endpoints): it must see the run finish.
        env = {k: v for k, v in os.environ.items() if k not in ("OPQ_KEY", "OPQ_COORDINATOR_KEY")}
        env["OPCOORD"] = ",".join(c.heads)
        waiter = subprocess.Popen([f"{bin_dir}/opctl", "wait", "--run", "failover", "--timeout", "900"], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for k, (what, mark) in enumerate(zip(faults, marks), 1):
            wait_for(f"{mark} ops to have run", 900, lambda: ran(work) >= mark, interval=0.1)
            leader = None

            def found():
                nonlocal leader
                leader = c.leader(ctx)
                return leader is not None and c.standby_in_sync(leader)
            wait_for("a leader with its standby in sync", 60, found, lambda: c.head_log(0) + c.head_log(1))
            other = 1 - leader
            if what == "kill":
                t0 = time.monotonic()
                os.kill(c.procs[f"head{leader}"].pid, signal.SIGKILL)
                t1 = probe_until(ctx, c.heads[other], 20)
                c.procs[f"head{leader}"].wait(timeout=10)
                if t1 is None:
                    raise Failed(f"head {other} did not lead within 20 s of SIGKILL\n{c.head_log(other)}")
                takeovers.append(t1 - t0)
                print(f"   fault {k}: SIGKILL of head {leader} at {ran(work)} ops run; head {other} answered after {t1 - t0:.3f} s")
                c.start_head(leader)
            else:
                cut_ok, figures = cut_leader(c, ctx, leader, k, work)
                ok &= cut_ok
                cut_figures.append(figures)
        print(f"   {len(faults)} faults done; waiting for the run")
        try:
            wout, werr = waiter.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            waiter.kill()
            wout, werr = waiter.communicate()
        through = waiter.returncode == 0 and f"finished: {ops} succeeded" in wout
        print(f"   opctl wait started before the faults: exit {waiter.returncode}: {wout.strip()} "
              f"({len([l for l in werr.splitlines() if l.strip()])} lines on stderr){'' if through else ' FAIL'}")
        if not through:
            print(werr[-3000:])
        ok &= through
        w = c.opctl("wait", "--run", "failover", "--timeout", "900", timeout=960)
        st = c.opctl("status", "--run", "failover", "--json", "--results", "--limit", str(ops), timeout=300)
        ok &= w.returncode == 0
        if w.returncode != 0:
            print(f"   wait: {w.stdout}{w.stderr}")
        ok &= check(st.stdout, work, ops, max_reruns)
        print(f"   run took {time.monotonic() - t_run:.1f} s")
    except Failed as e:
        print(f"FAIL: {e}")
        ok = False
    finally:
        c.stop_all()
    if takeovers:
        print(f"takeover (SIGKILL of the leader -> first STATUS accepted by the new one, lease TTL {c.ttl} s): "
              f"p50 {statistics.median(takeovers):.3f} s, max {max(takeovers):.3f} s over {len(takeovers)} failovers "
              f"({', '.join(f'{t:.3f}' for t in takeovers)})")
    bound = float(os.environ.get("OPQ_FAILOVER_MAX_TAKEOVER_S", 2 * float(c.ttl) + 1))
    if takeovers and max(takeovers) > bound:
        print(f"FAIL: a takeover took {max(takeovers):.3f} s, over the bound of {bound:g} s (OPQ_FAILOVER_MAX_TAKEOVER_S)")
        ok = False
    for f in cut_figures:
        print(f"link cut: {f}")
    if not ok:
        for name in ("head0", "head1", "worker3"):
            print(f"--- {name} log (tail)\n{tail(os.path.join(c.logs, name + '.log'), 25)}")
    print("PASS: failover" if ok else "FAIL: failover")
    return 0 if ok else 1


def probe_until(ctx, endpoint, timeout):
    """time.monotonic() when ENDPOINT first answers STATUS with STATUS-REPLY (probed every ~10 ms), or None."""
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        if probe_once(ctx, endpoint) == STATUS_REPLY:
            return time.monotonic()
        time.sleep(0.01)
    return None


def cut_leader(c, ctx, leader, k, work):
    """Cuts the leader's link: it must stop serving by itself, the other must be elected; on restore the
    old one must follow as a standby (never answer STATUS) and come back in sync."""
    other = 1 - leader
    hif = f"{c.prefix}h{leader}"
    t0 = time.monotonic()
    subprocess.run(["ip", "link", "set", hif, "down"], check=True)
    bound = float(c.ttl) + 5
    stopped = subprocess.Popen(["ip", "netns", "exec", c.ns(leader), sys.executable, os.path.abspath(__file__),
                                "probe", c.heads[leader], "not-leader", str(bound)], stdout=subprocess.PIPE, text=True)
    t_new = probe_until(ctx, c.heads[other], bound)
    out = stopped.communicate(timeout=bound + 10)[0].strip()
    t_stop = None if out in ("", "timeout") else float(out)
    ok = True
    if t_stop is None:
        print(f"   fault {k}: FAIL the cut-off leader head {leader} still served {bound} s after the cut")
        ok = False
    if t_new is None:
        print(f"   fault {k}: FAIL head {other} was not elected within {bound} s of the cut\n{c.head_log(other)}")
        ok = False
    # It stops an eighth of the TTL before its lease could expire (last renewed before the cut); 0.1 s for the probe.
    if t_stop is not None and t_stop - t0 > float(c.ttl) + 0.1:
        print(f"   fault {k}: FAIL the cut-off leader served {t_stop - t0:.3f} s after the cut, past its lease ({c.ttl} s)")
        ok = False
    if t_stop is not None and t_new is not None and t_stop > t_new:
        print(f"   fault {k}: FAIL two leaders: head {other} served at {t_new - t0:.3f} s, the cut one until {t_stop - t0:.3f} s")
        ok = False
    time.sleep(0.5)  # the partition lasts a little past the takeover (not synchronisation: a fault's length)
    subprocess.run(["ip", "link", "set", hif, "up"], check=True)
    subprocess.run(["ip", "-n", c.ns(leader), "route", "replace", "198.18.0.0/15", "via", f"198.18.{c.base + leader}.1"], check=False)
    t_up = time.monotonic()
    # Restored: the old leader must follow (answer STATUS with a refusal), never serve, and catch up in sync.
    served = False
    in_sync = False
    until = time.monotonic() + 30
    while time.monotonic() < until and not in_sync:
        if probe_once(ctx, c.heads[leader]) == STATUS_REPLY:
            served = True
        new = c.leader(ctx)
        in_sync = new == other and c.standby_in_sync(other)
        time.sleep(0.05)
    sync_s = time.monotonic() - t_up
    if served:
        print(f"   fault {k}: FAIL head {leader} served again after its link came back")
        ok = False
    if not in_sync:
        print(f"   fault {k}: FAIL head {leader} did not follow head {other} in sync within 30 s\n{c.head_log(leader)}")
        ok = False
    fig = (f"head {leader} stopped serving {(t_stop - t0) if t_stop else float('nan'):.3f} s after the cut, "
           f"head {other} served after {(t_new - t0) if t_new else float('nan'):.3f} s; "
           f"restored, head {leader} followed in sync after {sync_s:.2f} s")
    print(f"   fault {k}: link of head {leader} cut at {ran(work)} ops run: {fig}{'' if ok else ' FAIL'}")
    return ok, fig


def check(status_json, work, n, max_reruns):
    try:
        doc = json.loads(status_json)
    except ValueError as e:
        print(f"  no status: {e}")
        return False
    ops = doc.get("operations", [])
    ok = sum(1 for o in ops if o.get("outcome") == "succeeded")
    wrong = [o.get("id") for o in ops if o.get("outcome") == "succeeded" and (o.get("result") or "").strip() != f"failover/{o.get('id')}"]
    runs = collections.Counter()
    per_host = {}
    for h in (3, 4):
        with open(os.path.join(work, f"runs.h{h}.txt")) as f:
            lines = [l for l in f.read().split("\n") if l]
        per_host[f"h{h}"] = len(lines)
        runs.update(lines)
    reruns = sum(runs.values()) - len(runs)
    twice = sorted(k for k, v in runs.items() if v > 1)
    print(f"  {ok} of {n} succeeded; {len(wrong)} without their result; {len(runs)} ran (per worker host {per_host}); "
          f"re-runs {reruns}{' (e.g. ' + ', '.join(twice[:5]) + ')' if twice else ''}")
    return ok == n and not wrong and len(runs) == n and reruns <= max_reruns


if __name__ == "__main__":
    if len(sys.argv) >= 5 and sys.argv[1] == "probe":
        sys.exit(probe_main(sys.argv[2], sys.argv[3], float(sys.argv[4])))
    if len(sys.argv) >= 5 and sys.argv[1] == "run":
        sys.exit(run_main(sys.argv[2], sys.argv[3], sys.argv[4:]))
    print(__doc__, file=sys.stderr)
    sys.exit(2)
