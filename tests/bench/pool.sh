#!/usr/bin/env bash
# Warm-pool benchmark (on demand, not part of the tests): on the single-node
# cluster, in one run, N sessions claimed from a warm BrowserPool versus N
# cold sessions (interleaved), then a burst of BURST of each: create → Ready
# and create → first `playwright-cli goto` answered, p50/p99, the ratio
# cold/warm; pooled sessions with auth state (create → Ready and → the
# state's cookie visible); the working set of an idle warm browser container.
#   tests/bench/pool.sh [N] [BURST]     (defaults 10 and 20)
# Leaves nothing behind: namespace playpen-bench-pool and the chart's release
# are deleted on every exit, and an earlier interrupted run's before it starts.
set -euo pipefail
# shellcheck source=tests/bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
N="${1:-10}"
BURST="${2:-20}"
NS=playpen-bench-pool
bench_node_cluster
tests/imagebuild/setup.sh >/dev/null
tests/e2e/images.sh --release
cargo build --release --locked -p playpen-tests --bin bench-pool
install_bench_chart "$NS" pool "pool, sessions, Pods"
run_child "${TARGET_DIR}/release/bench-pool" "$N" "$BURST" "$NS"
