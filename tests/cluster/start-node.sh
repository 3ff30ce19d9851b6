#!/usr/bin/env bash
# Start (or reuse) a single-node cluster that runs Pods: the control plane of start.sh
# (in node mode) plus a dedicated containerd (Debian 1.6, own config/socket/state; its
# image store is cached outside the state dir), runc, CNI plugins (bridge + host-local +
# portmap + firewall, loopback), kube-scheduler, kubelet, kube-proxy (iptables mode) and
# the NetworkPolicy enforcer kube-network-policies (NFQUEUE).
#
#   export KUBECONFIG=$(tests/cluster/start-node.sh | tail -1)
#
# Needs root. Idempotent: when everything is up and the node is Ready it only prints
# the kubeconfig path. Otherwise it stops what is left of the node tier and starts it.
# The sandbox image (registry.k8s.io/pause:<PAUSE_VERSION>) is built locally from
# pause.c and imported once; load other images with load-image.sh.
# Logs go to stderr ($STATE/logs/<component>.log); the last stdout line is the admin
# kubeconfig path. Stop with stop.sh [--purge] (or stop.sh --node for the node only).
#
# PLAYPEN_NODE_GVISOR=1 also registers gVisor (runsc, built by build-gvisor.sh) as the
# containerd runtime handler `runsc` and creates the RuntimeClass `gvisor` for it
# (docs/security.md, "gVisor on the test node"). A node started without it is restarted
# with it, and the other way round.
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

exec 3>&1 1>&2 # stdout is reserved for the kubeconfig path

NODE_TIMEOUT="${PLAYPEN_NODE_TIMEOUT:-120}"
KUBECTL="${K8S_BIN}/kubectl"
GVISOR="${PLAYPEN_NODE_GVISOR:-0}"
[[ "$GVISOR" == 0 || "$GVISOR" == 1 ]] || die "PLAYPEN_NODE_GVISOR must be 0 or 1, not ${GVISOR}"
GVISOR_STATE=off
[[ "$GVISOR" == 0 ]] || GVISOR_STATE="${GVISOR_VERSION},${GVISOR_PLATFORM}"
NODE_STATE_ID="node=${NODE_NAME} ip=${NODE_IP} pods=${POD_CIDR} ports=${KUBELET_PORT},${KUBELET_HEALTHZ_PORT},${KUBE_PROXY_HEALTHZ_PORT},${KUBE_PROXY_METRICS_PORT},${SCHEDULER_PORT} pause=${PAUSE_VERSION} netpol=${NETPOL_VERSION},${NETPOL_METRICS_PORT} gvisor=${GVISOR_STATE} layout=3"
CTR=(ctr --address "$CONTAINERD_SOCK" --namespace k8s.io)

[[ $(id -u) -eq 0 ]] || die "start-node.sh needs root (containerd, kubelet, iptables, mounts); run it as root"

k() { "$KUBECTL" --kubeconfig "$ADMIN_KUBECONFIG" --request-timeout=5s "$@"; }
containerd_up() { "${CTR[@]}" version >/dev/null 2>&1; }
scheduler_healthy() { curl -fsSk --max-time 2 "https://127.0.0.1:${SCHEDULER_PORT}/healthz" 2>/dev/null | grep -qx ok; }
kubelet_healthy() { curl -fsS --max-time 2 "http://127.0.0.1:${KUBELET_HEALTHZ_PORT}/healthz" 2>/dev/null | grep -qx ok; }
proxy_healthy() { curl -fsS --max-time 2 "http://127.0.0.1:${KUBE_PROXY_HEALTHZ_PORT}/healthz" >/dev/null 2>&1; }
# The enforcer answers on /metrics, and Pod traffic is steered to its queue.
netpol_healthy() {
  curl -fsS --max-time 2 "http://127.0.0.1:${NETPOL_METRICS_PORT}/metrics" >/dev/null 2>&1 &&
    iptables -w 5 -t mangle -C FORWARD -j "$NETPOL_CHAIN" 2>/dev/null &&
    iptables -w 5 -t mangle -C INPUT -j "$NETPOL_CHAIN" 2>/dev/null
}
node_ready() {
  [[ "$(k get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" == True ]]
}

