#!/usr/bin/env bash
# Idle-memory benchmark (on demand, not part of the tests): a real session
# runtime on this host (`playpen-session run` with the real CLI daemon,
# Debian's chromium and one loopback page open), with the viewer's dashboard
# eager (the earlier behaviour: the baseline) and on demand, in alternating
# rounds. Once the session has sat idle: the RSS and PSS of the runtime's
# process tree, by role, and, where this host lets the script make a memory
# cgroup, the tree's working set as the kubelet counts a container's; then
# the first view's latency (a GET of the dashboard's page through the relay,
# which on demand starts it) and the tree once viewed. Prints each round,
# the medians and on-demand / eager.
# What was measured: docs/session-runtime.md (The dashboard on demand).
#   tests/bench/idle-memory.sh [ROUNDS] [SETTLE]
#   ROUNDS per mode (default 3); SETTLE seconds idle before measuring (default 20)
#   PLAYPEN_NODE=<node> runs the daemon and the dashboard on that Node (default: node on PATH);
#   The browser's arguments are the image's launch defaults (imagebuild/src/chromium-args.json, what
#   playpen-imagebuild bakes into /etc/playpen/launch-defaults.json), or PLAYPEN_BENCH_BASE_ARGS
#   (a JSON array) instead of them.
#   PLAYPEN_BENCH_CHROMIUM=<executable> and PLAYPEN_BENCH_CHROMIUM_ARGS="<flags>" try another browser
#   build or more flags after those (a --disable-features or --enable-features there replaces the
#   defaults' own: Chromium keeps the last)
#   PLAYPEN_BENCH_COLD=1 runs each round from fresh copies of the browser's directory, node and the CLI
#   package, dropped from the page cache: their file pages are then charged to the session's cgroup,
#   as on a node where no other container ran this image (PLAYPEN_BENCH_CHROMIUM must then be the
#   real executable, e.g. /usr/lib/chromium/chromium, not Debian's wrapper script)
#   PLAYPEN_BENCH_MODES="on-demand" measures only that mode (default: "eager on-demand")
#   PLAYPEN_BENCH_CHECK=1: after the measurement, proves the browser still serves the viewer and the
#   agent: the live screencast shows the page and a click on it reaches the page (tests/e2e/clients/
#   viewer.js, a real browser through the relay; needs tests/e2e/clients.sh's prefix in
#   PLAYPEN_E2E_CLIENTS_PREFIX), a `screenshot` and a `snapshot` through the CLI
# Leaves nothing behind: the runtime it started, its cgroup, the page server
# and its directory go on every exit.
set -euo pipefail
# shellcheck source=tests/bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ROUNDS="${1:-3}"
SETTLE="${2:-20}"
export LC_ALL=C
PREFIX="${PLAYPEN_TEST_CLI_PREFIX:-$(tests/session/setup.sh | tail -n 1)}"
cargo build --release --locked -p playpen-session >&2
BIN="${TARGET_DIR}/release/playpen-session"
NODE="${PLAYPEN_NODE:-$(command -v node)}"

# Short: the CLI's socket paths must stay under 103 bytes.
WORK="$(mktemp -d /tmp/ppim.XXXXXX)"
on_exit "remove ${WORK}" rm -rf "$WORK"
# Experiments with the browser, not defaults: another executable, more flags.
CHROMIUM="${PLAYPEN_BENCH_CHROMIUM:-/usr/bin/chromium}"
read -r -a extra_args <<<"${PLAYPEN_BENCH_CHROMIUM_ARGS:-}"
# What the runtime runs: these, or their cold copies (cold_copies).
RUN_NODE="$NODE"
RUN_PREFIX="$PREFIX"
if [[ -n "${PLAYPEN_BENCH_COLD:-}" ]]; then
  [[ "$(head -c 4 "$CHROMIUM")" == $'\x7fELF' ]] || { echo "PLAYPEN_BENCH_COLD needs the browser's executable itself, not $CHROMIUM" >&2; exit 2; }
  BROWSER_DIR="$(dirname "$(readlink -f "$CHROMIUM")")"
  CHROMIUM="$WORK/cold/browser/$(basename "$CHROMIUM")"
  RUN_NODE="$WORK/cold/node"
  RUN_PREFIX="$WORK/cold/cli"
