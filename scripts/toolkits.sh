#!/usr/bin/env bash
# The CUDA toolkit matrix in one command: every CUDA release from 12.3 (the oldest ordo-cuda-sys
# supports) to the newest on the package index, each installed when missing from NVIDIA's pip
# wheels into its own folder $ORDO_CUDA_CACHE/cuda-X.Y (default cache: ~/.cache/ordo), and the
# bindings, the core crate and the kernels crate built against each (the kernels only where the
# release ships an nvcc driver: no 12.x wheel does). One line a release; the exit status is
# non-zero when any build fails.
#
#   bash scripts/toolkits.sh [--fast | --newest | X.Y ...] [--test] [--install-only | --homes | --list]
#
#   --fast          only the oldest and the newest release of each major (12.3, 12.9, 13.0 and the
#                   newest 13.x today); ORDO_TOOLKITS_FAST=1 does the same
#   --newest        only the newest release of each major (the snapshots' sources: scripts/snapshot.sh)
#   X.Y ...         only these releases
#   --test          also `cargo test` the bindings and the core crate against each release, and the
#                   kernels' tests that need no GPU (--test cpu) where the release has nvcc
#   --install-only  install what is missing, build nothing
#   --homes         install what is missing, then print "X.Y CUDA_HOME" for each release, build nothing
#   --list          print the releases the index has and what each folder holds, then exit
#
# Every release that ships an nvcc also gets cuobjdump beside it (the kernels' tests list the
# compiled fatbin with it): the wheel of its own release (nvidia-cuda-cuobjdump==X.Y.*), else, for
# a release with none (13.0 and 13.1: the first is 13.2), the oldest later one of the same major,
# which reads the older release's fatbins; a line says which. A folder installed before this step
# existed gets it on the next run.
#
# Releases are looked up at run time (`pip index versions cuda-toolkit`, NVIDIA's meta package,
# which names the runtime, nvcc and header wheels of each release): a new release is picked up
# with no change here; each minor release is installed at the newest patch the index had the
# first time. A folder that already holds the release (as scripts/setup.sh leaves cuda-13.0,
# cuda-12.9, cuda-12.3) is used as it is; delete it to take a newer patch. When the index cannot
# be reached, the releases already in the cache are built.
#
# Adding a release: nothing to do, the lookup finds it; this script keeps no list of releases.
# A new major needs a look at its wheels: the toolkit root is taken to be nvidia/cuN (as 13.x's
# nvidia/cu13) and EXTRAS_13 is asked for every major from 13 on.
#
# Each release builds in its own target folder, target/toolkits/X.Y, so that the builds do not
# invalidate each other (the first build of a release takes a minute or two; later ones are
# incremental). Logs: target/toolkits/X.Y/build.log.
#
# The crates are named by the variables below (overridable from the environment):
SYS_PKG=${SYS_PKG:-ordo-cuda-sys}
CORE_PKG=${CORE_PKG:-ordo-cuda-core}
KERNELS_PKG=${KERNELS_PKG:-ordo-cuda-kernels}
# The oldest release ordo-cuda-sys accepts (OLDEST in cuda-sys/build/main.rs).
OLDEST_MAJOR=12
OLDEST_MINOR=3
# The meta package whose versions list the releases, and the extras that pull what a build needs
# (12.x: runtime and the nvcc wheel with the crt headers; 13.x adds crt, cccl and nvvm, which the
# nvcc driver needs).
META_PKG=cuda-toolkit
CUOBJDUMP_PKG=nvidia-cuda-cuobjdump
EXTRAS_12="cudart,nvcc"
EXTRAS_13="nvcc,cudart,crt,cccl,nvvm"
set -uo pipefail
cd "$(dirname "$0")/.."
root_dir=$PWD
cache=${ORDO_CUDA_CACHE:-$HOME/.cache/ordo}
py=${PYTHON:-python3}

fast=${ORDO_TOOLKITS_FAST:-0}
newest=0
test=0
install_only=0
homes=0
list=0
only=()
while [ $# -gt 0 ]; do
  case "$1" in
    --fast) fast=1 ;;
    --test) test=1 ;;
    --newest) newest=1 ;;
    --install-only) install_only=1 ;;
    --homes) homes=1 ;;
    --list) list=1 ;;
    -h|--help) sed -n '2,/^SYS_PKG/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    [0-9]*.[0-9]*) only+=("$1") ;;
    *) echo "toolkits: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

