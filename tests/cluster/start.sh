#!/usr/bin/env bash
# Start (or reuse) a local, loopback-only Kubernetes control plane:
# etcd + kube-apiserver + kube-controller-manager, state in
# ${PLAYPEN_CLUSTER_DIR:-/tmp/playpen-cluster}.
#
#   export KUBECONFIG=$(tests/cluster/start.sh | tail -1)
#
# Idempotent: when the cluster in the state dir is already up and healthy it only
# prints the kubeconfig path. Otherwise it stops any leftovers, builds/looks up the
# cached binaries (build.sh), generates PKI once, starts the three processes in the
# background (logs in $STATE/logs, pids in $STATE/run) and waits until they are ready.
# The state dir (PKI + etcd data) is reused across stop/start as long as it was made
# for the same versions and ports; otherwise it is wiped and recreated.
# Logs go to stderr; the last (only) line on stdout is the admin kubeconfig path.
#
# Node mode (PLAYPEN_NODE_MODE=1, set by start-node.sh; needs root): the apiserver binds
# and advertises the node IP ${PLAYPEN_NODE_IP:-10.250.0.1} (put on its own interface),
# 127.0.0.1:<port> is DNAT-ed to it so existing kubeconfigs keep working, and the
# endpoint reconciler is "lease" so Service default/kubernetes gets an endpoint. Without
# it the control plane is loopback-only as before. A healthy cluster in node mode also
# satisfies a plain start.sh.
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

exec 3>&1 1>&2 # stdout is reserved for the kubeconfig path

APISERVER_TIMEOUT="${PLAYPEN_START_TIMEOUT:-90}"
KUBECTL="${K8S_BIN}/kubectl"
STATE_ID="kubernetes=${KUBERNETES_VERSION} etcd=${ETCD_VERSION} ports=${ETCD_CLIENT_PORT},${ETCD_PEER_PORT},${APISERVER_PORT},${KCM_PORT} node-ip=${NODE_IP} layout=3"
case "${PLAYPEN_NODE_MODE:-0}" in
  1 | true | yes) MODE=node ;;
  *) MODE=loopback ;;
esac
MODE_FILE="${RUN}/kube-apiserver.mode"

etcd_healthy() { curl -fsS --max-time 2 "http://127.0.0.1:${ETCD_CLIENT_PORT}/health" 2>/dev/null | grep -q '"health":"true"'; }
apiserver_ready() { "$KUBECTL" --kubeconfig "$ADMIN_KUBECONFIG" --request-timeout=3s get --raw /readyz >/dev/null 2>&1; }
kcm_healthy() { curl -fsSk --max-time 2 "https://127.0.0.1:${KCM_PORT}/healthz" 2>/dev/null | grep -qx ok; }

apiserver_dnat_present() {
  iptables -w 5 -t nat -C OUTPUT -d 127.0.0.1/32 -p tcp --dport "$APISERVER_PORT" -j "$APISERVER_DNAT_CHAIN" 2>/dev/null
}

cluster_healthy() {
  [[ -f "${STATE}/state.id" && "$(<"${STATE}/state.id")" == "$STATE_ID" ]] || return 1
  [[ -x "$KUBECTL" && -f "$ADMIN_KUBECONFIG" ]] || return 1
  local c
  for c in "${COMPONENTS[@]}"; do pid_of "$c" >/dev/null || return 1; done
  if [[ "$MODE" == node ]]; then
    [[ "$(cat "$MODE_FILE" 2>/dev/null)" == node ]] && node_ip_present && apiserver_dnat_present || return 1
  fi
  etcd_healthy && apiserver_ready && kcm_healthy
}

done_ok() {
  log "cluster ready: https://127.0.0.1:${APISERVER_PORT} ($(cat "$MODE_FILE" 2>/dev/null || echo loopback) mode, state ${STATE})"
  echo "$ADMIN_KUBECONFIG" >&3
  exit 0
}

