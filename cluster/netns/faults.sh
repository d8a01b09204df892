#!/usr/bin/env bash
# cluster/netns/faults.sh BIN_DIR — measures how the cluster notices failures on real TCP paths.
#
# 1 coordinator + 3 worker hosts (netns.sh, 4 slots each), liveness 3 × 1000 ms by default. While
# oploadtest runs a layered graph of OPQ_FAULTS_OPS (default 20,000) sleep operations of
# OPQ_FAULTS_OP_MS (default 10) ms — 20 layers of 1,000, each op after 2 of the layer before — at the
# same moment:
#   host 1: kill -9 its worker (respawned once the coordinator has noticed)
#   host 2: SIGSTOP its worker for OPQ_FAULTS_FREEZE s (default 5, longer than the liveness bound), then SIGCONT
#   host 3: cut its link for OPQ_FAULTS_CUT s (default 10), then restore it
# `opctl workers --json` is polled every 50 ms to time when each worker leaves the coordinator's list
# (declared lost or gone) and when it is back. oploadtest follows the run on a WATCH stream; at the end
# every operation must have succeeded and produced exactly one FINISHED event (none lost, none
# finished twice), and each failure must have been detected within the liveness bound + 1 s. It
# prints the detection times, the ops, re-dispatches (attempts > 1) and fenced late reports.
# Then the coordinator is killed with SIGKILL at seeded moments during a second run and restarted on its
# state directory each time (crash.sh: OPQ_CRASH_OPS shell ops, OPQ_CRASH_KILLS kills; every op exactly once).
# Where namespaces are impossible (not root, no veth) it runs on loopback instead (loopback-hosts.sh:
# the same processes on 127.0.0.1; kill -9 and SIGSTOP only — there is no link to cut), or exits 77
# with OPQ_FAULTS_TARGET=netns. OPQ_FAULTS_TARGET=loopback forces loopback.
# Exit 0 when all of that holds; 1 otherwise; 77 when namespaces are impossible and netns was required.
set -Eeuo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NETNS="$HERE/netns.sh"
BIN="${1:-}"
if [ -z "$BIN" ] || [ ! -x "$BIN/opctl" ]; then echo "usage: faults.sh BIN_DIR" >&2; exit 2; fi
BIN="$(cd "$BIN" && pwd)"
HB_MS="${OPQ_FAULTS_HEARTBEAT_MS:-1000}"
LIVENESS="${OPQ_FAULTS_LIVENESS:-3}"
OPS="${OPQ_FAULTS_OPS:-20000}"
OP_MS="${OPQ_FAULTS_OP_MS:-10}"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
STATE_DIR="${OPQ_NETNS_STATE:-/tmp/${OPQ_NETNS_PREFIX:-opq}-netns}"
WORK="$(mktemp -d /tmp/opq-faults.XXXXXX)"
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  "$NETNS" down >/dev/null 2>&1 || true
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

TARGET="${OPQ_FAULTS_TARGET:-auto}"
rc=77
if [ "$TARGET" != loopback ]; then
  set +e
  "$NETNS" up 4
  rc=$?
  set -e
fi
if [ "$rc" -eq 77 ] && [ "$TARGET" != netns ]; then
  echo "== no network namespaces here: loopback processes instead (kill -9 and SIGSTOP; no link to cut)"
  NETNS="$HERE/loopback-hosts.sh"
  STATE_DIR="${OPQ_NETNS_STATE:-/tmp/${OPQ_NETNS_PREFIX:-opq}-loopback}"
  export OPQ_NETNS_STATE="$STATE_DIR"
  "$NETNS" up 4
  TARGET=loopback
elif [ "$rc" -ne 0 ]; then
  exit "$rc"
else
  TARGET=netns
fi
timeout 60 "$NETNS" start "$BIN" --slots 4 --heartbeat-ms "$HB_MS" --liveness "$LIVENESS" >/dev/null
# OPCOORD, and on netns the admin key netns.sh made (OPQ_KEY, OPQ_COORDINATOR_KEY: opctl and oploadtest read them).
eval "$("$NETNS" env)"

echo "== layered run: $OPS sleep ops of $OP_MS ms on 3 worker hosts × 4 slots"
"$BIN/oploadtest" run --workload layered --ops "$OPS" --width 1000 --op-kind sleep --op-ms "$OP_MS" \
  --min-workers 3 --time-limit 240 --watch --timeline-limit 0 --target "$TARGET" --label "faults" \
  --json "$WORK/run.json" >"$WORK/run.txt" 2>&1 &
LOADTEST=$!

set +e
"$PY" - "$BIN/opctl" "$NETNS" "$HB_MS" "$LIVENESS" "${OPQ_FAULTS_FREEZE:-5}" "${OPQ_FAULTS_CUT:-10}" "${OPQ_NETNS_PREFIX:-opq}" "$TARGET" <<'EOF'
import json, subprocess, sys, time
opctl, netns, hb_ms, liveness, freeze_s, cut_s, prefix = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6]), sys.argv[7]
can_cut = sys.argv[8] == "netns"
bound = hb_ms * liveness / 1000.0

