#!/usr/bin/env bash
# Benchmark: our image vs a reference built the way Playwright's official
# Dockerfile does it, as far as this machine reaches (no registry pulls, no
# Playwright CDN): same base, Node from the distribution, Playwright's full
# `install-deps` package set (all browsers, fonts and tools groups, run by the
# same pinned playwright-core), the same Debian Chromium. Both are built in the
# same run without the engine's cache; then ours is rebuilt from the unchanged
# lock. Prints build times and sizes per layer.
# Builds into this checkout's cargo target directory (CARGO_TARGET_DIR when
# set); leaves nothing behind: its images (playpen/bench:ours and
# :reference) and work directory are removed on every exit.
set -euo pipefail
# shellcheck source=tests/bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../bench/lib.sh"
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

BASE="$(tests/imagebuild/setup.sh | tail -n 1)"
log "building playpen-imagebuild (release)"
cargo build -q --release --locked -p playpen-imagebuild
BIN="${TARGET_DIR}/release/playpen-imagebuild"
WORK="$(mktemp -d "${TMPDIR:-/var/tmp}/playpen-bench.XXXXXX")"
on_exit "remove ${WORK}" rm -rf "$WORK"
IMAGES=(playpen/bench:ours playpen/bench:reference)
remove_images() { docker image rm "${IMAGES[@]}" >/dev/null 2>&1 || true; }
remove_images # an earlier, interrupted run's
on_exit "remove the images ${IMAGES[*]}" remove_images

sed "s|playpen/base:bookworm|$BASE|" imagebuild/examples/debian-chromium.yaml >"$WORK/bench.yaml"
"$BIN" lock --spec "$WORK/bench.yaml" --lock "$WORK/bench.lock.json" 2>"$WORK/lock.log"

log "ours: build without cache"
t0=$(now)
"$BIN" build --lock "$WORK/bench.lock.json" --tag playpen/bench:ours --out-dir "$WORK/ours" --no-cache >/dev/null 2>"$WORK/ours.log"
t1=$(now)
log "ours: rebuild from the unchanged lock"
"$BIN" build --lock "$WORK/bench.lock.json" --tag playpen/bench:ours --out-dir "$WORK/ours2" >/dev/null 2>"$WORK/ours2.log"
t2=$(now)
cmp -s "$WORK/ours/playpen-layer.tar" "$WORK/ours2/playpen-layer.tar" && same_layer=yes || same_layer=NO

log "reference: build without cache"
mkdir -p "$WORK/ref"
tar -C "$WORK/ref" -xf "$WORK/ours/playpen-layer.tar" opt/playpen/node opt/playpen/cli/node_modules/playwright-core
cat >"$WORK/ref/Dockerfile" <<DOCKERFILE
FROM $BASE
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update && apt-get install -y --no-install-recommends nodejs && rm -rf /var/lib/apt/lists/*
COPY opt /opt
RUN /opt/playpen/node/bin/node /opt/playpen/cli/node_modules/playwright-core/cli.js install-deps && rm -rf /var/lib/apt/lists/*
RUN apt-get update && apt-get install -y --no-install-recommends chromium && rm -rf /var/lib/apt/lists/*
DOCKERFILE
t3=$(now)
DOCKER_BUILDKIT=0 docker build --no-cache --force-rm -q -t playpen/bench:reference "$WORK/ref" >/dev/null 2>"$WORK/ref.log" ||
  { cat "$WORK/ref.log" >&2; exit 1; }
t4=$(now)

size() { docker image inspect --format '{{.Size}}' "$1"; }
mb() { awk -v b="$1" 'BEGIN { printf "%.0f MB", b / 1000000 }'; }
ours=$(size playpen/bench:ours)
ref=$(size playpen/bench:reference)
echo "== layers: ours (playpen/bench:ours)"
docker history --format '{{.Size}}\t{{.CreatedBy}}' playpen/bench:ours | awk -F'\t' '$1 != "0B"' | cut -c1-110
echo "== layers: reference (playpen/bench:reference)"
docker history --format '{{.Size}}\t{{.CreatedBy}}' playpen/bench:reference | awk -F'\t' '$1 != "0B"' | cut -c1-110
echo "== summary"
printf '%-40s %s\n' "ours: build (no cache, incl. verify)" "$(secs "$t0" "$t1") s"
printf '%-40s %s\n' "ours: rebuild, unchanged lock" "$(secs "$t1" "$t2") s (same layer tar: $same_layer)"
printf '%-40s %s\n' "reference: build (no cache)" "$(secs "$t3" "$t4") s"
printf '%-40s %s\n' "ours: size" "$(mb "$ours")"
printf '%-40s %s\n' "reference: size" "$(mb "$ref")"
awk -v o="$ours" -v r="$ref" 'BEGIN { printf "%-40s %.2f (target: at most 0.50)\n", "size ratio ours/reference", o / r }'