node_healthy() {
  [[ -f "${NODE_DIR}/state.id" && "$(<"${NODE_DIR}/state.id")" == "$NODE_STATE_ID" ]] || return 1
  local c
  for c in "${NODE_COMPONENTS[@]}"; do pid_of "$c" >/dev/null || return 1; done
  containerd_up && scheduler_healthy && kubelet_healthy && proxy_healthy && node_ready && netpol_healthy
}

done_ok() {
  log "node ${NODE_NAME} (${NODE_IP}) ready; kubeconfig ${ADMIN_KUBECONFIG}"
  echo "$ADMIN_KUBECONFIG" >&3
  exit 0
}

fail() {
  log "ERROR: $*"
  local c
  for c in "${NODE_COMPONENTS[@]}"; do
    [[ -f "${LOGS}/${c}.log" ]] || continue
    echo "----- tail ${LOGS}/${c}.log -----"
    tail -n 30 "${LOGS}/${c}.log"
  done
  log "stopping the partially started node tier (logs kept in ${LOGS})"
  "${CLUSTER_SCRIPT_DIR}/stop.sh" --node || true
  exit 1
}

# ---- control plane (node mode) ---------------------------------------------------------
T0=$SECONDS
# Its scheduler would race ours for every Pod (and restarting the control plane in node
# mode would stop it anyway).
for c in "${KWOK_COMPONENTS[@]}"; do
  if pid_of "$c" >/dev/null; then
    die "the kwok tier (start-kwok.sh) runs in ${STATE} (${c} is up); stop it first (stop.sh --kwok) or use another PLAYPEN_CLUSTER_DIR"
  fi
done
PLAYPEN_NODE_MODE=1 "${CLUSTER_SCRIPT_DIR}/start.sh" >/dev/null
if node_healthy; then done_ok; fi

exec 9>"${STATE}.node.lock"
if ! flock -n 9; then
  log "waiting for another start-node.sh (lock ${STATE}.node.lock)"
  flock -w 300 9 || die "lock ${STATE}.node.lock still held after 300 s"
fi
if node_healthy; then done_ok; fi # another start-node.sh won the race

# ---- leftovers, tools, binaries ----------------------------------------------------------
"${CLUSTER_SCRIPT_DIR}/stop.sh" --node # no-op when nothing of the node tier is left
ensure_cmds containerd:containerd ctr:containerd containerd-shim-runc-v2:containerd runc:runc \
  iptables:iptables ip:iproute2 findmnt:util-linux curl:curl openssl:openssl nft:nftables unshare:util-linux \
  "${CNI_BIN_DIR}/bridge:containernetworking-plugins"
for p in bridge host-local portmap firewall loopback; do
  [[ -x "${CNI_BIN_DIR}/${p}" ]] || die "CNI plugin ${CNI_BIN_DIR}/${p} missing; apt-get install --reinstall containernetworking-plugins"
done
[[ -d /proc/sys/net/bridge ]] || die "br_netfilter is not loaded (no /proc/sys/net/bridge); run: modprobe br_netfilter"
"${CLUSTER_SCRIPT_DIR}/build.sh" kube-scheduler kubelet kube-proxy
"${CLUSTER_SCRIPT_DIR}/build-crictl.sh" >/dev/null
"${CLUSTER_SCRIPT_DIR}/build-netpol.sh" >/dev/null
RUNSC=""
[[ "$GVISOR" == 0 ]] || RUNSC="$("${CLUSTER_SCRIPT_DIR}/build-gvisor.sh" | tail -n 1)"

for port in "$KUBELET_PORT" "$KUBELET_HEALTHZ_PORT" "$KUBE_PROXY_HEALTHZ_PORT" "$KUBE_PROXY_METRICS_PORT" "$SCHEDULER_PORT" "$NETPOL_METRICS_PORT"; do
  if ss -Hltn "sport = :${port}" | grep -q .; then
    die "port ${port} is already in use: $(ss -Hltnp "sport = :${port}")"
  fi
done