dump_logs() {
  local c
  for c in "${COMPONENTS[@]}"; do
    [[ -f "${LOGS}/${c}.log" ]] || continue
    echo "----- tail ${LOGS}/${c}.log -----"
    tail -n 40 "${LOGS}/${c}.log"
  done
}

fail() {
  log "ERROR: $*"
  dump_logs
  log "stopping the partially started cluster (logs kept in ${LOGS})"
  "${CLUSTER_SCRIPT_DIR}/stop.sh" || true
  exit 1
}

# ---- fast path ---------------------------------------------------------------
if cluster_healthy; then done_ok; fi

ensure_cmds openssl:openssl curl:curl ss:iproute2 flock:util-linux base64:coreutils
mkdir -p "$(dirname "$STATE")"
# (Named *.start.lock: daemons from an older start.sh leaked the fd of "<dir>.lock".)
exec 9>"${STATE}.start.lock"
if ! flock -n 9; then
  log "waiting for another start.sh (lock ${STATE}.start.lock)"
  flock -w 300 9 || die "lock ${STATE}.start.lock still held after 300 s"
fi
if cluster_healthy; then done_ok; fi # another start.sh won the race
T0=$SECONDS

# ---- leftovers / state dir -----------------------------------------------------
"${CLUSTER_SCRIPT_DIR}/stop.sh" # no-op when nothing runs
if [[ -d "$STATE" && ! (-f "${STATE}/state.id" && "$(<"${STATE}/state.id")" == "$STATE_ID") ]]; then
  log "state dir ${STATE} was made for other versions/ports (or is incomplete); recreating it"
  rm -rf "$STATE"
fi
mkdir -p "$STATE" "$RUN" "$LOGS"

"${CLUSTER_SCRIPT_DIR}/build.sh"

for port in "$ETCD_CLIENT_PORT" "$ETCD_PEER_PORT" "$APISERVER_PORT" "$KCM_PORT"; do
  if ss -Hltn "sport = :${port}" | grep -q .; then
    die "port ${port} is already in use: $(ss -Hltnp "sport = :${port}")"
  fi
done

# ---- PKI (generated once per state dir; sign() is in lib.sh) --------------------------
if [[ ! -f "${PKI}/done" ]]; then
  log "generating PKI in ${PKI}"
  tmp="${PKI}.tmp"
  rm -rf "$tmp" "$PKI"
  mkdir -p "$tmp"
  (
    umask 077
    openssl genrsa -out "${tmp}/ca.key" 2048 2>/dev/null
    openssl req -x509 -new -key "${tmp}/ca.key" -subj "/CN=playpen-ca" -days 3650 -sha256 \
      -addext "basicConstraints=critical,CA:TRUE" \
      -addext "keyUsage=critical,digitalSignature,keyEncipherment,keyCertSign" \
      -out "${tmp}/ca.crt"
    leaf="basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment"
    sign apiserver "/CN=kube-apiserver" "${leaf}
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,IP:${SERVICE_FIRST_IP},IP:${NODE_IP},DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local" "$tmp"
    sign admin "/O=system:masters/CN=admin" "${leaf}
extendedKeyUsage=clientAuth" "$tmp"
    sign kube-controller-manager "/CN=system:kube-controller-manager" "${leaf}
extendedKeyUsage=clientAuth" "$tmp"
    # The apiserver's client certificate towards kubelets (exec, logs, port-forward).
    sign apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "${leaf}
extendedKeyUsage=clientAuth" "$tmp"
    # Front proxy (request-header authentication): lets delegating servers such as the
    # controller-manager (and later aggregated API servers) trust the apiserver's proxy.
    openssl genrsa -out "${tmp}/front-proxy-ca.key" 2048 2>/dev/null
    openssl req -x509 -new -key "${tmp}/front-proxy-ca.key" -subj "/CN=playpen-front-proxy-ca" -days 3650 -sha256 \
      -addext "basicConstraints=critical,CA:TRUE" \
      -addext "keyUsage=critical,digitalSignature,keyEncipherment,keyCertSign" \
      -out "${tmp}/front-proxy-ca.crt"
    sign front-proxy-client "/CN=front-proxy-client" "${leaf}
extendedKeyUsage=clientAuth" "$tmp" front-proxy-ca
    # Service-account token signing key pair.
    openssl genrsa -out "${tmp}/sa.key" 2048 2>/dev/null
    openssl rsa -in "${tmp}/sa.key" -pubout -out "${tmp}/sa.pub" 2>/dev/null
    touch "${tmp}/done"
  )
  mv "$tmp" "$PKI"