fi
base_args="${PLAYPEN_BENCH_BASE_ARGS:-$(cat imagebuild/src/chromium-args.json)}"
args="$("$NODE" -e 'console.log(JSON.stringify([...JSON.parse(process.argv[1]), ...process.argv.slice(2)]).slice(1, -1))' \
  "$base_args" ${extra_args[@]+"${extra_args[@]}"})"
cat >"$WORK/launch.json" <<EOF
{"browser":{"browserName":"chromium","launchOptions":{"executablePath":"$CHROMIUM","headless":true,
 "chromiumSandbox":false,"args":[$args]}}}
EOF
echo "browser: $CHROMIUM $args; node: $NODE ($("$NODE" --version)); load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

# The loopback page, served by node (already required by the CLI).
"$NODE" -e '
const page = `<!doctype html><html><head><title>Idle</title><link rel="icon" href="data:,"></head><body>
<h1>An idle page</h1><p>Nothing moves here.</p></body></html>`;
// The check'"'"'s page: one colour a click turns into another (as tests/e2e/fixture-server.js).
const colour = `<!doctype html><html><head><title>Colour fixture</title><link rel="icon" href="data:,"><style>
html, body { margin: 0; height: 100%; background: rgb(255, 0, 170); }
button { position: fixed; inset: 0; width: 100%; height: 100%; opacity: 0; }
</style></head><body>
<button onclick="document.body.style.background = '"'"'rgb(0, 170, 255)'"'"'; document.body.dataset.clicked = '"'"'yes'"'"';">Change colour</button>
</body></html>`;
const server = require("http").createServer((req, res) => {
  res.setHeader("content-type", "text/html");
  res.end(req.url === "/colour" ? colour : page);
});
server.listen(0, "127.0.0.1", () => console.log(server.address().port));
// Gone with the script, even if it is killed.
setInterval(() => { try { process.kill(Number(process.argv[1]), 0); } catch { process.exit(0); } }, 1000);
' "$$" >"$WORK/port" &
SERVER=$!
on_exit "stop the page server" kill "$SERVER"
wait_for "the loopback page server to print its port" 10 test -s "$WORK/port"
URL="http://127.0.0.1:$(cat "$WORK/port")/"

# A memory cgroup per runtime, under this shell's own, where the host allows
# (cgroup v1's memory controller, or v2 with it enabled below us).
CGROUP_PARENT=""
v1="$(awk -F: '$2 == "memory" { print $3 }' /proc/self/cgroup)"
v2="$(awk -F: '$1 == "0" { print $3 }' /proc/self/cgroup)"
if [[ -n "$v1" && -w "/sys/fs/cgroup/memory${v1%/}" ]]; then
  CGROUP_PARENT="/sys/fs/cgroup/memory${v1%/}"
elif [[ -n "$v2" && -w "/sys/fs/cgroup${v2%/}" ]] && grep -qw memory "/sys/fs/cgroup${v2%/}/cgroup.subtree_control" 2>/dev/null; then
  CGROUP_PARENT="/sys/fs/cgroup${v2%/}"
fi
[[ -n "$CGROUP_PARENT" ]] || echo "no memory cgroup can be made here: the working-set column stays empty" >&2

# The kubelet's working set of a cgroup, in KiB: usage minus inactive file pages.
working_set() {
  if [[ -f "$1/memory.usage_in_bytes" ]]; then
    awk -v u="$(cat "$1/memory.usage_in_bytes")" '$1 == "total_inactive_file" { printf "%d", (u - $2) / 1024 }' "$1/memory.stat"
  else
    awk -v u="$(cat "$1/memory.current")" '$1 == "inactive_file" { printf "%d", (u - $2) / 1024 }' "$1/memory.stat"
  fi
}

