#!/usr/bin/env bash
# Installs the clients the end-to-end suite drives sessions with from the
# host, through kubectl port-forward: playwright-core (connectOverCDP, and a
# headless Debian Chromium that opens the viewer) and puppeteer-core
# (puppeteer.connect), at the exact versions of tests/e2e/clients/package-lock.json.
# Cached by the lock file's hash; a second run installs nothing. The last line
# of stdout is the install prefix (export it as PLAYPEN_E2E_CLIENTS).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/clients"

log() { printf '[%s e2e/clients.sh] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

CACHE="${PLAYPEN_CACHE:-$HOME/.cache/playpen}"
lock_hash="$(sha256sum package.json package-lock.json | sha256sum | cut -c1-16)"
PREFIX="$CACHE/npm/e2e-clients-$lock_hash"

if [[ ! -x /usr/bin/chromium ]]; then
  log "ERROR: /usr/bin/chromium is missing (tests/session/setup.sh installs Debian's chromium)"
  exit 1
fi
if [[ ! -f "$PREFIX/node_modules/puppeteer-core/package.json" || ! -f "$PREFIX/node_modules/playwright-core/package.json" ]]; then
  log "installing playwright-core and puppeteer-core into $PREFIX"
  rm -rf "$PREFIX" && mkdir -p "$PREFIX"
  cp package.json package-lock.json "$PREFIX/"
  # No browser downloads: the tests use Debian's chromium.
  PUPPETEER_SKIP_DOWNLOAD=1 PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 \
    npm ci --prefix "$PREFIX" --no-audit --no-fund --loglevel=error >&2
fi
echo "$PREFIX"
