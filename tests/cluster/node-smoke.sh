#!/usr/bin/env bash
# Smoke-test the single-node cluster (start-node.sh must have been run; needs root):
#   Node Ready; a Pod from a locally imported image (load-image.sh) runs; kubectl exec,
#   logs and port-forward (to a port bound to 127.0.0.1 inside the Pod) work; a Pod
#   reaches another Pod through a ClusterIP Service; a Pod reaches the API server through
#   default/kubernetes with its in-cluster config; a Localhost seccomp profile under
#   /var/lib/kubelet/seccomp is enforced; node listeners are on loopback or the node IP.
# Uses a throwaway namespace; exits non-zero with a message on the first failure.
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

IMAGE="${PLAYPEN_NODE_SMOKE_IMAGE:-playpen/base:bookworm}"
POD_TIMEOUT="${PLAYPEN_POD_TIMEOUT:-90}"
REPO_DIR="$(cd "${CLUSTER_SCRIPT_DIR}/../.." && pwd)"
SECCOMP_PROFILE="playpen-node-smoke.json"
KUBECTL="${K8S_BIN}/kubectl"
k() { "$KUBECTL" --kubeconfig "$ADMIN_KUBECONFIG" --request-timeout=20s "$@"; }
step() { log "ok: $* ($((SECONDS - STEP_T0)) s)"; STEP_T0=$SECONDS; }

[[ $(id -u) -eq 0 ]] || die "node-smoke.sh needs root (containerd socket, /var/lib/kubelet/seccomp)"
[[ -f "$ADMIN_KUBECONFIG" ]] || die "no ${ADMIN_KUBECONFIG}; run tests/cluster/start-node.sh"
T0=$SECONDS
STEP_T0=$SECONDS

# ---- node -------------------------------------------------------------------------------------
ready="$(k get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null || true)"
[[ "$ready" == True ]] || die "node ${NODE_NAME} is not Ready (Ready=${ready:-missing}); run tests/cluster/start-node.sh"
step "node ${NODE_NAME} Ready ($(k get node "$NODE_NAME" -o jsonpath='{.status.nodeInfo.containerRuntimeVersion} {.status.nodeInfo.kubeletVersion}'))"

# ---- image ------------------------------------------------------------------------------------
# From the Docker Engine when it runs (load-image.sh skips an identical image); otherwise
# the copy cached in containerd's root is enough; otherwise build it (imagebuild/setup.sh).
if docker version >/dev/null 2>&1 && docker image inspect "$IMAGE" >/dev/null 2>&1; then
  "${CLUSTER_SCRIPT_DIR}/load-image.sh" "$IMAGE"
elif ! crictl inspecti "$IMAGE" >/dev/null 2>&1; then
  [[ "$IMAGE" == playpen/base:bookworm ]] || die "image ${IMAGE} is neither in Docker nor in containerd"
  log "${IMAGE} not in containerd; building it with tests/imagebuild/setup.sh"
  "${REPO_DIR}/tests/imagebuild/setup.sh" >/dev/null
  "${CLUSTER_SCRIPT_DIR}/load-image.sh" "$IMAGE"
else
  log "${IMAGE}: cached in containerd (Docker Engine not running; not re-checked)"
fi
step "image ${IMAGE} in containerd"

# ---- workload ---------------------------------------------------------------------------------
ns="playpen-node-smoke-$$-${RANDOM}"
pf_pid=""
cleanup() {
  if [[ -n "$pf_pid" ]]; then kill "$pf_pid" 2>/dev/null || true; fi
  k delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
  rm -f "${KUBELET_ROOT}/seccomp/${SECCOMP_PROFILE}"
}
trap cleanup EXIT