if [[ -d "$NODE_DIR" && ! (-f "${NODE_DIR}/state.id" && "$(<"${NODE_DIR}/state.id")" == "$NODE_STATE_ID") ]]; then
  log "node dir ${NODE_DIR} was made for another configuration; recreating it"
  rm -rf "$NODE_DIR"
fi
mkdir -p "${NODE_DIR}"/{run,config,containerd/state,cni/net.d,cni/ipam,pod-logs,kubelet-plugins} "$CONTAINERD_ROOT" "$RUN" "$LOGS"

# ---- PKI for the node components (once per state dir and node name/IP) -----------------
node_pki_id="${NODE_NAME} ${NODE_IP}"
if [[ "$(cat "${PKI}/node.done" 2>/dev/null)" != "$node_pki_id" ]]; then
  log "generating node certificates in ${PKI}"
  (
    umask 077
    leaf="basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment"
    sign kube-scheduler "/CN=system:kube-scheduler" "${leaf}
extendedKeyUsage=clientAuth" "$PKI"
    sign kube-proxy "/CN=system:kube-proxy" "${leaf}
extendedKeyUsage=clientAuth" "$PKI"
    # Node authorizer + NodeRestriction: the kubelet must be system:node:<name> in system:nodes.
    sign kubelet-client "/O=system:nodes/CN=system:node:${NODE_NAME}" "${leaf}
extendedKeyUsage=clientAuth" "$PKI"
    # Serving cert, verified by the apiserver (--kubelet-certificate-authority).
    sign kubelet-server "/CN=${NODE_NAME}" "${leaf}
extendedKeyUsage=serverAuth
subjectAltName=IP:${NODE_IP},DNS:${NODE_NAME}" "$PKI"
    echo "$node_pki_id" >"${PKI}/node.done"
  )
fi
write_kubeconfig "${NODE_DIR}/config/kube-scheduler.kubeconfig" system:kube-scheduler "${PKI}/kube-scheduler.crt" "${PKI}/kube-scheduler.key"
write_kubeconfig "${NODE_DIR}/config/kube-proxy.kubeconfig" system:kube-proxy "${PKI}/kube-proxy.crt" "${PKI}/kube-proxy.key"
write_kubeconfig "${NODE_DIR}/config/kubelet.kubeconfig" "system:node:${NODE_NAME}" "${PKI}/kubelet-client.crt" "${PKI}/kubelet-client.key"

# ---- sysctls ---------------------------------------------------------------------------------
# The kubelet sets vm.overcommit_memory=1, kernel.panic=10, kernel.panic_on_oops=1, ... on
# start (protectKernelDefaults=false); stop.sh restores what was there before.
SYSCTL_SAVED="${NODE_DIR}/sysctl.saved"
if [[ ! -f "$SYSCTL_SAVED" ]]; then
  for key in vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops \
    kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.ip_forward \
    net.bridge.bridge-nf-call-iptables net.ipv4.conf.all.route_localnet; do
    if val="$(sysctl -n "$key" 2>/dev/null)"; then echo "$key $val"; fi
  done >"${SYSCTL_SAVED}.tmp"
  mv -f "${SYSCTL_SAVED}.tmp" "$SYSCTL_SAVED"
fi
# Pod <-> Service traffic on one bridge must traverse iptables (kube-proxy DNAT).
for kv in net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1; do
  [[ "$(sysctl -n "${kv%=*}")" == "${kv#*=}" ]] || { log "sysctl -w ${kv}"; sysctl -qw "$kv"; }
done

