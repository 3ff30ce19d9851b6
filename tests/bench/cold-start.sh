#!/usr/bin/env bash
# Cold-start benchmark (on demand, not part of the tests): N sessions
# (default 10) applied one at a time on the single-node cluster with the
# browser image present; prints apply → Ready p50/p95 with a breakdown
# (scheduling, container start, runtime start-up, browser launch, readiness)
# next to a plain Pod on the same image measured in the same run.
#   tests/bench/cold-start.sh [N]
# Leaves nothing behind: namespace playpen-bench and the chart's release are
# deleted on every exit, and an earlier interrupted run's before it starts.
set -euo pipefail
# shellcheck source=tests/bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
N="${1:-10}"
NS=playpen-bench
bench_node_cluster
tests/imagebuild/setup.sh >/dev/null
tests/e2e/images.sh --release
cargo build --release --locked -p playpen-tests --bin bench-cold-start
install_bench_chart "$NS" cold-start "sessions, plain Pods"
run_child "${TARGET_DIR}/release/bench-cold-start" "$N" "$NS"
