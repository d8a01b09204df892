#!/usr/bin/env bash
# cluster/check.sh — static checks of everything in cluster/ (nothing is started or deployed).
#
#   ShellCheck   every shell script in cluster/ (*.sh, *.sbatch, and files with a bash/sh shebang)
#   bash -n      the same scripts (syntax)
#   YAML         every *.yaml / *.yml in cluster/k8s parses (python3 + PyYAML) and every document
#                has apiVersion, kind and metadata.name; `kubectl kustomize` renders the set if
#                kubectl is installed (offline, no cluster needed)
#   systemd      `systemd-analyze verify` on the units (binaries stubbed; any warning fails),
#                skipped with a message when systemd-analyze is missing
#   Containerfile  has FROM stages, and every COPY source from the build context exists
#
# Prints each check and its result; exits 1 if any check failed (0 otherwise; skipped checks don't
# fail). Run from anywhere: cluster/check.sh
set -Euo pipefail

CLUSTER="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$CLUSTER/.." && pwd)"
failures=0
checked=0
TMP="$(mktemp -d /tmp/opq-check.XXXXXX)"
trap 'rm -rf "$TMP"' EXIT

ok() { printf '  ok    %s\n' "$*"; checked=$((checked + 1)); }
bad() { printf '  FAIL  %s\n' "$*"; failures=$((failures + 1)); checked=$((checked + 1)); }
skip() { printf '  skip  %s\n' "$*"; }
indent() { sed 's/^/          /'; }

# ---------- shell scripts ----------
echo "== shell scripts"
scripts=()
while IFS= read -r -d '' f; do
  case "$f" in
    *.sh | *.sbatch) scripts+=("$f") ;;
    *) head -n 1 "$f" 2>/dev/null | grep -qE '^#!.*(bash|/sh)' && scripts+=("$f") ;;
  esac
