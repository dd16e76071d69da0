#!/usr/bin/env bash
# The README's C++ example, exactly as printed (its first ```cpp block), built with nvcc against
# ordo's C/C++ archive (scripts/package.sh) the two ways a C++ engineer links it: the static
# libordo.a, and libordo.so beside nvcc's default static CUDA runtime. With an NVIDIA GPU each
# program runs and must exit 0; without one they are built only. (The Rust example is a doc test
# of the facade: `cargo test -p ordo-cuda --doc`.)
#
#   bash scripts/readme-cpp.sh ARCHIVE        # ARCHIVE: ordo-VERSION-linux-ARCH-cudaMAJOR.tar.gz
#
# nvcc: CUDACXX, else nvcc on PATH, else $CUDA_HOME/bin/nvcc, else /usr/local/cuda/bin/nvcc.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
archive=${1:?usage: readme-cpp.sh ARCHIVE}
[ -f "$archive" ] || { echo "readme-cpp: no archive at $archive" >&2; exit 1; }
nvcc=${CUDACXX:-$(command -v nvcc || true)}
[ -n "$nvcc" ] || [ -z "${CUDA_HOME:-}" ] || nvcc=$CUDA_HOME/bin/nvcc
[ -n "$nvcc" ] || nvcc=/usr/local/cuda/bin/nvcc
[ -x "$nvcc" ] || { echo "readme-cpp: no nvcc (tried CUDACXX, PATH, CUDA_HOME, /usr/local/cuda)" >&2; exit 1; }
cuda_root=$(cd "$(dirname "$nvcc")/.." && pwd)
cudalib=$cuda_root/lib64
[ -d "$cudalib" ] || cudalib=$cuda_root/lib

work=$(mktemp -d "${TMPDIR:-/tmp}/ordo-readme-cpp.XXXXXX")
trap 'rm -rf "$work"' EXIT
tar -C "$work" -xzf "$archive"
pkg=$(ls -d "$work"/ordo-*/)
pkg=${pkg%/}
# The first fenced cpp block of README.md, byte for byte.
awk '/^```cpp$/ { if (!done) { on = 1; next } } /^```$/ { if (on) { on = 0; done = 1 } } on' "$repo/README.md" > "$work/readme.cu"
[ -s "$work/readme.cu" ] || { echo "readme-cpp: README.md has no \`\`\`cpp block" >&2; exit 1; }

flags=(-std=c++17 -arch=sm_90 -I"$pkg/include" -L"$cudalib")
"$nvcc" "${flags[@]}" "$work/readme.cu" "$pkg/lib/libordo.a" -lrt -lpthread -ldl -o "$work/readme_static"
"$nvcc" "${flags[@]}" "$work/readme.cu" -L"$pkg/lib" -lordo -Xlinker -rpath="$pkg/lib" -o "$work/readme_shared"
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  for p in readme_static readme_shared; do
    LD_LIBRARY_PATH="$cudalib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$work/$p" || { echo "readme-cpp: $p failed ($?)" >&2; exit 1; }
    echo "readme-cpp: $p ran (exit 0)"
  done
else
  echo "readme-cpp: built readme_static and readme_shared (no GPU: not run)"
fi
