#!/usr/bin/env bash
# Port-forward throughput benchmark (on demand, not part of the tests): the
# ceiling of the path a human uses to view a session, `kubectl port-forward`
# to a port inside a browser Pod. One Pod from playpen/browser:dev runs
# tests/bench/port-forward.js with the image's own Node ($PLAYPEN_NODE) on
# 127.0.0.1:9000; the host's node (the client, same file) moves ROUNDS
# transfers of MIB MiB each way through `kubectl port-forward` (kubectl's
# default, WebSocket, and again with KUBECTL_PORT_FORWARD_WEBSOCKETS=false,
# SPDY), after one untimed 16 MiB warm-up each way. Download = the server in
# the Pod sends, upload = the host sends. The same server and client over
# plain host loopback, in the same run, give the harness's own ceiling.
# Prints median/min/max MiB/s per path and direction. Needs root and node on
# the host; leaves the cluster running and nothing in it (namespace
# playpen-bench-pf is deleted on every exit).
#   tests/bench/port-forward.sh [ROUNDS] [MIB]   (default 5 rounds of 256 MiB)
set -euo pipefail
# shellcheck source=tests/bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ROUNDS="${1:-5}"
MIB="${2:-256}"
NS=playpen-bench-pf
POD_PORT=9000
T0=$SECONDS

NODE="$(command -v node)" || die "needs node on the host (the client)"
bench_node_cluster
tests/imagebuild/setup.sh >/dev/null
tests/e2e/images.sh --release
k() { "$KUBECTL" --request-timeout=60s "$@"; }

WORK="$(mktemp -d /tmp/pp-bench-pf.XXXXXX)"
on_exit "remove ${WORK}" rm -rf "$WORK"
PIDS=()
stop_pids() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
}
# A namespace left by a killed run may still be terminating.
delete_namespaces "$NS"
on_exit "delete namespace ${NS} and wait until it is gone" delete_namespaces "$NS"
on_exit "stop the port-forwards and the host server" stop_pids
k create namespace "$NS" >/dev/null
k label namespace "$NS" playpen.dev/bench=port-forward >/dev/null
k -n "$NS" create configmap pf-bench --from-file=port-forward.js=tests/bench/port-forward.js >/dev/null
# The toleration lets the Pod onto the node tests/run.sh taints for the e2e suite.
k -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: pf-server}
spec:
  tolerations: [{key: playpen.dev/e2e, operator: Exists, effect: NoSchedule}]
  terminationGracePeriodSeconds: 0
  automountServiceAccountToken: false
  containers:
  - name: server
    image: playpen/browser:dev
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", 'exec "\$PLAYPEN_NODE" /bench/port-forward.js serve ${POD_PORT} 127.0.0.1']
    readinessProbe:
      exec: {command: ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/${POD_PORT}"]}
      periodSeconds: 1
    securityContext: {runAsNonRoot: true, allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
    volumeMounts: [{name: bench, mountPath: /bench}]
  volumes: [{name: bench, configMap: {name: pf-bench}}]
EOF
"$KUBECTL" -n "$NS" wait pod/pf-server --for=condition=Ready --timeout=120s >/dev/null || {
  log "ERROR: timed out after 120 s waiting for Pod ${NS}/pf-server (the transfer server) to be Ready"
  k -n "$NS" describe pod/pf-server >&2
  k -n "$NS" logs pod/pf-server >&2 || true
  exit 1
}
# shellcheck disable=SC2016 # expanded inside the Pod
log "pod ready: $(k -n "$NS" exec pf-server -- sh -c '"$PLAYPEN_NODE" --version') in the Pod, $("$NODE" --version) on the host"

# Reference: the same server on the host, over loopback.
"$NODE" tests/bench/port-forward.js serve 0 127.0.0.1 >"$WORK/host-server" &
PIDS+=($!)
wait_for "the host loopback server to listen" 30 grep -q listening "$WORK/host-server"
host_port="$(sed -n 's/^listening .*:\([0-9]*\)$/\1/p' "$WORK/host-server")"
log "host loopback: ${ROUNDS} x ${MIB} MiB each way"
"$NODE" tests/bench/port-forward.js client 127.0.0.1 "$host_port" "$MIB" "$ROUNDS" "host loopback" >>"$WORK/rows"

# port_forward LABEL [ENV=VALUE...]: a kubectl port-forward on a free local port,
# measured, then stopped.
port_forward() {
  local label="$1" out="$WORK/pf-$RANDOM" pid port="" t=$SECONDS
  shift
  env "$@" "$KUBECTL" -n "$NS" port-forward pod/pf-server ":${POD_PORT}" >"$out" 2>&1 &
  pid=$!
  PIDS+=("$pid")
  until port="$(sed -n "s/^Forwarding from 127\.0\.0\.1:\([0-9]*\) -> ${POD_PORT}.*/\1/p" "$out" | head -n 1)" && [[ -n "$port" ]]; do
    kill -0 "$pid" 2>/dev/null || die "kubectl port-forward exited: $(cat "$out")"
    ((SECONDS - t < 20)) || die "timed out after 20 s waiting for kubectl port-forward to print its local port: $(cat "$out")"
    sleep 0.2
  done
  log "${label}: ${ROUNDS} x ${MIB} MiB each way through 127.0.0.1:${port}"
  "$NODE" tests/bench/port-forward.js client 127.0.0.1 "$port" "$MIB" "$ROUNDS" "$label" >>"$WORK/rows" ||
    die "transfer through port-forward failed; kubectl said: $(cat "$out")"
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  # Anything but the "Forwarding from"/"Handling connection" lines is worth seeing.
  if grep -v -e '^Forwarding from' -e '^Handling connection' "$out" >&2; then
    log "(kubectl port-forward printed the lines above)"
  fi
}
port_forward "port-forward ws" KUBECTL_PORT_FORWARD_WEBSOCKETS=true
port_forward "port-forward spdy" KUBECTL_PORT_FORWARD_WEBSOCKETS=false

ref() { awk -F'\t' -v d="$1" '$1 == "host loopback" && $2 == d {print $3}' "$WORK/rows"; }
ref_down="$(ref download)" ref_up="$(ref upload)"
echo
printf '%-18s %-9s %10s %10s %10s %12s\n' path direction "median" "min" "max" "% loopback"
printf '%-18s %-9s %10s %10s %10s %12s\n' "" "" "MiB/s" "MiB/s" "MiB/s" "(median)"
while IFS=$'\t' read -r label dir median min max; do
  r="$ref_up"; [[ "$dir" == download ]] && r="$ref_down"
  printf '%-18s %-9s %10s %10s %10s %11.0f%%\n' "$label" "$dir" "$median" "$min" "$max" "$(awk -v a="$median" -v b="$r" 'BEGIN{print 100*a/b}')"
done <"$WORK/rows"
echo "(${ROUNDS} rounds of ${MIB} MiB each way per path; whole run $((SECONDS - T0)) s)"
