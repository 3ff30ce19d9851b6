#!/usr/bin/env bash
# Churn benchmark (on demand, not part of the tests): the operator's memory
# under N create/delete cycles (default 10000) against the real API server
# (the control plane of tests/cluster/start.sh). Each session is refused its
# NetworkPolicy by a quota, so every per-object record of the operator fills
# while it lives. Prints one row per tenth of the run (resident set, its
# ratio to the first row, the playpen_tracked_objects gauges once the batch
# and its children are gone) and a verdict: flat, and every record back to 0.
# What it does: tests/bench/churn.rs. About an hour for 10000 on 2 cores,
# a third of it waiting for the garbage collector to delete the children.
#   tests/bench/churn.sh [N]
#   PLAYPEN_BENCH_METRICS_PORT   the operator's /metrics port on 127.0.0.1 (default 18083)
#   PLAYPEN_BENCH_OPERATOR_ENV_<NAME>=<value>
#                                <NAME>=<value> for the operator only (a heap profiler's
#                                LD_PRELOAD: docs/operations.md, "Memory under churn")
#   PLAYPEN_BENCH_END_WITH_SIGKILL=1
#                                end the operator with SIGKILL, not a clean stop (the
#                                profiler then lists what it still held as leaked)
# Leaves nothing behind: its namespace (label playpen.dev/bench=churn) is
# deleted on every exit, and an earlier interrupted run's before it starts.
set -euo pipefail
# shellcheck source=tests/bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
N="${1:-10000}"
PORT="${PLAYPEN_BENCH_METRICS_PORT:-18083}"
SELECTOR=playpen.dev/bench=churn
PIDFILE="${STATE}/run/bench-churn.pid"

cargo build --release --locked -p playpen-operator -p playpen-tests --bin playpen-operator --bin bench-churn
bench_cluster
mkdir -p "${STATE}/run" "${LOGS}"


stop_bench_operator "$PIDFILE"
delete_namespaces -l "$SELECTOR"
on_exit "delete the bench's namespace (-l ${SELECTOR}) and wait until it is gone" delete_namespaces -l "$SELECTOR"
on_exit "stop the bench's operator" stop_bench_operator "$PIDFILE"
PLAYPEN_BENCH_OPERATOR="${TARGET_DIR}/release/playpen-operator" \
  PLAYPEN_BENCH_METRICS_ADDR="127.0.0.1:${PORT}" \
  PLAYPEN_BENCH_OPERATOR_LOG="${LOGS}/bench-churn-operator.log" \
  PLAYPEN_BENCH_PIDFILE="$PIDFILE" \
  PLAYPEN_BENCH_NAMESPACE=playpen-bench-churn \
  run_child "${TARGET_DIR}/release/bench-churn" "$N"
