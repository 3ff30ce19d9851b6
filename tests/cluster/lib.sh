# shellcheck shell=bash
# shellcheck disable=SC2034 # variables are used by the scripts that source this file
# Shared helpers for tests/cluster/*.sh. Source it; do not execute it.

CLUSTER_SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
. "${CLUSTER_SCRIPT_DIR}/versions.env"

PLAYPEN_CACHE="${PLAYPEN_CACHE:-${HOME}/.cache/playpen}"
K8S_DIR="${PLAYPEN_CACHE}/k8s/${KUBERNETES_VERSION}"
K8S_BIN="${K8S_DIR}/bin"
ETCD_DIR="${PLAYPEN_CACHE}/etcd/${ETCD_VERSION}"
ETCD_BIN="${ETCD_DIR}/bin"

log() { printf '[%s %s] %s\n' "$(date +%H:%M:%S)" "$(basename "$0")" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# ensure_cmds CMD:DEBIAN_PACKAGE ... — apt-get install only the packages whose command is
# missing. CMD may be an absolute path (e.g. /usr/lib/cni/bridge). Every apt-get here
# waits for the dpkg lock (another setup script, unattended-upgrades) instead of failing.
ensure_cmds() {
  local missing=() spec
  for spec in "$@"; do
    command -v "${spec%%:*}" >/dev/null 2>&1 || missing+=("${spec#*:}")
  done
  ((${#missing[@]} == 0)) && return 0
  command -v apt-get >/dev/null 2>&1 || die "missing packages ${missing[*]} and no apt-get"
  local sudo=()
  [[ $(id -u) -eq 0 ]] || sudo=(sudo)
  log "installing missing packages: ${missing[*]}"
  "${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${missing[@]}" >/dev/null
}

# ---- cluster state (start.sh / stop.sh) --------------------------------------
STATE="${PLAYPEN_CLUSTER_DIR:-/tmp/playpen-cluster}"
[[ "$STATE" == /* ]] || STATE="$(pwd)/${STATE}"
STATE="${STATE%/}"
PKI="${STATE}/pki"
RUN="${STATE}/run"
LOGS="${STATE}/logs"
ADMIN_KUBECONFIG="${STATE}/admin.kubeconfig"
# All listeners are on 127.0.0.1 only; ports chosen away from the defaults (2379/2380/6443/10257).
ETCD_CLIENT_PORT="${PLAYPEN_ETCD_CLIENT_PORT:-23790}"
ETCD_PEER_PORT="${PLAYPEN_ETCD_PEER_PORT:-23800}"
APISERVER_PORT="${PLAYPEN_APISERVER_PORT:-16443}"
KCM_PORT="${PLAYPEN_KCM_PORT:-16444}"
SERVICE_CIDR="10.96.0.0/12"
SERVICE_FIRST_IP="10.96.0.1"
# Start order; stop.sh uses the reverse.
COMPONENTS=(etcd kube-apiserver kube-controller-manager)

# pid_of NAME — print the pid of our running NAME process (pid file + the process's
# command line mentions this state dir, so a recycled pid is not mistaken for ours).
pid_of() {
  local f="${RUN}/$1.pid" pid
  [[ -f "$f" ]] || return 1
  pid="$(<"$f")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [[ -r "/proc/${pid}/cmdline" ]] || return 1
  tr '\0' ' ' <"/proc/${pid}/cmdline" 2>/dev/null | grep -qF -- "$STATE" || return 1
  echo "$pid"
}

# stray_pids NAME — processes of binary NAME whose command line mentions this state dir
# but are not recorded in a pid file (e.g. the pid file was lost).
stray_pids() {
  local p cmd
  for p in /proc/[0-9]*; do
    [[ -r "$p/cmdline" ]] || continue
    cmd="$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)" || continue
    [[ "${cmd%% *}" == */"$1" ]] || continue
    [[ "$cmd" == *"${STATE}/"* ]] || continue
    echo "${p#/proc/}"
  done
}

# ---- node tier (start-node.sh / stop.sh / load-image.sh / node-smoke.sh) ---------
# One node per machine: the kubelet root dir is fixed (/var/lib/kubelet, where the chart's
# seccomp installer writes) and the iptables/cgroup names below are global.
NODE_NAME="${PLAYPEN_NODE_NAME:-playpen-node}"
# Stable, private, non-loopback node IP on an interface of its own (a dummy link, or an
# empty bridge when the kernel has no dummy driver). The apiserver advertises it (pods
# reach it through Service default/kubernetes) and the kubelet listens on it.
NODE_IP="${PLAYPEN_NODE_IP:-10.250.0.1}"
NODE_IFACE="${PLAYPEN_NODE_IFACE:-playpen0}"
POD_CIDR="${PLAYPEN_POD_CIDR:-10.244.0.0/24}"
CNI_NETWORK=playpen
CNI_BRIDGE=playpen-cni0
CNI_BIN_DIR=/usr/lib/cni
NODE_DIR="${STATE}/node"
KUBELET_ROOT=/var/lib/kubelet
CONTAINERD_SOCK="${NODE_DIR}/run/containerd.sock"
# containerd's root (content store, snapshots = the imported images) lives in the cache,
# outside the state dir, so images survive stop.sh --purge.
CONTAINERD_ROOT="${PLAYPEN_CACHE}/containerd/root"
PAUSE_IMAGE="registry.k8s.io/pause:${PAUSE_VERSION}"
CRICTL_BIN="${PLAYPEN_CACHE}/cri-tools/${CRICTL_VERSION}/bin/crictl"
NETPOL_BIN="${PLAYPEN_CACHE}/kube-network-policies/${NETPOL_VERSION}/bin/kube-network-policies"
KUBELET_PORT="${PLAYPEN_KUBELET_PORT:-16450}"          # on NODE_IP (apiserver -> kubelet)
KUBELET_HEALTHZ_PORT="${PLAYPEN_KUBELET_HEALTHZ_PORT:-16451}"
KUBE_PROXY_HEALTHZ_PORT="${PLAYPEN_KUBE_PROXY_HEALTHZ_PORT:-16456}"
KUBE_PROXY_METRICS_PORT="${PLAYPEN_KUBE_PROXY_METRICS_PORT:-16457}"
SCHEDULER_PORT="${PLAYPEN_SCHEDULER_PORT:-16459}"
NETPOL_METRICS_PORT="${PLAYPEN_NETPOL_METRICS_PORT:-16458}"
# The NetworkPolicy enforcer: its NFQUEUE number, the iptables (mangle) chain that
# steers Pod traffic to it, and the nftables table it writes where the kernel lets it.
# stop.sh deletes both: a queue rule left without its reader drops what it matches.
NETPOL_QUEUE=100
NETPOL_CHAIN=PLAYPEN-NETPOL
NETPOL_TABLE=kube-network-policies
# rest.InClusterConfig reads its token only from this fixed path; the enforcer
# gets it through a bind mount in a mount namespace of its own.
SA_MOUNTPOINT=/run/secrets/kubernetes.io/serviceaccount
# Start order; stop.sh uses its own order (kubelet first, pods, then the rest).
NODE_COMPONENTS=(containerd kube-scheduler kubelet kube-proxy kube-network-policies)
# nat chain holding the 127.0.0.1:APISERVER_PORT -> NODE_IP DNAT (node mode only).
APISERVER_DNAT_CHAIN=PLAYPEN-APISERVER

# ---- kwok tier (start-kwok.sh / stop.sh / kwok-smoke.sh) -------------------------------
# Fake nodes (kwok) instead of a kubelet: a scheduler of its own and the kwok controller,
# both on 127.0.0.1 only. Nothing here is global, so it runs in any state dir.
KWOK_DIR="${STATE}/kwok"
KWOK_BIN="${PLAYPEN_CACHE}/kwok/${KWOK_VERSION}/bin/kwok"
KWOK_STAGES="${PLAYPEN_CACHE}/kwok/${KWOK_VERSION}/stages" # kwok's default Stage yamls (build-kwok.sh)
KWOK_SCHEDULER_PORT="${PLAYPEN_KWOK_SCHEDULER_PORT:-16460}" # kube-scheduler (https, /healthz)
KWOK_PORT="${PLAYPEN_KWOK_PORT:-16461}"                     # kwok's server (http, /healthz, /metrics)
# Start order; stop.sh uses the reverse. kwok-scheduler is kube-scheduler started through
# a link of that name in the state dir, so the node tier's stop (by binary name) leaves it alone.
KWOK_COMPONENTS=(kwok-scheduler kwok)
# The annotation kwok manages nodes by, and the label the fake nodes carry.
KWOK_NODE_ANNOTATION=kwok.x-k8s.io/node=fake
KWOK_NODE_LABEL=type=kwok

crictl() {
  "$CRICTL_BIN" --runtime-endpoint "unix://${CONTAINERD_SOCK}" --image-endpoint "unix://${CONTAINERD_SOCK}" \
    --timeout 60s "$@"
}

# node_ip_present — NODE_IP is assigned to a local interface.
node_ip_present() { ip -o -4 addr show 2>/dev/null | grep -qF " ${NODE_IP}/"; }

# ---- shared by start.sh and start-node.sh -----------------------------------------
# sign NAME SUBJECT EXTENSIONS DIR [CA] — key + cert signed by DIR/CA.{crt,key} (default: ca).
sign() {
  local name="$1" subj="$2" ext="$3" dir="$4" ca="${5:-ca}"
  openssl genrsa -out "${dir}/${name}.key" 2048 2>/dev/null
  openssl req -new -key "${dir}/${name}.key" -subj "$subj" -out "${dir}/${name}.csr"
  openssl x509 -req -in "${dir}/${name}.csr" -CA "${dir}/${ca}.crt" -CAkey "${dir}/${ca}.key" \
    -set_serial "0x$(openssl rand -hex 16)" -days 3650 -sha256 \
    -extfile <(printf '%s\n' "$ext") -out "${dir}/${name}.crt" 2>/dev/null
  rm -f "${dir}/${name}.csr"
}

# write_kubeconfig FILE USER CERT KEY — server https://127.0.0.1:APISERVER_PORT.
write_kubeconfig() {
  local f="$1" user="$2"
  (
    umask 077
    cat >"${f}.tmp" <<EOK
apiVersion: v1
kind: Config
clusters:
- name: playpen
  cluster:
    server: https://127.0.0.1:${APISERVER_PORT}
    certificate-authority-data: $(base64 -w0 "${PKI}/ca.crt")
users:
- name: ${user}
  user:
    client-certificate-data: $(base64 -w0 "$3")
    client-key-data: $(base64 -w0 "$4")
contexts:
- name: playpen
  context:
    cluster: playpen
    user: ${user}
    namespace: default
current-context: playpen
EOK
    mv -f "${f}.tmp" "$f"
  )
}

# launch NAME BINARY ARGS... — run in the background in its own session; log in
# $LOGS/NAME.log (the previous one is kept as NAME.log.1), pid in $RUN/NAME.pid.
launch() {
  local name="$1" bin="$2"
  shift 2
  log "starting ${name}"
  if [[ -f "${LOGS}/${name}.log" ]]; then mv -f "${LOGS}/${name}.log" "${LOGS}/${name}.log.1"; fi
  (
    # Close every inherited descriptor but stdio: a daemon holding the caller's pipe
    # (fd 3 here, or any fd a test harness passed down) would keep
    # `$(start.sh | tail -1)` from ever seeing EOF, and one holding fd 9 would keep
    # the start lock forever.
    for fd in /proc/self/fd/*; do
      fd="${fd##*/}"
      if [[ "$fd" =~ ^[0-9]+$ ]] && ((fd > 2 && fd != 255)); then
        eval "exec ${fd}>&-" 2>/dev/null || true
      fi
    done
    echo "# $(date -Is) ${bin} $*"
    exec setsid "$bin" "$@"
  ) </dev/null >"${LOGS}/${name}.log" 2>&1 &
  echo $! >"${RUN}/${name}.pid"
}

# launched_alive NAME — the process launch() started is still running. Unlike pid_of it
# does not look at the command line: right after launch() the pid may still be the
# subshell closing descriptors, before it execs NAME (a race seen under CI).
launched_alive() {
  local f="${RUN}/$1.pid" pid state
  [[ -f "$f" ]] || return 1
  pid="$(<"$f")"
  [[ "$pid" =~ ^[0-9]+$ && -r "/proc/${pid}/stat" ]] || return 1
  state="$(sed 's/^.*) \([A-Z]\).*$/\1/' "/proc/${pid}/stat" 2>/dev/null)" || return 1
  [[ "$state" != Z && "$state" != X ]]
}

# wait_for SECONDS DESCRIPTION NAME CHECK... — poll CHECK until it succeeds; call the
# script's fail() on timeout or when process NAME died.
wait_for() {
  local secs="$1" what="$2" name="$3" t0=$SECONDS
  shift 3
  until "$@"; do
    launched_alive "$name" || fail "${name} exited while waiting for ${what}"
    ((SECONDS - t0 < secs)) || fail "timed out after ${secs} s waiting for ${what}"
    sleep 0.5
  done
  log "${what}: ok after $((SECONDS - t0)) s"
}

# go_install_cached DIR RECIPE PACKAGE@VERSION [LDFLAGS [PACKAGE@VERSION...]] — `go install`
# PACKAGE (and any more packages of the same module and version) from the Go module proxy
# into DIR/bin once, static and stripped, under a lock (concurrent callers wait for one
# build); DIR/.built-r<RECIPE> marks a complete build (bump RECIPE when the flags change).
go_install_cached() {
  local dir="$1" recipe="$2" package="$3" ldflags="${4:-}" t0
  [[ -f "${dir}/.built-r${recipe}" ]] && return 0
  command -v go >/dev/null 2>&1 || PATH="${PATH}:/usr/local/go/bin"
  command -v go >/dev/null 2>&1 || die "go is not installed"
  mkdir -p "${dir}/bin"
  (
    flock 9
    [[ -f "${dir}/.built-r${recipe}" ]] && exit 0
    log "building ${package} from the Go module proxy"
    t0=$SECONDS
    GOBIN="${dir}/bin" CGO_ENABLED=0 GOFLAGS=-buildvcs=false go install -trimpath \
      -ldflags "-s -w ${ldflags}" "$package" "${@:5}"
    touch "${dir}/.built-r${recipe}"
    log "built ${package} in $((SECONDS - t0)) s"
  ) 9>"${dir}.lock"
}
