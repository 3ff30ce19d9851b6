#!/usr/bin/env bash
# The local demo: a single-node cluster, the browser image built by
# playpen-imagebuild and the operator image imported into it, the chart
# installed with helm, a BrowserSession run until Ready, driven once with
# playwright-cli and viewed once through kubectl port-forward. Leaves the
# session up and prints how to drive and view it.
#
#   bash tests/demo.sh          # start (idempotent); leaves everything running
#   bash tests/demo.sh --stop   # stop the cluster (nothing left running or mounted)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
NS=playpen-demo
RELEASE_NS=playpen-system

log() { printf '[%s demo] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

if [[ "${1:-}" == "--stop" ]]; then
  tests/cluster/stop.sh
  exit 0
fi

log "1/4 single-node cluster (the first run builds Kubernetes from the Go module proxy)"
KUBECONFIG="$(tests/cluster/start-node.sh | tail -n 1)"
export KUBECONFIG
KUBECTL="$(. tests/cluster/lib.sh && echo "${K8S_BIN}/kubectl")"
HELM="$(tests/cluster/build-helm.sh | tail -n 1)"

log "1/4 images: Docker Engine, then the operator image and the browser image (playpen-imagebuild)"
tests/imagebuild/setup.sh >/dev/null
tests/e2e/images.sh --release

log "1/4 helm upgrade --install playpen charts/playpen -n ${RELEASE_NS}"
"$HELM" upgrade --install playpen charts/playpen -n "$RELEASE_NS" --create-namespace --take-ownership \
  --wait --timeout 5m \
  --set image.repository=playpen/operator,image.tag=dev,image.pullPolicy=Never \
  --set seccompProfileInstaller.enabled=true,seccompProfileInstaller.image.repository=playpen/base \
  --set seccompProfileInstaller.image.tag=bookworm,seccompProfileInstaller.image.pullPolicy=Never >/dev/null
# A new operator binary under the same tag: roll the Deployment so it runs.
"$KUBECTL" -n "$RELEASE_NS" rollout restart deployment/playpen >/dev/null
"$KUBECTL" -n "$RELEASE_NS" rollout status deployment/playpen --timeout=120s >/dev/null

log "2/4 BrowserSession demo (examples/local.yaml) in namespace ${NS}"
"$KUBECTL" create namespace "$NS" --dry-run=client -o yaml | "$KUBECTL" apply -f - >/dev/null
for _ in $(seq 1 60); do "$KUBECTL" -n "$NS" get serviceaccount default >/dev/null 2>&1 && break; sleep 0.5; done
"$KUBECTL" -n "$NS" apply -f examples/local.yaml >/dev/null
if ! "$KUBECTL" -n "$NS" wait bs/demo --for=jsonpath='{.status.phase}'=Ready --timeout=180s >/dev/null; then
  "$KUBECTL" -n "$NS" describe bs demo >&2
  log "ERROR: the session did not become Ready; see the conditions above"
  exit 1
fi
POD="$("$KUBECTL" -n "$NS" get bs demo -o jsonpath='{.status.podName}')"

log "3/4 an agent's command: playwright-cli goto (a data: URL; this machine's network is closed)"
"$KUBECTL" -n "$NS" exec "$POD" -c browser -- playwright-cli goto 'data:text/html,<title>Hello from Playpen</title><h1>Hello</h1>'

log "4/4 the viewer through kubectl port-forward"
"$KUBECTL" -n "$NS" port-forward svc/demo-view 19323:9323 >/dev/null 2>&1 &
PF=$!
trap 'kill $PF 2>/dev/null || true' EXIT
code=""
for _ in $(seq 1 50); do
  code="$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:19323/ || true)"
  [[ "$code" == 302 ]] && break
  sleep 0.2
done
[[ "$code" == 302 ]] || { log "ERROR: the dashboard did not answer through the tunnel (got '${code}')"; exit 1; }
log "4/4 the dashboard answers through the tunnel (HTTP 302 to its page)"

echo
"$KUBECTL" -n "$NS" get browsersessions -o wide
echo
echo "View it:         $("$KUBECTL" -n "$NS" get bs demo -o jsonpath='{.status.viewer.command}')   then open http://127.0.0.1:9323/"
echo "Drive it:        $("$KUBECTL" -n "$NS" get bs demo -o jsonpath='{.status.execHint}')"
echo "                 (this machine has no outside network: try a data: URL, or a page served in the cluster"
echo "                 once spec.network.egress.allowPeers lists its Pods: by default the browser reaches no private address)"
echo
echo "kubectl:         export KUBECONFIG=${KUBECONFIG}; ${KUBECTL} -n ${NS} describe bs demo"
echo "Stop everything: bash tests/demo.sh --stop"