# "<anon> <file> <shmem> <inactive_file>" of a cgroup, in KiB (anon: process memory;
# file: page cache charged to it, of which the inactive part is not in the working set).
memory_kinds() {
  if [[ -f "$1/memory.usage_in_bytes" ]]; then
    awk '$1 ~ /^total_(rss|cache|shmem|inactive_file)$/ { v[$1] = $2 } END {
      printf "%d %d %d %d", v["total_rss"] / 1024, (v["total_cache"] - v["total_shmem"]) / 1024, v["total_shmem"] / 1024, v["total_inactive_file"] / 1024 }' "$1/memory.stat"
  else
    awk '$1 ~ /^(anon|file|shmem|inactive_file)$/ { v[$1] = $2 } END {
      printf "%d %d %d %d", v["anon"] / 1024, (v["file"] - v["shmem"]) / 1024, v["shmem"] / 1024, v["inactive_file"] / 1024 }' "$1/memory.stat"
  fi
}

# Fresh copies (new inodes) of the browser, node and the CLI, written back and
# dropped from the page cache, so that the round's runtime is the first to read them.
cold_copies() {
  rm -rf "$WORK/cold"
  mkdir -p "$WORK/cold"
  cp -a "$BROWSER_DIR" "$WORK/cold/browser"
  cp -a "$(readlink -f "$NODE")" "$WORK/cold/node"
  cp -a "$PREFIX" "$WORK/cold/cli"
  sync
  find "$WORK/cold" -type f -print0 | python3 -c '
import os, sys
for path in sys.stdin.buffer.read().split(b"\0"):
    if path:
        fd = os.open(path, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)'
}

RUNTIME=""
CGROUP=""
stop_runtime() {
  if [[ -n "$RUNTIME" ]]; then kill -TERM "$RUNTIME" 2>/dev/null || true; wait "$RUNTIME" 2>/dev/null || true; fi
  if [[ -n "$CGROUP" ]]; then rmdir "$CGROUP" 2>/dev/null || true; fi
}
on_exit "stop the session runtime and remove its cgroup" stop_runtime

free_port() {
  "$NODE" -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })'
}

# What a process of the tree is, from its command line.
role_of() {
  local cmd
  cmd="$(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null || true)"
  [[ "${cmd%% *}" == *crashpad* ]] && { echo chromium-crashpad; return; }
  case "$cmd" in
    *playpen-session*) echo runtime ;;
    *cliDaemon.js*) echo daemon ;;
    *dashboardApp.js*) echo dashboard ;;
    *--type=*) echo "chromium-$(sed -E 's/.*--type=([a-z-]+).*/\1/' <<<"$cmd")$(
      [[ "$cmd" == *--utility-sub-type=* ]] && sed -E 's/.*--utility-sub-type=([a-zA-Z.]+).*/:\1/' <<<"$cmd")" ;;
    *chrom*) echo chromium-browser ;;
    *) echo "other:$(cat "/proc/$1/comm" 2>/dev/null)" ;;
  esac
}

