#!/usr/bin/env bash
# cluster/netns/smoke.sh BIN_DIR — a coordinator and 3 worker hosts in network namespaces, one graph.
#
# Brings up 4 netns hosts (cluster/netns/netns.sh), starts opcoord in host 0 and opworker (2 slots)
# in hosts 1..3, submits a 200-operation graph from the host namespace (echo, noop, shell and sleep
# operations with chains and a fan-in), waits, and checks with `opctl status --json` that every
# operation succeeded and that each of the 3 workers ran some of them. Tears everything down.
# Every wait is bounded; the whole run takes a few seconds.
#
# Exit status: 0 passed; 1 failed; 2 usage; 77 skipped (not root / network namespaces impossible).
# Environment: OPQ_NETNS_PREFIX / OPQ_NETNS_STATE / OPQ_NETNS_BASE / OPQ_NETNS_PORT (see netns.sh),
# OPQ_SMOKE_OPS (default 200), OPQ_SMOKE_TIMEOUT (seconds for the graph, default 60).
set -Eeuo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NETNS="$HERE/netns.sh"
BIN="${1:-}"
if [ -z "$BIN" ] || [ ! -x "$BIN/opctl" ] || [ ! -x "$BIN/opcoord" ] || [ ! -x "$BIN/opworker" ]; then
  echo "usage: smoke.sh BIN_DIR   (a directory with opcoord, opworker and opctl)" >&2
  exit 2
fi
BIN="$(cd "$BIN" && pwd)"
OPS="${OPQ_SMOKE_OPS:-200}"
TIMEOUT="${OPQ_SMOKE_TIMEOUT:-60}"
WORKERS=3
PY=/usr/bin/python3
[ -x "$PY" ] || PY="$(command -v python3 || true)"
[ -n "$PY" ] || { echo "smoke.sh: python3 is needed to read opctl's JSON" >&2; exit 1; }

WORK="$(mktemp -d /tmp/opq-smoke.XXXXXX)"
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && [ -d "${STATE_DIR:-/nonexistent}/logs" ]; then
    echo "== logs (last lines)" >&2
    for f in "$STATE_DIR"/logs/*.log; do [ -f "$f" ] && { echo "-- $f" >&2; tail -n 15 "$f" >&2; }; done
  fi
  "$NETNS" down >/dev/null 2>&1 || true
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

STATE_DIR="${OPQ_NETNS_STATE:-/tmp/${OPQ_NETNS_PREFIX:-opq}-netns}"

echo "== netns: 1 coordinator host + $WORKERS worker hosts"
set +e
"$NETNS" up $((WORKERS + 1))
rc=$?
set -e
[ "$rc" -eq 0 ] || exit "$rc"   # 77 = skip, passed through
timeout 60 "$NETNS" start "$BIN" --slots 2 >"$WORK/start.out"
# OPCOORD and, unless OPQ_NETNS_INSECURE=1, the admin key netns.sh made (OPQ_KEY, OPQ_COORDINATOR_KEY).
eval "$("$NETNS" env)"
"$NETNS" status

# The graph: OPS operations. Every 10th starts a chain of 3 (i → i+1 → i+2); every 25th is a shell
# operation that prints its id; every 20th sleeps 100 ms (keeps slots busy so the load spreads);
# the last one waits for ten others (fan-in).
"$PY" - "$OPS" >"$WORK/graph.yaml" <<'EOF'
import sys
n = int(sys.argv[1])
print("operations:")
for i in range(n - 1):
    op = f"  - id: op{i}\n"
    if i % 25 == 0:
        op += '    command: echo "$OPQ_OP_ID on $(hostname -I 2>/dev/null || echo ?)"\n'
    elif i % 20 == 0:
        op += "    kind: sleep\n    payload: 100\n"
    elif i % 2 == 0:
        op += f"    kind: echo\n    payload: \"hello {i}\"\n"
    else:
        op += "    kind: noop\n"
    if i % 10 in (1, 2):
        op += f"    after: [op{i - 1}]\n"
    print(op, end="")
deps = ", ".join(f"op{i}" for i in range(0, n - 1, max(1, (n - 1) // 10)))
print(f"  - id: op{n - 1}\n    kind: echo\n    payload: done\n    after: [{deps}]")
EOF

echo "== submitting $OPS operations to $OPCOORD from the host namespace"
started="$(date +%s%N)"
set +e
timeout $((TIMEOUT + 15)) "$BIN/opctl" submit "$WORK/graph.yaml" --wait --timeout "$TIMEOUT"
rc=$?
set -e
echo "   opctl submit --wait: exit $rc after $((($(date +%s%N) - started) / 1000000)) ms"
[ "$rc" -eq 0 ] || { echo "FAIL: opctl submit --wait exited $rc" >&2; exit 1; }

timeout 30 "$BIN/opctl" status --json --limit $((OPS + 100)) >"$WORK/status.json"
timeout 30 "$BIN/opctl" workers --json >"$WORK/workers.json"
"$PY" - "$WORK/status.json" "$WORK/workers.json" "$OPS" "$WORKERS" <<'EOF'
import collections, json, sys
status = json.load(open(sys.argv[1]))
workers = json.load(open(sys.argv[2]))
want_ops, want_workers = int(sys.argv[3]), int(sys.argv[4])
names = {w["id"]: w["name"] for w in workers}
ops = status["operations"]
problems = []
if len(ops) != want_ops:
    problems.append(f"{len(ops)} operations reported, expected {want_ops}")
bad = [o for o in ops if o["state"] != "finished" or o["outcome"] != "succeeded"]
for o in bad[:10]:
    problems.append(f"{o['id']}: state {o['state']}, outcome {o['outcome']}, error {o.get('error', '')!r}")
per_worker = collections.Counter(names.get(o["worker"], o["worker"] or "?") for o in ops)
print("   operations per worker:", ", ".join(f"{k}={v}" for k, v in sorted(per_worker.items())))
print("   attempts > 1:", sum(1 for o in ops if o["attempts"] > 1))
ran = [w for w in per_worker if w != "?"]
if len(ran) < want_workers:
    problems.append(f"only {len(ran)} of {want_workers} workers ran operations: {sorted(ran)}")
if problems:
    print("FAIL:", *problems, sep="\n  ", file=sys.stderr)
    sys.exit(1)
print(f"   all {len(ops)} operations succeeded on {len(ran)} workers")
EOF

echo "== tearing down"
"$NETNS" down
trap - EXIT
rm -rf "$WORK"
echo "PASS: netns smoke ($OPS operations, $WORKERS worker hosts over TCP on 198.18.0.0/15)"
