# shellcheck shell=bash
# Shared set-up of the benchmarks (tests/bench/*.sh, tests/imagebuild/bench.sh).
# Source it first thing; it makes the checkout the working directory.
#
#   TARGET_DIR              cargo's target directory of this checkout (CARGO_TARGET_DIR when set)
#   on_exit "what" CMD...   registers a cleanup; one EXIT trap runs them, newest first, on every
#                           exit path (success, failure, Ctrl-C / SIGINT, SIGTERM) and says what it does
#   run_child CMD...        runs CMD in the background and waits for it, so that a signal to this
#                           script is acted on at once (and CMD is stopped by the cleanup)
#   wait_for "what" SECONDS CMD...
#                           retries CMD every second until it succeeds; on timeout says in words what
#                           it was waiting for (and CMD's last output) and fails
#   bench_cluster           starts (or reuses) the control plane (tests/cluster/start.sh); exports
#                           KUBECONFIG, KUBECTL and PLAYPEN_KUBECTL
#   bench_node_cluster      the same with the node tier (tests/cluster/start-node.sh, root)
#   delete_namespaces ARGS  `kubectl delete namespace ARGS` (names, or -l SELECTOR) and waits until
#                           they and everything in them are gone (the node's room is back)
#   stop_bench_operator PIDFILE
#                           stops the operator process a benchmark started (its pid in PIDFILE,
#                           checked against its command line so a recycled pid is never killed)
#   install_bench_chart NS  installs the chart (release playpen-bench in playpen-bench-system)
#                           watching NS; uninstalled on exit
#
# Every benchmark labels (or names) what it creates, deletes it on exit, and deletes what an
# earlier, interrupted run of itself left before it starts.

BENCH_REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$BENCH_REPO" || exit 1
# shellcheck source=tests/cluster/lib.sh
. tests/cluster/lib.sh

# cargo's own answer (it honours CARGO_TARGET_DIR and .cargo/config); the default when cargo cannot say.
TARGET_DIR="$(cargo metadata --format-version 1 --no-deps 2>/dev/null |
  sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
TARGET_DIR="${TARGET_DIR:-${CARGO_TARGET_DIR:-${BENCH_REPO}/target}}"

_BENCH_CLEANUPS=()
_BENCH_CHILD=""

on_exit() {
  local what="$1"
  shift
  _BENCH_CLEANUPS+=("${what}"$'\t'"$(printf '%q ' "$@")")
}

