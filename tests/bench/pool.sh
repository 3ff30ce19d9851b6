#!/usr/bin/env bash
# Warm-pool benchmark (on demand, not part of the tests): on the single-node
# cluster, in one run, N sessions claimed from a warm BrowserPool versus N
# cold sessions (interleaved), then a burst of BURST of each: create → Ready
# and create → first `playwright-cli goto` answered, p50/p99, the ratio
# cold/warm; pooled sessions with auth state (create → Ready and → the
# state's cookie visible); the working set of an idle warm browser container.
#   tests/bench/pool.sh [N] [BURST]     (defaults 10 and 20)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
N="${1:-10}"
BURST="${2:-20}"
NS=playpen-bench-pool
RELEASE_NS=playpen-bench-system
KUBECONFIG="$(tests/cluster/start-node.sh | tail -n 1)"
export KUBECONFIG
tests/imagebuild/setup.sh >/dev/null
tests/e2e/images.sh --release
PLAYPEN_KUBECTL="$(. tests/cluster/lib.sh && echo "${K8S_BIN}/kubectl")"
HELM="$(tests/cluster/build-helm.sh | tail -n 1)"
export PLAYPEN_KUBECTL
cleanup() {
  "$PLAYPEN_KUBECTL" delete namespace "$NS" --ignore-not-found --wait=true >/dev/null 2>&1 || true
  "$HELM" uninstall playpen-bench -n "$RELEASE_NS" >/dev/null 2>&1 || true
}
trap cleanup EXIT
# A clean start: nothing of an earlier run competes for the node.
"$PLAYPEN_KUBECTL" delete namespace "$NS" --ignore-not-found --wait=true >/dev/null
"$PLAYPEN_KUBECTL" create namespace "$NS" >/dev/null
"$HELM" upgrade --install playpen-bench charts/playpen -n "$RELEASE_NS" --create-namespace --take-ownership --wait \
  --set image.repository=playpen/operator,image.tag=dev,image.pullPolicy=Never \
  --set "watchNamespaces={${NS}}" --set logFormat=text \
  --set seccompProfileInstaller.enabled=true,seccompProfileInstaller.image.repository=playpen/base \
  --set seccompProfileInstaller.image.tag=bookworm,seccompProfileInstaller.image.pullPolicy=Never >/dev/null
cargo build --release --locked -p playpen-tests --bin bench-pool
"${CARGO_TARGET_DIR:-target}/release/bench-pool" "$N" "$BURST" "$NS"
