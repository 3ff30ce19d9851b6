#!/usr/bin/env bash
# Viewer relay and retention benchmark (on demand, not part of the tests):
# 256 MiB transfers each way, direct over loopback, through the relay and
# through socat (the usual userspace relay, installed from Debian when
# missing), in alternating rounds; the relay's CPU per GiB against the
# endpoints'; the round trip it adds; a retention pass over 100,000 files.
# What the columns mean and what was measured: docs/session-runtime.md
# (Benchmark).
#   tests/bench/relay.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# shellcheck source=../cluster/lib.sh
. tests/cluster/lib.sh
ensure_cmds socat:socat
log "congestion control: $(sysctl -n net.ipv4.tcp_congestion_control 2>/dev/null || echo unknown) (see docs/session-runtime.md on BBR and cubic)"
cargo run --release --locked -p playpen-session --example bench