done < <(find "$CLUSTER" -type f \( -name '*.sh' -o -name '*.sbatch' -o -perm -u+x \) -print0 | sort -z)
if ((${#scripts[@]} == 0)); then bad "no scripts found under $CLUSTER"; fi
have_shellcheck=0
command -v shellcheck >/dev/null && have_shellcheck=1
((have_shellcheck)) || skip "shellcheck not installed (Debian: apt-get install shellcheck)"
for f in "${scripts[@]}"; do
  rel="${f#"$ROOT"/}"
  if out="$(bash -n "$f" 2>&1)"; then ok "bash -n $rel"; else bad "bash -n $rel"; echo "$out" | indent; fi
  if ((have_shellcheck)); then
    if out="$(shellcheck -x -s bash "$f" 2>&1)"; then ok "shellcheck $rel"; else bad "shellcheck $rel"; echo "$out" | indent; fi
  fi
  [ -x "$f" ] || bad "$rel is not executable"
done

# ---------- Kubernetes YAML ----------
echo "== Kubernetes manifests (cluster/k8s)"
PY=/usr/bin/python3
[ -x "$PY" ] || PY="$(command -v python3 || true)"
if [ -n "$PY" ] && ! "$PY" -c 'import yaml' 2>/dev/null; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    echo "  installing python3-yaml (apt)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-yaml >/dev/null 2>&1 ||
      { apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-yaml >/dev/null 2>&1; } || true
  fi
fi
yamls=()
while IFS= read -r -d '' f; do yamls+=("$f"); done < <(find "$CLUSTER/k8s" -type f \( -name '*.yaml' -o -name '*.yml' \) -print0 2>/dev/null | sort -z)
if ((${#yamls[@]} == 0)); then
  bad "no YAML files in cluster/k8s"
elif [ -z "$PY" ] || ! "$PY" -c 'import yaml' 2>/dev/null; then
  bad "python3 with PyYAML is needed to check the manifests (apt-get install python3-yaml)"
else
  for f in "${yamls[@]}"; do
    rel="${f#"$ROOT"/}"
    if out="$("$PY" - "$f" 2>&1 <<'EOF'
import sys, yaml
path = sys.argv[1]
problems, kinds = [], []
try:
    with open(path) as fh:
        docs = [d for d in yaml.safe_load_all(fh) if d is not None]
except yaml.YAMLError as e:
    print(f"YAML syntax: {e}"); sys.exit(1)
if not docs:
    problems.append("no documents")
for i, d in enumerate(docs):
    where = f"document {i + 1}"
    if not isinstance(d, dict):
        problems.append(f"{where}: not a mapping"); continue
    for key in ("apiVersion", "kind"):
        if not isinstance(d.get(key), str) or not d.get(key):
            problems.append(f"{where}: missing {key}")
    meta = d.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta.get("name"):
        problems.append(f"{where} ({d.get('kind', '?')}): missing metadata.name")
    kinds.append(f"{d.get('kind', '?')}/{(meta or {}).get('name', '?') if isinstance(meta, dict) else '?'}")
    # Workloads: every container names an image; selectors match the pod template's labels.
    spec = d.get("spec") if isinstance(d.get("spec"), dict) else {}
    tmpl = spec.get("template") if isinstance(spec.get("template"), dict) else None
    if tmpl is not None:
        labels = ((tmpl.get("metadata") or {}).get("labels") or {})
        sel = ((spec.get("selector") or {}).get("matchLabels") or {})
        for k, v in sel.items():
            if labels.get(k) != v:
                problems.append(f"{where} ({d.get('kind')}): selector {k}={v} does not match the template's labels")
        for c in ((tmpl.get("spec") or {}).get("containers") or []):
            if not c.get("image"):
                problems.append(f"{where}: container {c.get('name', '?')} has no image")
if problems:
    print("\n".join(problems)); sys.exit(1)
print(", ".join(kinds))
EOF
)"; then ok "$rel: $out"; else bad "$rel"; echo "$out" | indent; fi
  done
fi
if [ -f "$CLUSTER/k8s/kustomization.yaml" ]; then
  if command -v kubectl >/dev/null; then
    if out="$(kubectl kustomize "$CLUSTER/k8s" 2>&1)"; then
      ok "kubectl kustomize cluster/k8s renders $(grep -c '^kind:' <<<"$out") objects"
    else
      bad "kubectl kustomize cluster/k8s"; echo "$out" | indent
    fi
  else
    skip "kubectl not installed: kustomization not rendered"
  fi
fi

# ---------- systemd units ----------
echo "== systemd units (cluster/systemd)"
units=()
while IFS= read -r -d '' f; do units+=("$f"); done < <(find "$CLUSTER/systemd" -type f -name '*.service' -print0 2>/dev/null | sort -z)
if ((${#units[@]} == 0)); then
  bad "no units in cluster/systemd"
elif ! command -v systemd-analyze >/dev/null; then
  skip "systemd-analyze not installed: ${#units[@]} unit(s) not verified"
else
  # The units name /usr/local/bin/op*, absent here: verify copies that point at stubs instead.
  mkdir -p "$TMP/units" "$TMP/bin"
  for b in opcoord opworker opctl; do ln -sf /bin/true "$TMP/bin/$b"; done
  for f in "${units[@]}"; do
    name="$(basename "$f")"
    sed "s#/usr/local/bin/#$TMP/bin/#g" "$f" >"$TMP/units/$name"
    target="$TMP/units/$name"
    if [[ "$name" == *@.service ]]; then # verify an instance of a template
      target="$TMP/units/${name%@.service}@check.service"
      ln -sf "$TMP/units/$name" "$target"
    fi
    # verify exits 0 on unknown keys and unparsable values: any message counts as a failure.
    out="$(cd "$TMP/units" && SYSTEMD_LOG_COLOR=0 systemd-analyze verify --man=no "$target" 2>&1)"
    rc=$?
    if [ "$rc" -eq 0 ] && [ -z "$out" ]; then ok "systemd-analyze verify ${f#"$ROOT"/}"; else bad "systemd-analyze verify ${f#"$ROOT"/} (exit $rc)"; echo "$out" | indent; fi
  done
fi
for f in "$CLUSTER"/systemd/*.env; do
  [ -e "$f" ] || continue
  if grep -vE '^[[:space:]]*(#|$)' "$f" | grep -vqE '^[A-Z_][A-Z0-9_]*='; then
    bad "${f#"$ROOT"/}: lines must be KEY=value"
  else
    ok "${f#"$ROOT"/}: KEY=value lines"
  fi
done

# ---------- Containerfile ----------
echo "== container recipe (cluster/container)"
CF="$CLUSTER/container/Containerfile"
if [ ! -f "$CF" ]; then
  bad "cluster/container/Containerfile is missing"
else
  stages="$(grep -cE '^FROM ' "$CF")"
  if [ "$stages" -ge 1 ]; then ok "Containerfile: $stages FROM stage(s)"; else bad "Containerfile: no FROM"; fi
  missing=""
  # COPY sources (not --from=...) are relative to the build context, the repository root.
  while read -r line; do
    read -ra words <<<"$line"
    srcs=("${words[@]:1:${#words[@]}-2}")
    for s in "${srcs[@]}"; do
      [[ "$s" == --* ]] && continue
      [ -e "$ROOT/$s" ] || missing+=" $s"
    done
  done < <(grep -E '^COPY ' "$CF" | grep -v -- '--from=')
  if [ -z "$missing" ]; then ok "Containerfile: every COPY source exists in the repository"; else bad "Containerfile: COPY sources missing:$missing"; fi
fi

echo "== $checked checks, $failures failed"
[ "$failures" -eq 0 ]
