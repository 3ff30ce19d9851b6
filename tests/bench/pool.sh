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
# A clean start: nothing of an earlier run competes for the node.
delete_namespaces "$NS"
"$KUBECTL" create namespace "$NS" >/dev/null
"$KUBECTL" label namespace "$NS" playpen.dev/bench=pool >/dev/null
# The chart binds its operator's Role in the namespace it watches: NS exists first.
install_bench_chart "$NS" || { delete_namespaces "$NS"; exit 1; }
# Registered last, so run first: the pool and sessions go while their operator still runs.
on_exit "delete namespace ${NS} (pool, sessions, Pods) and wait until it is gone" delete_namespaces "$NS"
run_child "${TARGET_DIR}/release/bench-pool" "$N" "$BURST" "$NS"
