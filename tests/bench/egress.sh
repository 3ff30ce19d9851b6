#!/usr/bin/env bash
# Egress proxy benchmark (issue 36; on demand, not part of the tests): the
# proxy a session with host rules sends Chromium through, against direct,
# in the same run, all on 127.0.0.1 (an origin, the proxy and a client in
# one process, each on a thread of its own): small GETs each on a new
# connection (direct, `GET http://` to the proxy, CONNECT then the GET in
# the tunnel, a refused CONNECT's 403) at p50/p99; small GETs kept alive in
# one tunnel; large downloads' throughput; the proxy's CPU per request and
# per GiB relayed.
# What the columns mean and what was measured: docs/egress-hosts.md
# (Benchmark).
#   tests/bench/egress.sh
#   PLAYPEN_BENCH_EGRESS_REQUESTS=2000   GETs per path
#   PLAYPEN_BENCH_EGRESS_MIB=256         MiB per download
#   PLAYPEN_BENCH_EGRESS_ROUNDS=5        downloads per path
# Leaves nothing behind: the proxy's egress log lives in a directory of its
# own, removed on every exit; no cluster, no other address than 127.0.0.1.
set -euo pipefail
# shellcheck source=tests/bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
log "congestion control: $(sysctl -n net.ipv4.tcp_congestion_control 2>/dev/null || echo unknown) (see docs/session-runtime.md on BBR and cubic)"
cargo build --release --locked -p playpen-session --example egress_bench
WORK="$(mktemp -d "${TMPDIR:-/tmp}/pp-bench-egress.XXXXXX")"
on_exit "remove ${WORK}" rm -rf "$WORK"
TMPDIR="$WORK" run_child "${TARGET_DIR}/release/examples/egress_bench"
