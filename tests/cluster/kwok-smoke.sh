#!/usr/bin/env bash
# Smoke-test the kwok tier end to end with the real operator:
#   start-kwok.sh with NODES fake nodes (default 10), the BrowserSession/BrowserPool/BrowserSnapshot CRDs,
#   a standalone `playpen-operator run` on 127.0.0.1, N BrowserSessions (default 20) in a
#   throwaway namespace; asserts that every session reaches Ready=True, that every browser
#   Pod is Running with Ready=True and a ready browser container on a fake node, and that
#   the Pods are spread over more than one node.
#
#   tests/cluster/kwok-smoke.sh [N]
#
# Env: PLAYPEN_KWOK_SMOKE_NODES (10), PLAYPEN_KWOK_SMOKE_TIMEOUT (90 s, for the sessions),
# PLAYPEN_KWOK_SMOKE_OPERATOR_PORT (16462, the operator's /readyz and /metrics),
# PLAYPEN_OPERATOR_BIN (default: cargo build -p playpen-operator, then
# ${CARGO_TARGET_DIR:-target}/debug/playpen-operator), and the cluster's PLAYPEN_CLUSTER_DIR
# and ports. On every exit path it removes what it made: the operator, the namespace, the
# CRDs if it installed them, the kwok tier if it started it (with its fake nodes), the
# control plane if it started it, and the state dir (stop.sh --purge) if it made it.
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"
REPO="$(cd "${CLUSTER_SCRIPT_DIR}/../.." && pwd)"

N="${1:-20}"
[[ "$N" =~ ^[1-9][0-9]*$ ]] || die "N must be a positive number, not '${N}'"
NODES="${PLAYPEN_KWOK_SMOKE_NODES:-10}"
((NODES >= 2)) || die "PLAYPEN_KWOK_SMOKE_NODES must be at least 2 (the spread check needs two nodes)"
TIMEOUT="${PLAYPEN_KWOK_SMOKE_TIMEOUT:-90}"
OP_PORT="${PLAYPEN_KWOK_SMOKE_OPERATOR_PORT:-16462}"
KUBECTL="${K8S_BIN}/kubectl"
T0=$SECONDS

k() { "$KUBECTL" --kubeconfig "$ADMIN_KUBECONFIG" --request-timeout=10s "$@"; }
alive() { [[ -r "/proc/$1/stat" && "$(awk '{ print $3 }' "/proc/$1/stat")" != Z ]]; }

# ---- what exists before, so that the cleanup removes only what this run made ------------------
had_state=false
[[ -d "$STATE" ]] && had_state=true
had_cp=true
for c in "${COMPONENTS[@]}"; do pid_of "$c" >/dev/null || had_cp=false; done
had_kwok=true
for c in "${KWOK_COMPONENTS[@]}"; do pid_of "$c" >/dev/null || had_kwok=false; done
had_crds=()
ns="playpen-kwok-smoke-$$-${RANDOM}"
OP_PID=""
CREATE_PID=""
started_kwok=false
OP_LOG="${LOGS}/kwok-smoke-operator.log"

