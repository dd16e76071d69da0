#!/usr/bin/env bash
# The libraries ordo loads at run time, in every release it supports, tested without a GPU:
#  - NCCL: the oldest ordo supports (2.16.2, from nvidia-nccl-cu12) and the newest nvidia-nccl-cu13
#    on the package index: libs/tests/nccl_versions.rs loads each, makes ids, and checks the gates
#    of what needs a newer NCCL (scalable init 2.23, NCCL_COMM_ID ids 2.22, config CTAs 2.17);
#  - NVRTC: every nvidia-cuda-nvrtc 13.x release on the index: libs/tests/nvrtc_versions.rs compiles
#    with each.
# The libraries are downloaded once (pip download, no install) into $ORDO_CUDA_CACHE/libs (default
# ~/.cache/ordo/libs), only their .so files kept. The newest releases are looked up on the index;
# offline, the pins below stand in. Usage: bash scripts/lib-versions.sh (after scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${ORDO_CUDA_CACHE:-$HOME/.cache/ordo}/libs
py=${PYTHON:-python3}
nccl_oldest="nvidia-nccl-cu12==2.16.2"
nccl_newest_pin="2.32.3"
nvrtc_pins="13.0.48 13.1.115 13.2.86 13.3.33 13.4.92 13.5.37"

log() { echo "lib-versions: $*" >&2; }

# versions PACKAGE: every version the index offers, newest first (empty offline).
versions() {
  "$py" -m pip index versions "$1" 2>/dev/null | sed -n 's/^Available versions: //p' | tr -d ',' || true
}

# fetch SPEC DIR: the wheel's shared libraries into DIR (once).
fetch() {
  local spec=$1 dir=$2
  [ -f "$dir/.done" ] && return 0
  log "downloading $spec"
  local tmp
  tmp=$(mktemp -d)
  "$py" -m pip download -q --no-deps --disable-pip-version-check -d "$tmp" "$spec" >&2
  rm -rf "$dir"; mkdir -p "$dir"
  "$py" -m zipfile -e "$tmp"/*.whl "$tmp/x" >/dev/null
  find "$tmp/x" -name '*.so*' -exec cp {} "$dir/" \;
  rm -rf "$tmp"
  touch "$dir/.done"
}

nccl_newest=$(versions nvidia-nccl-cu13 | awk '{print $1}')
nccl_newest=${nccl_newest:-$nccl_newest_pin}
fetch "$nccl_oldest" "$cache/nccl-${nccl_oldest#*==}"
fetch "nvidia-nccl-cu13==$nccl_newest" "$cache/nccl-$nccl_newest"
nccl_libs="$cache/nccl-${nccl_oldest#*==}/libnccl.so.2:$cache/nccl-$nccl_newest/libnccl.so.2"

# Every 13.x release: the newest patch of each minor release the index has, else the pins.
found=$(versions nvidia-cuda-nvrtc | tr ' ' '\n' | grep -E '^13\.[0-9]+\.[0-9]+$' | sort -t. -k1,1n -k2,2n -k3,3n |
  awk -F. '{last[$2]=$0} END {for (m in last) print last[m]}' | sort -t. -k2,2n | tr '\n' ' ')
nvrtc_libs=""
for v in ${found:-$nvrtc_pins}; do
  fetch "nvidia-cuda-nvrtc==$v" "$cache/nvrtc-$v"
  nvrtc_libs="$nvrtc_libs${nvrtc_libs:+:}$cache/nvrtc-$v/libnvrtc.so.13"
done

log "NCCL: $nccl_libs"
log "NVRTC: $nvrtc_libs"
ORDO_NCCL_LIBS=$nccl_libs cargo test -p ordo-cuda-libs --locked --test nccl_versions -- --nocapture
ORDO_NVRTC_LIBS=$nvrtc_libs cargo test -p ordo-cuda-libs --locked --test nvrtc_versions -- --nocapture