log() { echo "toolkits: $*" >&2; }
now() { date +%s; }

# The releases on the index as "X.Y PATCH-VERSION" lines, oldest first, one a minor release
# (its newest patch), from OLDEST up.
index_releases() {
  local out
  out=$("$py" -m pip index versions "$META_PKG" 2>/dev/null) || return 1
  printf '%s\n' "$out" | sed -n 's/^Available versions: //p' | tr ',' '\n' | tr -d ' ' | grep -E '^[0-9]+\.[0-9]+\.' |
    sort -V | awk -F. -v om="$OLDEST_MAJOR" -v on="$OLDEST_MINOR" '
      ($1 > om || ($1 == om && $2 >= on)) { newest[$1 "." $2] = $0; if (!seen[$1 "." $2]++) order[n++] = $1 "." $2 }
      END { for (i = 0; i < n; i++) print order[i], newest[order[i]] }'
}

# The releases whose folders are already in the cache (when the index cannot be reached).
cached_releases() {
  local d
  for d in "$cache"/cuda-[0-9]*.[0-9]*; do
    [ -d "$d" ] && echo "${d##*/cuda-} cached"
  done | sort -V
}

# toolkit_root X.Y: the toolkit root inside the release's folder (empty when there is none).
toolkit_root() {
  local major=${1%%.*} dir site
  dir="$cache/cuda-$1"
  for site in "$dir"/venv/lib/python3.*/site-packages/nvidia; do
    if [ "$major" -ge 13 ] && [ -d "$site/cu$major" ]; then (cd "$site/cu$major" && pwd); return; fi
    if [ "$major" -lt 13 ] && [ -d "$site/cuda_runtime" ]; then (cd "$site/cuda_runtime" && pwd); return; fi
  done
}

# header_version ROOT: CUDART_VERSION of the toolkit at ROOT (12090 for 12.9).
header_version() {
  sed -n 's/^#define[[:space:]]\{1,\}CUDART_VERSION[[:space:]]\{1,\}\([0-9]\{1,\}\).*/\1/p' "$1/include/cuda_runtime_api.h" 2>/dev/null | head -n1
}

