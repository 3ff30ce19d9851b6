#!/usr/bin/env bash
# Recordings-export benchmark (issue 33; on demand, not part of the tests),
# against a SeaweedFS of its own on 127.0.0.1 (tests/objectstore/start.sh
# with a state dir and ports of its own, SigV4 enforced), in one run:
#  1. upload throughput: the exporter's uploader (the library, the exporter's
#     settings) sending WebM-sized files (1-20 MiB) and large ones (128 MiB,
#     multipart) against curl's single streamed PUT of the same bytes (the
#     baseline: the store's ingest rate as the simplest signed client gets
#     it here), interleaved rounds, MiB/s and CPU per GiB (the clients' and
#     the store's); operator/session/examples/export_bench.rs;
#  2. the CPU the export adds to a recording session: the real runtime
#     (`playpen-session run`: the CLI daemon, Debian's chromium recording
#     video in segments and a trace, ffmpeg) driven for a fixed time by an
#     agent (`goto` every few seconds to pages that move), without and with
#     `playpen-session export` uploading its segments to the store, rounds
#     alternating; CPU seconds from /proc/<pid>/stat (utime + stime, children
#     included) of the runtime's whole tree and of the exporter, from start
#     to exit (the exporter's final pass included), and while driven.
# What the columns mean and what was measured: docs/recordings-export.md
# (Benchmark).
#   tests/bench/export.sh
#   PLAYPEN_BENCH_EXPORT_ROUNDS=3         throughput rounds (each: every set by every client)
#   PLAYPEN_BENCH_EXPORT_LARGE=2          files of PLAYPEN_BENCH_EXPORT_LARGE_MIB=128 MiB in the large set
#   PLAYPEN_BENCH_EXPORT_SESSIONS=2       recording sessions per mode (without, with export)
#   PLAYPEN_BENCH_EXPORT_SECONDS=90       how long each session is driven once ready
#   PLAYPEN_BENCH_EXPORT_SEGMENT=10       videoSegmentSeconds of the sessions
#   PLAYPEN_BENCH_EXPORT_PORT=19333       the store's S3 port (+1..+3: master, volume, filer; +10000: gRPC)
#   PLAYPEN_BENCH_EXPORT_PARTS=throughput,cpu   which parts to run
# Leaves nothing behind: the store it started is stopped and its state
# deleted, the runtimes, exporters and the page server stopped, the work
# directory removed on every exit. A store tests/objectstore/start.sh runs
# for the tests (its default state dir and ports) is not touched.
set -euo pipefail
# shellcheck source=tests/bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export LC_ALL=C
SESSIONS="${PLAYPEN_BENCH_EXPORT_SESSIONS:-2}"
SECONDS_DRIVEN="${PLAYPEN_BENCH_EXPORT_SECONDS:-90}"
SEGMENT="${PLAYPEN_BENCH_EXPORT_SEGMENT:-10}"
PORT="${PLAYPEN_BENCH_EXPORT_PORT:-19333}"
PARTS="${PLAYPEN_BENCH_EXPORT_PARTS:-throughput,cpu}"
TICK="$(getconf CLK_TCK)"
PREFIX="${PLAYPEN_TEST_CLI_PREFIX:-$(tests/session/setup.sh | tail -n 1)}"
cargo build --release --locked -p playpen-session --bin playpen-session --example export_bench >&2
BIN="${TARGET_DIR}/release/playpen-session"
NODE="$(command -v node)"
log "load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs, CLK_TCK ${TICK}"

# Short: the CLI's socket paths must stay under 103 bytes.
WORK="$(mktemp -d /tmp/ppex.XXXXXX)"
on_exit "remove ${WORK}" rm -rf "$WORK"