fi

write_kubeconfig "$ADMIN_KUBECONFIG" admin "${PKI}/admin.crt" "${PKI}/admin.key"
write_kubeconfig "${STATE}/kube-controller-manager.kubeconfig" system:kube-controller-manager \
  "${PKI}/kube-controller-manager.crt" "${PKI}/kube-controller-manager.key"
echo "$STATE_ID" >"${STATE}/state.id"

# ---- etcd ----------------------------------------------------------------------
# --unsafe-no-fsync: a throwaway test cluster. With fsync, a busy 2-core VM
# (builds running beside the tests) pushed etcd transactions past the
# API server's deadline and Service creation timed out.
launch etcd "${ETCD_BIN}/etcd" \
  --name=playpen \
  --data-dir="${STATE}/etcd" \
  --listen-client-urls="http://127.0.0.1:${ETCD_CLIENT_PORT}" \
  --advertise-client-urls="http://127.0.0.1:${ETCD_CLIENT_PORT}" \
  --listen-peer-urls="http://127.0.0.1:${ETCD_PEER_PORT}" \
  --initial-advertise-peer-urls="http://127.0.0.1:${ETCD_PEER_PORT}" \
  --initial-cluster="playpen=http://127.0.0.1:${ETCD_PEER_PORT}" \
  --initial-cluster-state=new \
  --unsafe-no-fsync \
  --log-level=warn
wait_for 30 "etcd health" etcd etcd_healthy

# ---- kube-apiserver -------------------------------------------------------------
# Loopback mode: --endpoint-reconciler-type=none: the apiserver advertises 127.0.0.1, and
# Endpoints validation rejects loopback addresses, so the default "lease" reconciler would
# log "unable to sync kubernetes service ... may not be in the loopback range" every 10 s.
# The default/kubernetes Service (10.96.0.1) still exists, just without endpoints.
# Node mode: pods need a non-loopback endpoint, so the apiserver binds and advertises
# NODE_IP (it takes only one --bind-address) and 127.0.0.1:APISERVER_PORT is DNAT-ed to it.
if [[ "$MODE" == node ]]; then
  [[ $(id -u) -eq 0 ]] || die "node mode needs root (interface, iptables)"
  ensure_cmds ip:iproute2 iptables:iptables
  if ! node_ip_present; then
    log "adding node IP ${NODE_IP}/32 on ${NODE_IFACE}"
    ip link add "$NODE_IFACE" type dummy 2>/dev/null ||
      ip link add "$NODE_IFACE" type bridge || # this kernel has no CONFIG_DUMMY
      die "cannot create interface ${NODE_IFACE}"
    ip addr add "${NODE_IP}/32" dev "$NODE_IFACE"
    ip link set "$NODE_IFACE" up
  fi
  iptables -w 5 -t nat -N "$APISERVER_DNAT_CHAIN" 2>/dev/null || true
  iptables -w 5 -t nat -F "$APISERVER_DNAT_CHAIN"
  iptables -w 5 -t nat -A "$APISERVER_DNAT_CHAIN" -p tcp -j DNAT --to-destination "${NODE_IP}:${APISERVER_PORT}" \
    -m comment --comment "playpen: 127.0.0.1:${APISERVER_PORT} -> apiserver on the node IP"
  apiserver_dnat_present ||
    iptables -w 5 -t nat -I OUTPUT -d 127.0.0.1/32 -p tcp --dport "$APISERVER_PORT" -j "$APISERVER_DNAT_CHAIN"
  apiserver_net=(--bind-address="$NODE_IP" --advertise-address="$NODE_IP" --endpoint-reconciler-type=lease)
