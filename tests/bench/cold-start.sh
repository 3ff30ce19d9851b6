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
# An earlier, interrupted run's sessions and Pods take the node's room.
delete_namespaces "$NS"
"$KUBECTL" create namespace "$NS" >/dev/null
"$KUBECTL" label namespace "$NS" playpen.dev/bench=cold-start >/dev/null
# The chart binds its operator's Role in the namespace it watches: NS exists first.
install_bench_chart "$NS" || { delete_namespaces "$NS"; exit 1; }
# Registered last, so run first: the sessions go while their operator still runs.
on_exit "delete namespace ${NS} (sessions, plain Pods) and wait until it is gone" delete_namespaces "$NS"
run_child "${TARGET_DIR}/release/bench-cold-start" "$N" "$NS"
