#!/usr/bin/env bash
# Fast-path benchmark (on demand, not part of the tests): per-action wall time
# of the Node client and of the native fast client (`playpen-session cli`, the
# image's `playwright-cli`) on one real session (real daemon, Debian's
# chromium, a loopback page), in the same run, interleaved. Prints median and
# p95 for each client, the ratio of the medians, the daemon's own time (the
# fast client's connect-to-reply time) and the fast client's overhead (its
# wall time minus that).
#   tests/bench/fast-cli.sh [N]   N timed runs per action and client (default 30)
# Leaves nothing behind: the browser session is closed and its directory
# removed on every exit.
set -euo pipefail
# shellcheck source=tests/bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
N="${1:-30}"
export LC_ALL=C
PREFIX="${PLAYPEN_TEST_CLI_PREFIX:-$(tests/session/setup.sh | tail -n 1)}"
cargo build --release --locked -p playpen-session >&2
BIN="${TARGET_DIR}/release/playpen-session"
NODE="$(command -v node)"

# Short: the CLI's socket paths must stay under 103 bytes.
WORK="$(mktemp -d /tmp/ppfb.XXXXXX)"
on_exit "remove ${WORK}" rm -rf "$WORK"
mkdir -p "$WORK/snapshots"
cat >"$WORK/launch.json" <<'EOF'
{"browser":{"browserName":"chromium","launchOptions":{"executablePath":"/usr/bin/chromium","headless":true,
 "chromiumSandbox":false,"args":["--disable-background-networking","--disable-component-update","--disable-quic"]}}}
EOF

# The loopback page, served by node (already required by the CLI).
"$NODE" -e '
const page = `<!doctype html><html><head><title>Bench</title><link rel="icon" href="data:,"></head><body>
<button id="go" onclick="this.textContent=String(Number(this.textContent)+1)">0</button><p>bench page</p></body></html>`;
const server = require("http").createServer((req, res) => { res.setHeader("content-type", "text/html"); res.end(page); });
server.listen(0, "127.0.0.1", () => console.log(server.address().port));
// Gone with the script, even if it is killed.
setInterval(() => { try { process.kill(Number(process.argv[1]), 0); } catch { process.exit(0); } }, 1000);
' "$$" >"$WORK/port" &
SERVER=$!
on_exit "stop the page server" kill "$SERVER"
wait_for "the loopback page server to print its port" 10 test -s "$WORK/port"
URL="http://127.0.0.1:$(cat "$WORK/port")/"

export PLAYWRIGHT_CLI_SESSION=bench PWTEST_SOCKETS_DIR="$WORK/s" PWTEST_DAEMON_SESSION_DIR="$WORK/d"
export PLAYWRIGHT_MCP_CONFIG="$WORK/launch.json" PLAYWRIGHT_MCP_OUTPUT_DIR="$WORK/snapshots" NO_UPDATE_NOTIFIER=1
export PLAYPEN_CLI_PACKAGE="$PREFIX/node_modules/@playwright/cli" PLAYPEN_NODE="$NODE"
export PLAYPEN_CLI_FAST_REPORT="$WORK/report"
cd "$WORK"

close_session() { "$BIN" cli close >/dev/null 2>&1 || true; }
on_exit "close the browser session" close_session

"$BIN" cli open --config="$WORK/launch.json" "$URL" >/dev/null

action_args() {
  case "$1" in
    tab-list) echo "tab-list" ;;
    snapshot) echo "snapshot" ;;
    click) echo "click #go" ;;
    goto) echo "goto $URL" ;;
  esac
}

# One timed run: appends "<action> <client> <wall µs> <daemon µs>" to samples.
timed() {
  local action="$1" client="$2" start end daemon=0
  read -r -a args <<<"$(action_args "$action")"
  start="${EPOCHREALTIME/./}"
  if [[ "$client" == node ]]; then
    PLAYPEN_CLI_NODE_ONLY=1 "$BIN" cli "${args[@]}" >/dev/null 2>&1 || echo "warning: node $action failed" >&2
  else
    "$BIN" cli "${args[@]}" >/dev/null 2>&1 || echo "warning: fast $action failed" >&2
  fi
  end="${EPOCHREALTIME/./}"
  if [[ "$client" == fast ]]; then
    local last
    last="$(tail -n 1 "$WORK/report")"
    [[ "$last" == fast* ]] || { echo "the fast client did not take the fast path: $last" >&2; exit 1; }
    daemon="${last##*$'\t'}"
  fi
  echo "$action $client $((end - start)) $daemon" >>"$WORK/samples"
}

ACTIONS=(tab-list snapshot click goto)
for action in "${ACTIONS[@]}"; do timed "$action" node; timed "$action" fast; done # warm-up
: >"$WORK/samples"
for i in $(seq 1 "$N"); do
  for action in "${ACTIONS[@]}"; do
    if (( i % 2 )); then timed "$action" node; timed "$action" fast; else timed "$action" fast; timed "$action" node; fi
  done
done

# Median and p95 (nearest rank) of a column of µs values, in ms.
stats() { sort -n | awk '{ v[NR] = $1 } END { p = int(NR * 0.95 + 0.999); printf "%.1f %.1f", v[int((NR + 1) / 2)] / 1000, v[p] / 1000 }'; }

printf '\n%s runs per action and client, same session, interleaved; ms\n' "$N"
printf '%-9s %12s %9s %12s %9s %9s %14s %16s\n' action node-median node-p95 fast-median fast-p95 ratio daemon-median fast-overhead-p50
for action in "${ACTIONS[@]}"; do
  read -r nm np <<<"$(awk -v a="$action" '$1 == a && $2 == "node" { print $3 }' "$WORK/samples" | stats)"
  read -r fm fp <<<"$(awk -v a="$action" '$1 == a && $2 == "fast" { print $3 }' "$WORK/samples" | stats)"
  read -r dm _ <<<"$(awk -v a="$action" '$1 == a && $2 == "fast" { print $4 }' "$WORK/samples" | stats)"
  read -r om _ <<<"$(awk -v a="$action" '$1 == a && $2 == "fast" { print $3 - $4 }' "$WORK/samples" | stats)"
  ratio="$(awk -v n="$nm" -v f="$fm" 'BEGIN { printf "%.1fx", n / f }')"
  printf '%-9s %12s %9s %12s %9s %9s %14s %16s\n' "$action" "$nm" "$np" "$fm" "$fp" "$ratio" "$dm" "$om"
done
