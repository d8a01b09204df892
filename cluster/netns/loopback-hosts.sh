#!/usr/bin/env bash
# cluster/netns/loopback-hosts.sh — the netns.sh verbs faults.sh uses, for processes on loopback, where
# network namespaces cannot be made. Host 0 is opcoord on 127.0.0.1, hosts 1..K-1 are opworkers named
# PREFIX-hN (the names netns.sh gives them). There is no link to cut: `cut`/`restore` fail.
#
# Loopback needs no keys: `env` prints OPCOORD and unsets OPQ_KEY / OPQ_COORDINATOR_KEY (as netns.sh env).
#
# Usage: loopback-hosts.sh up K | start BIN_DIR [opworker/opcoord options…] | endpoint | env
#        | kill HOST | pid HOST | freeze HOST | thaw HOST | respawn HOST | stop | down
# State (pid files, logs/, endpoint, the start options) in $OPQ_NETNS_STATE (default /tmp/PREFIX-loopback).
set -Eeuo pipefail
PREFIX="${OPQ_NETNS_PREFIX:-opq}"
STATE="${OPQ_NETNS_STATE:-/tmp/${PREFIX}-loopback}"
die() { printf 'loopback-hosts.sh: %s\n' "$*" >&2; exit 1; }
# Loopback processes use no keys, whatever the caller exported for opctl.
unset OPQ_KEY OPQ_COORDINATOR_KEY
pid_of() { cat "$STATE/h$1.pid" 2>/dev/null || die "no process for host $1"; }

launch() { # HOST
  local h="$1" bin opts
  bin="$(cat "$STATE/bin")"
  read -ra opts <"$STATE/opts"
  if [ "$h" -eq 0 ]; then
    local co=() hb=() i
    # opcoord takes only its own options of the shared list.
    for ((i = 0; i < ${#opts[@]}; i++)); do
      case "${opts[$i]}" in
        --heartbeat-ms|--liveness|--log-level|--start-timeout|--max-prefetch) hb+=("${opts[$i]}" "${opts[$((i + 1))]}"); i=$((i + 1));;
      esac
    done
    # A respawned coordinator binds the endpoint the workers know, and recovers its state directory.
    local bind='tcp://127.0.0.1:*'
    [ -s "$STATE/endpoint" ] && bind="$(cat "$STATE/endpoint")"
    co=(--bind "$bind" --endpoint-file "$STATE/endpoint" --state-dir "$STATE/h0.state" "${hb[@]}")
    "$bin/opcoord" "${co[@]}" >>"$STATE/logs/h0.opcoord.log" 2>&1 &
  else
    local wo=() i
    for ((i = 0; i < ${#opts[@]}; i++)); do
      case "${opts[$i]}" in --heartbeat-ms|--liveness|--start-timeout|--max-prefetch) i=$((i + 1));; *) wo+=("${opts[$i]}");; esac
    done
    "$bin/opworker" --connect "$(cat "$STATE/endpoint")" --name "$PREFIX-h$h" "${wo[@]}" >>"$STATE/logs/h$h.opworker.log" 2>&1 &
  fi
  echo $! >"$STATE/h$h.pid"
}

stop_all() {
  local f p
  for f in "$STATE"/h*.pid; do
    [ -e "$f" ] || continue
    p="$(cat "$f")"
    kill -CONT "$p" 2>/dev/null || true
    kill -TERM "$p" 2>/dev/null || true
  done
  for f in "$STATE"/h*.pid; do
    [ -e "$f" ] || continue
    p="$(cat "$f")"
    for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true
    rm -f "$f"
  done
}

case "${1:-}" in
  up) mkdir -p "$STATE/logs"; stop_all; rm -rf "$STATE"/logs/*.log "$STATE/endpoint" "$STATE/h0.state"; echo "${2:?K}" >"$STATE/hosts";;
  start)
    shift; [ -x "${1:-}/opcoord" ] || die "start BIN_DIR: no opcoord in '${1:-}'"
    (cd "$1" && pwd) >"$STATE/bin"; shift
    echo "$*" >"$STATE/opts"
    launch 0
    for _ in $(seq 200); do [ -s "$STATE/endpoint" ] && break; sleep 0.05; done
    [ -s "$STATE/endpoint" ] || die "opcoord did not start (logs: $STATE/logs)"
    k="$(cat "$STATE/hosts")"
    for ((h = 1; h < k; h++)); do launch "$h"; done
    for _ in $(seq 300); do
      n="$("$(cat "$STATE/bin")/opctl" workers --json --coordinator "$(cat "$STATE/endpoint")" 2>/dev/null \
        | /usr/bin/python3 -c 'import json, sys; print(len(json.load(sys.stdin)))' 2>/dev/null || echo 0)"
      [ "$n" -ge $((k - 1)) ] && exit 0
      sleep 0.1
    done
    die "only $n of $((k - 1)) workers registered within 30 s (logs: $STATE/logs)";;
  endpoint) cat "$STATE/endpoint";;
  env) printf 'export OPCOORD=%q\nunset OPQ_KEY OPQ_COORDINATOR_KEY\n' "$(cat "$STATE/endpoint")";;
  kill) kill -KILL "$(pid_of "$2")";;
  pid) pid_of "$2";;
  freeze) kill -STOP "$(pid_of "$2")";;
  thaw) kill -CONT "$(pid_of "$2")";;
  respawn) launch "$2";;
  cut|restore) die "there is no link to $1 on loopback";;
  stop|down) stop_all;;
  *) sed -n '/^# Usage/,/^# State/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2;;
esac
