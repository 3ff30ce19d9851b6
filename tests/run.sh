#!/usr/bin/env bash
# Runs every test of the project: formatting, lints, unit tests, and the
# tests against real parts: a single-node cluster (etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kubelet, kube-proxy built from the
# Go module proxy and cached by version by tests/cluster/build.sh; containerd,
# runc and CNI plugins from Debian), helm (the same way), the real
# playwright-cli with Debian's Chromium, Playwright and Puppeteer clients from
# npm (tests/e2e/clients), Docker Engine, a local OCI registry
# (distribution, built from the Go module proxy), a current Docker Engine
# daemon (built from the Go module proxy; the OCI layout test runs it in its
# own namespaces on a throwaway containerd), an S3-compatible object store
# (SeaweedFS, built from the Go module proxy, SigV4 enforced) for the
# recording uploader and kubectl playpen record's download, and the images
# playpen-imagebuild builds, and a second control plane with kwok's simulated
# nodes (kwok from the Go module proxy too). Installs what it needs; stops and purges the
# cluster when done, so no test object outlives the run (dockerd is left
# running, and the node's image store stays cached, for the next run).
#
#   tests/run.sh [fast|apiserver|node|all]     (default all: what .ci/run runs)
#     fast       formatting, clippy, unit tests, the mock-API tier and the
#                layout test: no Docker, cluster or browser
#     apiserver  fast, then the suites that need only a control plane
#                (operator, chart, plugin) on tests/cluster/start.sh
#     node       the single-node cluster and everything that needs it or a
#                browser or Docker (session runtime, image builder, e2e,
#                overload, chaos) and the kwok smoke; no fmt/clippy
#     all        fast, then every suite on the node cluster, then kwok
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

log() { printf '[%s run.sh] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

TIER="${1:-all}"
case "$TIER" in
  fast | apiserver | node | all) ;;
  *)
    log "ERROR: unknown tier '${TIER}': use fast, apiserver, node or all (the default)"
    exit 2
    ;;
esac

for tool in cargo go; do
  command -v "$tool" >/dev/null || { log "ERROR: $tool is not on PATH (this machine kind ships it; see docs/operations.md)"; exit 1; }
done

# The build, two browser images, their OCI layout and the node's image store
# take about 20 GB, and the node's kubelet evicts every Pod once less than
# 10% of the disk is free (DiskPressure: chart installs then time out deep
# inside the e2e, chaos and overload suites); a full disk fails elsewhere.
read -r size_gb free_gb < <(df -Pk . | awk 'NR == 2 { print int($2 / 1048576), int($4 / 1048576) }')
need_gb=$((20 + size_gb / 10))
if ((free_gb < need_gb)); then
  log "WARNING: only ${free_gb} GB free here; the run needs about ${need_gb} GB (20 GB, plus the 10% of the disk below which the kubelet evicts Pods): clean other target/ directories, 'docker image prune', ~/.cache/playpen/containerd"
fi

# One build from a clean tree gains nothing from incremental compilation,
# which would keep about 17 GB of session state in target/ beside the build.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

# Property-based tests run the same cases on every CI run; a longer or
# different run on demand: PROPTEST_CASES=10000 PROPTEST_RNG_SEED=<n> bash tests/run.sh
export PROPTEST_RNG_SEED="${PROPTEST_RNG_SEED:-20261201}"

if [[ "$TIER" != node ]]; then
  log "formatting and lints"
  cargo fmt --all -- --check
  cargo clippy --workspace --all-targets --locked -- -D warnings
fi

if [[ "$TIER" == fast ]]; then
  log "the fast tier: unit tests, the mock-API tier, the layout test"
  cargo test --workspace --locked --lib --bins
  cargo test -p playpen-tests --locked --test layout
  log "fast tier passed in ${SECONDS} s"
  exit 0
fi

log "building tests"
cargo test --workspace --locked --no-run
# The split-brain test runs operator replicas as processes it can pause.
cargo build -p playpen-operator --locked
PLAYPEN_OPERATOR_BIN="${CARGO_TARGET_DIR:-$PWD/target}/debug/playpen-operator"
export PLAYPEN_OPERATOR_BIN
# The plugin and end-to-end tests run kubectl-playpen through kubectl's plugin mechanism.
cargo build -p kubectl-playpen --locked
PLAYPEN_KUBECTL_PLUGIN="${CARGO_TARGET_DIR:-$PWD/target}/debug/kubectl-playpen"
export PLAYPEN_KUBECTL_PLUGIN

if [[ "$TIER" == apiserver ]]; then
  log "the apiserver tier: a control plane without a node (tests/cluster/start.sh)"
  cargo test --workspace --locked --lib --bins
  KUBECONFIG="$(tests/cluster/start.sh | tail -n 1)"
  export KUBECONFIG
  PLAYPEN_HELM="$(tests/cluster/build-helm.sh | tail -n 1)"
  PLAYPEN_KUBECTL="$(. tests/cluster/lib.sh && echo "${K8S_BIN}/kubectl")"
  export PLAYPEN_HELM PLAYPEN_KUBECTL
  status=0
  cargo test -p playpen-tests --locked --no-fail-fast --test layout --test operator --test chart --test plugin || status=$?
  log "apiserver tier done in ${SECONDS} s (the control plane keeps running: tests/cluster/stop.sh)"
  exit "$status"
