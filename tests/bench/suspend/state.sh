#!/usr/bin/env bash
# tests/bench/suspend/state.sh: the state path of issue 35, measured in plain Docker (runc).
#
# A "warm pool Pod" stand-in: `docker run` of playpen/browser:dev running the
# real session runtime (`playpen-session run`, Chromium sandbox on through the
# chart's seccomp profile, no network: --network=none) with a browser up and
# one blank tab. Each run:
#   suspend: a source session opens 3 data: tabs (counter, typed <input>,
#            scrolled), then `playwright-cli state-save` + one `eval` per tab
#            (URL, scrollY, form values) -> a JSON "snapshot" (its bytes counted);
#   resume:  into a fresh warm container: `state-load` of the saved state (plus
#            a synthetic storage state of $COOKIES cookies and a localStorage
#            origin, so the load is not empty) + `goto`/`tab-new` of each URL +
#            one `eval` per tab that puts scroll and form values back; then it
#            checks what came back.
# Every command is the image's `playwright-cli` (its native fast path talks to
# the daemon socket directly) through `docker exec`; times are wall clock seen
# from the host, `docker exec` overhead included (measured alone, reported).
#
# Run (as root or a docker-group user; Docker Engine up with playpen/browser:dev):
#   bash tests/bench/suspend/state.sh          # 3 runs
#   RUNS=5 COOKIES=200 bash tests/bench/suspend/state.sh
# Env: IMAGE (playpen/browser:dev), RUNS (3), TABS (3), COOKIES (50), WORK (/tmp/pp-suspend-state).
# Output: one TSV line per run on stdout, progress on stderr. It never touches
# Kubernetes; it removes its containers (pp-suspend-state-*) and $WORK on exit.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "${here}/resume-script.sh"
repo="$(cd "$here/../../.." && pwd)"
IMAGE="${IMAGE:-playpen/browser:dev}"
RUNS="${RUNS:-3}"
TABS="${TABS:-3}"
COOKIES="${COOKIES:-50}"
WORK="${WORK:-/tmp/pp-suspend-state}"
SECCOMP="$repo/charts/playpen/files/seccomp/chromium.json"
containers=()
log() { printf '%s %s\n' "$(date +%T)" "$*" >&2; }
now_ms() { date +%s%3N; }

cleanup() {
  set +e
  for c in "${containers[@]}"; do docker rm -f "$c" >/dev/null 2>&1; done
  rm -rf "$WORK"
}
trap cleanup EXIT

mkdir -p "$WORK/runtime" "$WORK/launch"
cat > "$WORK/runtime/runtime.json" <<'EOF'
{"sessionName":"demo","socketsDir":"/var/lib/playpen/pw/1a2b3c4d/s","daemonSessionDir":"/var/lib/playpen/pw/1a2b3c4d/d","launchConfig":"/etc/playpen/launch/config.json","outputDir":"/var/lib/playpen/snapshots","sandbox":"Enforced","viewerPort":9323,"snapshotMaxAgeSeconds":3600,"snapshotMaxCount":500,"snapshotVolumeBytes":1073741824,"snapshotMaxTotalBytes":858993459,"maxLifetimeSeconds":14400,"sessionStartedAt":"2026-12-05T00:00:00Z"}
EOF
docker run --rm --entrypoint cat "$IMAGE" /etc/playpen/launch-defaults.json > "$WORK/launch/config.json"
chmod -R a+rX "$WORK"

# The session's environment (docs/session-contract.md); docker exec inherits it.
env_args=(
  -e PLAYWRIGHT_CLI_SESSION=demo
  -e PWTEST_SOCKETS_DIR=/var/lib/playpen/pw/1a2b3c4d/s
  -e PWTEST_DAEMON_SESSION_DIR=/var/lib/playpen/pw/1a2b3c4d/d
  -e PLAYWRIGHT_MCP_CONFIG=/etc/playpen/launch/config.json
  -e PLAYWRIGHT_MCP_OUTPUT_DIR=/var/lib/playpen/snapshots
  -e PLAYPEN_RUNTIME_CONFIG=/etc/playpen/runtime/runtime.json
  -e TMPDIR=/tmp
  -e PLAYPEN_READINESS_ADDR=127.0.0.1:9321
  -e PLAYPEN_TERMINATION_LOG=/tmp/termination-log
)

