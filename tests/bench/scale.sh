#!/usr/bin/env bash
# Scale benchmark (on demand, not part of the tests): the operator benchmark
# (tests/bench/operator.sh: ideal controller, operator, full resync, one
# table each) on the simulated fleet of the kwok tier, waiting for Ready too
# (kwok moves the Pods through scheduled -> running -> ready), for each N.
#   tests/bench/scale.sh [N...]      default: 1000 10000
#   PLAYPEN_SCALE_NODES              fake nodes (default 100)
# The kwok tier runs in the cluster state dir of tests/cluster/lib.sh
# (PLAYPEN_CLUSTER_DIR and ports as for every cluster script); it is started
# if needed and left running, like the control plane the other benchmarks
# use (tests/cluster/stop.sh stops both). Each round deletes its sessions.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
NODES="${PLAYPEN_SCALE_NODES:-100}"
[[ "$NODES" =~ ^[1-9][0-9]*$ ]] || { echo "PLAYPEN_SCALE_NODES must be a positive number" >&2; exit 2; }
ROUNDS=("$@")
((${#ROUNDS[@]} > 0)) || ROUNDS=(1000 10000)

KUBECONFIG="$(tests/cluster/start-kwok.sh "$NODES" | tail -n 1)"
export KUBECONFIG
for n in "${ROUNDS[@]}"; do
  echo "== ${n} sessions on ${NODES} kwok nodes =="
  # The ideal controller runs at the operator's reconcile concurrency.
  PLAYPEN_BENCH_READY=1 bash tests/bench/operator.sh "$n"
done
