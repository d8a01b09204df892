#!/usr/bin/env bash
# cluster/netns/failover.sh BIN_DIR — issue 29's failover run: two head hosts (opcoord --ha, each its own
# state directory, --replication sync), an etcd host and two worker hosts (opworker --connect A,B) as
# network namespaces (netns.sh up 5: hosts 0–1 heads, 2 etcd, 3–4 workers; real TCP on 198.18.0.0/15).
# A layered run of OPQ_FAILOVER_OPS (default 20,000) short shell ops, each appending its id to a file of
# its worker host, submitted with both endpoints; the leader SIGKILLed at OPQ_FAILOVER_KILLS (default 5)
# seeded moments (seed OPQ_FAILOVER_SEED) — takeover timed from SIGKILL to the first STATUS the new leader
# accepts, then the killed one restarted on its state directory as a standby — and its link cut instead
# OPQ_FAILOVER_CUTS times (default 1): it must stop serving by its lease deadline, the other be elected,
# and once the link is back it must follow as a standby, not serve. Every op must succeed exactly once
# (0 re-runs: no worker is lost), and an `opctl wait` started before the first fault (both endpoints) must see
# the run finish. Prints takeover p50/max. failover.py does the run; etcd is Debian's
# etcd-server (scripts/setup), lease TTL OPQ_FAILOVER_LEASE_TTL (default 1 s; etcd runs with heartbeat
# 50 ms / election 500 ms so a 1 s lease is allowed).
# Where namespaces are impossible it runs the same on loopback (kills only: no link to cut), or exits 77
# with OPQ_FAILOVER_TARGET=netns; OPQ_FAILOVER_TARGET=loopback forces loopback.
# Exit 0 when everything holds; 1 otherwise; 77 when namespaces are impossible and netns was required.
set -Eeuo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NETNS="$HERE/netns.sh"
BIN="${1:-}"
if [ -z "$BIN" ] || [ ! -x "$BIN/opctl" ] || [ ! -x "$BIN/opcoord" ] || [ ! -x "$BIN/opworker" ]; then
  echo "usage: failover.sh BIN_DIR (with opcoord, opworker, opctl)" >&2; exit 2
fi
BIN="$(cd "$BIN" && pwd)"
command -v "${OPQ_ETCD:-etcd}" >/dev/null || { echo "failover.sh: etcd is not installed (Debian's etcd-server; scripts/setup)" >&2; exit 1; }
# failover.py talks ZeroMQ to the heads (pyzmq): the venv scripts/setup makes has it (Debian's python3
# has no zmq module unless python3-zmq is installed, which setup does not do).
PY="$HERE/../../.venv-python/bin/python"
[ -x "$PY" ] || PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
"$PY" -c 'import zmq' 2>/dev/null || { echo "failover.sh: $PY has no zmq module (run scripts/setup: it makes .venv-python with pyzmq)" >&2; exit 1; }
export OPQ_NETNS_PREFIX="${OPQ_NETNS_PREFIX:-opqha}"
export OPQ_NETNS_BASE="${OPQ_NETNS_BASE:-160}"
export OPQ_NETNS_STATE="${OPQ_NETNS_STATE:-/tmp/${OPQ_NETNS_PREFIX}-netns}"
WORK="$(mktemp -d /tmp/opq-failover.XXXXXX)"
chmod 755 "$WORK"
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  [ "${TARGET:-}" = netns ] && "$NETNS" down >/dev/null 2>&1
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

TARGET="${OPQ_FAILOVER_TARGET:-auto}"
rc=77
if [ "$TARGET" != loopback ]; then
  set +e
  "$NETNS" up 5
  rc=$?
  set -e
fi
if [ "$rc" -eq 77 ] && [ "$TARGET" != netns ]; then
  echo "== no network namespaces here: loopback processes instead (kills only; no link to cut)"
  TARGET=loopback
  set -- loopback "${OPQ_FAILOVER_PORT:-$((20000 + RANDOM % 20000))}"
elif [ "$rc" -ne 0 ]; then
  exit "$rc"
else
  TARGET=netns
  set -- netns "$OPQ_NETNS_PREFIX" "$OPQ_NETNS_BASE"
fi
cuts="${OPQ_FAILOVER_CUTS:-1} link cuts"; [ "$TARGET" = loopback ] && cuts="no link cuts (loopback)"
echo "== failover ($TARGET): ${OPQ_FAILOVER_OPS:-20000} shell ops, ${OPQ_FAILOVER_KILLS:-5} leader kills, $cuts"
"$PY" "$HERE/failover.py" run "$BIN" "$WORK" "$@"
