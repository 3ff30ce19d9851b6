#!/usr/bin/env bash
# Cold-start benchmark (on demand, not part of the tests): N sessions
# (default 10) applied one at a time on the single-node cluster with the
# browser image present; prints apply → Ready p50/p95 with a breakdown
# (scheduling, container start, runtime start-up, browser launch, readiness)
# next to a plain Pod on the same image measured in the same run.
#   tests/bench/cold-start.sh [N]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
N="${1:-10}"
NS=playpen-bench
RELEASE_NS=playpen-bench-system
KUBECONFIG="$(tests/cluster/start-node.sh | tail -n 1)"
export KUBECONFIG
tests/imagebuild/setup.sh >/dev/null
tests/e2e/images.sh --release
PLAYPEN_KUBECTL="$(. tests/cluster/lib.sh && echo "${K8S_BIN}/kubectl")"
HELM="$(tests/cluster/build-helm.sh | tail -n 1)"
export PLAYPEN_KUBECTL
"$PLAYPEN_KUBECTL" create namespace "$NS" --dry-run=client -o yaml | "$PLAYPEN_KUBECTL" apply -f - >/dev/null
"$HELM" upgrade --install playpen-bench charts/playpen -n "$RELEASE_NS" --create-namespace --take-ownership --wait \
  --set image.repository=playpen/operator,image.tag=dev,image.pullPolicy=Never \
  --set "watchNamespaces={${NS}}" --set logFormat=text \
  --set seccompProfileInstaller.enabled=true,seccompProfileInstaller.image.repository=playpen/base \
  --set seccompProfileInstaller.image.tag=bookworm,seccompProfileInstaller.image.pullPolicy=Never >/dev/null
trap '"$HELM" uninstall playpen-bench -n "$RELEASE_NS" >/dev/null 2>&1 || true' EXIT
cargo build --release --locked -p playpen-tests --bin bench-cold-start
"${CARGO_TARGET_DIR:-target}/release/bench-cold-start" "$N" "$NS"
