#!/usr/bin/env bash
# Suspend/resume through the operator on the State path (on demand, not part
# of the tests): N sessions (default 5) of three tabs, one after another, on
# the single-node cluster; prints suspend → Suspended / Pod gone, the saved
# bytes, resume → Ready and → first playwright-cli command, p50/p99, next to
# each session's own cold start measured in the same run.
#   tests/bench/suspend/operator.sh [N]
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
install_bench_chart "$NS" suspend "sessions suspended and resumed"
run_child "${TARGET_DIR}/release/bench-suspend" "$N" "$NS"
