#!/usr/bin/env bash
# Runs every test of the project: formatting, lints, unit tests, and the
# integration tests against a real kube-apiserver, etcd and
# kube-controller-manager (built from the Go module proxy and cached by
# version by tests/cluster/build.sh). Installs what it needs; leaves nothing
# running.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

log() { printf '[%s run.sh] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

for tool in cargo go; do
  command -v "$tool" >/dev/null || { log "ERROR: $tool is not on PATH (this machine kind ships it; see docs/operations.md)"; exit 1; }
done

log "formatting and lints"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings

log "building tests"
cargo test --workspace --locked --no-run

log "starting the control plane"
trap 'tests/cluster/stop.sh >/dev/null 2>&1 || true' EXIT
KUBECONFIG="$(tests/cluster/start.sh | tail -n 1)"
export KUBECONFIG
PLAYPEN_HELM="$(tests/cluster/build-helm.sh | tail -n 1)"
PLAYPEN_KUBECTL="$(. tests/cluster/lib.sh && echo "${K8S_BIN}/kubectl")"
export PLAYPEN_HELM PLAYPEN_KUBECTL

PLAYPEN_TEST_CLI_PREFIX="$(tests/session/setup.sh | tail -n 1)"; export PLAYPEN_TEST_CLI_PREFIX
tests/imagebuild/setup.sh >/dev/null # Docker Engine and the base image for imagebuild/tests/docker_build.rs
log "running all tests"
cargo test --workspace --locked
