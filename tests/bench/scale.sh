#!/usr/bin/env bash
# Scale benchmark (on demand, not part of the tests): the operator benchmark
# (tests/bench/operator.sh: ideal controller, operator, full resync, one
# table each) on the simulated fleet of the kwok tier, waiting for Ready too
# (kwok moves the Pods through scheduled -> running -> ready), for each N.
#   tests/bench/scale.sh [N...]      default: 1000 10000
#   PLAYPEN_SCALE_NODES              fake nodes (default 100)
#   PLAYPEN_BENCH_ROUNDS             rounds of ideal and operator per N (default 1 here)
# The kwok tier runs in the cluster state dir of tests/cluster/lib.sh
# (PLAYPEN_CLUSTER_DIR and ports as for every cluster script); it is started
# if needed, and on every exit its fake nodes are deleted and it is stopped
# (the control plane stays up, as the other benchmarks leave it): the node
# benchmarks after this one refuse to start beside a running kwok tier, and
# untainted fake nodes would take their Pods and the chart's DaemonSet.
# Each round deletes its sessions.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
KUBECTL="$(. tests/cluster/lib.sh && echo "${K8S_BIN}/kubectl")"
KWOK_NODES="$(. tests/cluster/lib.sh && echo "$KWOK_NODE_LABEL")"
SCALE_KUBECONFIG=""

cleanup() {
  local rc=$?
  trap '' INT TERM
  echo "[$(date +%T) scale.sh] cleanup: delete the fake nodes (label ${KWOK_NODES}) and stop the kwok tier" >&2
  # Only on the cluster start-kwok.sh answered with, never a KUBECONFIG from outside.
  if [[ -n "$SCALE_KUBECONFIG" ]]; then
    "$KUBECTL" --kubeconfig "$SCALE_KUBECONFIG" delete nodes -l "$KWOK_NODES" --wait=false >/dev/null 2>&1 || true
  fi
  tests/cluster/stop.sh --kwok >/dev/null 2>&1 || echo "[scale.sh] WARNING: tests/cluster/stop.sh --kwok failed" >&2
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
NODES="${PLAYPEN_SCALE_NODES:-100}"
[[ "$NODES" =~ ^[1-9][0-9]*$ ]] || { echo "PLAYPEN_SCALE_NODES must be a positive number" >&2; exit 2; }
ROUNDS=("$@")
((${#ROUNDS[@]} > 0)) || ROUNDS=(1000 10000)

SCALE_KUBECONFIG="$(tests/cluster/start-kwok.sh "$NODES" | tail -n 1)"
export KUBECONFIG="$SCALE_KUBECONFIG"
for n in "${ROUNDS[@]}"; do
  echo "== ${n} sessions on ${NODES} kwok nodes =="
  # The ideal controller runs at the operator's reconcile concurrency. One
  # round each by default (a round of 10,000 takes about 15 minutes).
  PLAYPEN_BENCH_READY=1 PLAYPEN_BENCH_ROUNDS="${PLAYPEN_BENCH_ROUNDS:-1}" bash tests/bench/operator.sh "$n"
done