# ---- the store: one of the bench's own --------------------------------------------------
export PLAYPEN_OBJECTSTORE_DIR="${WORK}/objectstore" PLAYPEN_OBJECTSTORE_PORT="$PORT"
export PLAYPEN_OBJECTSTORE_MASTER_PORT=$((PORT + 1)) PLAYPEN_OBJECTSTORE_VOLUME_PORT=$((PORT + 2))
export PLAYPEN_OBJECTSTORE_FILER_PORT=$((PORT + 3))
on_exit "stop the bench's object store (port ${PORT}) and delete its state" tests/objectstore/stop.sh --purge
PLAYPEN_TEST_OBJECTSTORE="$(tests/objectstore/start.sh | tail -n 1)"
export PLAYPEN_TEST_OBJECTSTORE
STORE_PID="$(cat "${PLAYPEN_OBJECTSTORE_DIR}/weed.pid")"
# shellcheck disable=SC1090 # written by start.sh
. "$PLAYPEN_TEST_OBJECTSTORE"

# ---- 1. throughput ----------------------------------------------------------------------
if [[ ",${PARTS}," == *,throughput,* ]]; then
  mkdir -p "$WORK/throughput"
  TMPDIR="$WORK/throughput" PLAYPEN_BENCH_STORE_PID="$STORE_PID" PLAYPEN_BENCH_CLK_TCK="$TICK" \
    run_child "${TARGET_DIR}/release/examples/export_bench" >"$WORK/throughput.md"
  # The files are gone before the sessions record: the page cache is theirs.
  rm -rf "$WORK/throughput"
fi

# ---- 2. the CPU the export adds to a recording session ----------------------------------
if [[ ",${PARTS}," == *,cpu,* ]]; then
  # Pages that move (a clock and a sliding bar), so the screencast has frames to record.
  # shellcheck disable=SC2016 # JavaScript, not shell
  "$NODE" -e '
const page = (title, hue) => `<!doctype html><html><head><title>${title}</title><link rel="icon" href="data:,"><style>
body { margin: 0; font: 32px sans-serif; background: hsl(${hue}, 40%, 92%); }
#bar { height: 40px; width: 30%; background: hsl(${hue}, 70%, 45%); animation: slide 3s linear infinite alternate; }
@keyframes slide { from { margin-left: 0; } to { margin-left: 70%; } }
</style></head><body><h1>${title}</h1><div id="bar"></div><p id="clock"></p><p>${"An agent at work. ".repeat(40)}</p>
<script>setInterval(() => { clock.textContent = new Date().toISOString(); }, 100);</script></body></html>`;
const server = require("http").createServer((req, res) => {
  res.setHeader("content-type", "text/html");
  res.end(req.url === "/b" ? page("Second page", 210) : page("First page", 30));
});
server.listen(0, "127.0.0.1", () => console.log(server.address().port));
// Gone with the script, even if it is killed.
setInterval(() => { try { process.kill(Number(process.argv[1]), 0); } catch { process.exit(0); } }, 1000);
' "$$" >"$WORK/port" &
  SERVER=$!
  on_exit "stop the page server" kill "$SERVER"
  wait_for "the loopback page server to print its port" 10 test -s "$WORK/port"
  URL="http://127.0.0.1:$(cat "$WORK/port")"

  cat >"$WORK/launch.json" <<'EOF'
{"browser":{"browserName":"chromium","launchOptions":{"executablePath":"/usr/bin/chromium","headless":true,
 "chromiumSandbox":false,"args":["--disable-background-networking","--disable-component-update","--disable-quic"]}}}
