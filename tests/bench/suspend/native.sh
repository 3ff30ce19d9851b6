#!/usr/bin/env bash
# tests/bench/suspend/native.sh: the State path's capture and reopen through
# the runtime (`playpen-session suspend-state` / `resume-state`: straight to
# the daemon's socket, no Node client) against the CLI-command path that
# tests/bench/suspend/state.sh measured, in the same run, on the host.
#
# Each run opens a source session (real runtime, real daemon, Debian's
# chromium) with $TABS tabs of a loopback page (a typed <input>, a textarea,
# scrolled, a 10 Hz counter) and a synthetic storage state of $COOKIES
# cookies and a localStorage origin, then:
#   suspend, CLI:    `playwright-cli state-save` + `tab-select`/`eval` per tab
#   suspend, native: `playpen-session suspend-state --out`
# and resumes into a fresh warm session each (a new runtime per resume):
#   resume, CLI:     `state-load` + `goto`/`tab-new` + `eval` per tab
#   resume, CLI 2:   `state-load` + one `run-code --filename` opening every tab
#   resume, native:  `playpen-session resume-state --from`
# checking every tab's values and scroll afterwards. `playwright-cli` is the
# image's wrapper (`playpen-session cli`, with its native fast path), as in
# the image. Times are wall clock from this shell, process starts included.
#
#   tests/bench/suspend/native.sh            # 3 runs
#   RUNS=5 TABS=3 COOKIES=50 tests/bench/suspend/native.sh
#   CLI_NODE_ONLY=1 tests/bench/suspend/native.sh   # the CLI path through the Node client
#                                                   # (as without the fast path)
# Needs the pinned CLI (tests/session/setup.sh) and node. Touches no
# Kubernetes and no Docker; serves on loopback only; stops its runtimes and
# removes its directory on every exit.
set -euo pipefail
# shellcheck source=tests/bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/resume-script.sh"
RUNS="${RUNS:-3}"
TABS="${TABS:-3}"
COOKIES="${COOKIES:-50}"
export LC_ALL=C
PREFIX="${PLAYPEN_TEST_CLI_PREFIX:-$(tests/session/setup.sh | tail -n 1)}"
cargo build --release --locked -p playpen-session >&2
BIN="${TARGET_DIR}/release/playpen-session"
NODE="$(command -v node)"

# Short: the CLI's socket paths must stay under 103 bytes.
WORK="$(mktemp -d /tmp/ppsn.XXXXXX)"
on_exit "remove ${WORK}" rm -rf "$WORK"
cat >"$WORK/launch.json" <<'JSON'
{"browser":{"browserName":"chromium","launchOptions":{"executablePath":"/usr/bin/chromium","headless":true,
 "chromiumSandbox":false,"args":["--disable-background-networking","--disable-component-update","--disable-quic"]}}}
JSON

# The pages, served by node on loopback: /p<i>, as state.sh's data: pages.
"$NODE" -e '
const page = (i) => `<title>p${i}</title><body style="height:3000px"><input id=f><textarea id=t></textarea><p id=c>0</p>` +
  `<script>let n=0;setInterval(()=>{n++;document.getElementById("c").textContent=n},100)</script>`;
const server = require("http").createServer((req, res) => { res.setHeader("content-type", "text/html"); res.end(page(req.url.slice(2))); });
server.listen(0, "127.0.0.1", () => console.log(server.address().port));
setInterval(() => { try { process.kill(Number(process.argv[1]), 0); } catch { process.exit(0); } }, 1000);
' "$$" >"$WORK/port" &
on_exit "stop the page server" kill "$!"
wait_for "the loopback page server to print its port" 10 test -s "$WORK/port"
ORIGIN="http://127.0.0.1:$(cat "$WORK/port")"

now_us() { echo "${EPOCHREALTIME/./}"; }
ms_since() { echo $(( ($(now_us) - $1) / 1000 )); }