# "<role> <pid> <RSS KiB> <PSS KiB>" for `root` and every process below it.
tree_memory() {
  local table pid i=0
  local -a pids=("$1")
  table="$(ps -e -o pid=,ppid=)"
  while (( i < ${#pids[@]} )); do
    for pid in $(awk -v p="${pids[i]}" '$2 == p { print $1 }' <<<"$table"); do pids+=("$pid"); done
    i=$((i + 1))
  done
  for pid in "${pids[@]}"; do
    local rss pss
    rss="$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true)"
    pss="$(awk '/^Pss:/ { print $2 }' "/proc/$pid/smaps_rollup" 2>/dev/null || true)"
    [[ -n "$rss" ]] && echo "$(role_of "$pid") $pid $rss ${pss:-0}"
  done
}

# Milliseconds for one GET of the dashboard's page through the relay (must be a 200).
first_view() {
  local out
  out="$(curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time 90 "http://127.0.0.1:$1/index.html")"
  [[ "${out%% *}" == 200 ]] || { echo "the viewer answered ${out%% *}" >&2; exit 1; }
  awk -v s="${out##* }" 'BEGIN { printf "%.0f", s * 1000 }'
}

# The browser still does its jobs: the viewer's live screencast shows the
# agent's page and a click on it reaches the page (a real browser through the
# relay), and the CLI takes a screenshot and a snapshot. Fails the script.
check() {
  local dir="$1" port="$2" out
  shift 2
  local -a cli=("$@" PLAYWRIGHT_CLI_SESSION=idle PWTEST_SOCKETS_DIR="$dir/pw/1a2b3c4d/s"
    PWTEST_DAEMON_SESSION_DIR="$dir/pw/1a2b3c4d/d" PLAYWRIGHT_MCP_CONFIG="$WORK/launch.json"
    PLAYWRIGHT_MCP_OUTPUT_DIR="$dir/snapshots" PLAYPEN_CLI_PACKAGE="$RUN_PREFIX/node_modules/@playwright/cli"
    PLAYPEN_NODE="$RUN_NODE" "$BIN" cli)
  "${cli[@]}" goto "${URL}colour" >/dev/null
  mkdir -p "$dir/artifacts"
  out="$(NODE_PATH="${PLAYPEN_E2E_CLIENTS_PREFIX:?the check needs the e2e clients (tests/e2e/clients.sh)}/node_modules" \
    timeout 180 "$NODE" tests/e2e/clients/viewer.js "http://127.0.0.1:$port/" "Colour fixture" "$dir/artifacts")"
  grep -q '"before":\[2[3-5][0-9],[0-9],1[4-9][0-9]\]' <<<"$out" && grep -q '"after":\[[0-9],1[4-9][0-9],2[3-5][0-9]\]' <<<"$out" ||
    { echo "check: the viewer's screencast or its click failed: $out" >&2; exit 1; }
  "${cli[@]}" eval "document.body.dataset.clicked" | grep -q '"yes"' || { echo "check: the click did not reach the page" >&2; exit 1; }
  "${cli[@]}" screenshot --filename="$dir/shot.png" >/dev/null
  [[ "$(head -c 4 "$dir/shot.png" | od -An -c | tr -d ' ')" == "211PNG" ]] || { echo "check: no PNG screenshot" >&2; exit 1; }
  "${cli[@]}" snapshot --filename="$dir/snapshot.yml" >/dev/null
  grep -q 'Change colour' "$dir/snapshot.yml" || { echo "check: the snapshot lacks the page's button" >&2; exit 1; }
  echo "check: screencast $(grep -o '"before":[^]]*]' <<<"$out"), click $(grep -o '"after":[^]]*]' <<<"$out"), screenshot $(stat -c %s "$dir/shot.png") B, snapshot: ok" >&2
}

# One session in `mode`: idle tree, first view, viewed tree; appends to samples.
one_round() {
  local mode="$1" round="$2" dir="$WORK/$1-$2" port ms
  mkdir -p "$dir/home" "$dir/tmp"
  [[ -z "${PLAYPEN_BENCH_COLD:-}" ]] || cold_copies
  port="$(free_port)"
  cat >"$dir/runtime.json" <<EOF
{"sessionName":"idle","socketsDir":"$dir/pw/1a2b3c4d/s","daemonSessionDir":"$dir/pw/1a2b3c4d/d",
 "launchConfig":"$WORK/launch.json","outputDir":"$dir/snapshots","sandbox":"Disabled","viewerPort":$port,
 "snapshotMaxAgeSeconds":3600,"snapshotMaxCount":500}
EOF
  local -a env=(env -i "PATH=$RUN_PREFIX/node_modules/.bin:/usr/local/bin:/usr/bin:/bin" "HOME=$dir/home" "TMPDIR=$dir/tmp"
    "PLAYPEN_RUNTIME_CONFIG=$dir/runtime.json" "PLAYPEN_TERMINATION_LOG=$dir/termination-log"
    "PLAYPEN_NODE=$RUN_NODE" "PLAYPEN_VIEWER_DASHBOARD=$mode" "PLAYPEN_LOG=info")
  if [[ -n "$CGROUP_PARENT" ]]; then
    CGROUP="$CGROUP_PARENT/ppim-$mode-$round-$$"
    mkdir "$CGROUP"
  fi
  # The shell joins the cgroup, then becomes the runtime (same PID).
  sh -c '[ -z "$1" ] || echo $$ >"$1/cgroup.procs"; shift; exec "$@"' sh "$CGROUP" "${env[@]}" "$BIN" run \
    >"$dir/runtime.log" 2>&1 &
  RUNTIME=$!
  for _ in $(seq 1 300); do "${env[@]}" "$BIN" probe >/dev/null 2>&1 && break; sleep 0.2; done
  "${env[@]}" "$BIN" probe >/dev/null || { cat "$dir/runtime.log" >&2; exit 1; }
  # The agent opens a page, as an idle session in use has one.
  "${env[@]}" PLAYWRIGHT_CLI_SESSION=idle PWTEST_SOCKETS_DIR="$dir/pw/1a2b3c4d/s" \
    PWTEST_DAEMON_SESSION_DIR="$dir/pw/1a2b3c4d/d" PLAYWRIGHT_MCP_CONFIG="$WORK/launch.json" \
    PLAYWRIGHT_MCP_OUTPUT_DIR="$dir/snapshots" PLAYPEN_CLI_PACKAGE="$RUN_PREFIX/node_modules/@playwright/cli" \
    PLAYPEN_NODE="$RUN_NODE" "$BIN" cli goto "$URL" >/dev/null
  sleep "$SETTLE"
  tree_memory "$RUNTIME" | sed "s/^/$mode $round idle /" >>"$WORK/samples"
  [[ -z "$CGROUP" ]] || echo "$mode $round idle-cgroup - - $(working_set "$CGROUP") 0" >>"$WORK/samples"
  [[ -z "$CGROUP" ]] || echo "$mode $round idle-kinds - - $(memory_kinds "$CGROUP")" >>"$WORK/samples"
  ms="$(first_view "$port")"
  echo "$mode $round view $ms" >>"$WORK/samples"
  # How long the runtime took to start the dashboard for it (its log's `took`).
  grep -o 'dashboard running.*took=[0-9.]*[mµ]*s' "$dir/runtime.log" | tail -n 1 | sed -E 's/.*took=//' |
    awk -v m="$mode" -v r="$round" '{ v = $1 + 0; if ($1 ~ /ms$/) {} else if ($1 ~ /µs$/) v /= 1000; else v *= 1000;
      printf "%s %s start %.0f\n", m, r, v }' >>"$WORK/samples"
  sleep 3
  tree_memory "$RUNTIME" | sed "s/^/$mode $round viewed /" >>"$WORK/samples"
  [[ -z "${PLAYPEN_BENCH_CHECK:-}" ]] || check "$dir" "$port" "${env[@]}"
  kill -TERM "$RUNTIME"
  wait "$RUNTIME" || true
  RUNTIME=""
  if [[ -n "$CGROUP" ]]; then rmdir "$CGROUP" 2>/dev/null || true; CGROUP=""; fi
}

: >"$WORK/samples"
for round in $(seq 1 "$ROUNDS"); do
  read -r -a modes <<<"${PLAYPEN_BENCH_MODES:-eager on-demand}"
  (( round % 2 )) || { [[ ${#modes[@]} == 1 ]] || modes=("${modes[1]}" "${modes[0]}"); }
  for mode in "${modes[@]}"; do
    echo "round $round: $mode" >&2
    one_round "$mode" "$round"
  done
done

MODES=(eager on-demand)
# The lines of `samples`: mode round phase role pid RSS PSS (KiB), for the
# phases idle, viewed and idle-cgroup (the working set in the RSS column);
# mode round view|start <ms>.
# total MODE ROUND PHASE COLUMN [ROLE-REGEX]: the column summed, in MiB.
total() { awk -v m="$1" -v r="$2" -v p="$3" -v c="$4" -v role="${5:-}" \
  '$1 == m && $2 == r && $3 == p && (role == "" || $4 ~ role) { s += $c; n++ } END { if (n) printf "%.0f\n", s / 1024; else print "-" }' "$WORK/samples"; }
ms() { awk -v m="$1" -v r="$2" -v p="$3" '$1 == m && $2 == r && $3 == p { print $4; n++ } END { if (!n) print "-" }' "$WORK/samples"; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

printf '\nPer round: MiB (RSS by role and summed; PSS shares each shared page among its users; WS: the cgroup working set), ms\n'
printf '%-10s %5s %8s %7s %9s %10s %9s %9s %8s %11s %11s %11s\n' mode round runtime daemon chromium dashboard \
  idle-RSS idle-PSS idle-WS dash-start first-view viewed-RSS
for mode in "${MODES[@]}"; do
  for round in $(seq 1 "$ROUNDS"); do
    printf '%-10s %5s %8s %7s %9s %10s %9s %9s %8s %11s %11s %11s\n' "$mode" "$round" \
      "$(total "$mode" "$round" idle 6 '^runtime$')" "$(total "$mode" "$round" idle 6 '^daemon$')" \
      "$(total "$mode" "$round" idle 6 '^chromium')" "$(total "$mode" "$round" idle 6 '^dashboard$')" \
      "$(total "$mode" "$round" idle 6)" "$(total "$mode" "$round" idle 7)" "$(total "$mode" "$round" idle-cgroup 6)" \
      "$(ms "$mode" "$round" start)" "$(ms "$mode" "$round" view)" "$(total "$mode" "$round" viewed 6)"
  done
done

# median_of MODE WHAT: over the rounds.
median_of() {
  local mode="$1" what="$2" round
  for round in $(seq 1 "$ROUNDS"); do
    case "$what" in
      idle-pss) total "$mode" "$round" idle 7 ;;
      idle-ws) total "$mode" "$round" idle-cgroup 6 ;;
      idle-rss) total "$mode" "$round" idle 6 ;;
      dashboard-rss) total "$mode" "$round" idle 6 '^dashboard$' ;;
      viewed-pss) total "$mode" "$round" viewed 7 ;;
      view-ms) ms "$mode" "$round" view ;;
      start-ms) ms "$mode" "$round" start ;;
    esac
  done | median
}

