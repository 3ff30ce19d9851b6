#!/usr/bin/env bash
# Installs the real parts the playpen-session integration tests drive:
# Debian's chromium and ffmpeg, and the pinned @playwright/cli (npm, cached by version),
# plus an unprivileged user for the sandbox-enforced test. Idempotent: a
# second run installs nothing. The last line of stdout is the CLI prefix
# (export it as PLAYPEN_TEST_CLI_PREFIX); its bin dir is <prefix>/node_modules/.bin.
set -euo pipefail

CLI_VERSION="0.1.22"
TEST_USER="${PLAYPEN_TEST_USER:-playpen-test}"
CACHE="${PLAYPEN_CACHE:-$HOME/.cache/playpen}"
PREFIX="$CACHE/npm/playwright-cli-$CLI_VERSION"

log() { printf '[%s session/setup.sh] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# ffmpeg: Playwright's video recorder (Debian's stands in for its CDN build),
# and ffprobe checks the videos.
if [[ ! -x /usr/bin/chromium || ! -x /usr/bin/ffmpeg || ! -x /usr/bin/ffprobe ]]; then
  log "installing Debian's chromium and ffmpeg"
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=600 update -qq >&2
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq chromium ffmpeg >&2
fi

node_major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
if (( node_major < 20 )); then
  log "ERROR: @playwright/cli needs Node 20 or newer; found $(node --version 2>/dev/null || echo none)"
  exit 1
fi

if [[ ! -x "$PREFIX/node_modules/.bin/playwright-cli" ]]; then
  log "installing @playwright/cli@$CLI_VERSION into $PREFIX"
  mkdir -p "$PREFIX"
  # HTTPS to the registry may go through a TLS-intercepting proxy: npm (Node)
  # trusts its CA through NODE_EXTRA_CA_CERTS when the host sets it.
  npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error "@playwright/cli@$CLI_VERSION" >&2
fi
installed="$(node -p "require('$PREFIX/node_modules/@playwright/cli/package.json').version")"
if [[ "$installed" != "$CLI_VERSION" ]]; then
  log "ERROR: $PREFIX holds @playwright/cli $installed, expected $CLI_VERSION; remove $PREFIX and re-run"
  exit 1
fi

# The sandbox-enforced test runs the runtime as this user: Chromium refuses
# its sandbox as root. The CLI tree must be readable by it.
if ! id -u "$TEST_USER" >/dev/null 2>&1; then
  log "creating user $TEST_USER"
  useradd --system --no-create-home --shell /usr/sbin/nologin "$TEST_USER"
fi
chmod -R a+rX "$PREFIX"
d="$PREFIX"; while [[ "$d" != "/" ]]; do chmod o+x "$d" 2>/dev/null || true; d="$(dirname "$d")"; done

echo "$PREFIX"
