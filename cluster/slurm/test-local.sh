#!/usr/bin/env bash
# cluster/slurm/test-local.sh BIN_DIR — runs opqueue.sbatch on this machine without Slurm.
#
# Fake `srun` and `scontrol` commands (in a temp dir put first on PATH) stand in for Slurm: the fake
# srun starts --nodes copies of its command here, with SLURM_PROCID set and --output honoured, and
# forwards SIGTERM to them. Everything uses 127.0.0.1. Checks that the sbatch script starts the
# coordinator (with the job's keys) and 2 workers, runs examples/diamond.yaml to success, and leaves
# no process (and no key) behind.
# Exit status: 0 passed, 1 failed, 2 usage.
set -Eeuo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BIN="${1:-}"
if [ -z "$BIN" ] || [ ! -x "$BIN/opcoord" ]; then echo "usage: test-local.sh BIN_DIR [GRAPH]" >&2; exit 2; fi
BIN="$(cd "$BIN" && pwd)"
GRAPH="${2:-$HERE/../../examples/diamond.yaml}"
T="$(mktemp -d /tmp/opq-slurm-test.XXXXXX)"
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/fakebin" "$T/submit"

cat >"$T/fakebin/scontrol" <<'SH'
#!/usr/bin/env bash
# fake: `scontrol show hostnames LIST` prints one name per node
[ "$1 $2" = "show hostnames" ] && { echo 127.0.0.1; exit 0; }
exit 1
SH
cat >"$T/fakebin/srun" <<'SH'
#!/usr/bin/env bash
# fake srun: --nodes=N copies of the command on this machine; --output=PATTERN (%N node, %t task)
nodes=1 out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes=*) nodes="${1#--nodes=}" ;;
    --output=*) out="${1#--output=}" ;;
    --*) ;;
    *) break ;;
  esac
  shift
done
pids=()
# The trap comes first: a SIGTERM that arrives while the tasks start must still reach them.
trap 'kill -TERM "${pids[@]}" 2>/dev/null' TERM INT
for ((i = 0; i < nodes; i++)); do
  f="${out//%N/node$i}"; f="${f//%t/$i}"
  SLURM_PROCID=$i "$@" >"${f:-/dev/null}" 2>&1 &
  pids+=($!)
done
wait
wait "${pids[@]}" 2>/dev/null || true
SH
chmod +x "$T/fakebin/scontrol" "$T/fakebin/srun"

set +e
(
  cd "$T/submit"
  PATH="$T/fakebin:$PATH" SLURM_JOB_ID=local SLURM_JOB_NUM_NODES=2 SLURM_JOB_NODELIST=fake \
    SLURM_SUBMIT_DIR="$T/submit" SLURM_CPUS_PER_TASK=2 OPQ_BIN="$BIN" OPQ_TIMEOUT=60 \
    OPQ_HEAD=127.0.0.1 OPQ_BIND_HOST=127.0.0.1 \
    timeout 120 bash "$HERE/opqueue.sbatch" "$GRAPH"
)
rc=$?
set -e
echo "== opqueue.sbatch exited $rc"
ls "$T/submit" "$T/submit/opqueue-local-logs"
fail=0
[ "$rc" -eq 0 ] || fail=1
[ -s "$T/submit/opqueue-local-status.json" ] || { echo "FAIL: no status JSON"; fail=1; }
n="$(grep -o '"succeeded"' "$T/submit/opqueue-local-status.json" | wc -l)"
echo "== $n operations succeeded"
[ "$n" -ge 1 ] || fail=1
grep -q "opcoord stopped" "$T/submit/opqueue-local-logs/opcoord.log" || { echo "FAIL: opcoord did not stop cleanly"; fail=1; }
grep -q "(CURVE)" "$T/submit/opqueue-local-logs/opcoord.log" || { echo "FAIL: opcoord did not listen with keys (CURVE)"; fail=1; }
[ ! -e "$T/submit/opqueue-local-keys" ] || { echo "FAIL: the job's keys were not removed"; fail=1; }
for log in "$T"/submit/opqueue-local-logs/*.log; do echo "-- $log"; tail -n 4 "$log"; done
if [ "$fail" -eq 0 ]; then echo "PASS: opqueue.sbatch under fake Slurm"; else echo "FAIL"; fi
exit "$fail"
