#!/usr/bin/env bash
# Start (or reuse) a simulated fleet: the control plane of start.sh (loopback mode) plus
# kube-scheduler and the kwok controller, which fakes NODES nodes (default 100) and moves
# the Pods bound to them through scheduled -> running -> ready without running anything.
#
#   export KUBECONFIG=$(tests/cluster/start-kwok.sh [NODES] | tail -1)
#
# No root needed, nothing global: it runs in any state dir (PLAYPEN_CLUSTER_DIR) with its
# own ports. Idempotent: when the tier is up and exactly NODES fake nodes are Ready it only
# prints the kubeconfig path; a different NODES adds or deletes fake nodes. The fake nodes
# are kwok-node-0..N-1 (annotation kwok.x-k8s.io/node=fake, label type=kwok, untainted).
# Logs go to stderr ($STATE/logs/kwok*.log); the last stdout line is the admin kubeconfig
# path. Stop with stop.sh [--purge] (or stop.sh --kwok for this tier only).
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

exec 3>&1 1>&2 # stdout is reserved for the kubeconfig path

NODES="${1:-${PLAYPEN_KWOK_NODES:-100}}"
# 5000 is Kubernetes' largest supported cluster, and the pod CIDRs below run out at 32768.
if [[ ! "$NODES" =~ ^[0-9]+$ ]] || ((NODES < 1 || NODES > 5000)); then die "NODES must be 1..5000, not '${NODES}'"; fi
KWOK_TIMEOUT="${PLAYPEN_KWOK_TIMEOUT:-120}"
KUBECTL="${K8S_BIN}/kubectl"
KWOK_STATE_ID="kwok=${KWOK_VERSION} kubernetes=${KUBERNETES_VERSION} ports=${KWOK_SCHEDULER_PORT},${KWOK_PORT} layout=1"
SCHED_KUBECONFIG="${KWOK_DIR}/config/kube-scheduler.kubeconfig"
KWOK_CONFIG="${KWOK_DIR}/config/kwok.yaml"
# Allocatable of one fake node: 10,000 sessions fit on 100 nodes with room to spare, also
# at examples/full.yaml's requests (500m CPU, 1Gi): 128 of those per node by CPU.
NODE_CPU=64
NODE_MEMORY=256Gi
NODE_PODS=200

k() { "$KUBECTL" --kubeconfig "$ADMIN_KUBECONFIG" --request-timeout=10s "$@"; }
scheduler_healthy() { curl -fsSk --max-time 2 "https://127.0.0.1:${KWOK_SCHEDULER_PORT}/healthz" 2>/dev/null | grep -qx ok; }
kwok_healthy() { curl -fsS --max-time 2 "http://127.0.0.1:${KWOK_PORT}/healthz" >/dev/null 2>&1; }

# fake_nodes — "<name> <Ready status>" of every node kwok manages (label type=kwok).
fake_nodes() {
  k get nodes -l "$KWOK_NODE_LABEL" --no-headers \
    -o custom-columns='N:.metadata.name,R:.status.conditions[?(@.type=="Ready")].status' 2>/dev/null
}
ready_count() { fake_nodes | awk '$2 == "True"' | wc -l; }
# shellcheck disable=SC2317 # invoked indirectly via wait_for
nodes_ready() { (($(ready_count) == NODES)); }

components_healthy() {
  [[ -f "${KWOK_DIR}/state.id" && "$(<"${KWOK_DIR}/state.id")" == "$KWOK_STATE_ID" ]] || return 1
  local c
  for c in "${KWOK_COMPONENTS[@]}"; do pid_of "$c" >/dev/null || return 1; done
  scheduler_healthy && kwok_healthy
}
tier_healthy() { components_healthy && (($(fake_nodes | wc -l) == NODES)) && nodes_ready; }

# The node tier schedules with a kube-scheduler of its own: two default schedulers in one
# cluster would race for every Pod, and its real node would take sessions.
refuse_node_tier() {
  local c
  for c in "${NODE_COMPONENTS[@]}"; do
    if pid_of "$c" >/dev/null; then
      die "the node tier (start-node.sh) runs in ${STATE} (${c} is up); the kwok tier needs a state dir of its own: set PLAYPEN_CLUSTER_DIR and other ports (see tests/cluster/README.md), or stop the node tier (stop.sh --node)"
    fi
  done
}

done_ok() {
  log "kwok tier ready: ${NODES} fake nodes, scheduler 127.0.0.1:${KWOK_SCHEDULER_PORT}, kwok 127.0.0.1:${KWOK_PORT}; kubeconfig ${ADMIN_KUBECONFIG}"
  echo "$ADMIN_KUBECONFIG" >&3
  exit 0
}