EOF
  # The exporter's credentials, as the mounted Secret's files.
  mkdir -p "$WORK/secret"
  (
    umask 077
    printf '%s' "$PLAYPEN_TEST_S3_ACCESS_KEY_ID" >"$WORK/secret/accessKeyId"
    printf '%s' "$PLAYPEN_TEST_S3_SECRET_ACCESS_KEY" >"$WORK/secret/secretAccessKey"
  )
  # Playwright looks for ffmpeg in its browsers directory; Debian's stands in (as the image builder does).
  FFMPEG_REVISION="$("$NODE" -p "require('$PREFIX/node_modules/playwright-core/browsers.json').browsers.find(b => b.name === 'ffmpeg').revision")"

  RUNTIME=""
  EXPORTER=""
  # stop_pid PID: SIGTERM, then wait up to 60 s for it to exit (its wrapper writes its stat).
  stop_pid() {
    [[ -n "$1" ]] || return 0
    kill -TERM "$1" 2>/dev/null || true
    for _ in $(seq 1 600); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
    log "pid $1 did not exit within 60 s of SIGTERM; killing it"
    kill -KILL "$1" 2>/dev/null || true
  }
  stop_session() {
    stop_pid "$RUNTIME"
    stop_pid "$EXPORTER"
  }
  on_exit "stop the session runtime and the exporter" stop_session

  # tree_ticks PID...: utime + stime + cutime + cstime of these processes and every live process below them.
  tree_ticks() {
    local table pid i=0 sum=0 f
    local -a pids=("$@") kids
    table="$(ps -e -o pid=,ppid=)"
    while ((i < ${#pids[@]})); do
      mapfile -t kids < <(awk -v p="${pids[i]}" '$2 == p { print $1 }' <<<"$table")
      pids+=(${kids[@]+"${kids[@]}"})
      i=$((i + 1))
    done
    for pid in "${pids[@]}"; do
      f="$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | awk '{ print $12 + $13 + $14 + $15 }')" || f=0
      sum=$((sum + ${f:-0}))
    done
    echo "$sum"
  }
  # own_ticks PID: utime + stime of PID (its threads included).
  own_ticks() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{ print $12 + $13 }'; }
  # exporter_ticks: own_ticks of the running exporter, 0 without one.
  exporter_ticks() { if [[ -z "$EXPORTER" ]]; then echo 0; else own_ticks "$EXPORTER"; fi; }
  # A wrapper's own stat once its one child has exited: cutime + cstime = the child and
  # everything it waited for (the runtime reaps its whole tree).
  waited_ticks() { sed 's/.*) //' "$1" | awk '{ print $14 + $15 }'; }

  # start_wrapped LOG PIDFILE STATFILE CMD...: CMD in the background (its pid in PIDFILE) under
  # a shell that waits for it, then saves its own /proc stat in STATFILE.
  start_wrapped() {
    sh -c 'log="$1" pidfile="$2" statfile="$3"; shift 3
      "$@" >"$log" 2>&1 &
      echo $! >"$pidfile"; wait $!; cat /proc/$$/stat >"$statfile"' sh "$@" &
  }

  one_session() {
    local mode="$1" round="$2" dir="$WORK/$1-$2" start t0 ready_ticks exp_ready driven_ticks exp_driven
    mkdir -p "$dir/home/.cache/ms-playwright/ffmpeg-${FFMPEG_REVISION}" "$dir/tmp" "$dir/snapshots"
    ln -s /usr/bin/ffmpeg "$dir/home/.cache/ms-playwright/ffmpeg-${FFMPEG_REVISION}/ffmpeg-linux"
    cat >"$dir/runtime.json" <<EOF
{"sessionName":"bench","socketsDir":"$dir/pw/1a2b3c4d/s","daemonSessionDir":"$dir/pw/1a2b3c4d/d",
 "launchConfig":"$WORK/launch.json","outputDir":"$dir/snapshots","sandbox":"Disabled",
 "snapshotMaxAgeSeconds":3600,"snapshotMaxCount":500,"recordVideo":true,"recordTrace":true,
 "videoSegmentSeconds":$SEGMENT,
 "recordingExport":{"endpoint":"$PLAYPEN_TEST_S3_ENDPOINT","bucket":"$PLAYPEN_TEST_S3_BUCKET",
  "region":"$PLAYPEN_TEST_S3_REGION","prefix":"bench/{namespace}/{name}/{uid}","pathStyle":true,
  "namespace":"bench","name":"$mode-$round","uid":"$$-$round"}}
EOF
    local -a env=(env -i "PATH=$PREFIX/node_modules/.bin:/usr/local/bin:/usr/bin:/bin" "HOME=$dir/home"
      "TMPDIR=$dir/tmp" "PLAYPEN_RUNTIME_CONFIG=$dir/runtime.json" "PLAYPEN_TERMINATION_LOG=$dir/termination-log"
      "PLAYPEN_NODE=$NODE" "PLAYPEN_LOG=info")
    local -a agent=("${env[@]}" PLAYWRIGHT_CLI_SESSION=bench PWTEST_SOCKETS_DIR="$dir/pw/1a2b3c4d/s"
      PWTEST_DAEMON_SESSION_DIR="$dir/pw/1a2b3c4d/d" PLAYWRIGHT_MCP_CONFIG="$WORK/launch.json"
      PLAYWRIGHT_MCP_OUTPUT_DIR="$dir/snapshots" PLAYPEN_CLI_PACKAGE="$PREFIX/node_modules/@playwright/cli" "$BIN" cli)
    # The exporter first and last, as the kubelet runs a native sidecar.
    if [[ "$mode" == export ]]; then
      start_wrapped "$dir/exporter.log" "$dir/exporter.pid" "$dir/exporter.stat" \
        "${env[@]}" "PLAYPEN_EXPORT_CREDENTIALS_DIR=$WORK/secret" "$BIN" export
      wait_for "the exporter to start" 10 test -s "$dir/exporter.pid"
      EXPORTER="$(cat "$dir/exporter.pid")"
    fi
    start=$SECONDS
    start_wrapped "$dir/runtime.log" "$dir/runtime.pid" "$dir/runtime.stat" "${env[@]}" "$BIN" run
    wait_for "the runtime to start" 10 test -s "$dir/runtime.pid"
    RUNTIME="$(cat "$dir/runtime.pid")"
    wait_for "the session runtime to be ready (log: $dir/runtime.log)" 120 "${env[@]}" "$BIN" probe
    ready_ticks="$(tree_ticks "$RUNTIME")"
    exp_ready="$(exporter_ticks)"
    t0=$SECONDS
    local page=a
    while ((SECONDS - t0 < SECONDS_DRIVEN)); do
      "${agent[@]}" goto "$URL/$page" >/dev/null || log "warning: the agent's goto failed"
      if [[ "$page" == a ]]; then page=b; else page=a; fi
      sleep 5
    done
    driven_ticks=$(($(tree_ticks "$RUNTIME") - ready_ticks))
    exp_driven=$(($(exporter_ticks) - exp_ready))
    stop_pid "$RUNTIME"
    RUNTIME=""
    stop_pid "$EXPORTER"
    EXPORTER=""
    wait_for "the wrappers to write their stat" 10 test -s "$dir/runtime.stat"
    local segments mib uploaded objects exporter_ticks=0 lifetime=$((SECONDS - start))
    segments="$(find "$dir/snapshots/recordings" -maxdepth 1 -name 'video-*.webm' | wc -l)"
    mib="$(find "$dir/snapshots/recordings" -type f ! -path '*/.export/*' -printf '%s\n' | awk '{ s += $1 } END { printf "%.1f", s / 1048576 }')"
    uploaded=0
    objects=0
    if [[ "$mode" == export ]]; then
      wait_for "the exporter's wrapper to write its stat" 10 test -s "$dir/exporter.stat"
      exporter_ticks="$(waited_ticks "$dir/exporter.stat")"
      uploaded="$(sed -n 's/.*"bytes": *\([0-9]*\).*/\1/p' "$dir/snapshots/recordings/.export/status.json" | awk '{ printf "%.1f", $1 / 1048576 }')"
      objects="$(sed -n 's/.*"objects": *\([0-9]*\).*/\1/p' "$dir/snapshots/recordings/.export/status.json")"
      if grep -q '"lastError"' "$dir/snapshots/recordings/.export/status.json"; then
        log "the exporter reports an error: $(cat "$dir/snapshots/recordings/.export/status.json")"
        exit 1
      fi
    fi
    # mode round runtime-ticks exporter-ticks driven-runtime-ticks driven-exporter-ticks segments MiB uploaded-MiB objects seconds
    echo "$mode $round $(waited_ticks "$dir/runtime.stat") $exporter_ticks $driven_ticks $exp_driven $segments $mib $uploaded $objects $lifetime" >>"$WORK/sessions"
    log "session $round $mode: $(tail -n 1 "$WORK/sessions")"
  }

  : >"$WORK/sessions"
  for round in $(seq 1 "$SESSIONS"); do
    if ((round % 2)); then modes=(plain export); else modes=(export plain); fi
    for mode in "${modes[@]}"; do
      log "recording session ${round}: ${mode}, driven ${SECONDS_DRIVEN} s, ${SEGMENT} s segments"
      one_session "$mode" "$round"
    done
  done
fi

# ---- the tables ---------------------------------------------------------------------------
echo
echo "Recordings export benchmark, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))"
if [[ -s "$WORK/throughput.md" ]]; then
  echo
  echo "1. Upload throughput to SeaweedFS on loopback (median of ${PLAYPEN_BENCH_EXPORT_ROUNDS:-3} rounds; curl's single PUT is the baseline)"
  cat "$WORK/throughput.md"
fi
if [[ -s "$WORK/sessions" ]]; then
  echo
  echo "2. CPU of a recording session driven ${SECONDS_DRIVEN} s (${SEGMENT} s video segments and a trace), without and with the exporter (mean of ${SESSIONS} sessions each)"
  echo
  awk -v tick="$TICK" '
    { n[$1]++; rt[$1] += $3 / tick; ex[$1] += $4 / tick; drt[$1] += $5 / tick; dex[$1] += $6 / tick
      seg[$1] += $7; mib[$1] += $8; up[$1] += $9; obj[$1] += $10 }
    END {
      if (!n["plain"] || !n["export"]) exit
      base = rt["plain"] / n["plain"]; dbase = drt["plain"] / n["plain"]
      print "| | without export | with export | with / without |"
      print "|---|---:|---:|---:|"
      printf "| runtime tree CPU s, start to exit | %.2f | %.2f | %.2f |\n", base, rt["export"] / n["export"], rt["export"] / n["export"] / base
      printf "| exporter CPU s, start to exit (final pass included) | - | %.2f | %.3f of the tree without |\n", ex["export"] / n["export"], ex["export"] / n["export"] / base
      tot = (rt["export"] + ex["export"]) / n["export"]
      printf "| **session total CPU s** | %.2f | %.2f | **%.3f** |\n", base, tot, tot / base
      printf "| runtime tree CPU s while driven | %.2f | %.2f | %.2f |\n", dbase, drt["export"] / n["export"], drt["export"] / n["export"] / dbase
      printf "| exporter CPU s while driven | - | %.2f | %.3f of the tree without |\n", dex["export"] / n["export"], dex["export"] / n["export"] / dbase
      printf "| video segments | %.1f | %.1f | |\n", seg["plain"] / n["plain"], seg["export"] / n["export"]
      printf "| MiB recorded (video and trace) | %.1f | %.1f | |\n", mib["plain"] / n["plain"], mib["export"] / n["export"]
      printf "| MiB / objects uploaded (manifest included) | - | %.1f / %.0f | |\n", up["export"] / n["export"], obj["export"] / n["export"]
      if (up["export"] > 0) printf "| exporter CPU s per GiB uploaded | - | %.2f | |\n", ex["export"] / (up["export"] / 1024)
    }' "$WORK/sessions"
  echo
  echo "Per session: mode round runtime-tree-ticks exporter-ticks driven-tree-ticks driven-exporter-ticks segments MiB uploaded-MiB objects seconds (CLK_TCK ${TICK})"
  sed 's/^/    /' "$WORK/sessions"
fi
