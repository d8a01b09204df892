#!/usr/bin/env bash
# cluster/netns/faults.sh BIN_DIR — measures how the cluster notices failures on real TCP paths.
#
# 1 coordinator + 3 worker hosts (netns.sh), liveness 3 × 1000 ms by default. While a graph of
# OPQ_FAULTS_OPS sleep operations (100 ms each) runs, at the same moment:
#   host 1: kill -9 its worker (respawned once the coordinator has noticed)
#   host 2: SIGSTOP its worker for OPQ_FAULTS_FREEZE s (default 5, longer than the liveness bound), then SIGCONT
#   host 3: cut its link for OPQ_FAULTS_CUT s (default 10), then restore it
# `opctl workers --json` is polled every 50 ms to time when each worker leaves the coordinator's list
# (declared lost or gone) and when it is back. Then it waits for the graph and checks that every
# operation succeeded; it prints detection times, re-dispatches (attempts > 1) and the coordinator's
# count of fenced messages. Exit 0 when every operation succeeded and each detection took at most
# the liveness bound + 1 s; 1 otherwise; 77 when namespaces are impossible.
set -Eeuo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NETNS="$HERE/netns.sh"
BIN="${1:-}"
if [ -z "$BIN" ] || [ ! -x "$BIN/opctl" ]; then echo "usage: faults.sh BIN_DIR" >&2; exit 2; fi
BIN="$(cd "$BIN" && pwd)"
HB_MS="${OPQ_FAULTS_HEARTBEAT_MS:-1000}"
LIVENESS="${OPQ_FAULTS_LIVENESS:-3}"
OPS="${OPQ_FAULTS_OPS:-600}"
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

set +e
"$NETNS" up 4
rc=$?
set -e
[ "$rc" -eq 0 ] || exit "$rc"
timeout 60 "$NETNS" start "$BIN" --slots 2 --heartbeat-ms "$HB_MS" --liveness "$LIVENESS" >/dev/null
OPCOORD="$("$NETNS" endpoint)"
export OPCOORD

"$PY" -c "
print('operations:')
for i in range($OPS):
    print(f'  - id: s{i}\n    kind: sleep\n    payload: 100')" >"$WORK/graph.yaml"
"$BIN/opctl" submit "$WORK/graph.yaml"

set +e
"$PY" - "$BIN/opctl" "$NETNS" "$HB_MS" "$LIVENESS" "${OPQ_FAULTS_FREEZE:-5}" "${OPQ_FAULTS_CUT:-10}" "${OPQ_NETNS_PREFIX:-opq}" <<'EOF'
import json, subprocess, sys, time
opctl, netns, hb_ms, liveness, freeze_s, cut_s, prefix = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6]), sys.argv[7]
bound = hb_ms * liveness / 1000.0

def workers():
    try:
        out = subprocess.run([opctl, "workers", "--json", "--request-timeout", "2"], capture_output=True, text=True, timeout=5).stdout
        return {w["name"]: w["id"] for w in json.loads(out)}
    except Exception:
        return None

def ns(*args):
    subprocess.run([netns, *args], check=True, stderr=subprocess.DEVNULL)

time.sleep(1.5)                      # let every worker fill its slots
before = workers()
print(f"workers before: {before}")
t0 = time.monotonic()
ns("kill", "1"); ns("freeze", "2"); ns("cut", "3")
h1, h2, h3 = (f"{prefix}-h{n}" for n in (1, 2, 3))
faults = {h1: "kill -9", h2: f"SIGSTOP {freeze_s:g} s", h3: f"link cut {cut_s:g} s"}
gone, back = {}, {}
thawed = restored = respawned = False
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
    elif what != "kill -9" and g > bound + 1.0:
        status, ok = "SLOW", False
    print(f"  {name:7s} {what:16s} left the worker list after {g if g is not None else float('nan'):5.2f} s; "
          f"back (new session) after {b if b is not None else float('nan'):5.2f} s   {status}")
sys.exit(0 if ok else 1)
EOF
detect_rc=$?

echo "== waiting for the graph"
timeout 150 "$BIN/opctl" wait --timeout 120
wait_rc=$?
"$BIN/opctl" status --json --limit $((OPS + 10)) >"$WORK/status.json"
"$NETNS" stop >/dev/null 2>&1 || true
fenced="$(grep -o 'fenced messages: [0-9]*' "$STATE_DIR/logs/h0.opcoord.log" | tail -n 1 || true)"
"$PY" - "$WORK/status.json" "$OPS" "${fenced:-fenced messages: ?}" <<'EOF'
import collections, json, sys
ops = json.load(open(sys.argv[1]))["operations"]
outcomes = collections.Counter(o["outcome"] for o in ops)
redispatched = sum(1 for o in ops if o["attempts"] > 1)
print(f"  ops {len(ops)} (expected {sys.argv[2]}): {dict(outcomes)}; re-dispatched {redispatched}; {sys.argv[3]}")
sys.exit(0 if len(ops) == int(sys.argv[2]) and outcomes.get("succeeded", 0) == len(ops) else 1)
EOF
ops_rc=$?
set -e
echo "== coordinator log (lost/joined)"
grep -E 'lost|joined|left|fenced' "$STATE_DIR/logs/h0.opcoord.log" | tail -n 20 || true
if [ "$detect_rc" -eq 0 ] && [ "$wait_rc" -eq 0 ] && [ "$ops_rc" -eq 0 ]; then
  echo "PASS: faults"
else
  echo "FAIL: faults (detection $detect_rc, wait $wait_rc, ops $ops_rc)"
  exit 1
fi
