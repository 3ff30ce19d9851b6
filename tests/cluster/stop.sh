#!/usr/bin/env bash
# Stop the cluster started by start.sh / start-node.sh (SIGTERM, wait, then SIGKILL).
#
#   tests/cluster/stop.sh           # stop; keep the state dir (PKI, etcd data, logs) for reuse
#   tests/cluster/stop.sh --purge   # stop and delete the state dir (and /var/lib/kubelet)
#   tests/cluster/stop.sh --node    # stop only the node tier; keep the control plane up
#   tests/cluster/stop.sh --kwok    # stop only the kwok tier (kwok, its scheduler); keep the rest up
#
# The kwok tier first: kwok, then its kube-scheduler (the fake Node objects stay in etcd
# with the rest of the data). Then the node tier: kubelet, then every pod
# sandbox/container (through CRI, so CNI DEL runs), kube-proxy (+ `kube-proxy --cleanup`),
# kube-scheduler, containerd and its shims; then mounts, kubepods cgroups, CNI bridge,
# KUBE-*/CNI-* iptables chains and the sysctls the kubelet changed. Then the control
# plane, the apiserver DNAT and the node IP link. The image cache (containerd root) is
# never deleted. Idempotent; leaves nothing running.
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

purge=false
node_only=false
kwok_only=false
for a in "$@"; do
  case "$a" in
    --purge) purge=true ;;
    --node) node_only=true ;;
    --kwok) kwok_only=true ;;
    -h | --help) sed -n '2,16s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) die "unknown argument: $a" ;;
  esac
done
n=0
for f in $purge $node_only $kwok_only; do if $f; then n=$((n + 1)); fi; done
((n <= 1)) || die "--purge, --node and --kwok do not go together"

STOP_TIMEOUT="${PLAYPEN_STOP_TIMEOUT:-20}"
IS_ROOT=false
[[ $(id -u) -eq 0 ]] && IS_ROOT=true

alive() { kill -0 "$1" 2>/dev/null && [[ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]]; }