fail() {
  log "ERROR: $*"
  [[ ! -f "$ADMIN_KUBECONFIG" ]] || log "fake nodes Ready: $(ready_count) of ${NODES} ($(fake_nodes | wc -l) exist)"
  local c
  for c in "${KWOK_COMPONENTS[@]}"; do
    [[ -f "${LOGS}/${c}.log" ]] || continue
    echo "----- tail ${LOGS}/${c}.log -----"
    tail -n 30 "${LOGS}/${c}.log"
  done
  log "stopping the kwok tier (logs kept in ${LOGS})"
  "${CLUSTER_SCRIPT_DIR}/stop.sh" --kwok || true
  exit 1
}

# ---- control plane (loopback mode) ------------------------------------------------------
T0=$SECONDS
refuse_node_tier
"${CLUSTER_SCRIPT_DIR}/start.sh" >/dev/null
if tier_healthy; then done_ok; fi

exec 9>"${STATE}.kwok.lock"
if ! flock -n 9; then
  log "waiting for another start-kwok.sh (lock ${STATE}.kwok.lock)"
  flock -w 300 9 || die "lock ${STATE}.kwok.lock still held after 300 s"
fi
if tier_healthy; then done_ok; fi # another start-kwok.sh won the race
refuse_node_tier

# ---- scheduler and kwok ---------------------------------------------------------------------
if ! components_healthy; then
  "${CLUSTER_SCRIPT_DIR}/stop.sh" --kwok # leftovers of a crashed or older run
  "${CLUSTER_SCRIPT_DIR}/build.sh" kube-scheduler
  "${CLUSTER_SCRIPT_DIR}/build-kwok.sh" >/dev/null
  for port in "$KWOK_SCHEDULER_PORT" "$KWOK_PORT"; do
    if ss -Hltn "sport = :${port}" | grep -q .; then
      die "port ${port} is already in use: $(ss -Hltnp "sport = :${port}")"
    fi
  done
  if [[ -d "$KWOK_DIR" && ! (-f "${KWOK_DIR}/state.id" && "$(<"${KWOK_DIR}/state.id")" == "$KWOK_STATE_ID") ]]; then
    log "kwok dir ${KWOK_DIR} was made for another configuration; recreating it"
    rm -rf "$KWOK_DIR"
  fi
  mkdir -p "${KWOK_DIR}"/{config,bin} "$RUN" "$LOGS"

  # The scheduler's own identity (system:kube-scheduler has its bootstrap RBAC); the same
  # subject as the node tier's certificate, in files of its own so neither rewrites the other's.
  if [[ ! -f "${PKI}/kwok-scheduler.crt" ]]; then
    log "generating the scheduler's certificate in ${PKI}"
    (
      umask 077
      sign kwok-scheduler "/CN=system:kube-scheduler" "basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth" "$PKI"
    )
  fi
  write_kubeconfig "$SCHED_KUBECONFIG" system:kube-scheduler "${PKI}/kwok-scheduler.crt" "${PKI}/kwok-scheduler.key"
  # Started through links in the state dir: stray_pids (stop.sh) finds processes by the
  # basename of argv[0], and the node tier's kube-scheduler must not be mistaken for this one.
  ln -sfn "${K8S_BIN}/kube-scheduler" "${KWOK_DIR}/bin/kwok-scheduler"
  ln -sfn "$KWOK_BIN" "${KWOK_DIR}/bin/kwok"

  launch kwok-scheduler "${KWOK_DIR}/bin/kwok-scheduler" \
    --kubeconfig="$SCHED_KUBECONFIG" \
    --authentication-kubeconfig="$SCHED_KUBECONFIG" \
    --authorization-kubeconfig="$SCHED_KUBECONFIG" \
    --bind-address=127.0.0.1 \
    --secure-port="$KWOK_SCHEDULER_PORT" \
    --cert-dir="${KWOK_DIR}/scheduler-certs" \
    --leader-elect=false \
    --profiling=false

  # kwok's stages: the defaults kwokctl would use (build-kwok.sh copies them from the
  # module), then ours (tests/cluster/kwok/*.yaml), one multi-document config file.
  {
    for f in "${KWOK_STAGES}"/*.yaml "${CLUSTER_SCRIPT_DIR}"/kwok/*.yaml; do
      [[ -f "$f" ]] || continue
      echo "# ---- ${f}"
      cat "$f"
      echo "---"
    done
  } >"${KWOK_CONFIG}.tmp"
  mv -f "${KWOK_CONFIG}.tmp" "$KWOK_CONFIG"
  # Only nodes with the annotation are kwok's (a real kubelet's node never is). Leases are
  # renewed every 40 s like a kubelet's, so the node lifecycle controller keeps them Ready.
  # No --node-port: it would make kwok listen on 0.0.0.0.
  launch kwok "${KWOK_DIR}/bin/kwok" \
    --kubeconfig="$ADMIN_KUBECONFIG" \
    --config="$KWOK_CONFIG" \
    --manage-all-nodes=false \
    --manage-nodes-with-annotation-selector="$KWOK_NODE_ANNOTATION" \
    --node-lease-duration-seconds=40 \
    --server-address="127.0.0.1:${KWOK_PORT}"
  echo "$KWOK_STATE_ID" >"${KWOK_DIR}/state.id"

  wait_for 60 "kube-scheduler (kwok-scheduler) /healthz on 127.0.0.1:${KWOK_SCHEDULER_PORT}" kwok-scheduler scheduler_healthy
  wait_for 60 "kwok controller /healthz on 127.0.0.1:${KWOK_PORT}" kwok kwok_healthy
fi

# ---- fake nodes ------------------------------------------------------------------------------
# Node status given at creation is kept (kwok's node-initialize stage keeps allocatable and
# capacity when they are set, else it claims 1000 CPUs). Each node gets a /24 of its own in
# 10.128.0.0/9 for its Pod IPs, and an InternalIP in 10.127.0.0/16; none of them is routed
# anywhere: nothing listens behind them.
# shellcheck disable=SC2317 # invoked indirectly via in_batches
node_yaml() {
  local i="$1"
  cat <<EOF
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-${i}
  annotations:
    ${KWOK_NODE_ANNOTATION%%=*}: ${KWOK_NODE_ANNOTATION#*=}
    node.alpha.kubernetes.io/ttl: "0"
  labels:
    ${KWOK_NODE_LABEL%%=*}: ${KWOK_NODE_LABEL#*=}
    kubernetes.io/hostname: kwok-node-${i}
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    node.kubernetes.io/instance-type: kwok
    playpen.dev/browsers: "true"
spec:
  podCIDR: 10.$((128 + i / 256)).$((i % 256)).0/24
  podCIDRs: [10.$((128 + i / 256)).$((i % 256)).0/24]
status:
  addresses:
  - {type: InternalIP, address: 10.127.$((i / 250)).$((i % 250 + 1))}
  - {type: Hostname, address: kwok-node-${i}}
  allocatable: {cpu: "${NODE_CPU}", memory: ${NODE_MEMORY}, pods: "${NODE_PODS}", ephemeral-storage: 1Ti}
  capacity: {cpu: "${NODE_CPU}", memory: ${NODE_MEMORY}, pods: "${NODE_PODS}", ephemeral-storage: 1Ti}
  nodeInfo:
    architecture: amd64
    operatingSystem: linux
    kubeletVersion: ${KUBERNETES_VERSION}
---
EOF
}

mapfile -t have < <(fake_nodes | awk '{ print $1 }')
declare -A existing=()
for n in "${have[@]}"; do existing["$n"]=1; done
missing=()
for ((i = 0; i < NODES; i++)); do
  [[ -n "${existing["kwok-node-${i}"]:-}" ]] || missing+=("$i")
done
# kubectl sends one request per object: four at a time in batches of 25 take a quarter of the time.
# shellcheck disable=SC2317 # invoked indirectly via in_batches
create_nodes() { local i; for i in "$@"; do node_yaml "$i"; done | k create -f - >/dev/null; }
# shellcheck disable=SC2317
delete_nodes() { k delete node "$@" --wait=false >/dev/null; }
# in_batches FUNCTION ITEM... — FUNCTION on batches of 25 items, up to 4 batches at once.
in_batches() {
  local fn="$1" s pids=() p
  shift
  local items=("$@")
  for ((s = 0; s < ${#items[@]}; s += 25)); do
    "$fn" "${items[@]:s:25}" &
    pids+=("$!")
    if ((${#pids[@]} >= 4)); then wait "${pids[0]}" || return 1; pids=("${pids[@]:1}"); fi
  done
  for p in "${pids[@]}"; do wait "$p" || return 1; done
}
if ((${#missing[@]})); then
  log "creating ${#missing[@]} fake node(s)"
  in_batches create_nodes "${missing[@]}" || fail "creating fake nodes failed"
fi
extra=()
for n in "${have[@]}"; do
  [[ "$n" =~ ^kwok-node-([0-9]+)$ ]] && ((BASH_REMATCH[1] < NODES)) || extra+=("$n")
done
if ((${#extra[@]})); then
  # The pod GC controller deletes the Pods bound to them.
  log "deleting ${#extra[@]} fake node(s) beyond ${NODES}"
  in_batches delete_nodes "${extra[@]}" || fail "deleting fake nodes failed"
fi

# shellcheck disable=SC2317 # invoked indirectly via wait_for
nodes_settled() { (($(fake_nodes | wc -l) == NODES)) && nodes_ready; }
wait_for "$KWOK_TIMEOUT" "${NODES} fake nodes (label ${KWOK_NODE_LABEL}) Ready (kwok's node-initialize stage sets it)" kwok nodes_settled
tier_healthy || fail "kwok tier not healthy after start"
log "started in $((SECONDS - T0)) s"
done_ok