# wheel_version X.Y: the version of the runtime wheel installed for X.Y (13.5.37), for the report.
wheel_version() {
  local f
  for f in "$cache/cuda-$1"/venv/lib/python3.*/site-packages/nvidia_cuda_runtime*.dist-info; do
    [ -d "$f" ] && { f=${f##*/}; f=${f%.dist-info}; echo "${f##*-}"; return; }
  done
  echo "$1"
}

# installed X.Y: the release's folder holds a toolkit of that version.
installed() {
  local r v major=${1%%.*} minor=${1#*.}
  r=$(toolkit_root "$1")
  [ -n "$r" ] || return 1
  v=$(header_version "$r")
  [ "$v" = $((major * 1000 + minor * 10)) ]
}

# install X.Y PATCH: a venv in the release's folder with the release's wheels.
install() {
  local rel=$1 patch=$2 major=${1%%.*} dir extras t0
  dir="$cache/cuda-$rel"
  if [ "$major" -ge 13 ]; then extras=$EXTRAS_13; else extras=$EXTRAS_12; fi
  local want="$META_PKG[$extras]==$patch"
  t0=$(now)
  log "installing $want into $dir"
  rm -rf "$dir" && mkdir -p "$dir" && "$py" -m venv "$dir/venv" &&
    "$dir/venv/bin/pip" install -q --disable-pip-version-check "$want" || { rm -rf "$dir"; return 1; }
  echo "$want" > "$dir/.pins"
  log "CUDA $rel: $(du -sm "$dir" | cut -f1) MB in $(($(now) - t0)) s"
}

# fix_layout X.Y: nvcc looks for lib64/ and nvvm/ beside its bin/ (as setup.sh does for 13.0).
fix_layout() {
  local r site nvvm
  r=$(toolkit_root "$1")
  [ -n "$r" ] && [ -x "$r/bin/nvcc" ] || return 0
  [ -e "$r/lib64" ] || ln -s lib "$r/lib64"
  if [ ! -e "$r/nvvm/bin/cicc" ]; then
    site=$(dirname "$r")
    nvvm=$(ls -d "$site"/nvvm 2>/dev/null | head -n1 || true)
    [ -n "$nvvm" ] && ln -sfn "$nvvm" "$r/nvvm"
  fi
}

# The versions of the cuobjdump wheel on the index, oldest first (looked up once, when needed).
cuobjdump_index=
# add_cuobjdump X.Y: cuobjdump beside the release's nvcc (nothing to do without nvcc or with one
# there): the newest patch of X.Y's own wheel, else of the oldest later minor of the same major.
add_cuobjdump() {
  local rel=$1 major=${1%%.*} minor=${1#*.} r version
  r=$(toolkit_root "$rel")
  [ -n "$r" ] && [ -x "$r/bin/nvcc" ] || return 0
  [ -x "$r/bin/cuobjdump" ] && return 0
  [ -n "$cuobjdump_index" ] || cuobjdump_index=$("$py" -m pip index versions "$CUOBJDUMP_PKG" 2>/dev/null |
    sed -n 's/^Available versions: //p' | tr ',' '\n' | tr -d ' ' | grep -E '^[0-9]+\.[0-9]+\.' | sort -V)
  version=$(printf '%s\n' "$cuobjdump_index" | awk -F. -v M="$major" -v m="$minor" '
    $1 == M && $2 >= m { if (best == "" || $2 < bm) { best = $0; bm = $2 } else if ($2 == bm) best = $0 }
    END { print best }')
  if [ -z "$version" ]; then
    log "CUDA $rel: no $CUOBJDUMP_PKG $major.x from $rel up on the index: the kernels' tests that list the fatbin fail against it"
    return 1
  fi
  "$cache/cuda-$rel/venv/bin/pip" install -q --disable-pip-version-check --no-deps "$CUOBJDUMP_PKG==$version" &&
    [ -x "$r/bin/cuobjdump" ] || { log "CUDA $rel: installing $CUOBJDUMP_PKG==$version put no bin/cuobjdump in $r"; return 1; }
  case "$version" in
    "$rel".*) log "CUDA $rel: cuobjdump $version installed" ;;
    *) log "CUDA $rel: no cuobjdump wheel of its own; installed $version's (a later cuobjdump reads older fatbins)" ;;
  esac
}

# The releases, oldest first.
if releases=$(index_releases) && [ -n "$releases" ]; then
  from_index=1
else
  log "the package index could not be read (pip index versions $META_PKG): building the releases in $cache"
  releases=$(cached_releases)
  from_index=0
fi
[ -n "$releases" ] || { log "no releases found"; exit 1; }

# The selection: every release, or the oldest and newest of each major (--fast), or the newest of
# each (--newest), or those named.
selected=$(printf '%s\n' "$releases" | awk -v fast="$fast" -v newest="$newest" '
  { split($1, v, "."); m = v[1]; rel[NR] = $0; maj[NR] = m; if (!(m in first)) first[m] = NR; last[m] = NR }
  END {
    for (i = 1; i <= NR; i++)
      if (newest ? last[maj[i]] == i : (!fast || first[maj[i]] == i || last[maj[i]] == i)) print rel[i]
  }')
if [ ${#only[@]} -gt 0 ]; then
  selected=$(printf '%s\n' "$releases" | while read -r rel patch; do
    for o in "${only[@]}"; do [ "$o" = "$rel" ] && echo "$rel $patch"; done
  done)
  [ -n "$selected" ] || { log "none of ${only[*]} is on the index (or in the cache)"; exit 2; }
fi

if [ "$list" = 1 ]; then
  printf '%s\n' "$releases" | while read -r rel patch; do
    if installed "$rel"; then state="installed ($(wheel_version "$rel"))"; else state="not installed"; fi
    r=$(toolkit_root "$rel")
    if [ -n "$r" ] && [ -x "$r/bin/nvcc" ]; then state="$state, nvcc"; fi
    if [ -n "$r" ] && [ -x "$r/bin/cuobjdump" ]; then state="$state, cuobjdump"; fi
    if [ "$(cat "$cache/default" 2>/dev/null)" = "cuda-$rel" ]; then state="$state; the cache's pin (plain builds take it)"; fi
    echo "CUDA $rel: $META_PKG $patch, $state"
  done
  exit 0
fi

# Install what is missing.
t_install=$(now)
failed=0
while read -r rel patch; do
  if ! installed "$rel"; then
    if [ "$patch" = cached ]; then log "CUDA $rel: the folder holds no toolkit and the index is unreachable"; failed=1; continue; fi
    install "$rel" "$patch" || { log "CUDA $rel: install failed"; failed=1; continue; }
  fi
  fix_layout "$rel"
  if [ "$from_index" = 1 ]; then
    add_cuobjdump "$rel" || failed=1
  fi
done <<< "$selected"
log "installs checked in $(($(now) - t_install)) s"
[ "$install_only" = 1 ] && exit $failed
if [ "$homes" = 1 ]; then
  while read -r rel patch; do
    r=$(toolkit_root "$rel")
    [ -n "$r" ] && echo "$rel $r"
  done <<< "$selected"
  exit $failed
fi

# build_line X.Y: builds (and tests) one release; prints its line; returns non-zero on a failure.
build_release() {
  local rel=$1 major=${1%%.*} r target logf line ok=0 t0 nvcc_ver features=()
  t0=$(now)
  r=$(toolkit_root "$rel")
  line="CUDA $(wheel_version "$rel"):"
  if [ -z "$r" ]; then echo "$line not installed"; return 1; fi
  target="$root_dir/target/toolkits/$rel"
  mkdir -p "$target"
  logf="$target/build.log"
  : > "$logf"
  # The 12.x runtime wheels before 12.9 ship only libcudart.so.12: link it instead of the static runtime.
  local lib
  lib=$(ls -d "$r/lib64" "$r/lib" 2>/dev/null | head -n1)
  if [ ! -e "$lib/libcudart_static.a" ]; then features=(--features "$SYS_PKG/shared-cudart"); fi
  run() { env -u CUDA_PATH CUDA_HOME="$r" CARGO_TARGET_DIR="$target" LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    cargo "$@" --locked >> "$logf" 2>&1; }
  if ! run build -p "$SYS_PKG" "${features[@]}"; then
    line="$line sys FAILED"; ok=1
  elif grep -q 'does not fit CUDA' "$logf"; then
    # The build compared the layouts of the structs ordo hands to CUDA with the snapshot of the major.
    line="$line sys ok but the snapshot of CUDA $major does not fit it"; ok=1
  else
    line="$line sys ok"
  fi
  if [ $ok != 0 ]; then line="$line, core not built"
  elif run build -p "$CORE_PKG" "${features[@]}"; then line="$line, core ok"
  else line="$line, core FAILED"; ok=1; fi
  if [ -x "$r/bin/nvcc" ]; then
    nvcc_ver=$("$r/bin/nvcc" --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\),.*/\1/p')
    if [ $ok != 0 ]; then
      line="$line, kernels not built"
    elif run build -p "$KERNELS_PKG" "${features[@]}"; then
      line="$line, kernels ok (nvcc ${nvcc_ver:-?})"
    else
      line="$line, kernels FAILED (nvcc ${nvcc_ver:-?})"; ok=1
    fi
  else
    line="$line, kernels: no nvcc"
  fi
  if [ "$test" = 1 ]; then
    if [ $ok != 0 ]; then
      line="$line, tests not run"
    elif run test -p "$SYS_PKG" -p "$CORE_PKG" "${features[@]}"; then
      line="$line, tests ok ($(grep -c '^test result: ok' "$logf") suites)"
    else
      line="$line, tests FAILED"; ok=1
    fi
    # The kernels' tests that need no GPU (the compiled targets, read with the cuobjdump beside nvcc).
    if [ $ok = 0 ] && [ -x "$r/bin/nvcc" ]; then
      if run test -p "$KERNELS_PKG" --test cpu "${features[@]}"; then
        line="$line, kernels' cpu tests ok"
      else
        line="$line, kernels' cpu tests FAILED"; ok=1
      fi
    fi
  fi
  echo "$line ($(($(now) - t0)) s)"
  if [ $ok != 0 ]; then
    echo "  log: $logf; its last lines:"
    grep -E '^(error|warning: unused)|^  --> |panicked|FAILED' "$logf" | head -n 20 | sed 's/^/  /'
  fi
  return $ok
}

while read -r rel patch; do
  build_release "$rel" || failed=1
done <<< "$selected"
[ "$from_index" = 1 ] || log "(the index was unreachable: releases newer than those cached were not checked)"
exit $failed
