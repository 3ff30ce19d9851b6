#!/usr/bin/env bash
# tests/bench/suspend/live.sh: the live path of issue 35, measured WITHOUT Kubernetes.
#
# What it does: exports playpen/browser:dev into an OCI bundle under $WORK
# (default /tmp/pp-suspend), runs the real session runtime (`playpen-session
# run`, UID 1000, Chromium's sandbox on, CDP on 127.0.0.1:9222) under runsc
# (systrap, --network=none: loopback only), opens N data: pages with a
# setInterval counter and a typed <input>, then checkpoints and restores the
# sandbox with `runsc checkpoint` / `runsc restore` and reads the pages back
# over CDP from inside the sandbox (cdp.js, through `runsc exec`).
#
# Run (as root, Docker Engine up with playpen/browser:dev, runsc built by
# tests/cluster/build-gvisor.sh):
#   bash tests/bench/suspend/live.sh            # 3 runs each of 1 and 3 pages, then the break tests
#   RUNS=1 PAGES="3" BREAKS=0 bash tests/bench/suspend/live.sh
# Env: RUNSC (default ~/.cache/playpen/gvisor/$GVISOR_VERSION/bin/runsc), IMAGE
# (playpen/browser:dev), WORK (/tmp/pp-suspend), RUNS (3), PAGES ("1 3"),
# IDLE_SECONDS (5: how long the pages idle before the checkpoint), BREAKS (1),
# KEEP_BUNDLE (0: reuse an exported bundle from an earlier run when 1), MOVE (1: also
# restore into a fresh copy of the bundle, another path: what another node would hold).
# Output: one TSV line per run on stdout ($WORK/results.tsv is removed with $WORK;
# copy it out first with RESULTS=<file>), progress on stderr.
# It never touches Kubernetes, containerd or the network beyond loopback, and
# removes its runsc containers, its Docker container and $WORK on exit.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
# shellcheck disable=SC1091
. "$repo/tests/cluster/versions.env"
RUNSC="${RUNSC:-$HOME/.cache/playpen/gvisor/$GVISOR_VERSION/bin/runsc}"
IMAGE="${IMAGE:-playpen/browser:dev}"
WORK="${WORK:-/tmp/pp-suspend}"
RUNS="${RUNS:-3}"
PAGES="${PAGES:-1 3}"
IDLE_SECONDS="${IDLE_SECONDS:-5}"
BREAKS="${BREAKS:-1}"
KEEP_BUNDLE="${KEEP_BUNDLE:-0}"
RESULTS="${RESULTS:-}"
NODE=/opt/playpen/node/bin/node
BUNDLE="$WORK/bundle"
STATE="$WORK/state"
rs() { "$RUNSC" --root "$STATE" --platform "$GVISOR_PLATFORM" --network none "$@"; }
# `runsc exec` writes to a regular-file stdout at its own offset, clobbering
# what the shell wrote: always read its output through a pipe.
ex() { rs exec "$@" | cat; }
log() { printf '%s %s\n' "$(date +%T)" "$*" >&2; }
now_ms() { date +%s%3N; }
containers=()

