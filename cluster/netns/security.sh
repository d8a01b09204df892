#!/usr/bin/env bash
# cluster/netns/security.sh BIN_DIR — keys, roles, revocation and encryption on real TCP paths.
#
# 4 netns hosts (netns.sh, with its keys): host 0 opcoord (CURVE, allow file), host 1 a worker with the
# shared `worker` key, host 2 a second worker with its own key `worker2`, host 3 a "stranger" that
# holds the coordinator's public key (it is public) but no allowed key. Each check prints PASS or FAIL:
#   1. the stranger without a key, then with an unknown key (made by `opctl keys new`, not allowed):
#      opctl submit / status / cancel exit 3 with "authentication failed" within 3 s (seconds printed);
#      opworker exits non-zero with "authentication failed" and never shows in `opctl workers`; the
#      coordinator's log shows the refusals; nothing the stranger submitted ran (its shell op would
#      touch a marker file; a legitimate op finishes afterwards and the marker does not exist), and
#      the op it tried to cancel is still pending.
#   2. roles: the `worker` key cannot submit; a `view` key reads status but cannot cancel; `team-a`
#      (submit team-a/*) cannot cancel or re-prioritise team-b's op in team-b/x, nor submit into
#      team-b/…, but submits into team-a/…; `team-b` cancels its own op.
#   3. revocation: worker2's line removed from the allow file (new file renamed over it): worker2
#      leaves `opctl workers` and its opworker exits within heartbeat + 1 s (time printed).
#   4. capture: tcpdump on host 0's veth while a shell op whose command and result hold a known string
#      runs: the string is not in the capture. Control: the same with an --insecure coordinator
#      (OPQ_NETNS_INSECURE=1), where it is.
# Every wait is bounded (timeout, polling with deadlines); the whole run takes well under 90 s.
#
# Exit status: 0 passed; 1 failed; 2 usage; 77 skipped (not root / network namespaces impossible).
# Environment: OPQ_NETNS_PREFIX (default opqs) / OPQ_NETNS_STATE / OPQ_NETNS_BASE (default 120) /
# OPQ_NETNS_PORT (see netns.sh).
set -Eeuo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
NETNS="$HERE/netns.sh"
BIN="${1:-}"
if [ -z "$BIN" ] || [ ! -x "$BIN/opctl" ] || [ ! -x "$BIN/opcoord" ] || [ ! -x "$BIN/opworker" ]; then
  echo "usage: security.sh BIN_DIR   (a directory with opcoord, opworker and opctl)" >&2
  exit 2
fi
BIN="$(cd "$BIN" && pwd)"
export OPQ_NETNS_PREFIX="${OPQ_NETNS_PREFIX:-opqs}"
export OPQ_NETNS_BASE="${OPQ_NETNS_BASE:-120}"
export OPQ_NETNS_STATE="${OPQ_NETNS_STATE:-/tmp/${OPQ_NETNS_PREFIX}-netns}"
unset OPQ_NETNS_INSECURE
STATE_DIR="$OPQ_NETNS_STATE"
KEYS="$STATE_DIR/keys"
PREFIX="$OPQ_NETNS_PREFIX"
HB_MS=1000
SECRET="OPQ-SECRET-7f3a9"
PY=/usr/bin/python3
[ -x "$PY" ] || PY="$(command -v python3 || true)"
[ -n "$PY" ] || { echo "security.sh: python3 is needed to read opctl's JSON" >&2; exit 1; }
ALLOW_KINDS=()
if "$BIN/opworker" --help 2>&1 | grep -q -- --allow-kinds; then ALLOW_KINDS=(--allow-kinds all); fi