cleanup() {
  local rc=$? t0=$SECONDS
  trap - EXIT INT TERM
  set +e
  [[ -z "$CREATE_PID" ]] || kill "$CREATE_PID" 2>/dev/null
  if [[ -n "$OP_PID" ]] && alive "$OP_PID"; then
    kill -TERM "$OP_PID" 2>/dev/null
    while alive "$OP_PID" && ((SECONDS - t0 < 10)); do sleep 0.2; done
    kill -KILL "$OP_PID" 2>/dev/null
  fi
  if [[ -f "$ADMIN_KUBECONFIG" ]] && k get --raw /readyz >/dev/null 2>&1; then
    k delete namespace "$ns" --ignore-not-found --wait=false >/dev/null 2>&1
    local crd
    for crd in browsersessions.playpen.dev browserpools.playpen.dev browsersnapshots.playpen.dev; do
      [[ " ${had_crds[*]} " == *" ${crd} "* ]] || k delete crd "$crd" --ignore-not-found --wait=false >/dev/null 2>&1
    done
    # The pod GC controller force-deletes the Pods bound to deleted nodes.
    if $started_kwok && $had_state; then k delete nodes -l "$KWOK_NODE_LABEL" --wait=false >/dev/null 2>&1; fi
  fi
  if ((rc != 0)) && ! $had_state && [[ -d "$LOGS" ]]; then
    # The purge below deletes the state dir: keep its logs for the post-mortem.
    local keep
    keep="$(mktemp -d /tmp/kwok-smoke-logs.XXXXXX)" && cp -r "$LOGS"/. "$keep"/ && log "logs kept in ${keep}"
  fi
  if ! $had_state; then
    "${CLUSTER_SCRIPT_DIR}/stop.sh" --purge >/dev/null 2>&1 || log "WARNING: stop.sh --purge failed"
  elif ! $had_cp; then
    "${CLUSTER_SCRIPT_DIR}/stop.sh" >/dev/null 2>&1 || log "WARNING: stop.sh failed"
  elif $started_kwok; then
    "${CLUSTER_SCRIPT_DIR}/stop.sh" --kwok >/dev/null 2>&1 || log "WARNING: stop.sh --kwok failed"
  fi
  if ((rc == 0)); then
    log "kwok smoke test passed in $((SECONDS - T0)) s (cleanup $((SECONDS - t0)) s)"
  else
    log "kwok smoke test FAILED (exit ${rc}) after $((SECONDS - T0)) s"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- cluster -----------------------------------------------------------------------------------
if $had_kwok; then
  # Reuse the running tier as it is: asking for NODES would delete the fake nodes beyond it.
  NODES="$(k get nodes -l "$KWOK_NODE_LABEL" --no-headers 2>/dev/null | wc -l)"
  log "reusing the running kwok tier (${NODES} fake nodes)"
else
  started_kwok=true
fi
"${CLUSTER_SCRIPT_DIR}/start-kwok.sh" "$NODES" >/dev/null
t_cluster=$((SECONDS - T0))

# ---- operator ------------------------------------------------------------------------------------
if [[ -n "${PLAYPEN_OPERATOR_BIN:-}" ]]; then
  OP_BIN="$PLAYPEN_OPERATOR_BIN"
else
  log "cargo build -p playpen-operator"
  (cd "$REPO" && cargo build --locked -q -p playpen-operator --bin playpen-operator)
  OP_BIN="$(cd "$REPO" && realpath -m "${CARGO_TARGET_DIR:-target}")/debug/playpen-operator"
fi
[[ -x "$OP_BIN" ]] || die "no operator binary at ${OP_BIN}"
for crd in browsersessions.playpen.dev browserpools.playpen.dev browsersnapshots.playpen.dev; do
  if k get crd "$crd" >/dev/null 2>&1; then had_crds+=("$crd"); fi
done
{ "$OP_BIN" crd && echo "---" && "$OP_BIN" crd --kind browserpool && echo "---" && "$OP_BIN" crd --kind browsersnapshot; } | k apply --server-side -f - >/dev/null
k wait --for=condition=Established --timeout=30s crd/browsersessions.playpen.dev crd/browserpools.playpen.dev \
  crd/browsersnapshots.playpen.dev >/dev/null ||
  die "the CRDs were not Established within 30 s"
if ss -Hltn "sport = :${OP_PORT}" | grep -q .; then
  die "port ${OP_PORT} (PLAYPEN_KWOK_SMOKE_OPERATOR_PORT) is already in use: $(ss -Hltnp "sport = :${OP_PORT}")"
fi
mkdir -p "$LOGS"
log "starting ${OP_BIN} run (log ${OP_LOG})"
KUBECONFIG="$ADMIN_KUBECONFIG" PLAYPEN_HTTP_ADDR="127.0.0.1:${OP_PORT}" PLAYPEN_LOG_TEXT=true RUST_LOG=info \
  "$OP_BIN" run </dev/null >"$OP_LOG" 2>&1 &
OP_PID=$!
t1=$SECONDS
until curl -fsS --max-time 2 "http://127.0.0.1:${OP_PORT}/readyz" >/dev/null 2>&1; do
  alive "$OP_PID" || { tail -n 20 "$OP_LOG" >&2; die "the operator exited before its /readyz answered (log ${OP_LOG})"; }
  ((SECONDS - t1 < 30)) || { tail -n 20 "$OP_LOG" >&2; die "the operator's /readyz on 127.0.0.1:${OP_PORT} did not answer within 30 s"; }
  sleep 0.2
done

# ---- sessions -------------------------------------------------------------------------------------
k create namespace "$ns" >/dev/null
sessions_yaml="$(for ((i = 0; i < N; i++)); do
  printf 'apiVersion: playpen.dev/v1alpha1\nkind: BrowserSession\nmetadata: {name: s%d}\nspec: {image: "playpen/browser:latest"}\n---\n' "$i"
done)"
# kubectl in the background: bash runs the INT/TERM traps only once a foreground command
# returns, while `wait` returns at once on a signal (and the cleanup kills CREATE_PID).
"$KUBECTL" --kubeconfig "$ADMIN_KUBECONFIG" --request-timeout=10s -n "$ns" create -f - <<<"$sessions_yaml" >/dev/null &
CREATE_PID=$!
wait "$CREATE_PID" || die "creating the BrowserSessions failed"
CREATE_PID=""
t_created=$SECONDS
log "created ${N} BrowserSessions in namespace ${ns}"

