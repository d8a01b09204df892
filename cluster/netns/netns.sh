#!/usr/bin/env bash
# cluster/netns/netns.sh — K "hosts" on one Linux machine, as network namespaces.
#
# Host n (0 ≤ n < K) is the namespace PREFIX-hn, joined to the host namespace by a veth pair:
#   host side  PREFIXhn  198.18.(BASE+n).1/24      namespace side  PREFIXnn  198.18.(BASE+n).2/24
# (RFC 2544 benchmarking range 198.18.0.0/15; an index ≥ 256 continues in 198.19.x). Each namespace
# routes 198.18.0.0/15 via its host side, and forwarding is switched on for the host-side veths only
# (net.ipv4.conf.PREFIXhn.forwarding — the global net.ipv4.ip_forward is left as it is, so nothing
# needs restoring and nothing else on the machine starts routing). IPv6 is disabled on the veths, so
# they carry no address outside 198.18.0.0/15. No bridge, dummy link, iptables or tc is needed.
#
# Host 0 runs opcoord bound to 198.18.(BASE).2:PORT; hosts 1..K-1 run opworker connecting to it over
# real TCP. The host namespace reaches every host directly (opctl --coordinator tcp://198.18.0.2:7600).
#
# Keys: the coordinator is off loopback, so `start` makes CurveZMQ keys with `opctl keys new` in
# $STATE/keys — coordinator.key, worker.key (shared by every worker; tag key:worker) and admin.key
# (for opctl in scripts) — writes the allow file $STATE/keys/allow, and starts opcoord with
# --key/--allow and the workers with --key/--coordinator-key. $STATE/opctl.env (also printed by
# `start` and `env`) exports OPCOORD, OPQ_KEY (admin) and OPQ_COORDINATOR_KEY:
#   eval "$(netns.sh env)"; opctl status
# OPQ_NETNS_INSECURE=1 starts opcoord with --insecure and no keys instead.
#
# Usage (as root):
#   netns.sh up K                       create K hosts (K ≥ 2); tears down leftovers of this prefix first
#   netns.sh start BIN_DIR [--slots N] [--prefetch N] [--tags T] [--heartbeat-ms MS] [--liveness N]
#                  [--log-level L] [--workers N]
#                                       opcoord in host 0, opworker in hosts 1..N (default N = K-1;
#                                       hosts above N stay bare); waits until every worker is registered
#                                       (when BIN_DIR/opctl exists); prints the opctl environment
#   netns.sh env                        print `export OPCOORD=… OPQ_KEY=… OPQ_COORDINATOR_KEY=…` lines
#   netns.sh key NAME ROLES [SCOPE…]    make key $STATE/keys/NAME.key (if missing) and allow it with ROLES
#                                       (e.g. `submit team-a/*`); prints the key file's path
#   netns.sh revoke NAME                drop NAME's line from the allow file (new file renamed over it)
#   netns.sh exec HOST CMD...           run CMD inside host HOST
#   netns.sh cut HOST | restore HOST    partition host HOST (its veth down) / heal it
#   netns.sh freeze HOST | thaw HOST    SIGSTOP / SIGCONT the worker (or, for host 0, the coordinator)
#   netns.sh kill HOST                  SIGKILL it
#   netns.sh respawn HOST               start host HOST's process again (after kill), same options
#   netns.sh stop                       SIGTERM every process started here (SIGKILL after 10 s)
#   netns.sh status                     hosts, links, processes, and `opctl workers` when available
#   netns.sh endpoint                   print the coordinator endpoint (for OPCOORD)
#   netns.sh pid HOST                   print the PID of host HOST's process
#   netns.sh down                       stop everything and delete namespaces and veths (idempotent)
#
# Environment: OPQ_NETNS_PREFIX (default opq; [a-z][a-z0-9]{0,7}), OPQ_NETNS_STATE (state dir,
# default /tmp/PREFIX-netns: pid files, logs/, endpoint), OPQ_NETNS_BASE (first /24 index, default 0;
# use distinct prefixes and bases to run two clusters at once), OPQ_NETNS_PORT (default 7600),
# OPQ_NETNS_INSECURE=1 (no keys: opcoord --insecure).
# Exit status: 0 ok; 1 error; 2 usage; 77 network namespaces cannot be created here (tests skip).
set -Eeuo pipefail

