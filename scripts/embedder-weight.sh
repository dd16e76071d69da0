#!/usr/bin/env bash
# What depending on ordo costs an engine's build, side by side with cudarc 0.19: the app in
# examples/embedder/ordo (ordo-cuda-core alone: a stream, buffers, an async copy, an event, a
# captured graph, its own .cu kernel compiled by its build script with the nvcc, flags and headers
# ordo-cuda-core publishes) and the same app on cudarc in examples/embedder/cudarc.
#
#   bash scripts/embedder-weight.sh [ROUNDS]       # from anywhere; ROUNDS (default 5) alternating builds
#
# Each app is copied to a fresh folder outside the checkout (its own workspace and Cargo.lock,
# ordo-cuda-core taken from this checkout through a [patch.crates-io] given on the command line),
# its dependencies fetched first (downloads are not timed), then built with `cargo build --release`
# from an empty target folder, ROUNDS times, the two apps alternating (which app builds first
# alternates too). Prints each build's wall time, the ratio of each round's pair, the median ratio
# with its range and the ratio of the medians and of the bests (builds on 2 cores scatter by tens of
# percent: quote the median with its range), the crates in each build tree (the app included:
# `cargo tree -e normal,build`), and the load average (the machine may be shared). Needs network
# for the first fetch of cudarc.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
rounds=${1:-5}
case $rounds in ''|*[!0-9]*|0) echo "embedder-weight: ROUNDS must be a positive whole number, not '$rounds'" >&2; exit 2 ;; esac
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
times_ordo=(); times_cudarc=(); ratios=()
printf '%-8s %-6s %s\n' app round "clean release build (s)"
for round in $(seq "$rounds"); do
  order=(ordo cudarc); [ $((round % 2)) -eq 0 ] && order=(cudarc ordo)
  declare -A this=()
  for app in "${order[@]}"; do
    args=(); [ "$app" = ordo ] && args=("${patch[@]}")
    rm -rf "$work/target-$app"
    start=$(date +%s.%N)
    (cd "$work/$app" && CARGO_TARGET_DIR="$work/target-$app" cargo "${args[@]}" build --release --locked --offline -q)
    secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
    printf '%-8s %-6s %.1f\n' "$app" "$round" "$secs"
    this[$app]=$secs
  done
  times_ordo+=("${this[ordo]}"); times_cudarc+=("${this[cudarc]}")
  ratios+=("$(awk -v a="${this[ordo]}" -v b="${this[cudarc]}" 'BEGIN { printf "%.3f", a / b }')")
done
# median MIN MAX of the numbers given
stats() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.3f %.3f %.3f", m, v[1], v[NR] }'; }
read -r r_med r_min r_max <<<"$(stats "${ratios[@]}")"
read -r o_med o_min _ <<<"$(stats "${times_ordo[@]}")"
read -r c_med c_min _ <<<"$(stats "${times_cudarc[@]}")"
echo "ratios ordo/cudarc by round: ${ratios[*]}"
printf 'median of the rounds: ordo/cudarc = %.2fx (range %.2f-%.2fx over %d rounds; target: at most 1.3x)\n' "$r_med" "$r_min" "$r_max" "$rounds"
printf 'median build: ordo %.1f s, cudarc %.1f s (%.2fx); best: ordo %.1f s, cudarc %.1f s (%.2fx)\n' \
  "$o_med" "$c_med" "$(awk -v a="$o_med" -v b="$c_med" 'BEGIN { print a / b }')" \
  "$o_min" "$c_min" "$(awk -v a="$o_min" -v b="$c_min" 'BEGIN { print a / b }')"
echo "crates in the build tree: ordo $(echo "$ordo_crates" | wc -l) (target: at most 10), cudarc $(echo "$cudarc_crates" | wc -l)"
echo "  ordo:   $(echo "$ordo_crates" | tr '\n' ' ')"
echo "  cudarc: $(echo "$cudarc_crates" | tr '\n' ' ')"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