session_env() { # $1: the session's directory
  local d="$1"
  echo "PATH=$PREFIX/node_modules/.bin:/usr/local/bin:/usr/bin:/bin HOME=$d/home TMPDIR=$d/tmp NO_UPDATE_NOTIFIER=1 \
PLAYWRIGHT_CLI_SESSION=demo PWTEST_SOCKETS_DIR=$d/pw/1a2b3c4d/s PWTEST_DAEMON_SESSION_DIR=$d/pw/1a2b3c4d/d \
PLAYWRIGHT_MCP_CONFIG=$WORK/launch.json PLAYWRIGHT_MCP_OUTPUT_DIR=$d/snapshots \
PLAYPEN_CLI_PACKAGE=$PREFIX/node_modules/@playwright/cli PLAYPEN_NODE=$NODE PLAYPEN_RUNTIME_CONFIG=$d/runtime.json \
PLAYPEN_CLI_FAST_REPORT=$WORK/fast-report PLAYPEN_CLI_NODE_ONLY=${CLI_NODE_ONLY:-0} PLAYPEN_TERMINATION_LOG=$d/termination-log PLAYPEN_READINESS_ADDR=127.0.0.1:$(cat "$d/readiness-port") PLAYPEN_LOG=warn"
}
# shellcheck disable=SC2046 # the variables are one word each
in_session() { local d="$WORK/$1"; shift; (cd "$d" && env -i $(session_env "$d") "$@"); }
cli() { local name="$1"; shift; in_session "$name" "$BIN" cli "$@"; }
rt() { local name="$1"; shift; in_session "$name" "$BIN" "$@"; }

start_session() { # $1: name. A warm session: Ready, browser up (tab-list answered).
  local d="$WORK/$1"
  mkdir -p "$d/home" "$d/tmp" "$d/snapshots"
  "$NODE" -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })' >"$d/readiness-port"
  cat >"$d/runtime.json" <<JSON
{"sessionName":"demo","socketsDir":"$d/pw/1a2b3c4d/s","daemonSessionDir":"$d/pw/1a2b3c4d/d","launchConfig":"$WORK/launch.json",
 "outputDir":"$d/snapshots","sandbox":"Disabled","snapshotMaxAgeSeconds":3600,"snapshotMaxCount":500}
JSON
  # shellcheck disable=SC2046
  (cd "$d" && exec env -i $(session_env "$d") "$BIN" run >"$d/runtime.log" 2>&1) &
  echo "$!" >"$d/pid"
  wait_for "session $1 to be Ready" 90 rt "$1" probe
  cli "$1" tab-list >/dev/null
}
stop_session() {
  local pid; pid="$(cat "$WORK/$1/pid" 2>/dev/null)" || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$WORK/$1/pid"
}
stop_all() { for p in "$WORK"/*/pid; do if [[ -e "$p" ]]; then stop_session "$(basename "$(dirname "$p")")"; fi; done; }
on_exit "stop the sessions" stop_all

# What the CLI path captures per tab, and what it puts back (state.sh's).
CAPTURE='JSON.stringify({url: location.href, scrollY, forms: [...document.querySelectorAll("input,textarea,select")].filter(e => e.id).map(e => [e.id, e.value])})'
unquote() { "$NODE" -e 'const t = require("fs").readFileSync(0, "utf8"); const l = t.split("\n").find(x => x.startsWith("\"")); if (l) process.stdout.write(JSON.parse(l) + "\n")'; }
"$NODE" -e '
  const n = Number(process.argv[1]);
  const cookies = Array.from({length: n}, (_, i) => ({name: `c${i}`, value: "v".repeat(64), domain: "app.example.test", path: "/", expires: 2000000000, httpOnly: i % 2 === 0, secure: true, sameSite: "Lax"}));
  const origins = [{origin: "https://app.example.test", localStorage: Array.from({length: 20}, (_, i) => ({name: `k${i}`, value: "x".repeat(256)}))}];
  process.stdout.write(JSON.stringify({cookies, origins}));
' "$COOKIES" >"$WORK/synthetic.json"

restored() { # $1: session. How many tabs hold their typed value and scroll.
  local got=0 j
  for j in $(seq 0 $((TABS - 1))); do
    cli "$1" tab-select "$j" >/dev/null
    cli "$1" eval "$CAPTURE" | unquote >"$WORK/back.json"
    grep -q "typed-$j" "$WORK/back.json" && grep -q "\"scrollY\":$((300 + j))" "$WORK/back.json" && got=$((got + 1))
  done
  echo "$got"
}

cookie_count() { cli "$1" cookie-list 2>/dev/null | grep -c 'c[0-9]' || true; }

run_one() {
  local r="$1" t0 i
  log "run $r: the source session"
  start_session src
  cli src goto "$ORIGIN/p1" >/dev/null
  for i in $(seq 2 "$TABS"); do cli src tab-new "$ORIGIN/p$i" >/dev/null; done
  for i in $(seq 0 $((TABS - 1))); do
    cli src tab-select "$i" >/dev/null
    cli src eval "(() => { document.getElementById('f').value = 'typed-$i'; document.getElementById('t').value = 'long text $i'; scrollTo(0, 300 + $i); return 1 })()" >/dev/null
  done
  cli src state-load "$WORK/synthetic.json" >/dev/null
  sleep 1

  # Both captures of the same session, in alternating order.
  local s_cli s_native
  cli_suspend() {
    t0=$(now_us)
    cli src state-save "$WORK/cli-state.json" >/dev/null
    : >"$WORK/tabs.jsonl"
    for i in $(seq 0 $((TABS - 1))); do
      cli src tab-select "$i" >/dev/null
      cli src eval "$CAPTURE" | unquote >>"$WORK/tabs.jsonl"
    done
    s_cli=$(ms_since "$t0")
  }
  native_suspend() {
    t0=$(now_us)
    rt src suspend-state --out "$WORK/native.json" >"$WORK/native-suspend.out"
    s_native=$(ms_since "$t0")
  }
  if ((r % 2)); then cli_suspend; native_suspend; else native_suspend; cli_suspend; fi
  local bytes_native; bytes_native=$(stat -c %s "$WORK/native.json")
  local bytes_cli=$(($(stat -c %s "$WORK/cli-state.json") + $(stat -c %s "$WORK/tabs.jsonl")))
  stop_session src

  log "run $r: resume command by command (CLI)"
  start_session a
  t0=$(now_us)
  cli a state-load "$WORK/cli-state.json" >/dev/null
  i=0
  while IFS= read -r line; do
    local url; url=$("$NODE" -e 'process.stdout.write(JSON.parse(process.argv[1]).url)' "$line")
    if [[ "$i" == 0 ]]; then cli a goto "$url" >/dev/null; else cli a tab-new "$url" >/dev/null; fi
    cli a eval "((s) => { for (const [id, v] of s.forms) { const e = document.getElementById(id); if (e) e.value = v } scrollTo(0, s.scrollY); return 1 })($line)" >/dev/null
    i=$((i + 1))
  done <"$WORK/tabs.jsonl"
  local r_cli; r_cli=$(ms_since "$t0")
  local got_cli; got_cli=$(restored a)
  stop_session a

  log "run $r: resume in two CLI requests (state-load, run-code)"
  start_session b
  resume_script "$WORK/tabs.jsonl" >"$WORK/resume.js"
  t0=$(now_us)
  cli b state-load "$WORK/cli-state.json" >/dev/null
  cli b run-code --filename "$WORK/resume.js" >/dev/null
  local r_two; r_two=$(ms_since "$t0")
  local got_two; got_two=$(restored b)
  stop_session b

  log "run $r: resume through the runtime (resume-state)"
  start_session c
  t0=$(now_us)
  rt c resume-state --from "$WORK/native.json" >"$WORK/native-resume.out"
  local r_native; r_native=$(ms_since "$t0")
  local load_ms; load_ms=$(sed -n 's/.*state-load \([0-9]*\) ms.*/\1/p' "$WORK/native-resume.out")
  local got_native; got_native=$(restored c)
  local cookies; cookies=$(cookie_count c)
  stop_session c
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s/%s\t%s/%s\t%s/%s\t%s\n' "$r" "$s_cli" "$s_native" "$bytes_cli" "$bytes_native" \
    "$r_cli" "$r_two" "$r_native" "$load_ms" "$got_cli" "$TABS" "$got_two" "$TABS" "$got_native" "$TABS" "$cookies" | tee -a "$WORK/rows"
}

