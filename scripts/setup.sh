#!/usr/bin/env bash
# Installs what building and testing ordo needs, when missing: libclang (for bindgen) with apt-get,
# and pinned CUDA toolkits from NVIDIA's Python wheels into a cache outside the checkout:
#   $ORDO_CUDA_CACHE/cuda-13.0   compiler, headers, static runtime, NVRTC (default cache: ~/.cache/ordo)
#   $ORDO_CUDA_CACHE/cuda-12.9   headers and static runtime (no nvcc driver in the 12.x wheels)
#   $ORDO_CUDA_CACHE/cuda-12.3   the same for the oldest CUDA ordo-cuda-sys supports
# and, when the cache has none, its pin file $ORDO_CUDA_CACHE/default naming cuda-13.0: a build with
# neither CUDA_HOME nor CUDA_PATH set, no nvcc on PATH and no /usr/local/cuda takes the toolkit the
# pin names (docs/toolkits.md), whatever newer releases scripts/toolkits.sh adds to the cache. Edit
# the file to build with another by default; it is never overwritten.
# Idempotent: when everything is present it checks and returns in well under a second.
# Prints, last, the CUDA_HOME of each toolkit.
set -euo pipefail
cache=${ORDO_CUDA_CACHE:-$HOME/.cache/ordo}
py=${PYTHON:-python3}
cu13_pins=("cuda-toolkit[nvcc,cudart,crt,cccl]==13.0.2" "nvidia-nvvm==13.0.88")
cu12_pins=("nvidia-cuda-runtime-cu12==12.9.79" "nvidia-cuda-nvcc-cu12==12.9.86")
cu123_pins=("nvidia-cuda-runtime-cu12==12.3.101" "nvidia-cuda-nvcc-cu12==12.3.107")

log() { echo "setup: $*" >&2; }

# libclang for bindgen (libclang-cpp is a different library: bindgen needs libclang.so itself);
# pkg-config and binutils' readelf for the check of the C/C++ package (scripts/package.sh).
missing=()
if [ -z "${LIBCLANG_PATH:-}" ] && ! ls /usr/lib/llvm-*/lib/libclang.so* /usr/lib/*-linux-gnu/libclang-[0-9]*.so* >/dev/null 2>&1; then
  missing+=(libclang-dev)
fi
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
command -v readelf >/dev/null 2>&1 || missing+=(binutils)
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]} with apt-get"
  if [ "$(id -u)" -ne 0 ]; then sudo=sudo; else sudo=; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# install_wheels DIR STAMP PINS...: a venv in DIR/venv with the pinned wheels; STAMP records the pins.
install_wheels() {
  local dir=$1; shift
  local want="$*"
  if [ -f "$dir/.pins" ] && [ "$(cat "$dir/.pins")" = "$want" ]; then return 0; fi
  log "installing $want into $dir (a few hundred MB, once)"
  rm -rf "$dir"; mkdir -p "$dir"
  "$py" -m venv "$dir/venv"
  "$dir/venv/bin/pip" install -q --disable-pip-version-check "$@"
  echo "$want" > "$dir/.pins"
}

site() { echo "$1"/venv/lib/python3.*/site-packages/nvidia; }

# CUDA 13.0: the wheel layout is nvidia/cu13/{bin,include,lib,nvvm}.
install_wheels "$cache/cuda-13.0" "${cu13_pins[@]}"
cu13=$(cd $(site "$cache/cuda-13.0")/cu13 && pwd)
# nvcc looks for nvvm/ and lib64/ beside bin/; the wheel spreads them differently.
[ -e "$cu13/lib64" ] || ln -s lib "$cu13/lib64"
if [ ! -e "$cu13/nvvm/bin/cicc" ]; then
  nvvm=$(ls -d $(site "$cache/cuda-13.0")/cu13/nvvm $(site "$cache/cuda-13.0")/nvvm 2>/dev/null | head -n1 || true)
  [ -n "$nvvm" ] && [ "$nvvm" != "$cu13/nvvm" ] && ln -sfn "$nvvm" "$cu13/nvvm"
fi

# cuobjdump (the kernels' tests list the fatbin's targets with it): its first wheel is 13.2, which
# reads 13.0 fatbins; it has no dependencies to pull.
cuobjdump_pin="nvidia-cuda-cuobjdump==13.2.78"
if [ ! -x "$cu13/bin/cuobjdump" ]; then
  log "installing $cuobjdump_pin"
  "$cache/cuda-13.0/venv/bin/pip" install -q --disable-pip-version-check --no-deps "$cuobjdump_pin"
fi

# NVRTC (ordo_cuda_libs::nvrtc compiles CUDA C at run time; its tests compile without a GPU).
nvrtc_pin="nvidia-cuda-nvrtc==13.0.88"
if [ ! -e "$cu13/lib/libnvrtc.so.13" ]; then
  log "installing $nvrtc_pin"
  "$cache/cuda-13.0/venv/bin/pip" install -q --disable-pip-version-check --no-deps "$nvrtc_pin"
fi

# CUDA 12.9: runtime headers + static runtime in nvidia/cuda_runtime, crt headers in nvidia/cuda_nvcc.
install_wheels "$cache/cuda-12.9" "${cu12_pins[@]}"
cu12=$(cd $(site "$cache/cuda-12.9")/cuda_runtime && pwd)

# CUDA 12.3, the oldest supported (ordo-cuda-sys refuses older toolkits): the same layout as 12.9.
install_wheels "$cache/cuda-12.3" "${cu123_pins[@]}"
cu123=$(cd $(site "$cache/cuda-12.3")/cuda_runtime && pwd)

# The cache's pin (read by ordo-cuda-sys's build script), written once: a choice made since stays.
[ -e "$cache/default" ] || echo cuda-13.0 > "$cache/default"

echo "CUDA13_HOME=$cu13"
echo "CUDA12_HOME=$cu12"
echo "CUDA123_HOME=$cu123"