else
  apiserver_net=(--bind-address=127.0.0.1 --advertise-address=127.0.0.1 --endpoint-reconciler-type=none)
fi
echo "$MODE" >"$MODE_FILE"
launch kube-apiserver "${K8S_BIN}/kube-apiserver" \
  "${apiserver_net[@]}" \
  --secure-port="${APISERVER_PORT}" \
  --cert-dir="${STATE}/apiserver-certs" \
  --etcd-servers="http://127.0.0.1:${ETCD_CLIENT_PORT}" \
  --tls-cert-file="${PKI}/apiserver.crt" \
  --tls-private-key-file="${PKI}/apiserver.key" \
  --client-ca-file="${PKI}/ca.crt" \
  --authorization-mode=Node,RBAC \
  --service-cluster-ip-range="${SERVICE_CIDR}" \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="${PKI}/sa.pub" \
  --service-account-signing-key-file="${PKI}/sa.key" \
  --allow-privileged=true \
  --requestheader-client-ca-file="${PKI}/front-proxy-ca.crt" \
  --requestheader-allowed-names=front-proxy-client \
  --requestheader-username-headers=X-Remote-User \
  --requestheader-group-headers=X-Remote-Group \
  --requestheader-extra-headers-prefix=X-Remote-Extra- \
  --proxy-client-cert-file="${PKI}/front-proxy-client.crt" \
  --proxy-client-key-file="${PKI}/front-proxy-client.key" \
  --kubelet-client-certificate="${PKI}/apiserver-kubelet-client.crt" \
  --kubelet-client-key="${PKI}/apiserver-kubelet-client.key" \
  --kubelet-certificate-authority="${PKI}/ca.crt" \
  --kubelet-preferred-address-types=InternalIP \
  --profiling=false
wait_for "$APISERVER_TIMEOUT" "kube-apiserver /readyz" kube-apiserver apiserver_ready

# ---- kube-controller-manager ------------------------------------------------------
KCM_KUBECONFIG="${STATE}/kube-controller-manager.kubeconfig"
launch kube-controller-manager "${K8S_BIN}/kube-controller-manager" \
  --kubeconfig="$KCM_KUBECONFIG" \
  --authentication-kubeconfig="$KCM_KUBECONFIG" \
  --authorization-kubeconfig="$KCM_KUBECONFIG" \
  --bind-address=127.0.0.1 \
  --secure-port="${KCM_PORT}" \
  --cert-dir="${STATE}/kcm-certs" \
  --controllers='*' \
  --leader-elect=false \
  --use-service-account-credentials=true \
  --service-account-private-key-file="${PKI}/sa.key" \
  --root-ca-file="${PKI}/ca.crt" \
  --cluster-signing-cert-file="${PKI}/ca.crt" \
  --cluster-signing-key-file="${PKI}/ca.key" \
  --cluster-name=playpen \
  --flex-volume-plugin-dir="${STATE}/kcm-flexvolume" \
  --profiling=false
wait_for 60 "kube-controller-manager /healthz" kube-controller-manager kcm_healthy
# End-to-end signal that the controllers run with their own credentials: the
# serviceaccount controller creates default/default (pods need it to be admitted).
# shellcheck disable=SC2317 # invoked indirectly via wait_for
sa_ready() { "$KUBECTL" --kubeconfig "$ADMIN_KUBECONFIG" --request-timeout=3s -n default get serviceaccount default >/dev/null 2>&1; }
wait_for 60 "serviceaccount default/default" kube-controller-manager sa_ready

cluster_healthy || fail "cluster not healthy after start"
log "started in $((SECONDS - T0)) s"
done_ok
