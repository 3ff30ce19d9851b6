#!/usr/bin/env bash
# Suspend/resume through the operator (on demand, not part of the tests): N
# rounds (default 5) of sessions of three tabs, one after another, on the
# single-node cluster: on the State path one with its own browser and one from
# a pool, and, on a node started with PLAYPEN_NODE_GVISOR=1, one under the
# gvisor RuntimeClass on the live path (the chart's node agent installed);
# prints suspend → Suspended / Pod gone, the saved bytes, resume → Ready and →
# first playwright-cli command, p50/p99, next to the cold starts measured in
# the same run.
#   PLAYPEN_NODE_GVISOR=1 tests/bench/suspend/operator.sh [N]
# Leaves nothing behind: namespace playpen-bench and the chart's release are
# deleted on every exit, and an earlier interrupted run's before it starts.
set -euo pipefail
# shellcheck source=tests/bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
N="${1:-5}"
NS=playpen-bench
bench_node_cluster
tests/imagebuild/setup.sh >/dev/null
tests/e2e/images.sh --release
cargo build --release --locked -p playpen-tests --bin bench-suspend
live_class="" live=()
if "$KUBECTL" get runtimeclass gvisor >/dev/null 2>&1; then
  live_class=gvisor
  live=(--set suspend.live.enabled=true
    --set suspend.live.agent.image.repository=playpen/node-agent,suspend.live.agent.image.tag=dev
    --set suspend.live.agent.image.pullPolicy=Never
    --set "suspend.live.agent.runscPath=$(tests/cluster/build-gvisor.sh | tail -n 1)"
    --set "suspend.live.agent.runscRoot=${NODE_DIR}/runsc/k8s.io")
else
  log "no RuntimeClass gvisor on the node (start it with PLAYPEN_NODE_GVISOR=1): the State path only"
fi
install_bench_chart "$NS" suspend "sessions suspended and resumed" "${live[@]}"
run_child "${TARGET_DIR}/release/bench-suspend" "$N" "$NS" "" "$live_class"