PREFIX="${OPQ_NETNS_PREFIX:-opq}"
if ! [[ "$PREFIX" =~ ^[a-z][a-z0-9]{0,7}$ ]]; then
  echo "netns.sh: OPQ_NETNS_PREFIX must match [a-z][a-z0-9]{0,7}, got '$PREFIX'" >&2
  exit 2
fi
STATE="${OPQ_NETNS_STATE:-/tmp/${PREFIX}-netns}"
BASE="${OPQ_NETNS_BASE:-0}"
PORT="${OPQ_NETNS_PORT:-7600}"
if ! [[ "$BASE" =~ ^[0-9]+$ ]] || ! [[ "$PORT" =~ ^[0-9]+$ ]]; then
  echo "netns.sh: OPQ_NETNS_BASE and OPQ_NETNS_PORT must be numbers" >&2
  exit 2
fi
readonly SKIP=77

log() { printf 'netns: %s\n' "$*" >&2; }
die() { printf 'netns.sh: %s\n' "$*" >&2; exit 1; }
skip() { printf 'SKIP (netns.sh): %s\n' "$*" >&2; exit "$SKIP"; }
usage() { sed -n '/^# Usage/,/^# Exit status/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit "${1:-2}"; }

ns_name() { printf '%s-h%s' "$PREFIX" "$1"; }
host_if() { printf '%sh%s' "$PREFIX" "$1"; }
ns_if() { printf '%sn%s' "$PREFIX" "$1"; }
net_of() { # /24 of host $1, without the last octet
  local i=$((BASE + $1))
  if ((i < 256)); then printf '198.18.%d' "$i"; elif ((i < 512)); then printf '198.19.%d' "$((i - 256))"; else
    die "host index $i is outside 198.18.0.0/15"
  fi
}
gw_addr() { printf '%s.1' "$(net_of "$1")"; }
host_addr() { printf '%s.2' "$(net_of "$1")"; }
endpoint() { printf 'tcp://%s:%s' "$(host_addr 0)" "$PORT"; }
host_count() { [ -f "$STATE/hosts" ] && cat "$STATE/hosts" || echo 0; }
KEYS="$STATE/keys"

check_host() {
  local h="$1" k
  k="$(host_count)"
  [[ "$h" =~ ^[0-9]+$ ]] || die "HOST must be a number, got '$h'"
  ((h < k)) || die "no host $h (the cluster has $k hosts; run 'netns.sh up K' first)"
}

need_root() {
  [ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces and veth pairs)"
  command -v ip >/dev/null || skip "the 'ip' command (iproute2) is missing"
}

# Serialises invocations that change state; fd 9 is closed for every process started here.
take_lock() {
  mkdir -p "$STATE" "$STATE/logs"
  exec 9>"$STATE/.lock"
  if command -v flock >/dev/null; then flock -w 60 9 || die "another netns.sh holds $STATE/.lock"; fi
}

probe() {
  local p
  p="${PREFIX}-probe$$"
  ip netns add "$p" 2>/dev/null || skip "cannot create network namespaces here (ip netns add failed)"
  if ! ip link add "${PREFIX}p$$" type veth peer name "${PREFIX}q$$" 2>/dev/null; then
    ip netns del "$p" 2>/dev/null || true
    skip "cannot create veth pairs here"
  fi
  ip link del "${PREFIX}p$$" 2>/dev/null || true
  ip netns del "$p" 2>/dev/null || true
}

# ---------- processes ----------

# The executable a PID runs, without a " (deleted)" suffix (binaries rebuilt while running).
pid_exe() { local e; e="$(readlink "/proc/$1/exe" 2>/dev/null)" || return 1; printf '%s' "${e% (deleted)}"; }

# True when PID (from pid file $2) still runs the executable recorded next to it.
is_ours() {
  local pid="$1" pidfile="$2" want
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  want="$(cat "${pidfile%.pid}.exe" 2>/dev/null)" || return 1
  [ "$(pid_exe "$pid")" = "$want" ]
}

pidfile_of() { # host → its pid file
  if [ "$1" -eq 0 ]; then printf '%s/h0.opcoord.pid' "$STATE"; else printf '%s/h%s.opworker.pid' "$STATE" "$1"; fi
}

host_pid() {
  local f pid
  f="$(pidfile_of "$1")"
  [ -f "$f" ] || return 1
  pid="$(cat "$f")"
  is_ours "$pid" "$f" || return 1
  printf '%s' "$pid"
}

# launch HOST PIDFILE LOGFILE BINARY ARGS... — runs BINARY inside host HOST, detached, and records its PID.
launch() {
  local h="$1" pidfile="$2" logfile="$3" bin="$4" pid exe
  shift 4
  exe="$(readlink -f "$bin")"
  # Keys come from the options only: not from an OPQ_KEY / OPQ_COORDINATOR_KEY the caller exported (opctl's).
  ip netns exec "$(ns_name "$h")" setsid env -u OPQ_KEY -u OPQ_COORDINATOR_KEY "$exe" "$@" </dev/null >>"$logfile" 2>&1 9>&- &
  pid=$!
  # ip netns exec, setsid and env exec in place (no fork here), so $! becomes the binary itself.
  for _ in $(seq 50); do [ "$(pid_exe "$pid" 2>/dev/null || true)" = "$exe" ] && break; sleep 0.02; done
  [ "$(pid_exe "$pid" 2>/dev/null || true)" = "$exe" ] || { log "host $h: $bin exited at once:"; tail -n 20 "$logfile" >&2; return 1; }
  printf '%s\n' "$exe" >"${pidfile%.pid}.exe"
  printf '%s\n' "$pid" >"$pidfile"
}

# Gracefully stops the processes named by pid files: SIGCONT (frozen ones) + SIGTERM, SIGKILL after $1 s.
stop_pidfiles() {
  local grace="$1" f pid live=()
  shift
  for f in "$@"; do
    [ -f "$f" ] || continue
    pid="$(cat "$f")"
    if is_ours "$pid" "$f"; then
      kill -TERM "$pid" 2>/dev/null || true
      kill -CONT "$pid" 2>/dev/null || true
      live+=("$pid")
    fi
  done
  local deadline=$((SECONDS + grace))
  for pid in "${live[@]}"; do
    while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
      log "pid $pid did not stop within ${grace}s: SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  for f in "$@"; do rm -f "$f" "${f%.pid}.exe"; done
}

start_host_process() { # HOST — starts opcoord (host 0) or opworker (others) with the options in $STATE/config
  local h="$1" BIN_DIR SLOTS PREFETCH TAGS HEARTBEAT_MS LIVENESS LOG_LEVEL SECURE ALLOW_KINDS
  # shellcheck disable=SC1091
  . "$STATE/config"
  if [ "$h" -eq 0 ]; then
    local sec=(--insecure)
    [ "$SECURE" = 1 ] && sec=(--key "$KEYS/coordinator.key" --allow "$KEYS/allow")
    rm -f "$STATE/endpoint"
    launch 0 "$(pidfile_of 0)" "$STATE/logs/h0.opcoord.log" "$BIN_DIR/opcoord" \
      --bind "$(endpoint)" --endpoint-file "$STATE/endpoint" --state-dir "$STATE/h0.state" \
      --heartbeat-ms "$HEARTBEAT_MS" --liveness "$LIVENESS" --log-level "$LOG_LEVEL" "${sec[@]}"
  else
    local args=(--connect "$(endpoint)" --name "$(ns_name "$h")" --log-level "$LOG_LEVEL")
    [ -n "$SLOTS" ] && args+=(--slots "$SLOTS")
    [ -n "$PREFETCH" ] && args+=(--prefetch "$PREFETCH")
    [ -n "$TAGS" ] && args+=(--tags "$TAGS")
    [ "$SECURE" = 1 ] && args+=(--key "$KEYS/worker.key" --coordinator-key "$KEYS/coordinator.key.pub")
    # Workers off loopback may refuse shell ops by default (opworker --allow-kinds, where it exists).
    [ "$ALLOW_KINDS" = 1 ] && args+=(--allow-kinds all)
    launch "$h" "$(pidfile_of "$h")" "$STATE/logs/h$h.opworker.log" "$BIN_DIR/opworker" "${args[@]}"
  fi
}

# opctl as the cluster's admin key (or without keys for an --insecure cluster).
opctl_admin() {
  local keys=()
  [ -s "$KEYS/admin.key" ] && [ "$(cat "$STATE/secure" 2>/dev/null)" = 1 ] &&
    keys=(--key "$KEYS/admin.key" --coordinator-key "$KEYS/coordinator.key.pub")
  env -u OPQ_KEY -u OPQ_COORDINATOR_KEY "$BIN_DIR/opctl" "$@" --coordinator "$(endpoint)" "${keys[@]}"
}

count_workers() { # number of workers the coordinator lists (needs opctl)
  opctl_admin workers --json --request-timeout 2 2>/dev/null | grep -o '"name" *:' | wc -l || true
}

# ---------- keys ----------

valid_name() { [[ "$1" =~ ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$ ]] || die "key name '$1': letters, digits, _ . - only"; }

# new_key NAME — $KEYS/NAME.key and .pub (kept if they exist).
new_key() {
  valid_name "$1"
  [ -s "$KEYS/$1.key" ] && [ -s "$KEYS/$1.key.pub" ] && return 0
  rm -f "$KEYS/$1.key" "$KEYS/$1.key.pub"
  "$BIN_DIR/opctl" keys new "$KEYS/$1.key" >/dev/null || die "opctl keys new $KEYS/$1.key failed"
}

# allow_set NAME [ROLES SCOPE…] — replaces NAME's line in the allow file (drops it without ROLES). The new
# file is written beside the old one and renamed over it, so the coordinator never reads half a file.
allow_set() {
  local name="$1" pub tmp
  shift
  pub="$(cat "$KEYS/$name.key.pub")" || die "no key '$name' in $KEYS"
  tmp="$KEYS/.allow.$$"
  if [ -f "$KEYS/allow" ]; then grep -v -F -- "$pub " "$KEYS/allow" || true; fi >"$tmp"
  (($# == 0)) || printf '%s %s %s\n' "$pub" "$name" "$*" >>"$tmp"
  chmod 0644 "$tmp"
  mv -f "$tmp" "$KEYS/allow"
}

# The opctl environment (OPCOORD and, with keys, the admin key) as `export` lines, also in $STATE/opctl.env.
write_env() {
  {
    printf 'export OPCOORD=%q\n' "$(endpoint)"
    if [ "$1" = 1 ]; then
      printf 'export OPQ_KEY=%q\n' "$KEYS/admin.key"
      printf 'export OPQ_COORDINATOR_KEY=%q\n' "$KEYS/coordinator.key.pub"
    else
      printf 'unset OPQ_KEY OPQ_COORDINATOR_KEY\n'
    fi
  } >"$STATE/opctl.env"
}

# ---------- subcommands ----------

teardown() { # idempotent: processes, then veths and namespaces of this prefix (also leftovers)
  local f ns pids link
  local pidfiles=()
  for f in "$STATE"/*.pid; do [ -e "$f" ] && pidfiles+=("$f"); done
  ((${#pidfiles[@]} == 0)) || stop_pidfiles 10 "${pidfiles[@]}"
  # Leftovers: processes still inside this prefix's namespaces (an earlier run whose state dir is gone).
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${PREFIX}-h[0-9]+\$" || true); do
    pids="$(ip netns pids "$ns" 2>/dev/null || true)"
    if [ -n "$pids" ]; then
      log "stopping leftover processes in $ns: $(echo "$pids" | tr '\n' ' ')"
      # shellcheck disable=SC2086
      kill -CONT $pids 2>/dev/null || true
      # shellcheck disable=SC2086
      kill -TERM $pids 2>/dev/null || true
      sleep 1
      # shellcheck disable=SC2086
      kill -KILL $pids 2>/dev/null || true
    fi
  done
  for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E "^${PREFIX}h[0-9]+\$" || true); do
    ip link del "$link" 2>/dev/null || true
  done
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${PREFIX}-h[0-9]+\$" || true); do
    ip netns del "$ns" 2>/dev/null || true
  done
  rm -f "$STATE/hosts" "$STATE/config" "$STATE/endpoint" "$STATE/opctl.env" "$STATE/secure"
}

cmd_up() {
  local k="${1:-}"
  if ! [[ "$k" =~ ^[0-9]+$ ]] || ((k < 2 || k > 250)); then die "up K: K must be 2..250"; fi
  ((BASE + k <= 512)) || die "up: OPQ_NETNS_BASE + K must stay within 198.18.0.0/15 (≤ 512 /24s)"
  need_root
  take_lock
  probe
  teardown
  # A new cluster: the coordinator's journal of an earlier one goes too (respawn keeps it).
  rm -rf "$STATE"/logs/*.log "$STATE/h0.state" "$KEYS"
  UP_OK=0
  trap '[ "$UP_OK" = 1 ] || { log "up failed: tearing down"; teardown; }' EXIT
  local n ns hif nif
  for ((n = 0; n < k; n++)); do
    ns="$(ns_name "$n")" hif="$(host_if "$n")" nif="$(ns_if "$n")"
    ip netns add "$ns"
    ip link add "$hif" type veth peer name "$nif"
    ip link set "$nif" netns "$ns"
    [ -w "/proc/sys/net/ipv6/conf/$hif/disable_ipv6" ] && echo 1 >"/proc/sys/net/ipv6/conf/$hif/disable_ipv6"
    # shellcheck disable=SC2016  # expanded by the inner shell, inside the namespace
    ip netns exec "$ns" sh -c 'for f in /proc/sys/net/ipv6/conf/*/disable_ipv6; do [ -w "$f" ] && echo 1 > "$f"; done; true'
    ip addr add "$(gw_addr "$n")/24" dev "$hif"
    echo 1 >"/proc/sys/net/ipv4/conf/$hif/forwarding"
    ip link set "$hif" up
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "$(host_addr "$n")/24" dev "$nif"
    ip -n "$ns" link set "$nif" up
    ip -n "$ns" route replace 198.18.0.0/15 via "$(gw_addr "$n")" dev "$nif"
  done
  echo "$k" >"$STATE/hosts"
  UP_OK=1
  log "$k hosts up: namespaces $(ns_name 0) … $(ns_name $((k - 1))) at $(host_addr 0) … $(host_addr $((k - 1)))"
}

cmd_start() {
  local bin="${1:-}"
  [ -n "$bin" ] || die "start BIN_DIR [--slots N] [--prefetch N] [--tags T] [--heartbeat-ms MS] [--liveness N] [--log-level L] [--workers N]"
  shift
  local slots="" prefetch="" tags="" hb=1000 liveness=3 level=info workers=""
  while (($#)); do
    case "$1" in
      --slots) slots="${2:?}"; shift 2 ;;
      --prefetch) prefetch="${2:?}"; shift 2 ;;
      --tags) tags="${2:?}"; shift 2 ;;
      --heartbeat-ms) hb="${2:?}"; shift 2 ;;
      --liveness) liveness="${2:?}"; shift 2 ;;
      --log-level) level="${2:?}"; shift 2 ;;
      --workers) workers="${2:?}"; shift 2 ;;
      *) die "start: unknown option '$1'" ;;
    esac
  done
  for v in "$slots" "$prefetch" "$hb" "$liveness" "$workers"; do [[ -z "$v" || "$v" =~ ^[0-9]+$ ]] || die "start: '$v' is not a number"; done
  [[ "$tags" =~ ^[A-Za-z0-9_,.:-]*$ ]] || die "start: --tags may hold letters, digits and , . _ - : only"
  [[ "$level" =~ ^[a-z]+$ ]] || die "start: bad --log-level"
  bin="$(cd "$bin" 2>/dev/null && pwd)" || die "start: no directory '$1'"
  if ! [ -x "$bin/opcoord" ] || ! [ -x "$bin/opworker" ]; then die "start: $bin has no opcoord/opworker executables"; fi
  local secure=1
  [ "${OPQ_NETNS_INSECURE:-0}" = 1 ] && secure=0
  if [ "$secure" = 1 ] && ! [ -x "$bin/opctl" ]; then die "start: keys are made with $bin/opctl, which is missing (or set OPQ_NETNS_INSECURE=1)"; fi
  local allow_kinds=0
  if "$bin/opworker" --help 2>&1 | grep -q -- --allow-kinds; then allow_kinds=1; fi
  need_root
  take_lock
  local k
  k="$(host_count)"
  ((k >= 2)) || die "start: run 'netns.sh up K' first"
  workers="${workers:-$((k - 1))}"
  ((workers >= 1 && workers < k)) || die "start: --workers must be 1..$((k - 1))"
  for ((n = 0; n < k; n++)); do
    ! host_pid "$n" >/dev/null || die "start: host $n already runs pid $(host_pid "$n"); 'netns.sh stop' first"
  done
  BIN_DIR="$bin"
  if [ "$secure" = 1 ]; then
    # This cluster's keys: made once per `up` (kept across stop/start and respawn), in a 0700 directory.
    mkdir -p "$KEYS"
    chmod 0700 "$KEYS"
    local name
    for name in coordinator worker admin; do new_key "$name"; done
    allow_set worker worker
    allow_set admin admin
  fi
  echo "$secure" >"$STATE/secure"
  cat >"$STATE/config" <<EOF
