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

# ensure_cmds CMD:DEBIAN_PACKAGE ... — apt-get install only the packages whose command is missing.
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
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
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
