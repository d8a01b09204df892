#!/usr/bin/env bash
# cluster/netns/hostile.sh BIN_DIR — the hostile-peer soak: a normal layered run of OPQ_HOSTILE_OPS
# (default 20,000) sleep operations of 1 ms on 2 loopback workers × 4 slots, while hostile.py throws
# garbage frames, HELLO spam (the largest HELLOs allowed, from vanishing connections, and oversized
# ones), a greedy worker (1 slot, prefetch 0, a million credits again and again, never starting what
# it gets) and oversized requests at the same coordinator for OPQ_HOSTILE_SECONDS (default 20).
# Passes when the normal run finished every operation exactly once and succeeded, hostile.py's own
# checks held (oversized HELLOs rejected; the greedy worker never held more than 1 part), the
# coordinator's RSS stayed under OPQ_HOSTILE_MAX_RSS_MIB (default 256) at every sample (every 0.5 s)
# and its log under OPQ_HOSTILE_MAX_LOG_KIB (default 512). docs/DEPLOY.md gives the figures.
# Loopback processes (loopback-hosts.sh); everything bounded in time. Exit 0 pass, 1 fail.
set -Eeuo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BIN="${1:-}"
if [ -z "$BIN" ] || [ ! -x "$BIN/opctl" ]; then echo "usage: hostile.sh BIN_DIR" >&2; exit 2; fi
BIN="$(cd "$BIN" && pwd)"
OPS="${OPQ_HOSTILE_OPS:-20000}"
SECS="${OPQ_HOSTILE_SECONDS:-20}"
MAX_RSS_MIB="${OPQ_HOSTILE_MAX_RSS_MIB:-256}"
MAX_LOG_KIB="${OPQ_HOSTILE_MAX_LOG_KIB:-512}"
# hostile.py speaks the protocol with the `opqueue` package: the venv scripts/setup makes holds it.
PY="$HERE/../../.venv-python/bin/python"
[ -x "$PY" ] || PY=python3
export OPQ_NETNS_PREFIX=opqh OPQ_NETNS_STATE=/tmp/opqh-hostile
HOSTS="$HERE/loopback-hosts.sh"
WORK="$(mktemp -d /tmp/opq-hostile.XXXXXX)"
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  "$HOSTS" down >/dev/null 2>&1 || true
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$HOSTS" up 3
# A short start timeout, so work the greedy worker sits on comes back within the run.
timeout 60 "$HOSTS" start "$BIN" --slots 4 --heartbeat-ms 500 --liveness 3 --start-timeout 2 >/dev/null
OPCOORD="$("$HOSTS" endpoint)"
export OPCOORD

echo "== layered run: $OPS sleep ops of 1 ms on 2 workers × 4 slots, hostile peers for $SECS s"
"$BIN/oploadtest" run --workload layered --ops "$OPS" --width 1000 --op-kind sleep --op-ms 1 \
  --min-workers 2 --time-limit 240 --watch --timeline-limit 0 --target loopback --label hostile \
  --json "$WORK/run.json" >"$WORK/run.txt" 2>&1 &
LOADTEST=$!
"$PY" "$HERE/hostile.py" "$OPCOORD" "$SECS" sleep >"$WORK/hostile.json" 2>"$WORK/hostile.err" &
HOSTILE=$!

# The coordinator's RSS (from STATUS) while both run.
max_rss=0
until ! kill -0 "$HOSTILE" 2>/dev/null && ! kill -0 "$LOADTEST" 2>/dev/null; do
  rss="$("$BIN/opctl" status --queues-only --json --request-timeout 2 2>/dev/null \
    | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["coordinator_rss_bytes"])' 2>/dev/null || echo 0)"
  [ "$rss" -gt "$max_rss" ] && max_rss="$rss"
  sleep 0.5
done
set +e
wait "$LOADTEST"; load_rc=$?
wait "$HOSTILE"; hostile_rc=$?
set -e
cat "$WORK/run.txt"
echo "== hostile peers: $(cat "$WORK/hostile.json")"
tail -n 5 "$WORK/hostile.err" || true
log="$OPQ_NETNS_STATE/logs/h0.opcoord.log"
log_kib=$(( $(stat -c %s "$log") / 1024 ))
rss_mib=$(( max_rss / 1048576 ))
"$PY" - "$WORK/run.json" "$OPS" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
x = r.get("exactly_once") or {}
ok = r.get("outcomes", {}).get("succeeded", 0) == r.get("ops") == int(sys.argv[2]) and x.get("ok") and r.get("unfinished") == 0
print(f"  normal run: ops {r.get('ops')}: {r.get('outcomes')}; unfinished {r.get('unfinished')}; re-dispatched "
      f"{r.get('redispatched')}; finished exactly once {x.get('finished_once')}; wall {r.get('wall_s', 0):.1f} s")
sys.exit(0 if ok else 1)
EOF
ops_rc=$?
echo "  coordinator: most RSS $rss_mib MiB (bound $MAX_RSS_MIB), log $log_kib KiB (bound $MAX_LOG_KIB)"
echo "== coordinator log (last lines)"
tail -n 8 "$log" | cut -c1-300
if [ "$load_rc" -eq 0 ] && [ "$hostile_rc" -eq 0 ] && [ "$ops_rc" -eq 0 ] && [ "$rss_mib" -le "$MAX_RSS_MIB" ] \
   && [ "$log_kib" -le "$MAX_LOG_KIB" ] && [ "$max_rss" -gt 0 ]; then
  echo "PASS: hostile"
else
  echo "FAIL: hostile (run $load_rc, hostile peers $hostile_rc, ops $ops_rc, RSS $rss_mib MiB, log $log_kib KiB)"
  exit 1
fi