BIN_DIR='$bin'
SLOTS='$slots'
PREFETCH='$prefetch'
TAGS='$tags'
HEARTBEAT_MS='$hb'
LIVENESS='$liveness'
LOG_LEVEL='$level'
SECURE='$secure'
ALLOW_KINDS='$allow_kinds'
WORKERS='$workers'
EOF
  write_env "$secure"
  START_OK=0
  trap '[ "$START_OK" = 1 ] || { log "start failed: stopping what it started"; cmd_stop_locked; rm -f "$STATE/config"; }' EXIT
  start_host_process 0
  for _ in $(seq 100); do [ -s "$STATE/endpoint" ] && break; sleep 0.1; done
  [ -s "$STATE/endpoint" ] || { tail -n 20 "$STATE/logs/h0.opcoord.log" >&2; die "opcoord did not start listening within 10 s"; }
  for ((n = 1; n <= workers; n++)); do start_host_process "$n"; done
  if [ -x "$bin/opctl" ]; then
    local have=0 deadline=$((SECONDS + 30))
    while ((SECONDS < deadline)); do
      have="$(count_workers)"
      ((have >= workers)) && break
      sleep 0.2
    done
    ((have >= workers)) || die "only $have of $workers workers registered within 30 s (logs: $STATE/logs)"
  fi
  START_OK=1
  local how="CURVE keys in $KEYS"
  [ "$secure" = 1 ] || how="--insecure (no keys)"
  log "opcoord in $(ns_name 0) at $(endpoint), $how; $workers workers connected; logs in $STATE/logs"
  cat "$STATE/opctl.env"
}