# Seccomp profile: allow everything but mkdir/mkdirat (EPERM).
mkdir -p "${KUBELET_ROOT}/seccomp"
cat >"${KUBELET_ROOT}/seccomp/${SECCOMP_PROFILE}" <<'EOF'
{"defaultAction": "SCMP_ACT_ALLOW",
 "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1}]}
EOF

# perl-base (in every Debian image) serves HTTP: ARGV = address, port, body.
# shellcheck disable=SC2016 # perl code, not shell
HTTPD='use IO::Socket::INET; my ($a, $p, $b) = @ARGV;
my $s = IO::Socket::INET->new(LocalAddr => $a, LocalPort => $p, Listen => 16, ReuseAddr => 1) or die "listen $a:$p: $!";
while (my $c = $s->accept) { while (my $l = <$c>) { last if $l =~ /^\r?\n$/ }
  print $c "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " . (length($b) + 1) . "\r\n\r\n$b\n"; close $c }'

k create namespace "$ns" >/dev/null
k -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: server
  labels: {app: server}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: server
    image: ${IMAGE}
    imagePullPolicy: Never
    env:
    - {name: HTTPD, value: $(printf '%s' "$HTTPD" | jq -Rs .)}
    command: [bash, -c]
    args:
    - |
      perl -e "\$HTTPD" 0.0.0.0 8080 "server-ok \$(hostname)" &
      perl -e "\$HTTPD" 127.0.0.1 9090 "loopback-only-ok" &
      echo "node-smoke-log-marker"
      wait
---
apiVersion: v1
kind: Service
metadata:
  name: server
spec:
  selector: {app: server}
  ports:
  - {port: 80, targetPort: 8080}
---
apiVersion: v1
kind: Pod
metadata:
  name: client
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - name: k8s-bin
    hostPath: {path: ${K8S_BIN}, type: Directory}
  containers:
  - name: client
    image: ${IMAGE}
    imagePullPolicy: Never
    command: [sleep, infinity]
    volumeMounts:
    - {name: k8s-bin, mountPath: /opt/k8s-bin, readOnly: true}
---
apiVersion: v1
kind: Pod
metadata:
  name: seccomp
spec:
  terminationGracePeriodSeconds: 1
  securityContext:
    seccompProfile: {type: Localhost, localhostProfile: ${SECCOMP_PROFILE}}
  containers:
  - name: seccomp
    image: ${IMAGE}
    imagePullPolicy: Never
    command: [sleep, infinity]
EOF

if ! k -n "$ns" wait --for=condition=Ready pod/server pod/client pod/seccomp --timeout="${POD_TIMEOUT}s" >/dev/null; then
  k -n "$ns" get pods -o wide >&2 || true
  k -n "$ns" get events --sort-by=.lastTimestamp >&2 || true
  die "pods not Ready within ${POD_TIMEOUT} s (kubelet log: ${LOGS}/kubelet.log)"
fi
step "3 pods from ${IMAGE} Running ($(k -n "$ns" get pod server -o jsonpath='{.status.podIP}'), $(k -n "$ns" get pod client -o jsonpath='{.status.podIP}'))"

# ---- exec, logs --------------------------------------------------------------------------------
out="$(k -n "$ns" exec server -- cat /etc/hostname)" || die "kubectl exec failed"
[[ "$out" == server ]] || die "kubectl exec: expected hostname 'server', got '${out}'"
step "kubectl exec"

t0=$SECONDS
until k -n "$ns" logs server 2>/dev/null | grep -q node-smoke-log-marker; do
  ((SECONDS - t0 < 20)) || die "kubectl logs server: marker line not found; got: $(k -n "$ns" logs server 2>&1 | tail -3)"
  sleep 0.5
done
step "kubectl logs"

# ---- port-forward to 127.0.0.1:9090 inside the Pod ----------------------------------------------
pf_out="$(mktemp)"
k -n "$ns" port-forward pod/server :9090 >"$pf_out" 2>&1 &
pf_pid=$!
t0=$SECONDS
port=""
until port="$(sed -n 's/^Forwarding from 127\.0\.0\.1:\([0-9]*\) -> 9090.*/\1/p' "$pf_out" | head -1)" && [[ -n "$port" ]]; do
  kill -0 "$pf_pid" 2>/dev/null || die "kubectl port-forward exited: $(cat "$pf_out")"
  ((SECONDS - t0 < 20)) || die "kubectl port-forward did not start: $(cat "$pf_out")"
  sleep 0.2
done
out="$(curl -fsS --max-time 10 "http://127.0.0.1:${port}/" 2>&1)" || die "port-forward: curl 127.0.0.1:${port} failed: ${out}; $(cat "$pf_out")"
[[ "$out" == loopback-only-ok ]] || die "port-forward: unexpected answer '${out}'"
kill "$pf_pid" 2>/dev/null || true
wait "$pf_pid" 2>/dev/null || true
pf_pid=""
rm -f "$pf_out"
step "kubectl port-forward to 127.0.0.1:9090 in the Pod"

# ---- Pod -> ClusterIP Service -> Pod -------------------------------------------------------------
svc_ip="$(k -n "$ns" get service server -o jsonpath='{.spec.clusterIP}')"
t0=$SECONDS
# shellcheck disable=SC2016 # expanded inside the Pod
fetch='exec 3<>"/dev/tcp/$0/$1" && printf "GET / HTTP/1.0\r\nHost: x\r\n\r\n" >&3 && tail -n 1 <&3'
until out="$(k -n "$ns" exec client -- timeout 5 bash -c "$fetch" "$svc_ip" 80 2>&1)" && [[ "$out" == "server-ok server" ]]; do
  # kube-proxy programs the rules right after the EndpointSlice appears.
  ((SECONDS - t0 < 30)) || die "client -> Service ${svc_ip}:80: expected 'server-ok server', got '${out}'"
  sleep 1
done
step "Pod -> ClusterIP ${svc_ip}:80 -> Pod"

# ---- in-cluster API access through default/kubernetes -----------------------------------------------
# shellcheck disable=SC2016 # expanded inside the Pod
out="$(k -n "$ns" exec client -- bash -c 'echo "$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"')"
[[ "$out" == "${SERVICE_FIRST_IP}:443" ]] || die "in-cluster env: KUBERNETES_SERVICE_HOST:PORT is '${out}', expected ${SERVICE_FIRST_IP}:443"
# (No --request-timeout: kubectl falls back to the in-cluster config only when no flag
# touches the client config.)
out="$(k -n "$ns" exec client -- timeout 20 /opt/k8s-bin/kubectl auth whoami -o 'jsonpath={.status.userInfo.username}' 2>&1)" ||
  die "in-cluster kubectl (service account, ${SERVICE_FIRST_IP}:443) failed: ${out}"
[[ "$out" == "system:serviceaccount:${ns}:default" ]] || die "in-cluster identity is '${out}'"
step "Pod -> API server via default/kubernetes (${SERVICE_FIRST_IP}:443 -> $(k get endpoints kubernetes -o jsonpath='{.subsets[0].addresses[0].ip}:{.subsets[0].ports[0].port}' 2>/dev/null)) as ${out}"

# ---- Localhost seccomp profile ---------------------------------------------------------------------
out="$(k -n "$ns" exec seccomp -- bash -c 'grep "^Seccomp:" /proc/self/status; mkdir /tmp/blocked 2>&1 && echo MKDIR-ALLOWED' 2>&1 || true)"
[[ "$out" == *"Seccomp:"*2* && "$out" == *"Operation not permitted"* && "$out" != *MKDIR-ALLOWED* ]] ||
  die "Localhost seccomp profile ${KUBELET_ROOT}/seccomp/${SECCOMP_PROFILE} not enforced: ${out}"
out="$(k -n "$ns" exec client -- bash -c 'mkdir /tmp/allowed && echo MKDIR-ALLOWED' 2>&1)"
[[ "$out" == MKDIR-ALLOWED ]] || die "control Pod without the profile could not mkdir: ${out}"
step "Localhost seccomp profile (mkdir -> EPERM only in that Pod)"

# ---- listeners ----------------------------------------------------------------------------------------
wild="$(ss -Hltnp | grep -E '"(kubelet|kube-proxy|kube-scheduler|containerd)"' |
  awk -v ip="$NODE_IP" '$4 !~ /^(127\.[0-9.]+|\[::1\]):[0-9]+$/ && index($4, ip ":") != 1' || true)"
[[ -z "$wild" ]] || die "node components listen beyond loopback/${NODE_IP}: ${wild}"
step "node listeners on loopback or ${NODE_IP} only"

log "node smoke test passed in $((SECONDS - T0)) s"
