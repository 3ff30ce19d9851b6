#!/usr/bin/env bash
# Operator benchmark (on demand, not part of the tests): N BrowserSessions
# (default 1000) against the real API server (the control plane of
# tests/cluster/start.sh), in one run: rounds in which their children are
# made by an ideal controller (plain creates, no reconcile logic: the limit
# the API server and etcd set here) and by the operator, in alternating
# order, each on a settled cluster; then a full resync (the operator
# restarted). Prints one table (the median round): create -> children (and
# -> Ready), sessions per second, API writes per session by resource and
# verb, reconciles, operator CPU and peak RSS, operator/ideal ratios; then
# every round's ratios and the targets judged on their medians.
# What the phases are: tests/bench/operator.rs.
#   tests/bench/operator.sh [N] [RATE]   RATE sessions/s (default 0: one burst)
#   PLAYPEN_BENCH_METRICS_PORT   the operator's /metrics port on 127.0.0.1 (default 18081)
#   PLAYPEN_BENCH_READY=1        also wait for Ready (needs nodes that run the Pods)
#   PLAYPEN_BENCH_SPEC='{...}'   merged into every session's spec (tolerations…)
#   PLAYPEN_BENCH_ROUNDS         rounds of ideal and operator (default 3)
#   PLAYPEN_BENCH_CONCURRENCY    the ideal controller's concurrency (default: the operator's, RECONCILE_CONCURRENCY)
# Leaves nothing behind: its namespaces (label playpen.dev/bench=operator) are
# deleted on every exit, and an earlier interrupted run's before it starts.
set -euo pipefail
# shellcheck source=tests/bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
N="${1:-1000}"
RATE="${2:-0}"
PORT="${PLAYPEN_BENCH_METRICS_PORT:-18081}"
SELECTOR=playpen.dev/bench=operator
PIDFILE="${STATE}/run/bench-operator.pid"

cargo build --release --locked -p playpen-operator -p playpen-tests --bin playpen-operator --bin bench-operator
bench_cluster
mkdir -p "${STATE}/run" "${LOGS}"

# pp-bench-* are the namespaces the benchmark made before it labelled them.
old_namespaces() { "$KUBECTL" get namespace -o name | sed -n 's|^namespace/\(pp-bench-.*\)|\1|p'; }

# An earlier, interrupted run: its operator and its namespaces.
stop_bench_operator "$PIDFILE"
delete_namespaces -l "$SELECTOR"
mapfile -t old < <(old_namespaces)
((${#old[@]} == 0)) || delete_namespaces "${old[@]}"

on_exit "delete the bench's namespaces (-l ${SELECTOR}) and wait until they are gone" delete_namespaces -l "$SELECTOR"
on_exit "stop the bench's operator" stop_bench_operator "$PIDFILE"
PLAYPEN_BENCH_OPERATOR="${TARGET_DIR}/release/playpen-operator" \
  PLAYPEN_BENCH_METRICS_ADDR="127.0.0.1:${PORT}" \
  PLAYPEN_BENCH_OPERATOR_LOG="${LOGS}/bench-operator.log" \
  PLAYPEN_BENCH_PIDFILE="$PIDFILE" \
  run_child "${TARGET_DIR}/release/bench-operator" "$N" "$RATE"