warm() { # $1: name. Starts a runtime, waits for Ready and an open browser (what a warm pool Pod is).
  local c="$1" t0 i
  t0=$(now_ms)
  docker run -d --name "$c" --network none --read-only --security-opt "seccomp=$SECCOMP" \
    --tmpfs /var/lib/playpen:uid=1000,gid=1000,mode=0755 --tmpfs /tmp:mode=1777 --shm-size 1g \
    -v "$WORK/runtime:/etc/playpen/runtime:ro" -v "$WORK/launch:/etc/playpen/launch:ro" \
    "${env_args[@]}" "$IMAGE" > /dev/null
  for i in $(seq 1 600); do
    docker exec "$c" playpen-session probe >/dev/null 2>&1 && break
    sleep 0.05
  done
  docker exec "$c" playwright-cli tab-list > /dev/null   # the browser is up, as in a warm Pod
  echo $(( $(now_ms) - t0 ))
}

page_url() {
  printf 'data:text/html,<title>p%s</title><body style="height:3000px"><input id=f><textarea id=t></textarea><p id=c>0</p><script>let n=0;setInterval(()=>{n++;document.getElementById("c").textContent=n},100)</script>' "$1"
}

cli() { docker exec "$1" playwright-cli "${@:2}"; }

# What the state path captures per tab, and what it puts back.
CAPTURE='JSON.stringify({url: location.href, scrollY, forms: [...document.querySelectorAll("input,textarea,select")].filter(e => e.id).map(e => [e.id, e.value])})'

storage_state() { # a synthetic Playwright storage state: $COOKIES cookies and one localStorage origin
  node -e '
    const n = Number(process.argv[1]);
    const cookies = Array.from({length: n}, (_, i) => ({name: `c${i}`, value: "v".repeat(64), domain: "app.example.test", path: "/", expires: 2000000000, httpOnly: i % 2 === 0, secure: true, sameSite: "Lax"}));
    const origins = [{origin: "https://app.example.test", localStorage: Array.from({length: 20}, (_, i) => ({name: `k${i}`, value: "x".repeat(256)}))}];
    process.stdout.write(JSON.stringify({cookies, origins}));
  ' "$COOKIES"
}

# the root file system is read-only (as in the Pod) and docker cp refuses it: stream into /tmp
put() { docker exec -i "$1" sh -c "cat > $3" < "$2"; }

# `eval` prints its result as a JSON literal on a line of its own: the string our CAPTURE made
unquote() { node -e 'const t = require("fs").readFileSync(0, "utf8"); const l = t.split("\n").find(x => x.startsWith("\"")); if (l) process.stdout.write(JSON.parse(l) + "\n")'; }

exec_overhead() { local t0; t0=$(now_ms); docker exec "$1" true; echo $(( $(now_ms) - t0 )); }