# ---- containerd ------------------------------------------------------------------------------
RUNC="$(command -v runc)"
# Without CAP_SYS_RESOURCE (missing on these VMs, even for root) nothing may lower its
# oom_score_adj, and runc fails the pod sandbox (oomScoreAdj -998) with "can't get final
# child's PID from pipe: EOF". restrict_oom_score_adj clamps it at containerd's own value.
restrict_oom=false
(((0x$(awk '/^CapEff:/ { print $2 }' /proc/self/status) >> 24) & 1)) || restrict_oom=true
# gVisor as the runtime handler `runsc` (shim v2). The shim reads runsc's path, its state
# root and runsc's own flags from a file of its own (ConfigPath). The platform is the one
# that runs in these VMs (kvm panics: nested virtualisation). runsc keeps its default of
# ignoring the OCI seccomp profile: docs/security.md says why. Two kinds of Pod annotation
# pass to the containers' specs: the restore annotation (the carried shim change restores
# a sandbox from a checkpoint with it, tests/cluster/gvisor/playpen_restore.go) and
# gVisor's mount hints, which keep a session's emptyDirs inside the sandbox so that a
# checkpoint holds their files (docs/suspend-resume.md).
gvisor_runtime() {
  [[ "$GVISOR" == 1 ]] || return 0
  cat >"${NODE_DIR}/config/runsc.toml" <<EOR
# Generated by tests/cluster/start-node.sh: the options of containerd-shim-runsc-v1.
binary_name = "${RUNSC}"
root = "${NODE_DIR}/runsc"
[runsc_config]
  platform = "${GVISOR_PLATFORM}"
EOR
  cat <<EOR
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runsc]
      runtime_type = "io.containerd.runsc.v1"
      pod_annotations = ["dev.gvisor.internal.restore.*", "dev.gvisor.spec.mount.*"]
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runsc.options]
        TypeUrl = "io.containerd.runsc.v1.options"
        ConfigPath = "${NODE_DIR}/config/runsc.toml"
EOR
}
cat >"${NODE_DIR}/config/containerd.toml" <<EOF
# Generated by tests/cluster/start-node.sh: a containerd of our own, beside the system's.
version = 2
root = "${CONTAINERD_ROOT}"
state = "${NODE_DIR}/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = "${CONTAINERD_SOCK}"

[ttrpc]
  address = "${CONTAINERD_SOCK}.ttrpc"

[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "${NODE_DIR}/containerd/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${PAUSE_IMAGE}"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  restrict_oom_score_adj = ${restrict_oom}
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "${RUNC}"
        Root = "${NODE_DIR}/runc"
        SystemdCgroup = false
$(gvisor_runtime)
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "${CNI_BIN_DIR}"
    conf_dir = "${NODE_DIR}/cni/net.d"
    max_conf_num = 1
EOF

# CNI: bridge + host-local; portmap for hostPort; firewall because the host's FORWARD
# policy is DROP (Docker sets it) and pod traffic crosses FORWARD (br_netfilter).
# loopback: containerd's CRI sets up lo itself with the loopback plugin from bin_dir.
cat >"${NODE_DIR}/cni/net.d/10-playpen.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "${CNI_NETWORK}",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "${CNI_BRIDGE}",
      "isGateway": true,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{ "subnet": "${POD_CIDR}" }]],
        "routes": [{ "dst": "0.0.0.0/0" }],
        "dataDir": "${NODE_DIR}/cni/ipam"
      }
    },
    { "type": "portmap", "capabilities": { "portMappings": true } },
    { "type": "firewall", "backend": "iptables" }
  ]
}
EOF

# containerd finds a runtime's shim (containerd-shim-<name>-v1) on its PATH.
PATH="${RUNSC:+${RUNSC%/*}:}${PATH}" launch containerd "$(command -v containerd)" --config "${NODE_DIR}/config/containerd.toml" --log-level warn
wait_for 30 "containerd (${CONTAINERD_SOCK})" containerd containerd_up