def workers():
    try:
        out = subprocess.run([opctl, "workers", "--json", "--request-timeout", "2"], capture_output=True, text=True, timeout=5).stdout
        # A worker keeps its id across reconnects; a new session is what says it came back.
        return {w["name"]: (w["id"], w.get("session", 0)) for w in json.loads(out)}
    except Exception:
        return None

def ns(*args):
    subprocess.run([netns, *args], check=True, stderr=subprocess.DEVNULL)

# Start once every worker holds operations (bounded).
until = time.monotonic() + 30
while time.monotonic() < until:
    try:
        ws = json.loads(subprocess.run([opctl, "workers", "--json"], capture_output=True, text=True, timeout=5).stdout)
        if len(ws) >= 3 and all(w.get("in_flight", 0) > 0 for w in ws):
            break
    except Exception:
        pass
    time.sleep(0.1)
time.sleep(0.5)
before = workers()
print(f"workers before: {before}")
t0 = time.monotonic()
ns("kill", "1"); ns("freeze", "2")
if can_cut:
    ns("cut", "3")
h1, h2, h3 = (f"{prefix}-h{n}" for n in (1, 2, 3))
faults = {h1: "kill -9", h2: f"SIGSTOP {freeze_s:g} s"}
if can_cut:
    faults[h3] = f"link cut {cut_s:g} s"
gone, back = {}, {}
thawed = respawned = False
restored = not can_cut
deadline = t0 + max(freeze_s, cut_s) + 3 * bound + 15
while time.monotonic() < deadline:
    now = time.monotonic() - t0
    w = workers()
    if w is not None:
        for name in faults:
            if name not in gone and (name not in w or w[name] != before.get(name)):
                gone[name] = now
            if name in gone and name not in back and name in w and w[name] != before.get(name):
                back[name] = now
    if not thawed and now >= freeze_s:
        ns("thaw", "2"); thawed = True; print(f"  t={now:5.2f}s thaw host 2")
    if not restored and now >= cut_s:
        ns("restore", "3"); restored = True; print(f"  t={now:5.2f}s restore host 3")
    if not respawned and h1 in gone:
        ns("respawn", "1"); respawned = True; print(f"  t={now:5.2f}s respawn host 1")
    if thawed and restored and len(back) == len(faults):
        break
    time.sleep(0.05)
ok = True
print(f"liveness bound {bound:g} s (heartbeat {hb_ms} ms × {liveness}); poll interval 50 ms + one opctl call")
for name, what in faults.items():
    g, b = gone.get(name), back.get(name)
    status = "ok"
    if g is None:
        status, ok = "NOT DETECTED", False
    elif g > bound + 1.0:
        status, ok = "SLOW", False
    print(f"  {name:7s} {what:16s} left the worker list after {g if g is not None else float('nan'):5.2f} s; "
          f"back (new session) after {b if b is not None else float('nan'):5.2f} s   {status}")
sys.exit(0 if ok else 1)
EOF
detect_rc=$?

echo "== waiting for the layered run"
wait "$LOADTEST"
wait_rc=$?
cat "$WORK/run.txt"
# Then the coordinator itself: killed with SIGKILL again and again during a run (A5; crash.sh).
"$HERE/crash.sh" "$BIN" "$NETNS"
crash_rc=$?
"$NETNS" stop >/dev/null 2>&1 || true
"$PY" - "$WORK/run.json" "$OPS" <<'EOF'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"  no report from oploadtest: {e}")
    sys.exit(1)
x = r.get("exactly_once") or {}
ok = r.get("outcomes", {}).get("succeeded", 0) == r.get("ops") == int(sys.argv[2]) and x.get("ok") and r.get("unfinished") == 0
print(f"  ops {r.get('ops')} (expected {sys.argv[2]}): {r.get('outcomes')}; unfinished {r.get('unfinished')}; "
      f"re-dispatched {r.get('redispatched')}; fenced late reports {r.get('fenced')}; "
      f"finished exactly once {x.get('finished_once')}, twice or more {x.get('finished_twice_or_more')}, "
      f"never {x.get('never_finished')}; wall {r.get('wall_s', 0):.1f} s")
sys.exit(0 if ok else 1)
EOF
ops_rc=$?
set -e
echo "== coordinator log (lost/joined)"
grep -E 'lost|joined|left|fenced' "$STATE_DIR/logs/h0.opcoord.log" | tail -n 20 || true
if [ "$detect_rc" -eq 0 ] && [ "$wait_rc" -eq 0 ] && [ "$ops_rc" -eq 0 ] && [ "$crash_rc" -eq 0 ]; then
  echo "PASS: faults"
else
  echo "FAIL: faults (detection $detect_rc, wait $wait_rc, ops $ops_rc, coordinator crashes $crash_rc)"
  exit 1
fi