# stop_component NAME — SIGTERM our NAME process(es) (pid file + strays), SIGKILL after STOP_TIMEOUT.
stop_component() {
  local name="$1" pids=() pid p t0
  if pid="$(pid_of "$name")"; then pids+=("$pid"); fi
  for p in $(stray_pids "$name"); do
    [[ " ${pids[*]} " == *" $p "* ]] || pids+=("$p")
  done
  if ((${#pids[@]})); then
    log "stopping ${name} (pid ${pids[*]})"
    kill -TERM "${pids[@]}" 2>/dev/null || true
    t0=$SECONDS
    for p in "${pids[@]}"; do
      while alive "$p"; do
        if ((SECONDS - t0 >= STOP_TIMEOUT)); then
          log "${name} (pid ${p}) still running after ${STOP_TIMEOUT} s; SIGKILL"
          kill -KILL "$p" 2>/dev/null || true
          sleep 0.2
          continue
        fi
        sleep 0.2
      done
    done
  fi
  rm -f "${RUN}/${name}.pid"
}

# Mount points at or below one of the given directories, deepest first.
mounts_under() {
  local d
  for d in "$@"; do
    [[ -e "$d" ]] || continue
    d="$(realpath -m "$d")"
    findmnt -rn -o TARGET | awk -v d="$d" '$0 == d || index($0, d "/") == 1'
  done | sort -u | awk '{ print length($0) " " $0 }' | sort -rn | cut -d' ' -f2-
}

# Passes until nothing is left: a target mounted twice (stacked) is listed
# once, and one umount lifts only its top mount.
umount_under() {
  local m n=0 pass
  for pass in 1 2 3 4 5; do
    [[ -n "$(mounts_under "$@")" ]] || break
    while IFS= read -r m; do
      [[ -n "$m" ]] || continue
      m="$(printf '%b' "$m")" # findmnt -r escapes blanks as \x20
      umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || log "WARNING: cannot unmount ${m} (pass ${pass})"
      n=$((n + 1))
    done < <(mounts_under "$@")
  done
  ((n == 0)) || log "unmounted ${n} leftover mount(s) under $*"
}

# Before a purge: what a stopping runtime still held a moment ago (seen once
# right after the node stopped) is unmounted again, for up to 5 s.
settle_mounts() {
  local i
  for i in 1 2 3 4 5; do
    [[ -n "$(mounts_under "$1")" ]] || return 0
    umount_under "$1"
    sleep 1
  done
}

# ip[6]tables chains named KUBE-* or CNI-* (kube-proxy, kubelet, the CNI bridge, portmap and
# firewall plugins): delete the rules that jump to them, then flush and delete them.
sweep_iptables() {
  local ipt table chains rule c n=0
  for ipt in iptables ip6tables; do
    command -v "$ipt" >/dev/null 2>&1 || continue
    for table in filter nat mangle; do
      mapfile -t chains < <("$ipt" -w 5 -t "$table" -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^(KUBE|CNI)-/ { print $2 }')
      ((${#chains[@]})) || continue
      while IFS= read -r rule; do
        eval "\"\$ipt\" -w 5 -t \"\$table\" -D ${rule#-A }" 2>/dev/null || true
      done < <("$ipt" -w 5 -t "$table" -S 2>/dev/null | awk '$1 == "-A" && $2 !~ /^(KUBE|CNI)-/' | grep -E -- '-[jg] (KUBE|CNI)-' || true)
      for c in "${chains[@]}"; do "$ipt" -w 5 -t "$table" -F "$c" 2>/dev/null || true; done
      for c in "${chains[@]}"; do "$ipt" -w 5 -t "$table" -X "$c" 2>/dev/null && n=$((n + 1)); done
    done
  done
  ((n == 0)) || log "removed ${n} KUBE-*/CNI-* iptables chains"
}

# The node's interface, bridge, DNAT chain and iptables chains are global: only the state
# dir that runs the node (node dir, or an apiserver in node mode) may remove them, or a
# second, control-plane-only cluster's start.sh (which runs stop.sh first) tears down the
# node of the first (seen: a node-tier test run lost its API server this way).
OWNS_NODE=false
# The default state dir owns them too, so that it still cleans up after a lost state dir.
if [[ -d "$NODE_DIR" || "$(cat "${RUN}/kube-apiserver.mode" 2>/dev/null)" == node ||
  -z "${PLAYPEN_CLUSTER_DIR:-}" ]]; then OWNS_NODE=true; fi

node_tier_present() {
  [[ -d "$NODE_DIR" ]] && return 0
  local c
  for c in "${NODE_COMPONENTS[@]}" containerd-shim-runc-v2 containerd-shim-runsc-v1 containerd-shim-runsc-v1-containerd2; do
    pid_of "$c" >/dev/null 2>&1 && return 0
    [[ -z "$(stray_pids "$c")" ]] || return 0
  done
  $OWNS_NODE && ip link show "$CNI_BRIDGE" >/dev/null 2>&1
}

stop_node_tier() {
  $IS_ROOT || die "the node tier (${NODE_DIR}) was started as root; run stop.sh as root"
  local t0=$SECONDS

  # 1. kubelet first, so that it does not restart what we remove.
  stop_component kubelet

  # 2. Every pod through CRI while our containerd still runs: stops the containers,
  #    calls CNI DEL (IPAM, iptables, veth), removes the netns and unmounts /dev/shm.
  if pid_of containerd >/dev/null && [[ -x "$CRICTL_BIN" ]]; then
    local pods
    pods="$(crictl pods -q 2>/dev/null || true)"
    if [[ -n "$pods" ]]; then
      log "removing $(wc -l <<<"$pods") pod sandbox(es) through CRI"
      # shellcheck disable=SC2086 # one id per word
      crictl rmp -f $pods >/dev/null 2>&1 || log "WARNING: crictl rmp failed; cleaning up by hand"
    fi
    local ctrs
    ctrs="$(crictl ps -aq 2>/dev/null || true)"
    # shellcheck disable=SC2086
    [[ -z "$ctrs" ]] || crictl rm -f $ctrs >/dev/null 2>&1 || true
  fi

  # 3. kube-proxy, then its iptables/ipvs/nftables cleanup.
  stop_component kube-proxy
  if [[ -x "${K8S_BIN}/kube-proxy" && -d "$NODE_DIR" ]]; then
    mkdir -p "$LOGS"
    "${K8S_BIN}/kube-proxy" --cleanup >"${LOGS}/kube-proxy-cleanup.log" 2>&1 ||
      log "WARNING: kube-proxy --cleanup failed (see ${LOGS}/kube-proxy-cleanup.log)"
  fi

  # 4. the NetworkPolicy enforcer and its nftables tables (a queue rule left without its
  #    reader drops what it matches), the scheduler and containerd.
  stop_component kube-network-policies
  local hook
  if iptables -w 5 -t mangle -S "$NETPOL_CHAIN" >/dev/null 2>&1; then
    for hook in FORWARD INPUT; do
      while iptables -w 5 -t mangle -D "$hook" -j "$NETPOL_CHAIN" 2>/dev/null; do :; done
    done
    iptables -w 5 -t mangle -F "$NETPOL_CHAIN" && iptables -w 5 -t mangle -X "$NETPOL_CHAIN" &&
      log "removed the ${NETPOL_CHAIN} iptables chain"
  fi
  if command -v nft >/dev/null 2>&1 && nft list table inet "$NETPOL_TABLE" >/dev/null 2>&1; then
    nft delete table inet "$NETPOL_TABLE" && log "deleted nftables table inet ${NETPOL_TABLE}"
  fi
  if [[ -f "${NODE_DIR}/netpol/created-mountpoint" ]]; then
    rmdir -p "$SA_MOUNTPOINT" 2>/dev/null || true
    rm -f "${NODE_DIR}/netpol/created-mountpoint"
  fi
  stop_component kube-scheduler
  stop_component containerd

  # 5. Fallback when containerd was gone already: kill whatever still runs in kubepods,
  #    then the shims that watched it.
  local cg procs
  for cg in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods; do
    [[ -d "$cg" ]] || continue
    procs="$(find "$cg" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u)"
    if [[ -n "$procs" ]]; then
      log "killing leftover pod processes: $(tr '\n' ' ' <<<"$procs")"
      # shellcheck disable=SC2086
      kill -KILL $procs 2>/dev/null || true
      sleep 0.5
    fi
  done
  stop_component containerd-shim-runc-v2
  # gVisor (PLAYPEN_NODE_GVISOR=1): the shims (the wrapper and the binary it runs), then
  # sandboxes and gofers, which runsc names runsc-sandbox/runsc-gofer (no path), with
  # their state under ${NODE_DIR}/runsc.
  stop_component containerd-shim-runsc-v1
  stop_component containerd-shim-runsc-v1-containerd2
  local runsc_pids
  runsc_pids="$(pgrep -f -- "--root=${NODE_DIR}/runsc" || true)"
  if [[ -n "$runsc_pids" ]]; then
    log "killing leftover gVisor processes: $(tr '\n' ' ' <<<"$runsc_pids")"
    # shellcheck disable=SC2086
    kill -KILL $runsc_pids 2>/dev/null || true
  fi

  # 6. Mounts: kubelet volumes, containerd rootfs/shm, pod network namespaces.
  umount_under "$KUBELET_ROOT" "$NODE_DIR" "$CONTAINERD_ROOT"
  local ns
  for ns in /run/netns/cni-*; do # containerd 1.6's CRI pins pod netns here
    [[ -e "$ns" ]] || continue
    umount "$ns" 2>/dev/null || umount -l "$ns" 2>/dev/null || true
    rm -f "$ns"
  done

  # 7. kubepods cgroups (every v1 hierarchy and the unified one), deepest first.
  for cg in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods; do
    [[ -d "$cg" ]] || continue
    find "$cg" -depth -type d -exec rmdir {} \; 2>/dev/null || true
    [[ ! -d "$cg" ]] || log "WARNING: could not remove cgroup ${cg}"
  done

  # kubelet's /var/log/containers symlinks into our pod log dir (dangling now).
  if [[ -d /var/log/containers ]]; then
    find /var/log/containers -maxdepth 1 -type l -lname "${NODE_DIR}/*" -delete 2>/dev/null || true
  fi

  # 8. CNI bridge (veths went away with their netns), iptables, IPAM leases.
  if ip link show "$CNI_BRIDGE" >/dev/null 2>&1; then
    ip link del "$CNI_BRIDGE" && log "deleted link ${CNI_BRIDGE}"
  fi
  sweep_iptables
  rm -rf "${NODE_DIR}/cni/ipam"

  # 9. sysctls the kubelet (or start-node.sh) changed: restore the saved values.
  local f="${NODE_DIR}/sysctl.saved" key val
  if [[ -f "$f" ]]; then
    while read -r key val; do
      [[ -n "$key" ]] || continue
      # Docker Engine, which this script did not start, needs forwarding for
      # its bridge networks: never turn it off under a running dockerd.
      if [[ "$key" == net.ipv4.ip_forward && "$val" == 0 ]] && pgrep -x dockerd >/dev/null; then
        log "leaving net.ipv4.ip_forward=1: Docker Engine is running and needs it"
        continue
      fi
      if [[ "$(sysctl -n "$key" 2>/dev/null)" != "$val" ]]; then
        sysctl -qw "${key}=${val}" && log "restored sysctl ${key}=${val}"
      fi
    done <"$f"
    rm -f "$f"
  fi
  log "node tier stopped in $((SECONDS - t0)) s"
}

# The kwok tier: kwok, then its scheduler (reverse start order).
if ! $node_only; then
  for ((i = ${#KWOK_COMPONENTS[@]} - 1; i >= 0; i--)); do
    stop_component "${KWOK_COMPONENTS[i]}"
  done
fi
if $kwok_only; then
  log "kwok tier stopped"
  exit 0
fi

if node_tier_present; then stop_node_tier; fi

if ! $node_only; then
  # Reverse start order: controller-manager, apiserver, then etcd.
  for ((i = ${#COMPONENTS[@]} - 1; i >= 0; i--)); do
    stop_component "${COMPONENTS[i]}"
  done
  rm -f "${RUN}/kube-apiserver.mode"
  # Node mode leftovers: the 127.0.0.1 -> node IP DNAT and the node IP's interface.
  if $OWNS_NODE && $IS_ROOT && command -v iptables >/dev/null 2>&1 &&
    iptables -w 5 -t nat -S "$APISERVER_DNAT_CHAIN" >/dev/null 2>&1; then
    while iptables -w 5 -t nat -D OUTPUT -d 127.0.0.1/32 -p tcp --dport "$APISERVER_PORT" -j "$APISERVER_DNAT_CHAIN" 2>/dev/null; do :; done
    iptables -w 5 -t nat -F "$APISERVER_DNAT_CHAIN"
    iptables -w 5 -t nat -X "$APISERVER_DNAT_CHAIN" && log "removed the ${APISERVER_DNAT_CHAIN} DNAT chain"
  fi
  if $OWNS_NODE && ip link show "$NODE_IFACE" >/dev/null 2>&1; then
    $IS_ROOT || die "interface ${NODE_IFACE} (node IP) is left; run stop.sh as root"
    ip link del "$NODE_IFACE" && log "deleted link ${NODE_IFACE} (${NODE_IP})"
  fi
fi

if $purge; then
  if [[ -f "${KUBELET_ROOT}/.playpen" ]]; then
    settle_mounts "$KUBELET_ROOT"
    [[ -z "$(mounts_under "$KUBELET_ROOT")" ]] || die "mounts left under ${KUBELET_ROOT}; not deleting it"
    log "removing ${KUBELET_ROOT}"
    rm -rf "$KUBELET_ROOT"
  fi
  settle_mounts "$STATE"
  [[ -z "$(mounts_under "$STATE")" ]] || die "mounts left under ${STATE}; not deleting it"
  log "removing ${STATE}"
  rm -rf "$STATE" "${STATE}.lock" "${STATE}.start.lock" "${STATE}.node.lock" "${STATE}.kwok.lock"
fi
log "stopped"