# ---- sandbox (pause) image -------------------------------------------------------------------
# Built from k8s.io/kubernetes' build/pause/linux/pause.c (already in the Go module cache
# from build.sh), static, as a one-layer docker-archive; cached by version.
PAUSE_TAR="${PLAYPEN_CACHE}/images/pause-${PAUSE_VERSION}-r1.tar"
build_pause() {
  ensure_cmds gcc:gcc strip:binutils
  command -v go >/dev/null 2>&1 || PATH="${PATH}:/usr/local/go/bin"
  local dir src w diff cfg cfgd arch
  dir="$(cd "${K8S_DIR}/src" && GOFLAGS='' go mod download -json "k8s.io/kubernetes@${KUBERNETES_VERSION}" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' | head -1)"
  src="${dir}/build/pause/linux/pause.c"
  [[ -f "$src" ]] || die "pause.c not found at ${src}"
  w="$(mktemp -d)"
  mkdir -p "${w}/rootfs" "${w}/out"
  gcc -Os -Wall -Werror -static -DVERSION="v${PAUSE_VERSION}-playpen" -o "${w}/rootfs/pause" "$src" ||
    die "static gcc build of pause.c failed (need libc6-dev: apt-get install libc6-dev)"
  strip "${w}/rootfs/pause"
  tar --numeric-owner --owner=0 --group=0 --mtime=@0 --sort=name -C "${w}/rootfs" -cf "${w}/layer.tar" pause
  diff="$(sha256sum "${w}/layer.tar" | cut -d' ' -f1)"
  arch="$(dpkg --print-architecture 2>/dev/null || go env GOARCH)"
  cfg="{\"architecture\":\"${arch}\",\"os\":\"linux\",\"config\":{\"User\":\"65535:65535\",\"Entrypoint\":[\"/pause\"],\"WorkingDir\":\"/\"},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"sha256:${diff}\"]},\"history\":[{\"created\":\"1970-01-01T00:00:00Z\",\"created_by\":\"playpen: static pause.c from k8s.io/kubernetes@${KUBERNETES_VERSION}\"}]}"
  cfgd="$(printf '%s' "$cfg" | sha256sum | cut -d' ' -f1)"
  printf '%s' "$cfg" >"${w}/out/${cfgd}.json"
  mkdir -p "${w}/out/${diff}"
  mv "${w}/layer.tar" "${w}/out/${diff}/layer.tar"
  printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["%s/layer.tar"]}]' "$cfgd" "$PAUSE_IMAGE" "$diff" >"${w}/out/manifest.json"
  mkdir -p "$(dirname "$PAUSE_TAR")"
  tar --numeric-owner --owner=0 --group=0 --mtime=@0 --sort=name -C "${w}/out" -cf "${PAUSE_TAR}.tmp" .
  mv -f "${PAUSE_TAR}.tmp" "$PAUSE_TAR"
  echo "sha256:${cfgd}" >"${PAUSE_TAR}.id"
  rm -rf "$w"
  log "built ${PAUSE_IMAGE} (static pause.c, $(stat -c %s "${PAUSE_TAR}") bytes) into ${PAUSE_TAR}"
}
[[ -f "$PAUSE_TAR" && -f "${PAUSE_TAR}.id" ]] || build_pause
if [[ "$(crictl inspecti -o go-template --template '{{.status.id}}' "$PAUSE_IMAGE" 2>/dev/null)" != "$(<"${PAUSE_TAR}.id")" ]]; then
  log "importing ${PAUSE_IMAGE} into containerd (namespace k8s.io)"
  "${CTR[@]}" images import "$PAUSE_TAR" >/dev/null
fi

# Sandboxes/containers recorded in the cached containerd root by a run whose containerd
# died before stop.sh could remove them through CRI: remove them before the kubelet starts.
leftover="$(crictl pods -q 2>/dev/null || true)"
if [[ -n "$leftover" ]]; then
  log "removing $(wc -l <<<"$leftover") pod sandbox(es) left by an earlier run"
  # shellcheck disable=SC2086 # one id per word
  crictl rmp -f $leftover >/dev/null 2>&1 || log "WARNING: crictl rmp failed"
fi
leftover="$(crictl ps -aq 2>/dev/null || true)"
# shellcheck disable=SC2086
[[ -z "$leftover" ]] || crictl rm -f $leftover >/dev/null 2>&1 || true

# ---- kube-scheduler --------------------------------------------------------------------------
SCHED_KUBECONFIG="${NODE_DIR}/config/kube-scheduler.kubeconfig"
launch kube-scheduler "${K8S_BIN}/kube-scheduler" \
  --kubeconfig="$SCHED_KUBECONFIG" \
  --authentication-kubeconfig="$SCHED_KUBECONFIG" \
  --authorization-kubeconfig="$SCHED_KUBECONFIG" \
  --bind-address=127.0.0.1 \
  --secure-port="$SCHEDULER_PORT" \
  --cert-dir="${NODE_DIR}/scheduler-certs" \
  --leader-elect=false \
  --profiling=false

