#!/usr/bin/env bash
# Starts a coordinator and two example workers on loopback, runs the ImagePipeline client, stops them.
# Usage: examples/ImagePipeline/run.sh [--rows N]   (builds with `swift build` first)
set -euo pipefail
cd "$(dirname "$0")/../.."
swift build --product opcoord >/dev/null
swift build --product example-worker >/dev/null
swift build --product imagepipeline >/dev/null
BIN="$(swift build --show-bin-path)"
WORK="$(mktemp -d /tmp/imagepipeline.XXXXXX)"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
unset OPQ_KEY OPQ_COORDINATOR_KEY   # a loopback coordinator without keys: keys exported for another one would be refused
"$BIN/opcoord" --bind 'tcp://127.0.0.1:*' --endpoint-file "$WORK/endpoint" --state-dir "$WORK/state" >"$WORK/opcoord.log" 2>&1 & pids+=($!)
for _ in $(seq 100); do [[ -s "$WORK/endpoint" ]] && break; sleep 0.05; done
export OPCOORD="$(cat "$WORK/endpoint")"
for w in 1 2; do
  "$BIN/example-worker" --name "images-$w" --slots 2 --prefetch 0 >"$WORK/worker-$w.log" 2>&1 & pids+=($!)
done
sleep 0.5   # let the workers register (operations would wait for them anyway; the client warns when none offers a kind)
"$BIN/imagepipeline" --dir "$WORK/images" "$@"
ls "$WORK/images" | head -5; echo "… ($(ls "$WORK/images" | wc -l) files in $WORK/images)"
