#!/usr/bin/env bash
# cluster/netns/crash.sh BIN_DIR HOSTS_SCRIPT — the coordinator killed with SIGKILL at seeded random
# moments during a layered run of short shell ops, and started again at once on its state directory
# (A5). Runs on hosts that HOSTS_SCRIPT (netns.sh or loopback-hosts.sh) has started; faults.sh calls it.
#
# OPQ_CRASH_OPS (default 20,000) `shell` ops in layers of 200, each after 2 of the layer before, each
# appending its id to a shared file and printing it; OPQ_CRASH_KILLS (default 10) kills of host 0, each
# 0.2–1.5 s after the last restart (seed OPQ_CRASH_SEED, default 1). Then: every op must have succeeded
# with its own id as result, and appear exactly once in the file — a finished op never runs again, and
# ops running at a crash are handed back by their workers, not run again (no worker is lost, so the
# count of re-runs must be 0; OPQ_CRASH_MAX_RERUNS tolerates a few). Exit 0 when that holds, 1 otherwise.
set -Eeuo pipefail
BIN="${1:?usage: crash.sh BIN_DIR HOSTS_SCRIPT}"
HOSTS="${2:?usage: crash.sh BIN_DIR HOSTS_SCRIPT}"
OPS="${OPQ_CRASH_OPS:-20000}"
KILLS="${OPQ_CRASH_KILLS:-10}"
SEED="${OPQ_CRASH_SEED:-1}"
MAX_RERUNS="${OPQ_CRASH_MAX_RERUNS:-0}"   # ops allowed to have run twice (default none)
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
WORK="$(mktemp -d /tmp/opq-crash.XXXXXX)"
chmod 755 "$WORK"   # the workers (maybe in other namespaces, same file system) append to a file here
trap 'rm -rf "$WORK"' EXIT
eval "$("$HOSTS" env)"   # OPCOORD, and the keys of a netns.sh cluster
touch "$WORK/runs.txt"
chmod 666 "$WORK/runs.txt"

"$PY" - "$OPS" "$SEED" "$WORK/runs.txt" >"$WORK/graph.json" <<'EOF'
import json, random, sys
n, seed, log = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
rng = random.Random(seed)
width = min(200, n)
ops = []
for i in range(n):
    layer = i // width
    after = sorted({f"o{(layer - 1) * width + rng.randrange(width)}" for _ in range(2)}) if layer else []
    ops.append({"id": f"o{i}", "kind": "shell", "queue": "crash", "after": after,
                "payload": {"command": f'echo "$OPQ_OP_ID" >> {log}; echo "$OPQ_OP_ID"'}})
json.dump({"operations": ops}, sys.stdout)
EOF
echo "== coordinator crashes: $OPS shell ops, $KILLS kills with SIGKILL, restarted at once on its state directory"
"$BIN/opctl" submit "$WORK/graph.json" --run crash >/dev/null

for ((k = 1; k <= KILLS; k++)); do
  sleep "$("$PY" -c "import random; r = random.Random($SEED * 7919 + $k); print(f'{0.2 + r.random() * 1.3:.3f}')")"
  pid="$("$HOSTS" pid 0)"
  "$HOSTS" kill 0 >/dev/null 2>&1
  for _ in $(seq 250); do kill -0 "$pid" 2>/dev/null || break; sleep 0.02; done
  "$HOSTS" respawn 0 >/dev/null
done
echo "   $KILLS kills done; waiting for the run"
set +e
# The last one started recovers its journal before it listens, and a first connection refused for 1 s
# means "nothing listens there" to opctl: wait (at most 2 minutes) until it answers.
for _ in $(seq 120); do "$BIN/opctl" status --run crash --limit 1 >/dev/null 2>&1 && break; sleep 0.1; done
"$BIN/opctl" wait --run crash --timeout 600 >"$WORK/wait.txt" 2>&1
wait_rc=$?
"$BIN/opctl" status --run crash --json --results --limit "$OPS" >"$WORK/status.json" 2>"$WORK/status.err"
"$PY" - "$WORK/status.json" "$WORK/runs.txt" "$OPS" "$MAX_RERUNS" <<'EOF'
import collections, json, sys
status_file, runs_file, n, max_reruns = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
try:
    doc = json.load(open(status_file))
except Exception as e:
    print(f"  no status: {e}"); sys.exit(1)
ops = doc.get("operations", [])
ok = sum(1 for o in ops if o.get("outcome") == "succeeded")
wrong = [o.get("id") for o in ops if o.get("outcome") == "succeeded" and (o.get("result") or "").strip() != f"crash/{o.get('id')}"]
runs = collections.Counter(l for l in open(runs_file).read().split("\n") if l)
twice = {k: v for k, v in runs.items() if v > 1}
print(f"  {ok} of {n} succeeded; {len(wrong)} without their result; {len(runs)} ran; re-runs {sum(runs.values()) - len(runs)}"
      f"{' (e.g. ' + ', '.join(sorted(twice)[:5]) + ')' if twice else ''}")
sys.exit(0 if ok == n and not wrong and len(runs) == n and sum(runs.values()) - len(runs) <= max_reruns else 1)
EOF
check_rc=$?
set -e
if [ "$wait_rc" -eq 0 ] && [ "$check_rc" -eq 0 ]; then
  echo "PASS: coordinator crashes"
else
  cat "$WORK/wait.txt" "$WORK/status.err"
  echo "FAIL: coordinator crashes (wait $wait_rc, check $check_rc)"
  exit 1
fi
