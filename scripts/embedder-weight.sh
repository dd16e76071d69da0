#!/usr/bin/env bash
# What depending on ordo costs an engine's build, side by side with cudarc 0.19: the app in
# examples/embedder/ordo (ordo-cuda-core alone: a stream, buffers, an async copy, an event, a
# captured graph, its own .cu kernel compiled by its build script with the nvcc, flags and headers
# ordo-cuda-core publishes) and the same app on cudarc in examples/embedder/cudarc.
#
#   bash scripts/embedder-weight.sh [ROUNDS]       # from anywhere; ROUNDS (default 2) alternating builds
#
# Each app is copied to a fresh folder outside the checkout (its own workspace and Cargo.lock,
# ordo-cuda-core taken from this checkout through a [patch.crates-io] given on the command line),
# its dependencies fetched first (downloads are not timed), then built with `cargo build --release`
# from an empty target folder, ROUNDS times, the two apps alternating. Prints each build's wall time,
# the crates in each build tree (the app included: `cargo tree -e normal,build`), the best-of ratio,
# and the load average (the machine may be shared). Needs network for the first fetch of cudarc.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
rounds=${1:-2}
if [ -z "${CUDA_HOME:-}" ]; then
  CUDA_HOME=$(bash scripts/setup.sh | sed -n 's/^CUDA13_HOME=//p')
fi
export CUDA_HOME
work=$(mktemp -d "${TMPDIR:-/tmp}/ordo-embedder.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp -r examples/embedder/. "$work/"
patch=(--config "patch.crates-io.ordo-cuda-core.path=\"$root/core\"")

crates() { (cd "$work/$1" && cargo "${@:2}" tree -e normal,build --prefix none --locked | sed 's/ (.*//; s/ (\*)$//' | sort -u); }

for app in ordo cudarc; do
  args=(); [ "$app" = ordo ] && args=("${patch[@]}")
  (cd "$work/$app" && cargo "${args[@]}" generate-lockfile -q && cargo "${args[@]}" fetch -q --locked)
done
ordo_crates=$(crates ordo "${patch[@]}")
cudarc_crates=$(crates cudarc)

echo "embedder-weight: CUDA_HOME=$CUDA_HOME, $(nproc) cores, $(rustc --version), load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A best=([ordo]=999999 [cudarc]=999999)
printf '%-8s %-6s %s\n' app round "clean release build (s)"
for round in $(seq "$rounds"); do
  for app in ordo cudarc; do
    args=(); [ "$app" = ordo ] && args=("${patch[@]}")
    rm -rf "$work/target-$app"
    start=$(date +%s.%N)
    (cd "$work/$app" && CARGO_TARGET_DIR="$work/target-$app" cargo "${args[@]}" build --release --locked --offline -q)
    secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
    printf '%-8s %-6s %.1f\n' "$app" "$round" "$secs"
    best[$app]=$(awk -v a="$secs" -v b="${best[$app]}" 'BEGIN { print (a < b) ? a : b }')
  done
done
printf 'best: ordo %.1f s, cudarc %.1f s: ordo/cudarc = %.2fx (target: at most 1.3x)\n' \
  "${best[ordo]}" "${best[cudarc]}" "$(awk -v a="${best[ordo]}" -v b="${best[cudarc]}" 'BEGIN { print a / b }')"
echo "crates in the build tree: ordo $(echo "$ordo_crates" | wc -l) (target: at most 10), cudarc $(echo "$cudarc_crates" | wc -l)"
echo "  ordo:   $(echo "$ordo_crates" | tr '\n' ' ')"
echo "  cudarc: $(echo "$cudarc_crates" | tr '\n' ' ')"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