cmd_key() { # NAME ROLES [SCOPE…]
  local name="${1:-}"
  (($# >= 2)) || die "key NAME ROLES [SCOPE…]"
  shift
  [ -f "$STATE/config" ] || die "key: 'netns.sh start' has not run"
  [ "$(cat "$STATE/secure" 2>/dev/null)" = 1 ] || die "key: this cluster runs without keys (OPQ_NETNS_INSECURE=1)"
  take_lock
  # shellcheck disable=SC1091
  BIN_DIR="$(. "$STATE/config"; printf '%s' "$BIN_DIR")"
  new_key "$name"
  allow_set "$name" "$@"
  printf '%s\n' "$KEYS/$name.key"
}

cmd_revoke() { # NAME
  local name="${1:-}"
  [ -n "$name" ] || die "revoke NAME"
  valid_name "$name"
  [ -s "$KEYS/$name.key.pub" ] || die "revoke: no key '$name' in $KEYS"
  take_lock
  allow_set "$name"
  log "key $name revoked (its line removed from $KEYS/allow)"
}

cmd_stop_locked() {
  local f pidfiles=()
  for f in "$STATE"/*.pid; do [ -e "$f" ] && pidfiles+=("$f"); done
  # Workers first, so they do not spend the grace period reconnecting to a coordinator that is gone.
  local workers=() coord=()
  for f in "${pidfiles[@]}"; do case "$f" in *opcoord.pid) coord+=("$f") ;; *) workers+=("$f") ;; esac; done
  ((${#workers[@]} == 0)) || stop_pidfiles 10 "${workers[@]}"
  ((${#coord[@]} == 0)) || stop_pidfiles 10 "${coord[@]}"
  return 0
}

cmd_signal() { # SIGNAL HOST
  local sig="$1" h="${2:-}" pid
  [ -n "$h" ] || usage
  check_host "$h"
  pid="$(host_pid "$h")" || die "host $h runs no process started by netns.sh"
  kill "-$sig" "$pid"
  log "host $h: SIG$sig → pid $pid"
}

cmd_cut() {
  local h="${1:-}"
  [ -n "$h" ] || usage
  need_root
  check_host "$h"
  ip link set "$(host_if "$h")" down
  log "host $h cut off ($(host_if "$h") down) at $(date -u +%H:%M:%S.%N | cut -c1-12)"
}

cmd_restore() {
  local h="${1:-}"
  [ -n "$h" ] || usage
  need_root
  check_host "$h"
  ip link set "$(host_if "$h")" up
  # The kernel puts the connected route back on link up; the namespace's route survives carrier loss,
  # but make sure of both.
  ip route replace "$(net_of "$h").0/24" dev "$(host_if "$h")" src "$(gw_addr "$h")" 2>/dev/null || true
  ip -n "$(ns_name "$h")" route replace 198.18.0.0/15 via "$(gw_addr "$h")" dev "$(ns_if "$h")"
  log "host $h restored at $(date -u +%H:%M:%S.%N | cut -c1-12)"
}

cmd_respawn() {
  local h="${1:-}"
  [ -n "$h" ] || usage
  need_root
  take_lock
  check_host "$h"
  [ -f "$STATE/config" ] || die "respawn: 'netns.sh start' has not run"
  ! host_pid "$h" >/dev/null || die "host $h still runs pid $(host_pid "$h")"
  start_host_process "$h"
  log "host $h: started again, pid $(host_pid "$h")"
}

cmd_status() {
  local k n state pid st
  k="$(host_count)"
  if ((k == 0)); then echo "no cluster (state dir $STATE)"; return 0; fi
  printf '%-6s %-10s %-14s %-6s %-9s %s\n' HOST NAMESPACE ADDRESS LINK PID PROCESS
  for ((n = 0; n < k; n++)); do
    state="$(cat "/sys/class/net/$(host_if "$n")/operstate" 2>/dev/null || echo missing)"
    if pid="$(host_pid "$n")"; then
      st="$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || echo '?')"
      case "$st" in T | t) st="frozen" ;; Z) st="zombie" ;; *) st="running" ;; esac
      st="$(basename "$(pid_exe "$pid")") $st"
    else
      pid="-" st="-"
    fi
    printf '%-6s %-10s %-14s %-6s %-9s %s\n' "$n" "$(ns_name "$n")" "$(host_addr "$n")" "$state" "$pid" "$st"
  done
  if [ -f "$STATE/config" ]; then
    # shellcheck disable=SC1091
    . "$STATE/config"
    echo "coordinator: $(endpoint)   logs: $STATE/logs"
    if [ -x "$BIN_DIR/opctl" ]; then
      opctl_admin workers --request-timeout 2 || echo "(the coordinator did not answer)"
    fi
  fi
}

main() {
  local cmd="${1:-}"
  [ -n "$cmd" ] || usage
  shift
  case "$cmd" in
    up) cmd_up "$@" ;;
    start) cmd_start "$@" ;;
    exec)
      [ $# -ge 2 ] || usage
      need_root
      check_host "$1"
      local ns
      ns="$(ns_name "$1")"
      shift
      exec ip netns exec "$ns" "$@"
      ;;
    cut) cmd_cut "$@" ;;
    restore) cmd_restore "$@" ;;
    freeze) cmd_signal STOP "$@" ;;
    thaw) cmd_signal CONT "$@" ;;
    kill) cmd_signal KILL "$@" ;;
    respawn) cmd_respawn "$@" ;;
    stop) need_root; take_lock; cmd_stop_locked ;;
    status) cmd_status ;;
    endpoint) endpoint; echo ;;
    env) [ -f "$STATE/opctl.env" ] || die "env: 'netns.sh start' has not run"; cat "$STATE/opctl.env" ;;
    key) cmd_key "$@" ;;
    revoke) cmd_revoke "$@" ;;
    pid) [ $# -ge 1 ] || usage; check_host "$1"; host_pid "$1" || die "host $1 runs no process"; echo ;;
    down)
      if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null; then log "down: nothing to do without root"; exit 0; fi
      take_lock
      teardown
      log "down: $PREFIX hosts removed"
      ;;
    -h | --help | help) usage 0 ;;
    *) echo "netns.sh: unknown command '$cmd'" >&2; usage ;;
  esac
}

main "$@"