printf 'run\tsuspend_cli_ms\tsuspend_native_ms\tbytes_cli\tbytes_native\tresume_cli_ms\tresume_cli2_ms\tresume_native_ms\tnative_state_load_ms\ttabs_cli\ttabs_cli2\ttabs_native\tcookies_native\n'
for r in $(seq 1 "$RUNS"); do run_one "$r"; done

p50() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
col() { cut -f "$1" "$WORK/rows" | p50; }
printf '\np50 of %s runs, ms (%s tabs, %s cookies; host, not a container)\n' "$RUNS" "$TABS" "$COOKIES"
printf '%-9s %16s %16s %16s %8s\n' step CLI-commands CLI-2-requests native ratio
s_cli=$(col 2) s_nat=$(col 3) r_cli=$(col 6) r_two=$(col 7) r_nat=$(col 8)
printf '%-9s %16s %16s %16s %8s\n' suspend "$s_cli" - "$s_nat" "$(awk -v a="$s_cli" -v b="$s_nat" 'BEGIN { printf "%.1fx", a / b }')"
printf '%-9s %16s %16s %16s %8s\n' resume "$r_cli" "$r_two" "$r_nat" "$(awk -v a="$r_two" -v b="$r_nat" 'BEGIN { printf "%.1fx", a / b }')"
printf '(ratio: CLI over native; for resume, the two-request CLI path over native)\n'
printf 'CLI commands through the wrapper: %s answered by the fast path, %s by the Node client\n' \
  "$(grep -c '^fast' "$WORK/fast-report" || true)" "$(grep -vc '^fast' "$WORK/fast-report" || true)"