# ---- kubelet -----------------------------------------------------------------------------------
# Eviction thresholds are low on purpose: the disk here is often 85-90 % full, and the
# default imagefs.available<15% would evict every pod. Image GC is off (100 %) so the
# imported images (no registry to pull them back from) are never collected.
cat >"${NODE_DIR}/config/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
failSwapOn: false
containerRuntimeEndpoint: unix://${CONTAINERD_SOCK}
imageServiceEndpoint: unix://${CONTAINERD_SOCK}
address: ${NODE_IP}
port: ${KUBELET_PORT}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: ${KUBELET_HEALTHZ_PORT}
tlsCertFile: ${PKI}/kubelet-server.crt
tlsPrivateKeyFile: ${PKI}/kubelet-server.key
rotateCertificates: false
serverTLSBootstrap: false
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: ${PKI}/ca.crt
authorization:
  mode: Webhook
clusterDomain: cluster.local
podLogsDir: ${NODE_DIR}/pod-logs
volumePluginDir: ${NODE_DIR}/kubelet-plugins
protectKernelDefaults: false
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%
  nodefs.inodesFree: 1%
  imagefs.available: 1%
  imagefs.inodesFree: 1%
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
EOF
mkdir -p "$KUBELET_ROOT"
touch "${KUBELET_ROOT}/.playpen" # lets stop.sh --purge know this dir is ours to delete
launch kubelet "${K8S_BIN}/kubelet" \
  --config="${NODE_DIR}/config/kubelet.yaml" \
  --kubeconfig="${NODE_DIR}/config/kubelet.kubeconfig" \
  --root-dir="$KUBELET_ROOT" \
  --hostname-override="$NODE_NAME" \
  --node-ip="$NODE_IP"

# ---- kube-proxy ----------------------------------------------------------------------------------
cat >"${NODE_DIR}/config/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: ${NODE_DIR}/config/kube-proxy.kubeconfig
hostnameOverride: ${NODE_NAME}
mode: iptables
clusterCIDR: ${POD_CIDR}
healthzBindAddress: 127.0.0.1:${KUBE_PROXY_HEALTHZ_PORT}
metricsBindAddress: 127.0.0.1:${KUBE_PROXY_METRICS_PORT}
nodePortAddresses: ["${NODE_IP}/32"]
iptables:
  localhostNodePorts: false
# 0 = leave the host's conntrack table size and timeouts alone.
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
EOF
launch kube-proxy "${K8S_BIN}/kube-proxy" --config="${NODE_DIR}/config/kube-proxy.yaml"

wait_for 60 "kube-scheduler /healthz" kube-scheduler scheduler_healthy
wait_for 60 "kubelet /healthz" kubelet kubelet_healthy
wait_for "$NODE_TIMEOUT" "node ${NODE_NAME} Ready" kubelet node_ready
wait_for 60 "kube-proxy /healthz" kube-proxy proxy_healthy

# ---- NetworkPolicy enforcer (kube-network-policies) ----------------------------------------
# It evaluates the first packet of each connection of a Pod that a NetworkPolicy selects,
# queued to userspace (NFQUEUE), against the policies. Without it the CNI
# bridge enforces no NetworkPolicy at all. It reads Pods, Namespaces and NetworkPolicies
# with a ServiceAccount token of its own (it knows only rest.InClusterConfig).
k apply -f - >/dev/null <<'EOK'
apiVersion: v1
kind: ServiceAccount
metadata: {name: playpen-netpol, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: playpen-netpol}
rules:
- {apiGroups: [""], resources: [pods, namespaces, nodes], verbs: [get, list, watch]}
- {apiGroups: [networking.k8s.io], resources: [networkpolicies], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: playpen-netpol}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: playpen-netpol}
subjects:
- {kind: ServiceAccount, name: playpen-netpol, namespace: kube-system}
EOK
NETPOL_DIR="${NODE_DIR}/netpol"
mkdir -p "${NETPOL_DIR}/sa" "${NETPOL_DIR}/bin"
(
  umask 077
  k create token playpen-netpol -n kube-system --duration=168h >"${NETPOL_DIR}/sa/token"
)
cp "${PKI}/ca.crt" "${NETPOL_DIR}/sa/ca.crt"
echo kube-system >"${NETPOL_DIR}/sa/namespace"
# Started through a link in the state dir, so pid_of/stray_pids recognise it as ours.
ln -sfn "$NETPOL_BIN" "${NETPOL_DIR}/bin/kube-network-policies"
if [[ ! -d "$SA_MOUNTPOINT" ]]; then
  mkdir -p "$SA_MOUNTPOINT"
  echo "$SA_MOUNTPOINT" >"${NETPOL_DIR}/created-mountpoint" # stop.sh removes it again