ready_sessions() {
  k -n "$ns" get browsersessions --no-headers \
    -o custom-columns='N:.metadata.name,R:.status.conditions[?(@.type=="Ready")].status' 2>/dev/null |
    awk '$2 == "True"' | wc -l
}
while (($(ready_sessions) < N)); do
  alive "$OP_PID" || { tail -n 20 "$OP_LOG" >&2; die "the operator exited (log ${OP_LOG})"; }
  if ((SECONDS - t_created >= TIMEOUT)); then
    log "sessions not Ready (name, Ready reason: message):"
    k -n "$ns" get browsersessions --no-headers \
      -o custom-columns='N:.metadata.name,R:.status.conditions[?(@.type=="Ready")].status,W:.status.conditions[?(@.type=="Ready")].reason,M:.status.conditions[?(@.type=="Ready")].message' |
      awk '$2 != "True"' | head -n 10 >&2
    k -n "$ns" get pods -o wide 2>&1 | head -n 12 >&2
    die "timed out after ${TIMEOUT} s waiting for ${N} BrowserSessions to reach Ready=True (only $(ready_sessions) did): kwok's pod-ready stage makes the Pods ready, the operator turns that into the session's Ready condition"
  fi
  sleep 0.5
done
t_ready=$((SECONDS - t_created))
log "${N} BrowserSessions Ready=True after ${t_ready} s"

# ---- the Pods behind them ----------------------------------------------------------------------------
# name node phase Ready-condition browser-container-ready
pods="$(k -n "$ns" get pods --no-headers \
  -o custom-columns='N:.metadata.name,NODE:.spec.nodeName,P:.status.phase,R:.status.conditions[?(@.type=="Ready")].status,C:.status.containerStatuses[?(@.name=="browser")].ready')"
(($(wc -l <<<"$pods") == N)) || die "expected ${N} browser Pods, found $(wc -l <<<"$pods"): ${pods}"
bad="$(awk '$2 !~ /^kwok-node-[0-9]+$/ || $3 != "Running" || $4 != "True" || $5 != "true"' <<<"$pods")"
[[ -z "$bad" ]] || die "Pods not Running+Ready on a fake node (name node phase Ready browser-ready): ${bad}"
spread="$(awk '{ print $2 }' <<<"$pods" | sort -u | wc -l)"
((spread > 1)) || die "all ${N} Pods landed on one node ($(awk 'NR == 1 { print $2 }' <<<"$pods")); the scheduler did not spread them"
log "${N} Pods Running with Ready=True and a ready browser container, on ${spread} of ${NODES} fake nodes"
log "timings: cluster ${t_cluster} s, sessions created -> all Ready ${t_ready} s"