WORK="$(mktemp -d /tmp/opq-security.XXXXXX)"
chmod 755 "$WORK"
W2_PID="" DUMP_PID=""
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ -n "$DUMP_PID" ]; then kill -INT "$DUMP_PID" 2>/dev/null || true; fi
  if [ -n "$W2_PID" ]; then kill -TERM "$W2_PID" 2>/dev/null || true; fi
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && [ -d "$STATE_DIR/logs" ]; then
    echo "== logs (last lines)" >&2
    for f in "$STATE_DIR"/logs/*.log "$WORK"/*.log; do [ -f "$f" ] && { echo "-- $f" >&2; tail -n 15 "$f" >&2; }; done
  fi
  "$NETNS" down >/dev/null 2>&1 || true
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

failures=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
secs() { printf '%d.%02d s' $(($1 / 1000)) $((($1 % 1000) / 10)); }
first_line() { grep -m1 -oE "($1).*" "$2" 2>/dev/null | cut -c1-150 || true; }

# attempt CMD... — runs CMD bounded by 20 s; sets RC, MS (elapsed ms); output in $WORK/out, $WORK/err.
attempt() {
  local t0
  t0="$(now_ms)"
  set +e
  timeout 20 "$@" >"$WORK/out" 2>"$WORK/err" </dev/null
  RC=$?
  set -e
  MS=$(($(now_ms) - t0))
}
# stranger CMD... — attempt CMD in host 3, without the cluster's keys in its environment.
stranger() { attempt "$NETNS" exec 3 env -u OPQ_KEY -u OPQ_COORDINATOR_KEY "OPCOORD=$OPCOORD" "$@"; }
# as KEYNAME SUBCOMMAND ARGS... — attempt opctl from the host namespace with key $KEYS/KEYNAME.key.
as() {
  local k="$1"
  shift
  attempt env -u OPQ_KEY -u OPQ_COORDINATOR_KEY "$BIN/opctl" "$@" --key "$KEYS/$k.key" --coordinator-key "$KEYS/coordinator.key.pub"
}

# refused LABEL — the last attempt was an opctl refused for authentication, quickly.
refused() {
  if [ "$RC" -eq 3 ] && grep -q "authentication failed" "$WORK/err" && [ "$MS" -le 3000 ]; then
    pass "$1 refused in $(secs "$MS") (exit 3: $(first_line 'authentication failed' "$WORK/err"))"
  else
    fail "$1: exit $RC after $(secs "$MS") (want exit 3, 'authentication failed', ≤ 3 s): $(head -c 300 "$WORK/err")"
  fi
}
# denied LABEL PATTERN — the last attempt failed with a message matching PATTERN (a role or scope refusal).
denied() {
  if [ "$RC" -ne 0 ] && [ "$RC" -ne 124 ] && grep -qE "$2" "$WORK/err"; then
    pass "$1 refused (exit $RC: $(first_line "$2" "$WORK/err"))"
  else
    fail "$1: exit $RC (want a refusal matching '$2'): $(head -c 300 "$WORK/err") $(head -c 200 "$WORK/out")"
  fi
}
allowed() {
  if [ "$RC" -eq 0 ]; then pass "$1 (exit 0)"; else fail "$1: exit $RC: $(head -c 300 "$WORK/err")"; fi
}
worker_names() { timeout 10 "$BIN/opctl" workers --json --request-timeout 3 | "$PY" -c 'import json, sys; print(" ".join(w["name"] for w in json.load(sys.stdin)))'; }
op_state() { # RUN OP → "state outcome"
  timeout 10 "$BIN/opctl" status --run "$1" "$2" --json --request-timeout 3 |
    "$PY" -c 'import json, sys; o = json.load(sys.stdin)["operations"][0]; print(o["state"], o.get("outcome", ""))'
}
graph() { # FILE ID QUEUE COMMAND [REQUIRES] — a one-op shell graph
  {
    echo "operations:"
    echo "  - id: $2"
    echo "    queue: $3"
    echo "    command: '$4'"
    [ -z "${5:-}" ] || echo "    requires: [$5]"
  } >"$1"
}

echo "== netns: coordinator host, 2 worker hosts, a stranger host (prefix $PREFIX)"
set +e
"$NETNS" up 4
rc=$?
set -e
[ "$rc" -eq 0 ] || exit "$rc"   # 77 = skip, passed through
command -v tcpdump >/dev/null || "$ROOT/scripts/setup" >&2 || true
command -v tcpdump >/dev/null || { echo "security.sh: tcpdump is missing and scripts/setup did not install it" >&2; exit 1; }

timeout 60 "$NETNS" start "$BIN" --workers 1 --slots 2 --heartbeat-ms "$HB_MS" >"$WORK/start.out"
eval "$("$NETNS" env)"   # OPCOORD, OPQ_KEY = the admin key, OPQ_COORDINATOR_KEY
grep -q "CURVE" "$STATE_DIR/logs/h0.opcoord.log" || { echo "FAIL: opcoord did not start with CURVE" >&2; exit 1; }
# Keys of the principals under test, in the allow file (the coordinator reloads it when it changes).
"$NETNS" key view view >/dev/null
"$NETNS" key team-a submit 'team-a/*' >/dev/null
"$NETNS" key team-b submit 'team-b/*' >/dev/null
"$NETNS" key worker2 worker >/dev/null
# The coordinator notices a changed allow file within 250 ms; wait until it holds all 6 keys.
deadline=$((SECONDS + 10))
until grep -q "allow file reloaded.*: 6 key(s)" "$STATE_DIR/logs/h0.opcoord.log"; do
  ((SECONDS < deadline)) || { echo "FAIL: the coordinator did not reload the allow file within 10 s" >&2; exit 1; }
  sleep 0.05
done
timeout 10 "$BIN/opctl" keys new "$WORK/unknown.key" >/dev/null

# The second worker (host 2), with its own key, so it alone can be revoked.
"$NETNS" exec 2 "$BIN/opworker" --connect "$OPCOORD" --name "$PREFIX-worker2" --slots 1 \
  --key "$KEYS/worker2.key" --coordinator-key "$KEYS/coordinator.key.pub" "${ALLOW_KINDS[@]}" \
  >"$WORK/worker2.log" 2>&1 </dev/null &
W2_PID=$!
deadline=$((SECONDS + 20))
until worker_names 2>/dev/null | grep -qw -- "$PREFIX-worker2"; do
  ((SECONDS < deadline)) || { echo "FAIL: worker2 did not register within 20 s" >&2; exit 1; }
  kill -0 "$W2_PID" 2>/dev/null || { echo "FAIL: worker2 exited at once" >&2; cat "$WORK/worker2.log" >&2; exit 1; }
  sleep 0.1
done
echo "   workers: $(worker_names)"

# An op that stays pending (no worker has the tag): what strangers try to cancel.
graph "$WORK/victim.yaml" victim default 'true' key:nobody
timeout 20 "$BIN/opctl" submit "$WORK/victim.yaml" --run rv --allow-unknown-kinds >/dev/null

echo "== 1. strangers (host 3, $("$NETNS" exec 3 hostname -I 2>/dev/null | tr -d ' ' || true)) are refused"
for who in nokey unknown; do
  keyargs=()
  label="stranger without a key"
  if [ "$who" = unknown ]; then
    keyargs=(--key "$WORK/unknown.key" --coordinator-key "$KEYS/coordinator.key.pub")
    label="stranger with an unknown key"
  fi
  graph "$WORK/evil-$who.yaml" "evil-$who" default "touch $WORK/marker-$who; echo ran"
  stranger "$BIN/opctl" submit "$WORK/evil-$who.yaml" --allow-unknown-kinds "${keyargs[@]}"
  refused "$label: opctl submit (a shell op touching a marker)"
  stranger "$BIN/opctl" status "${keyargs[@]}"
  refused "$label: opctl status"
  stranger "$BIN/opctl" cancel --run rv victim "${keyargs[@]}"
  refused "$label: opctl cancel"
  stranger "$BIN/opworker" --connect "$OPCOORD" --name "$PREFIX-stranger-$who" "${keyargs[@]}" "${ALLOW_KINDS[@]}"
  names="$(worker_names)"
  if [ "$RC" -ne 0 ] && [ "$RC" -ne 124 ] && grep -q "authentication failed" "$WORK/err" && [ "$MS" -le 5000 ] &&
     ! grep -q "stranger" <<<"$names"; then
    pass "$label: opworker exited $RC in $(secs "$MS") ($(first_line 'authentication failed' "$WORK/err")); opctl workers: $names"
  else
    fail "$label: opworker exit $RC after $(secs "$MS") (want non-zero, 'authentication failed', ≤ 5 s, not listed); workers: $names; $(tail -c 300 "$WORK/err")"
  fi
done
clog="$STATE_DIR/logs/h0.opcoord.log"
# A client without keys may give up its handshake before its greeting (which names no mechanism) has
# left it — libzmq reads the coordinator's greeting, sees CURVE and closes — and then the coordinator
# sees only a closed connection, which it does not log (port probes look the same). So ask again, a
# bounded number of times, until the coordinator has seen one such greeting.
extra=0
deadline=$((SECONDS + 15))
while ! grep -q "authentication failed: a peer without keys" "$clog" && ((SECONDS < deadline)); do
  stranger "$BIN/opctl" status --request-timeout 2
  extra=$((extra + 1))
done
for what in "a peer without keys" "unknown key"; do
  if grep -q "authentication failed: $what" "$clog"; then
    note=""
    [ "$what" = "a peer without keys" ] && note=" [after $extra more keyless attempt(s)]"
    pass "the coordinator's log shows the refusal$note: $(first_line "authentication failed: $what" "$clog")"
  else
    fail "the coordinator's log shows no 'authentication failed: $what' line"
  fi
done
# A legitimate op touching its own marker, submitted after the strangers' and finished: theirs would
# have run by now (and this shows a marker written by a worker is seen here).
graph "$WORK/legit.yaml" legit default "touch $WORK/marker-legit"
attempt "$BIN/opctl" submit "$WORK/legit.yaml" --run legit --wait --timeout 20
allowed "admin key: a legitimate shell op submitted after them ran"
if [ -e "$WORK/marker-legit" ] && [ ! -e "$WORK/marker-nokey" ] && [ ! -e "$WORK/marker-unknown" ]; then
  pass "nothing the strangers submitted ran: no stranger's marker file, the legitimate op's marker exists"
else
  fail "markers after the legitimate op: $(find "$WORK" -maxdepth 1 -name 'marker-*' -printf '%f ') (want marker-legit only)"
fi
st="$(op_state rv victim)"
if [ "$st" = "pending " ] || [[ "$st" == pending* ]] || [[ "$st" == ready* ]]; then pass "the op the strangers tried to cancel is still '$st'"; else fail "victim is '$st'"; fi

echo "== 2. roles and scopes"
graph "$WORK/w.yaml" by-worker default 'echo hi'
as worker submit "$WORK/w.yaml" --allow-unknown-kinds
denied "worker key: opctl submit" "may not submit"
as view status --queues-only
allowed "view key: opctl status"
as view cancel --run rv victim
denied "view key: opctl cancel" "may not cancel"
graph "$WORK/b.yaml" b1 team-b/x 'true' key:nobody
as team-b submit "$WORK/b.yaml" --run rb --allow-unknown-kinds
allowed "team-b key: submit b1 into team-b/x"
as team-a cancel --run rb b1
denied "team-a key: cancel team-b's op in team-b/x" "outside the scope"
as team-a priority --run rb b1 high
denied "team-a key: re-prioritise team-b's op" "outside the scope"
graph "$WORK/a-into-b.yaml" a1 team-b/y 'echo sneaky'
as team-a submit "$WORK/a-into-b.yaml" --allow-unknown-kinds
denied "team-a key: submit into team-b/y" "outside the scope"
graph "$WORK/a.yaml" a2 team-a/q 'echo mine'
as team-a submit "$WORK/a.yaml" --run ra --wait --timeout 20
allowed "team-a key: submit into team-a/q and wait"
st="$(op_state rb b1)"
if [[ "$st" == finished* ]]; then fail "b1 is '$st' after team-a's attempts"; else pass "team-b's op b1 untouched by team-a: '$st'"; fi
as team-b cancel --run rb b1
allowed "team-b key: cancel its own op b1"
deadline=$((SECONDS + 10))
until [[ "$(op_state rb b1)" == finished* ]] || ((SECONDS >= deadline)); do sleep 0.1; done
st="$(op_state rb b1)"
if [[ "$st" == "finished cancelled"* ]]; then pass "b1 is now '$st'"; else fail "b1 is '$st' after team-b's cancel"; fi

echo "== 3. revocation"
bound=$((HB_MS + 1000))
t0="$(now_ms)"
"$NETNS" revoke worker2 2>/dev/null
gone="" exited=""
while [ -z "$gone" ] || [ -z "$exited" ]; do
  el=$(($(now_ms) - t0))
  ((el <= bound + 3000)) || break
  [ -z "$gone" ] && ! worker_names 2>/dev/null | grep -qw -- "$PREFIX-worker2" && gone="$(($(now_ms) - t0))"
  [ -z "$exited" ] && ! kill -0 "$W2_PID" 2>/dev/null && exited="$(($(now_ms) - t0))"
  sleep 0.05
done
set +e
w2_rc=127
[ -n "$exited" ] && { wait "$W2_PID"; w2_rc=$?; W2_PID=""; }
set -e
if [ -n "$gone" ] && ((gone <= bound)); then
  pass "revoked key: worker2 left opctl workers $(secs "$gone") after the allow file was replaced (bound $(secs "$bound"))"
else
  fail "revoked key: worker2 still listed after $(secs "${gone:-$((bound + 3000))}") (bound $(secs "$bound"))"
fi
if [ -n "$exited" ] && ((exited <= bound)) && [ "$w2_rc" -ne 0 ]; then
  pass "revoked key: worker2's opworker exited $w2_rc after $(secs "$exited") ($(first_line 'authentication failed' "$WORK/worker2.log"))"
else
  fail "revoked key: worker2's opworker exit ${w2_rc} after $(secs "${exited:-$((bound + 3000))}") (bound $(secs "$bound")): $(tail -n 3 "$WORK/worker2.log")"
fi

# capture LABEL RUN — tcpdump on host 0's veth while a shell op with $SECRET in its command and result
# runs and its result is read back; sets HITS (occurrences of the string) and PACKETS.
capture() {
  local tag="${1//[^a-z]/}" pcap
  pcap="$WORK/$tag.pcap"
  tcpdump -i "${PREFIX}h0" --immediate-mode -n -s 0 -U -w "$pcap" "tcp port ${OPQ_NETNS_PORT:-7600}" 2>"$WORK/tcpdump-$tag.log" &
  DUMP_PID=$!
  local deadline=$((SECONDS + 10))
  until grep -q "listening on" "$WORK/tcpdump-$tag.log"; do
    if ((SECONDS >= deadline)) || ! kill -0 "$DUMP_PID" 2>/dev/null; then
      cat "$WORK/tcpdump-$tag.log" >&2; echo "FAIL: tcpdump did not start" >&2; exit 1
    fi
    sleep 0.05
  done
  graph "$WORK/secret.yaml" s1 default "echo $SECRET-in-the-result"
  attempt "$BIN/opctl" submit "$WORK/secret.yaml" --run "$2" --wait --timeout 20
  allowed "$1: the op with the known string ran"
  timeout 10 "$BIN/opctl" status --run "$2" --results --json >"$WORK/result-$tag.json"
  grep -q "$SECRET-in-the-result" "$WORK/result-$tag.json" || fail "$1: the result read back lacks the known string"
  kill -INT "$DUMP_PID"
  deadline=$((SECONDS + 10))
  while kill -0 "$DUMP_PID" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.05; done
  wait "$DUMP_PID" 2>/dev/null || true
  DUMP_PID=""
  PACKETS="$(timeout 10 tcpdump -r "$pcap" -n 2>/dev/null | wc -l)"
  HITS="$(grep -a -o -- "$SECRET" "$pcap" | wc -l || true)"
}

echo "== 4. capture on ${PREFIX}h0 (host 0's veth)"
capture "with keys" rs
if [ "$PACKETS" -gt 10 ] && [ "$HITS" -eq 0 ]; then
  pass "with keys: '$SECRET' appears 0 times in $PACKETS captured packets (command, dispatch, result all encrypted)"
else
  fail "with keys: '$SECRET' appears $HITS times in $PACKETS captured packets"
fi
echo "   control: the same with an --insecure coordinator"
"$NETNS" stop >/dev/null 2>&1
OPQ_NETNS_INSECURE=1 timeout 60 "$NETNS" start "$BIN" --workers 1 --slots 2 --heartbeat-ms "$HB_MS" >"$WORK/start-insecure.out"
eval "$("$NETNS" env)"   # no keys now
grep -q -- "--insecure" "$STATE_DIR/logs/h0.opcoord.log" || echo "   (note: the coordinator's log does not mention --insecure)"
capture "--insecure" ri
if [ "$PACKETS" -gt 10 ] && [ "$HITS" -gt 0 ]; then
  pass "control, --insecure: '$SECRET' appears $HITS times in $PACKETS captured packets (the capture sees payloads)"
else
  fail "control, --insecure: '$SECRET' appears $HITS times in $PACKETS packets (the capture does not work)"
fi

echo "== tearing down"
"$NETNS" down
trap - EXIT
rm -rf "$WORK"
if [ "$failures" -eq 0 ]; then
  echo "PASS: netns security (strangers refused, roles and scopes held, revocation within $(secs "$bound"), nothing readable on the wire)"
else
  echo "FAIL: netns security ($failures check(s) failed)"
  exit 1
fi