run_one() {
  local r="$1" src="pp-suspend-state-src-$1" dst="pp-suspend-state-dst-$1" t0 i cold warm_ms
  log "run $r: warming the source and the target"
  containers+=("$src" "$dst" "pp-suspend-state-one-$r")   # (warm runs in a subshell: register here, for cleanup)
  docker rm -f "$src" "$dst" > /dev/null 2>&1 || true
  cold=$(warm "$src")
  warm_ms=$(warm "$dst")
  # the source session: TABS tabs, typed input, scrolled
  cli "$src" goto "$(page_url 1)" > /dev/null
  for i in $(seq 2 "$TABS"); do cli "$src" tab-new "$(page_url "$i")" > /dev/null; done
  for i in $(seq 0 $((TABS - 1))); do
    cli "$src" tab-select "$i" > /dev/null
    cli "$src" eval "(() => { document.getElementById('f').value = 'typed-$i'; document.getElementById('t').value = 'long text $i'; scrollTo(0, 300 + $i); return 1 })()" > /dev/null
  done
  sleep 2
  # suspend: storage state + each tab's URL, scroll and form values
  storage_state > "$WORK/synthetic.json"
  put "$src" "$WORK/synthetic.json" /tmp/s.json
  cli "$src" state-load /tmp/s.json > /dev/null   # give the source real cookies and storage to save
  t0=$(now_ms)
  cli "$src" state-save /tmp/state.json > /dev/null
  : > "$WORK/tabs.jsonl"
  for i in $(seq 0 $((TABS - 1))); do
    cli "$src" tab-select "$i" > /dev/null
    cli "$src" eval "$CAPTURE" | unquote >> "$WORK/tabs.jsonl"
  done
  docker exec "$src" cat /tmp/state.json > "$WORK/state.json"
  local suspend_ms=$(( $(now_ms) - t0 ))
  local bytes; bytes=$(( $(stat -c %s "$WORK/state.json") + $(stat -c %s "$WORK/tabs.jsonl") ))
  [ "$(wc -l < "$WORK/tabs.jsonl")" = "$TABS" ] || { log "captured $(wc -l < "$WORK/tabs.jsonl") tabs, wanted $TABS"; cat "$WORK/tabs.jsonl" >&2; }
  # resume into the warm target: load the state, reopen the tabs, put scroll and forms back
  put "$dst" "$WORK/state.json" /tmp/state.json
  local ovh; ovh=$(exec_overhead "$dst")
  t0=$(now_ms)
  cli "$dst" state-load /tmp/state.json > /dev/null
  local t_state=$(( $(now_ms) - t0 ))
  i=0
  while IFS= read -r line; do
    local url; url=$(node -e 'process.stdout.write(JSON.parse(process.argv[1]).url)' "$line")
    if [ "$i" = 0 ]; then cli "$dst" goto "$url" > /dev/null; else cli "$dst" tab-new "$url" > /dev/null; fi
    cli "$dst" eval "((s) => { for (const [id, v] of s.forms) { const e = document.getElementById(id); if (e) e.value = v } scrollTo(0, s.scrollY); return 1 })($line)" > /dev/null
    i=$((i + 1))
  done < "$WORK/tabs.jsonl"
  local resume_ms=$(( $(now_ms) - t0 ))
  # check: every tab back with its form values and scroll; cookies back
  local got=0 j
  for j in $(seq 0 $((TABS - 1))); do
    cli "$dst" tab-select "$j" > /dev/null
    cli "$dst" eval "$CAPTURE" | unquote > "$WORK/back.json"
    grep -q "typed-$j" "$WORK/back.json" && grep -q "\"scrollY\":$((300 + j))" "$WORK/back.json" && got=$((got + 1))
  done
  local cookies; cookies=$(cli "$dst" cookie-list 2>/dev/null | grep -c 'c[0-9]' || true)
  # the same resume as two requests (what a runtime-native resume would send): state-load, then
  # one run-code that opens every tab at once and puts its scroll and form values back
  local dst2="pp-suspend-state-one-$r"
  warm "$dst2" > /dev/null
  put "$dst2" "$WORK/state.json" /tmp/state.json
  resume_script "$WORK/tabs.jsonl" > "$WORK/resume.js"
  put "$dst2" "$WORK/resume.js" /tmp/resume.js
  t0=$(now_ms)
  cli "$dst2" state-load /tmp/state.json > /dev/null
  local one_state=$(( $(now_ms) - t0 ))
  cli "$dst2" run-code --filename /tmp/resume.js > "$WORK/one.out"
  local one_ms=$(( $(now_ms) - t0 ))
  local got2=0
  for j in $(seq 0 $((TABS - 1))); do
    cli "$dst2" tab-select "$j" > /dev/null
    cli "$dst2" eval "$CAPTURE" | unquote > "$WORK/back.json"
    grep -q "typed-$j" "$WORK/back.json" && grep -q "\"scrollY\":$((300 + j))" "$WORK/back.json" && got2=$((got2 + 1))
  done
  docker rm -f "$dst2" > /dev/null
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s/%s\t%s\t%s\t%s\t%s/%s\n' "$r" "$cold" "$warm_ms" "$suspend_ms" "$bytes" "$ovh" "$t_state" "$resume_ms" "$got" "$TABS" "$cookies" "$one_state" "$one_ms" "$got2" "$TABS"
  docker rm -f "$src" "$dst" > /dev/null
}

echo -e "run\tcold_ready_ms\twarm_ready_ms\tsuspend_ms\tsnapshot_bytes\tdocker_exec_ms\tstate_load_ms\tresume_total_ms\ttabs_restored\tcookie_lines\toneshot_state_load_ms\toneshot_resume_ms\toneshot_tabs_restored"
for r in $(seq 1 "$RUNS"); do run_one "$r"; done
