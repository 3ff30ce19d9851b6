#!/usr/bin/env bash
# Viewer relay and retention benchmark (on demand, not part of the tests):
# 256 MiB transfers each way, direct over loopback, through the relay and
# through socat (the usual userspace relay, installed from Debian when
# missing), in alternating rounds; the relay's CPU per GiB against the
# endpoints'; the round trip it adds; a retention pass over 100,000 files.
# What the columns mean and what was measured: docs/session-runtime.md
# (Benchmark).
#   tests/bench/relay.sh
# Leaves nothing behind: its files (100,000 for the retention pass) live in
# a directory of its own, removed on every exit, and its socat relays are
# stopped.
set -euo pipefail
# shellcheck source=tests/bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ensure_cmds socat:socat
log "congestion control: $(sysctl -n net.ipv4.tcp_congestion_control 2>/dev/null || echo unknown) (see docs/session-runtime.md on BBR and cubic)"
cargo build --release --locked -p playpen-session --example bench
WORK="$(mktemp -d "${TMPDIR:-/tmp}/pp-bench-relay.XXXXXX")"
on_exit "remove ${WORK}" rm -rf "$WORK"
TMPDIR="$WORK" run_child "${TARGET_DIR}/release/examples/bench"