printf '\nMedians of %s rounds (idle %s s after opening one page); eager is the baseline\n' "$ROUNDS" "$SETTLE"
printf '%-40s %10s %10s %16s\n' "" eager on-demand "on-demand/eager"
for what in idle-pss idle-ws idle-rss dashboard-rss viewed-pss view-ms start-ms; do
  e="$(median_of eager "$what")"
  o="$(median_of on-demand "$what")"
  case "$what" in
    idle-pss) label="idle tree, PSS sum (MiB)" ;;
    idle-ws) label="idle tree, cgroup working set (MiB)" ;;
    idle-rss) label="idle tree, RSS sum (MiB)" ;;
    dashboard-rss) label="  the dashboard's RSS in it (MiB)" ;;
    viewed-pss) label="after the first view, PSS sum (MiB)" ;;
    view-ms) label="first view (ms)" ;;
    start-ms) label="dashboard start (ms; eager: at boot)" ;;
  esac
  ratio="$(awk -v e="$e" -v o="$o" 'BEGIN { if (e + 0 > 0 && o != "-") printf "%.2f", o / e; else print "-" }')"
  printf '%-40s %10s %10s %16s\n' "$label" "$e" "$o" "$ratio"
done

if grep -q ' idle-kinds ' "$WORK/samples"; then
  printf '\nThe idle cgroup by kind, MiB (anon: process memory; file: page cache charged to it; inactive file: not in the working set)\n'
  printf '%-10s %5s %8s %8s %8s %14s\n' mode round anon file shmem inactive-file
  awk '$3 == "idle-kinds" { printf "%-10s %5s %8.0f %8.0f %8.0f %14.0f\n", $1, $2, $6 / 1024, $7 / 1024, $8 / 1024, $9 / 1024 }' "$WORK/samples"
fi

printf '\nThe idle on-demand tree of round %s, per process (what holds the memory)\n' "$ROUNDS"
printf '%-44s %8s %8s %8s\n' role pid RSS-MiB PSS-MiB
awk -v r="$ROUNDS" '$1 == "on-demand" && $2 == r && $3 == "idle" { printf "%-44s %8s %8.1f %8.1f\n", $4, $5, $6 / 1024, $7 / 1024 }' \
  "$WORK/samples" | sort -k4 -n -r