_bench_cleanup() {
  local rc=$? i entry what
  # A second Ctrl-C must not cut the cleanup short.
  trap '' INT TERM
  trap - EXIT
  if [[ -n "$_BENCH_CHILD" ]] && kill -0 "$_BENCH_CHILD" 2>/dev/null; then
    log "cleanup: stopping ${_BENCH_CHILD_WHAT:-the running step} (pid ${_BENCH_CHILD}) and its child processes"
    # Its children first: once it is gone they would belong to init, out of reach by parent.
    pkill -TERM -P "$_BENCH_CHILD" 2>/dev/null || true
    kill -TERM "$_BENCH_CHILD" 2>/dev/null || true
    wait "$_BENCH_CHILD" 2>/dev/null || true
  fi
  for ((i = ${#_BENCH_CLEANUPS[@]} - 1; i >= 0; i--)); do
    entry="${_BENCH_CLEANUPS[i]}"
    what="${entry%%$'\t'*}"
    log "cleanup: ${what}"
    (eval "${entry#*$'\t'}") || log "cleanup: could not ${what} (exit $?)"
  done
  exit "$rc"
}
trap _bench_cleanup EXIT
trap 'log "interrupted"; exit 130' INT
trap 'log "terminated"; exit 143' TERM

run_child() {
  local rc=0
  _BENCH_CHILD_WHAT="$(basename "$1")"
  "$@" &
  _BENCH_CHILD=$!
  wait "$_BENCH_CHILD" || rc=$?
  _BENCH_CHILD=""
  return "$rc"
}

wait_for() {
  local what="$1" timeout="$2" start=$SECONDS out=""
  shift 2
  until out="$("$@" 2>&1)"; do
    if ((SECONDS - start >= timeout)); then
      log "timed out after ${timeout} s waiting for ${what}"
      [[ -z "$out" ]] || printf '%s\n' "$out" | tail -n 5 | sed 's/^/  last check said: /' >&2
      return 1
    fi
    sleep 1
  done
}

bench_cluster() {
  KUBECONFIG="$(tests/cluster/start.sh | tail -n 1)"
  export KUBECONFIG
  KUBECTL="${K8S_BIN}/kubectl"
  export PLAYPEN_KUBECTL="$KUBECTL"
}

bench_node_cluster() {
  KUBECONFIG="$(tests/cluster/start-node.sh | tail -n 1)"
  export KUBECONFIG
  KUBECTL="${K8S_BIN}/kubectl"
  export PLAYPEN_KUBECTL="$KUBECTL"
}

_namespaces_gone() {
  local left
  left="$("$KUBECTL" get namespace "$@" -o name --ignore-not-found)" || return 1
  [[ -z "$left" ]] || { echo "still there: ${left//$'\n'/ }"; return 1; }
}

delete_namespaces() {
  "$KUBECTL" delete namespace "$@" --ignore-not-found --wait=false >/dev/null
  wait_for "namespace(s) '$*' and everything in them to be deleted" "${PLAYPEN_BENCH_DELETE_TIMEOUT:-600}" \
    _namespaces_gone "$@"
}

# The chart's operator, as cold-start.sh and pool.sh run it: release playpen-bench in
# playpen-bench-system, watching only NS.
BENCH_RELEASE=playpen-bench
BENCH_RELEASE_NS=playpen-bench-system

_uninstall_bench_chart() {
  "$HELM" uninstall "$BENCH_RELEASE" -n "$BENCH_RELEASE_NS" --wait --timeout 120s >/dev/null 2>&1 || true
  delete_namespaces "$BENCH_RELEASE_NS"
}

# install_bench_chart NS BENCH WHAT [HELM ARGS...]: a fresh namespace NS (label
# playpen.dev/bench=BENCH) and the chart's operator watching it, with more helm
# arguments if given; on exit NS (holding WHAT) goes first, while its operator
# still runs, then the chart.
install_bench_chart() {
  local ns="$1" bench="$2" what="$3" timeout="${PLAYPEN_BENCH_CHART_TIMEOUT:-300}"
  local more=("${@:4}")
  HELM="$(tests/cluster/build-helm.sh | tail -n 1)"
  # An earlier, interrupted run's release and namespace: nothing of it
  # competes for the node.
  _uninstall_bench_chart
  on_exit "uninstall the chart (release ${BENCH_RELEASE}) and delete namespace ${BENCH_RELEASE_NS}" \
    _uninstall_bench_chart
  delete_namespaces "$ns"
  # The chart binds its operator's Role in the namespace it watches: it exists first.
  "$KUBECTL" create namespace "$ns" >/dev/null
  on_exit "delete namespace ${ns} (${what}) and wait until it is gone" delete_namespaces "$ns"
  "$KUBECTL" label namespace "$ns" "playpen.dev/bench=${bench}" >/dev/null
  log "installing the chart (release ${BENCH_RELEASE}), waiting up to ${timeout} s for its operator to be ready"
  if ! "$HELM" upgrade --install "$BENCH_RELEASE" charts/playpen -n "$BENCH_RELEASE_NS" --create-namespace \
    --take-ownership --wait --timeout "${timeout}s" \
    --set image.repository=playpen/operator,image.tag=dev,image.pullPolicy=Never \
    --set "watchNamespaces={${ns}}" --set logFormat=text \
    --set "sessions.resources.requests.cpu=${PLAYPEN_BENCH_SESSION_CPU:-20m}" \
    --set seccompProfileInstaller.enabled=true,seccompProfileInstaller.image.repository=playpen/base \
    --set seccompProfileInstaller.image.tag=bookworm,seccompProfileInstaller.image.pullPolicy=Never \
    "${more[@]}" >/dev/null; then
    log "ERROR: helm could not install the chart (its error is above), or the chart's operator (and its seccomp" \
      "installer) in namespace ${BENCH_RELEASE_NS} was not ready within ${timeout} s. Its Pods and their latest events:"
    "$KUBECTL" -n "$BENCH_RELEASE_NS" get pods -o wide >&2 || true
    "$KUBECTL" -n "$BENCH_RELEASE_NS" get events --sort-by=.lastTimestamp 2>/dev/null | tail -n 10 >&2 || true
    log "a Pod that cannot be scheduled usually means the node is full: look for Pods other benchmarks left" \
      "('$KUBECTL get pods -A --field-selector=status.phase=Pending')"
    return 1
  fi
}

stop_bench_operator() {
  local pidfile="$1" pid
  pid="$(cat "$pidfile" 2>/dev/null)" || return 0
  if [[ "$pid" =~ ^[0-9]+$ ]] && tr '\0' ' ' 2>/dev/null <"/proc/${pid}/cmdline" | grep -q "playpen-operator run"; then
    kill -TERM "$pid" 2>/dev/null || true
    wait_for "the bench's operator (pid ${pid}) to exit after SIGTERM" 20 bash -c "! kill -0 ${pid} 2>/dev/null" ||
      kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
}