fi

log "starting a fresh single-node cluster (state left by a demo or an earlier run is purged)"
trap 'tests/cluster/stop.sh --purge >/dev/null 2>&1 || true; tests/imagebuild/registry.sh --stop >/dev/null 2>&1 || true; tests/objectstore/stop.sh --purge >/dev/null 2>&1 || true' EXIT
tests/cluster/stop.sh --purge >/dev/null
# With gVisor as the RuntimeClass `gvisor` beside runc: the gvisor suite runs the
# end-to-end scenarios again under it.
KUBECONFIG="$(PLAYPEN_NODE_GVISOR=1 tests/cluster/start-node.sh | tail -n 1)"
export KUBECONFIG
PLAYPEN_HELM="$(tests/cluster/build-helm.sh | tail -n 1)"
PLAYPEN_KUBECTL="$(. tests/cluster/lib.sh && echo "${K8S_BIN}/kubectl")"
export PLAYPEN_HELM PLAYPEN_KUBECTL
# The node's runsc and its state root: the gvisor suite's node agent checkpoints with them.
PLAYPEN_RUNSC="$(tests/cluster/build-gvisor.sh | tail -n 1)"
PLAYPEN_RUNSC_ROOT="$(. tests/cluster/lib.sh && echo "${NODE_DIR}/runsc/k8s.io")"
export PLAYPEN_RUNSC PLAYPEN_RUNSC_ROOT
# Only the end-to-end suite's Pods tolerate this taint: the other suites'
# sessions stay Pending, as they expect, while the node runs the e2e ones.
"$PLAYPEN_KUBECTL" taint node "$(. tests/cluster/lib.sh && echo "$NODE_NAME")" playpen.dev/e2e=true:NoSchedule --overwrite >/dev/null

log "installing Chromium and the pinned playwright-cli (session runtime tests)"
PLAYPEN_TEST_CLI_PREFIX="$(tests/session/setup.sh | tail -n 1)"
export PLAYPEN_TEST_CLI_PREFIX

log "installing the host-side CDP and viewer clients (end-to-end tests)"
PLAYPEN_E2E_CLIENTS="$(tests/e2e/clients.sh | tail -n 1)"
export PLAYPEN_E2E_CLIENTS

log "starting Docker Engine and the debootstrap base image (image builder tests)"
tests/imagebuild/setup.sh >/dev/null

log "starting the local OCI registry with htpasswd auth (image builder push test)"
PLAYPEN_TEST_REGISTRY="$(tests/imagebuild/registry.sh | tail -n 1)"
export PLAYPEN_TEST_REGISTRY

log "starting the S3-compatible object store, SigV4 enforced (recording uploader and record download tests)"
PLAYPEN_TEST_OBJECTSTORE="$(tests/objectstore/start.sh | tail -n 1)"
export PLAYPEN_TEST_OBJECTSTORE

log "building a current Docker Engine daemon from the Go module proxy (image builder OCI layout test)"
PLAYPEN_TEST_DOCKERD="$(tests/imagebuild/engine-current.sh | tail -n 1)"
export PLAYPEN_TEST_DOCKERD

log "building the operator and browser images, importing them into the node (end-to-end tests)"
tests/e2e/images.sh

# Every suite runs even after one fails; the run still fails.
status=0
if [[ "$TIER" == node ]]; then
  log "running the suites that need the node, a browser or Docker"
  cargo test --workspace --locked --no-fail-fast --tests --exclude playpen-tests || status=$?
  cargo test -p playpen-tests --locked --no-fail-fast --test e2e --test gvisor --test overload --test chaos || status=$?
else
  log "running all tests"
  cargo test --workspace --locked --no-fail-fast || status=$?
fi

log "the simulated fleet: sessions Ready on kwok nodes (tests/cluster/kwok-smoke.sh, its own control plane)"
# The node cluster first goes: a purge of the smoke's state dir refuses to
# run while the node's kubelet holds mounts. Own state dir and ports anyway.
tests/cluster/stop.sh --purge >/dev/null || log "WARNING: the node cluster did not stop cleanly; the kwok smoke runs anyway"
PLAYPEN_CLUSTER_DIR=/tmp/playpen-kwok-ci PLAYPEN_ETCD_CLIENT_PORT=25790 PLAYPEN_ETCD_PEER_PORT=25800 \
  PLAYPEN_APISERVER_PORT=18443 PLAYPEN_KCM_PORT=18444 PLAYPEN_KWOK_SCHEDULER_PORT=18460 \
  PLAYPEN_KWOK_PORT=18461 PLAYPEN_KWOK_SMOKE_OPERATOR_PORT=18462 tests/cluster/kwok-smoke.sh || status=$?
log "${TIER} tier done in ${SECONDS} s"
exit "$status"