fi
# NRI needs containerd >= 1.7; without it the enforcer takes Pod IPs from the API server.
# Kernels >= 6.12 have the conntrack fix its DNS workaround is for.
bug1766="$(awk -F. '{ print ($1 < 6 || ($1 == 6 && $2 < 12)) ? "true" : "false" }' /proc/sys/kernel/osrelease)"
# shellcheck disable=SC2016 # $0/$1/$@ belong to the inner sh
KUBERNETES_SERVICE_HOST="$NODE_IP" KUBERNETES_SERVICE_PORT="$APISERVER_PORT" \
  launch kube-network-policies unshare --mount --propagation slave -- sh -c \
  'mount --bind "$0" "$1" && shift && exec "$@"' "${NETPOL_DIR}/sa" "$SA_MOUNTPOINT" \
  "${NETPOL_DIR}/bin/kube-network-policies" \
  --hostname-override="$NODE_NAME" \
  --nfqueue-id="$NETPOL_QUEUE" \
  --metrics-bind-address="127.0.0.1:${NETPOL_METRICS_PORT}" \
  --netfilter-bug-1766-fix="$bug1766" \
  --v=2
# kube-network-policies steers packets to its queue with the nftables `queue` expression,
# which this kernel lacks (CONFIG_NFT_QUEUE is not set: "Could not process rule: No such
# file or directory"); its table is then never written, but its queue reader and policy
# evaluation run all the same. The xt NFQUEUE target is built in, so iptables steers
# instead: the first packet of every connection from or to a Pod, in the mangle table (an
# accept there still leaves the filter table's rules to run) of FORWARD (Pod to Pod,
# Pod to Service backends, after DNAT) and INPUT (Pod to the node itself: the API server
# behind 10.96.0.1, the kubelet, which a postrouting hook would never see). Pods that no
# policy selects are accepted by the evaluator. Host-originated traffic (kubelet probes)
# is not queued, as upstream exempts uid 0.
iptables -w 5 -t mangle -N "$NETPOL_CHAIN" 2>/dev/null || iptables -w 5 -t mangle -F "$NETPOL_CHAIN"
iptables -w 5 -t mangle -A "$NETPOL_CHAIN" -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN
for dir in -s -d; do
  iptables -w 5 -t mangle -A "$NETPOL_CHAIN" "$dir" "$POD_CIDR" -j NFQUEUE --queue-num "$NETPOL_QUEUE" \
    -m comment --comment "playpen: NetworkPolicy evaluation by kube-network-policies"
done
for hook in FORWARD INPUT; do
  iptables -w 5 -t mangle -C "$hook" -j "$NETPOL_CHAIN" 2>/dev/null || iptables -w 5 -t mangle -I "$hook" -j "$NETPOL_CHAIN"
done
wait_for 60 "kube-network-policies /metrics and its queue rules" kube-network-policies netpol_healthy

if [[ "$GVISOR" == 1 ]]; then
  k apply -f - >/dev/null <<'EOK'
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: gvisor}
handler: runsc
EOK
  log "RuntimeClass gvisor: containerd handler runsc (${RUNSC}, platform ${GVISOR_PLATFORM})"
fi

echo "$NODE_STATE_ID" >"${NODE_DIR}/state.id"
node_healthy || fail "node tier not healthy after start"
log "node tier started in $((SECONDS - T0)) s"
done_ok