cleanup() {
  set +e
  for c in "${containers[@]}"; do
    rs kill "$c" KILL >/dev/null 2>&1
    rs delete -force "$c" >/dev/null 2>&1
  done
  docker rm -f pp-suspend-export >/dev/null 2>&1
  # runsc --network=none keeps a bind mount of an empty network namespace in its root dir
  mountpoint -q "$STATE/null-netns" 2>/dev/null && umount "$STATE/null-netns"
  if [ "$KEEP_BUNDLE" != 1 ]; then rm -rf "$WORK"; else rm -rf "$STATE" "$WORK"/img-* "$WORK"/*.log; fi
}
trap cleanup EXIT

[ "$(id -u)" = 0 ] || { echo "run as root (runsc needs it)" >&2; exit 1; }
[ -x "$RUNSC" ] || { echo "no runsc at $RUNSC: run tests/cluster/build-gvisor.sh" >&2; exit 1; }

make_bundle() {
  if [ "$KEEP_BUNDLE" = 1 ] && [ -f "$BUNDLE/config.json" ]; then return; fi
  rm -rf "$BUNDLE"; mkdir -p "$BUNDLE/rootfs"
  log "exporting $IMAGE into $BUNDLE/rootfs"
  docker rm -f pp-suspend-export >/dev/null 2>&1 || true
  docker create --name pp-suspend-export "$IMAGE" >/dev/null
  docker export pp-suspend-export | tar -C "$BUNDLE/rootfs" -x
  docker rm pp-suspend-export >/dev/null
  local r="$BUNDLE/rootfs"
  # What the Pod mounts (session-contract.md, "Mounts"), here plain directories
  # in the root file system (runsc overlays it; the overlay is checkpointed).
  mkdir -p "$r/var/lib/playpen/home" "$r/var/lib/playpen/snapshots" "$r/etc/playpen/runtime" \
    "$r/etc/playpen/launch" "$r/opt/pp-bench"
  chown -R 1000:1000 "$r/var/lib/playpen"
  cp "$r/etc/playpen/launch-defaults.json" "$r/etc/playpen/launch/config.json"
  cp "$here/cdp.js" "$r/opt/pp-bench/cdp.js"
  cat > "$r/etc/playpen/runtime/runtime.json" <<'EOF'
{"sessionName":"demo","socketsDir":"/var/lib/playpen/pw/1a2b3c4d/s","daemonSessionDir":"/var/lib/playpen/pw/1a2b3c4d/d","launchConfig":"/etc/playpen/launch/config.json","outputDir":"/var/lib/playpen/snapshots","sandbox":"Enforced","viewerPort":9323,"cdpPort":9222,"snapshotMaxAgeSeconds":3600,"snapshotMaxCount":500,"snapshotVolumeBytes":1073741824,"snapshotMaxTotalBytes":858993459,"maxLifetimeSeconds":14400,"sessionStartedAt":"2026-12-05T00:00:00Z"}
EOF
  (cd "$BUNDLE" && "$RUNSC" spec -- /usr/local/bin/playpen-session run)
  jq --arg root "$BUNDLE/rootfs" '
    .root = {path: $root, readonly: false}
    | .hostname = "pp-suspend"
    | .process.user = {uid: 1000, gid: 1000}
    | .process.cwd = "/var/lib/playpen/home"
    | .process.terminal = false
    | .process.noNewPrivileges = true
    | .process.capabilities = {}
    | .process.env = [
        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "PLAYWRIGHT_BROWSERS_PATH=/opt/playpen/browsers",
        "HOME=/var/lib/playpen/home",
        "PLAYPEN_NODE=/opt/playpen/node/bin/node",
        "PLAYPEN_CLI_PACKAGE=/opt/playpen/cli/node_modules/@playwright/cli",
        "PLAYWRIGHT_CLI_SESSION=demo",
        "PWTEST_SOCKETS_DIR=/var/lib/playpen/pw/1a2b3c4d/s",
        "PWTEST_DAEMON_SESSION_DIR=/var/lib/playpen/pw/1a2b3c4d/d",
        "PLAYWRIGHT_MCP_CONFIG=/etc/playpen/launch/config.json",
        "PLAYWRIGHT_MCP_OUTPUT_DIR=/var/lib/playpen/snapshots",
        "PLAYPEN_RUNTIME_CONFIG=/etc/playpen/runtime/runtime.json",
        "TMPDIR=/tmp",
        "PLAYPEN_READINESS_ADDR=127.0.0.1:9321",
        "PLAYPEN_TERMINATION_LOG=/tmp/termination-log"]
    | .mounts += [{destination: "/dev/shm", type: "tmpfs", source: "shm",
                   options: ["nosuid", "nodev", "mode=1777", "size=1g"]}]
  ' "$BUNDLE/config.json" > "$BUNDLE/config.json.new"
  mv "$BUNDLE/config.json.new" "$BUNDLE/config.json"
}

page_url() { # $1: page number; a counter ticking every 100 ms, an input, a tall body
  printf 'data:text/html,<title>p%s</title><body style="height:3000px"><input id=f><p id=c>0</p><script>let n=0;setInterval(()=>{n++;document.getElementById("c").textContent=n},100)</script>' "$1"
}

wait_ready() { # $1: container; $2: start ms. Prints ms until `playpen-session probe` passes.
  local i
  for i in $(seq 1 600); do
    if rs exec "$1" /usr/local/bin/playpen-session probe >/dev/null 2>&1; then echo $(( $(now_ms) - $2 )); return; fi
    sleep 0.05
  done
  echo "never ready" >&2; return 1
}

start_session() { # $1: container id, $2: pages
  local c="$1" n="$2" t0 i
  containers+=("$c")
  t0=$(now_ms)
  rs run --detach --bundle "$BUNDLE" "$c" > "$WORK/$c.log" 2>&1
  wait_ready "$c" "$t0" > "$WORK/$c.cold"
  ex "$c" playwright-cli goto "$(page_url 1)" > /dev/null
  for i in $(seq 2 "$n"); do ex "$c" playwright-cli tab-new "$(page_url "$i")" > /dev/null; done
  ex "$c" "$NODE" /opt/pp-bench/cdp.js fill typed > /dev/null
}

read_pages() { ex "$1" "$NODE" /opt/pp-bench/cdp.js read; }

# Compares the pages before and after; prints "ok" or what differs.
verdict() { # $1 before json, $2 after json, $3 ms between the two reads
  node -e '
    const [b, a, gap] = [JSON.parse(process.argv[1]), JSON.parse(process.argv[2]), Number(process.argv[3])];
    const bad = [];
    if (a.length !== b.length) bad.push(`pages ${b.length}->${a.length}`);
    b.forEach((p, i) => {
      const q = a[i] || {};
      if (q.input !== p.input) bad.push(`p${i} input ${p.input}->${q.input}`);
      if (q.scrollY !== p.scrollY) bad.push(`p${i} scroll ${p.scrollY}->${q.scrollY}`);
      if (!(q.counter >= p.counter)) bad.push(`p${i} counter ${p.counter}->${q.counter}`);
    });
    // counter ticks at 10 Hz while the page runs: ticks lost = what the suspension froze
    const d = a[0] ? a[0].counter - b[0].counter : 0, wall = a[0] ? a[0].dateNow - b[0].dateNow : 0;
    console.log((bad.length ? bad.join(",") : "ok") + `\tcounter+${d}\twall+${wall}ms\tperf+${a[0] ? a[0].perfNow - b[0].perfNow : 0}ms`);
  ' "$1" "$2" "$3"
}

size_of() { du -sb "$1" | cut -f1; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }

run_one() { # $1: run number, $2: pages
  local r="$1" n="$2" c="pp-suspend-$2p-$1" t0 t1 before after ck_lr ck ck_z rst rst_bg probe cli imgU imgZ sz szZ v
  imgU="$WORK/img-$c-u"; imgZ="$WORK/img-$c-z"
  log "run $r, $n page(s): starting"
  start_session "$c" "$n"
  sleep "$IDLE_SECONDS"
  # what one `runsc exec` costs here (every probe and CLI figure below includes one)
  local e1 ovh
  e1=$(now_ms); rs exec "$c" true; rs exec "$c" true; rs exec "$c" true
  ovh=$(( ( $(now_ms) - e1 ) / 3 ))   # the mean of three
  # 1. a fork's checkpoint: --leave-running, compressed (flate-best-speed)
  mkdir -p "$imgZ" "$imgU"
  t0=$(now_ms); rs checkpoint --leave-running --compression flate-best-speed --image-path "$imgZ" "$c"; ck_lr=$(( $(now_ms) - t0 ))
  szZ=$(size_of "$imgZ")
  # the source keeps running after --leave-running
  read_pages "$c" > "$WORK/lr.json"
  # 2. a suspend: checkpoint (the sandbox stops), uncompressed
  before=$(read_pages "$c"); t1=$(now_ms)
  t0=$(now_ms); rs checkpoint --image-path "$imgU" "$c"; ck=$(( $(now_ms) - t0 ))
  sz=$(size_of "$imgU")
  rs delete "$c" 2>/dev/null || rs delete -force "$c"
  sleep 2   # parked
  # 3. resume: restore; then the first probe pass and the first playwright-cli answer
  t0=$(now_ms)
  rs restore --detach --image-path "$imgU" --bundle "$BUNDLE" "$c" >> "$WORK/$c.log" 2>&1
  rst=$(( $(now_ms) - t0 ))
  probe=$(wait_ready "$c" "$t0")
  ex "$c" playwright-cli tab-list > "$WORK/tablist.txt"; cli=$(( $(now_ms) - t0 ))
  grep -q "p$n" "$WORK/tablist.txt" || { log "tab-list after restore lacks p$n"; cat "$WORK/tablist.txt" >&2; }
  after=$(read_pages "$c")
  v=$(verdict "$before" "$after" $(( $(now_ms) - t1 )))
  rs kill "$c" KILL >/dev/null 2>&1 || true; sleep 0.3; rs delete -force "$c" >/dev/null 2>&1 || true
  # 4. the compressed image restores too (and a restore with --background, lazy page loading, from the uncompressed one)
  t0=$(now_ms); rs restore --detach --image-path "$imgZ" --bundle "$BUNDLE" "$c" >> "$WORK/$c.log" 2>&1
  ck_z=$(wait_ready "$c" "$t0")
  rs kill "$c" KILL >/dev/null 2>&1 || true; sleep 0.3; rs delete -force "$c" >/dev/null 2>&1 || true
  t0=$(now_ms); rs restore --detach --background --image-path "$imgU" --bundle "$BUNDLE" "$c" >> "$WORK/$c.log" 2>&1; rst_bg=$(( $(now_ms) - t0 ))
  wait_ready "$c" "$t0" > "$WORK/bg.probe"
  ex "$c" playwright-cli tab-list > /dev/null; local cli_bg=$(( $(now_ms) - t0 ))
  rs kill "$c" KILL >/dev/null 2>&1 || true; sleep 0.3; rs delete -force "$c" >/dev/null 2>&1 || true
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$r" "$ovh" "$(cat "$WORK/$c.cold")" "$ck" "$(mib "$sz")" \
    "$ck_lr" "$(mib "$szZ")" "$rst" "$probe" "$cli" "$ck_z" "$rst_bg" "$cli_bg" "$v"
  rm -rf "$imgU" "$imgZ"
}

breaks() { # what survives and what breaks across checkpoint/restore
  local c=pp-suspend-breaks img="$WORK/img-breaks" t0 lr
  log "break tests"
  start_session "$c" 1
  # a CDP client inside the sandbox, connected during the checkpoint (an exec'd process, as a relay is)
  rs exec --detach "$c" "$NODE" /opt/pp-bench/cdp.js hold /tmp/hold.log > /dev/null
  # the same client, but holding no host FD: started in the background by an exec'd shell, stdio
  # on /dev/null inside the sandbox (as a sidecar process or a child of the runtime would be)
  rs exec "$c" sh -c "$NODE /opt/pp-bench/cdp.js hold /tmp/hold-inner.log </dev/null >/dev/null 2>&1 &"
  # a CDP client whose stdio is a host pipe (what `kubectl exec` / `kubectl playpen cdp` under gVisor is)
  ( rs exec "$c" "$NODE" /opt/pp-bench/cdp.js hold /dev/stdout > "$WORK/hold-host.log" 2>&1; echo "exit=$?" >> "$WORK/hold-host.log" ) &
  local hold_pid=$!
  sleep 3
  mkdir -p "$img"
  if rs checkpoint --image-path "$img" "$c" > "$WORK/ck-breaks.log" 2>&1; then echo "checkpoint with live exec clients: ok"; else echo "checkpoint with live exec clients: FAILED: $(tail -2 "$WORK/ck-breaks.log")"; fi
  sleep 1
  wait "$hold_pid" 2>/dev/null || true
  echo "host-side exec client after checkpoint: $(tail -1 "$WORK/hold-host.log")"
  rs delete "$c" >/dev/null 2>&1 || rs delete -force "$c" >/dev/null 2>&1 || true
  if [ -s "$img/checkpoint.img" ]; then
    t0=$(now_ms)
    if rs restore --detach --image-path "$img" --bundle "$BUNDLE" "$c" >> "$WORK/$c.log" 2>&1; then
      echo "restore: ok in $(( $(now_ms) - t0 )) ms"
      sleep 3
      echo "in-sandbox CDP client across checkpoint: $(ex "$c" sh -c 'grep -c alive /tmp/hold.log; tail -2 /tmp/hold.log' | tr '\n' ' ')"
      echo "in-sandbox CDP client holding no host FD: $(ex "$c" sh -c 'grep -c alive /tmp/hold-inner.log; tail -1 /tmp/hold-inner.log' | tr '\n' ' ')"
      echo "daemon socket (tab-list) after restore: $(ex "$c" playwright-cli tab-list 2>&1 | grep -c 'p1') tab line(s)"
      echo "processes after restore: $(ex "$c" ps -eo comm= | sort | uniq -c | tr -s ' \n' ' ')"
    else
      echo "restore: FAILED: $(tail -3 "$WORK/$c.log")"
    fi
  fi
  # size with --exclude-committed-zero-pages
  local zimg="$WORK/img-zero"; mkdir -p "$zimg"
  rs checkpoint --leave-running --exclude-committed-zero-pages --image-path "$zimg" "$c" \
    && echo "checkpoint --exclude-committed-zero-pages: $(mib "$(size_of "$zimg")") MiB (uncompressed)"
  rm -rf "$zimg"
  # fork: one --leave-running image restored three times beside the source
  lr="$WORK/img-fork"; mkdir -p "$lr"
  rs kill "$c" KILL >/dev/null 2>&1; sleep 0.3; rs delete -force "$c" >/dev/null 2>&1
  start_session "$c" 1
  t0=$(now_ms); rs checkpoint --leave-running --image-path "$lr" "$c"; echo "fork: --leave-running checkpoint $(( $(now_ms) - t0 )) ms; source still answers: $(read_pages "$c" | head -c 120)"
  local k f
  for k in 1 2 3; do
    f="pp-suspend-fork-$k"; containers+=("$f"); t0=$(now_ms)
    if rs restore --detach --image-path "$lr" --bundle "$BUNDLE" "$f" >> "$WORK/$f.log" 2>&1; then
      echo "fork $k: restored in $(( $(now_ms) - t0 )) ms; probe $(wait_ready "$f" "$t0") ms; page $(read_pages "$f" | head -c 120)"
    else
      echo "fork $k: restore FAILED: $(tail -2 "$WORK/$f.log")"
    fi
  done
  # the forks share the source's in-sandbox state: prove they diverge independently
  ex pp-suspend-fork-1 "$NODE" /opt/pp-bench/cdp.js fill fork1 > /dev/null 2>&1 || true
  echo "after typing into fork 1 only: fork1 $(read_pages pp-suspend-fork-1 | grep -o '"input":"[^"]*"') fork2 $(read_pages pp-suspend-fork-2 | grep -o '"input":"[^"]*"') source $(read_pages "$c" | grep -o '"input":"[^"]*"')"
  if [ "${MOVE:-1}" = 1 ]; then
    # "another node": restore into a second bundle, a fresh copy of the same image's files
    local b2="$WORK/bundle2"
    mkdir -p "$b2/rootfs"; cp -a "$BUNDLE/rootfs/." "$b2/rootfs/"
    jq --arg root "$b2/rootfs" '.root.path = $root' "$BUNDLE/config.json" > "$b2/config.json"
    containers+=(pp-suspend-moved); t0=$(now_ms)
    if rs restore --detach --image-path "$lr" --bundle "$b2" pp-suspend-moved >> "$WORK/moved.log" 2>&1; then
      echo "restore into a copied bundle (another path, same image): ok in $(( $(now_ms) - t0 )) ms; page $(read_pages pp-suspend-moved | head -c 120)"
    else
      echo "restore into a copied bundle: FAILED: $(tail -2 "$WORK/moved.log")"
    fi
    rs kill pp-suspend-moved KILL >/dev/null 2>&1; sleep 0.3; rs delete -force pp-suspend-moved >/dev/null 2>&1
    rm -rf "$b2"
  fi
  echo "host memory of 1 source + 3 forks (sum of sandbox RSS, MiB): $(ps -eo rss=,args= | awk '/runsc-sandbox/ && /pp-suspend-(fork|breaks)/ {s+=$1} END {printf "%.0f", s/1024}')"
}

make_bundle
echo -e "pages\trun\texec_ms\tcold_ready_ms\tckpt_ms\timage_MiB\tckpt_leave_running_flate_ms\timage_flate_MiB\trestore_ms\trestore_to_probe_ms\trestore_to_cli_ms\trestore_flate_to_probe_ms\trestore_background_ms\trestore_background_to_cli_ms\tstate\tcounter\twall\tperf" | tee "$WORK/results.tsv"
for n in $PAGES; do
  for r in $(seq 1 "$RUNS"); do run_one "$r" "$n" | tee -a "$WORK/results.tsv"; done
done
[ -z "$RESULTS" ] || cp "$WORK/results.tsv" "$RESULTS"
[ "$BREAKS" != 1 ] || breaks
