#!/usr/bin/env bash
# Density benchmark (on demand, not part of the tests): what idle sessions
# cost the real single node and whether a new one still starts fast beside
# them. Grows a fleet of idle sessions (each Ready, one fixture page open,
# no viewer, no commands) step by step from none (the baseline, same run);
# at each step prints the node's busy CPU (/proc/stat) and per-session
# millicores over the baseline, split by process group (kubelet,
# containerd and its shims, the runtimes, the daemons, Chromium, the
# control plane), the working set per session, and create → Ready of cold
# sessions started one at a time beside the fleet.
#   tests/bench/density.sh [STEP...]     (default: 10 20 30 fill)
#   STEP: a number of idle sessions, or `fill`: as many as the browser
#   containers' CPU request admits on the node, less one (the cold sessions
#   then take the last place).
#   PLAYPEN_BENCH_SESSION_CPU: the browsers' CPU request (default 20m, so
#   that 30 fit on 2 cores; 100m is the chart's default).
#   PLAYPEN_BENCH_SETTLE (30), PLAYPEN_BENCH_WINDOW (60): seconds idle before
#   and during the measurement; PLAYPEN_BENCH_COLD (5): cold starts per step.
# What was measured: docs/operations.md ("Density and sizing").
# Leaves nothing behind: namespace playpen-density and the chart's release
# are deleted on every exit, and an earlier interrupted run's before it starts.
set -euo pipefail
# shellcheck source=tests/bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
STEPS=("$@")
((${#STEPS[@]})) || STEPS=(10 20 30 fill)
NS=playpen-density
bench_node_cluster
tests/imagebuild/setup.sh >/dev/null
tests/e2e/images.sh --release
cargo build --release --locked -p playpen-tests --bin bench-density
install_bench_chart "$NS" density "idle and cold sessions, the fixture page server"
run_child "${TARGET_DIR}/release/bench-density" "$NS" "$NODE_NAME" "${STEPS[@]}"
