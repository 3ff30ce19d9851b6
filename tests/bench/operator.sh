#!/usr/bin/env bash
# Operator benchmark (on demand, not part of the tests): N BrowserSessions
# (default 1000) against the real API server; prints latency, reconcile
# rate and peak RSS next to a baseline measured in the same run.
#   tests/bench/operator.sh [N] [RATE]   RATE sessions/s (default 0: a burst)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
N="${1:-1000}"
RATE="${2:-0}"
PORT=18081
KUBECONFIG="$(tests/cluster/start.sh | tail -n 1)"
export KUBECONFIG
cargo build --release --locked -p playpen-operator -p playpen-tests --bin playpen-operator --bin bench-operator
STATE="${PLAYPEN_CLUSTER_DIR:-/tmp/playpen-cluster}"
target/release/playpen-operator crd >"${STATE}/crd.yaml"
PLAYPEN_HTTP_ADDR="127.0.0.1:${PORT}" RUST_LOG=warn target/release/playpen-operator run >"${STATE}/logs/bench-operator.log" 2>&1 &
OP=$!
trap 'kill $OP 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do curl -fsS "http://127.0.0.1:${PORT}/readyz" >/dev/null 2>&1 && break; sleep 0.2; done
target/release/bench-operator "$N" "http://127.0.0.1:${PORT}/metrics" "$OP" "$RATE"
