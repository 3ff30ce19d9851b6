#!/usr/bin/env bash
# RuntimeClass benchmark (on demand, not part of the tests): what gVisor (or
# another RuntimeClass) costs a session against the node's default runtime
# (runc), measured in the same run on the real node: cold start (apply →
# Ready), warm claim (apply → Ready from a pool), idle working set and idle
# CPU of sessions with a page open, p50/p95 and the ratio to runc.
#   tests/bench/runtime-class.sh [RUNTIME_CLASS]      (default gvisor)
#   PLAYPEN_BENCH_COLD (5), PLAYPEN_BENCH_CLAIMS (5): cold starts and claims per class;
#   PLAYPEN_BENCH_IDLE (3): idle sessions per class; PLAYPEN_BENCH_SETTLE (30),
#   PLAYPEN_BENCH_WINDOW (60): seconds idle before and during the measurement.
# The node runs gVisor as RuntimeClass `gvisor` (PLAYPEN_NODE_GVISOR=1, set here).
# What was measured: docs/security.md ("What gVisor adds and costs").
# Leaves nothing behind: namespace playpen-runtime-class and the chart's release
# are deleted on every exit, and an earlier interrupted run's before it starts.
set -euo pipefail
# shellcheck source=tests/bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CLASS="${1:-gvisor}"
NS=playpen-runtime-class
export PLAYPEN_NODE_GVISOR=1
bench_node_cluster
"$KUBECTL" get runtimeclass "$CLASS" >/dev/null ||
  die "RuntimeClass ${CLASS} does not exist on this cluster (the node creates gvisor)"
tests/imagebuild/setup.sh >/dev/null
tests/e2e/images.sh --release
cargo build --release --locked -p playpen-tests --bin bench-runtime-class
install_bench_chart "$NS" runtime-class "sessions and pools under runc and ${CLASS}, the fixture page server"
run_child "${TARGET_DIR}/release/bench-runtime-class" "$NS" "$NODE_NAME" "$CLASS"
