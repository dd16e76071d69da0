#!/usr/bin/env bash
# Uses ordo's C/C++ archive (scripts/package.sh) as a C++ team would, with no Rust: unpacks it into
# a fresh folder outside the checkout, then builds against it
#   - ffi-tests/cmake-example with CMake (find_package(ordo)): a CUDA C++ program with its own
#     kernel (main.cu), a CUDA C++ program that launches its own kernels through ordo
#     (own_kernels.cu), and a C++ program with no CUDA code (ffi-tests/cpp/link_main.cpp), each
#     linked to ordo::ordo (static) and to ordo::ordo_shared, with CMake's defaults (a CUDA target
#     links the static CUDA runtime, CUDA_RUNTIME_LIBRARY Static, but ordo_example_shared);
#   - the same C++ program with pkg-config, against ordo-static (also with -static-libstdc++) and
#     ordo (shared);
#   - own_kernels.cu with nvcc's own command line, in each link: libordo.a and nvcc's default
#     static CUDA runtime (own_static); libordo.so and the static runtime (own_shared: two copies of
#     the CUDA runtime in the process, the program's and the libcudart.so libordo.so loads);
#     libordo.so and -cudart shared (own_shared_cudart); and own_shared built with
#     -DORDO_NO_KERNEL_RESOLVER (own_shared_control: the plain calls, as before ordo.h routed them
#     through the program's cudaGetKernel), which must FAIL on a GPU: the control that shows the
#     check sees the defect;
# and runs them. With an NVIDIA GPU every program runs and must pass its checks: the gemv programs
# print "|y| = 1.000000 after gemv_normalize", the C++ ones "0 failed checks (driver present)", the
# own-kernel ones "N checks, 0 failed" (exit 0; the control exits 1). Without one, the C++ programs
# run their no-driver checks ("0 failed checks (driver absent)"), the own-kernel programs run and
# must say there is no device (exit 77, accepted only then), and the gemv programs are built only.
#
#   bash scripts/cpp-package-test.sh ARCHIVE        # ARCHIVE: ordo-VERSION-linux-ARCH-cudaMAJOR.tar.gz
#
# Needs g++, CMake 3.18 or later (installed with apt-get when missing and possible), and a CUDA
# toolkit of the archive's major version: CUDACXX, else nvcc on PATH, else $CUDA_HOME/bin/nvcc,
# else /usr/local/cuda/bin/nvcc. pkg-config is used when installed; without it the .pc files are
# read by a few lines of Python here, the same way. The CMake project gets only the compiler
# (CMAKE_CUDA_COMPILER) and the package's folder (CMAKE_PREFIX_PATH): no hint about the runtime.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
archive=$(cd "$(dirname "${1:?usage: cpp-package-test.sh ARCHIVE}")" && pwd)/$(basename "$1")
[ -f "$archive" ] || { echo "cpp-package-test: no archive at $archive" >&2; exit 1; }
say() { echo "cpp-package-test: $*"; }

nvcc=${CUDACXX:-$(command -v nvcc || true)}
[ -n "$nvcc" ] || [ -z "${CUDA_HOME:-}" ] || nvcc=$CUDA_HOME/bin/nvcc
[ -n "$nvcc" ] || nvcc=/usr/local/cuda/bin/nvcc
[ -x "$nvcc" ] || { say "no nvcc (tried CUDACXX, PATH, CUDA_HOME, /usr/local/cuda)"; exit 1; }
cuda_root=$(cd "$(dirname "$nvcc")/.." && pwd)
cudalib=$cuda_root/lib64
[ -d "$cudalib" ] || cudalib=$cuda_root/lib
if ! command -v cmake >/dev/null 2>&1; then
  say "installing cmake with apt-get"
  if [ "$(id -u)" -ne 0 ]; then sudo=sudo; else sudo=; fi
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq cmake >/dev/null
fi
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then gpu=1; else gpu=0; fi

work=$(mktemp -d "${TMPDIR:-/tmp}/ordo-cpp-package.XXXXXX")
tar -C "$work" -xzf "$archive"
pkg=$(ls -d "$work"/ordo-*/)
pkg=${pkg%/}
mkdir -p "$work/src"
cp -r "$repo/ffi-tests/cmake-example" "$repo/ffi-tests/cpp" "$work/src/"
major=$(sed -n 's/^set(ordo_CUDA_VERSION_MAJOR \([0-9]*\))/\1/p' "$pkg/lib/cmake/ordo/ordoConfig.cmake")
say "package $(basename "$pkg") unpacked in $work; nvcc $nvcc ($("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')); GPU: $([ $gpu = 1 ] && echo yes || echo no)"

# CMake leaves the CUDA compiler's own library folder out of the run path of programs it links
# with CUDA, and nvcc has none to leave: the programs linked to libordo.so find libcudart.so.MAJOR
# as any program linked to the shared CUDA runtime does, through the loader's configuration
# (ld.so.conf, as NVIDIA's installers set it up) or LD_LIBRARY_PATH. Every other program here runs
# with nothing in the environment.
if ldconfig -p 2>/dev/null | grep -q "libcudart.so.$major "; then
  cuda_env=()
  say "the loader finds libcudart.so.$major by itself"
else
  cuda_env=(LD_LIBRARY_PATH="$cudalib")
  say "the loader does not find libcudart.so.$major by itself: the programs with no run path to it (nvcc's, ordo_example_shared) run with LD_LIBRARY_PATH=$cudalib"
fi

cmake -S "$work/src/cmake-example" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$pkg" -DCMAKE_CUDA_COMPILER="$nvcc"
cmake --build "$work/build" -j "$(nproc)"

# pkg-config, or the same reading of the .pc file: variables expanded (pcfiledir included), then
# Cflags and Libs.
pc_flags() {
  local args=(--cflags --libs)
  [ "$cudalib" = /usr/local/cuda/lib64 ] || args+=(--define-variable=cudalibdir="$cudalib")
  if command -v pkg-config >/dev/null 2>&1; then
    PKG_CONFIG_PATH="$pkg/lib/pkgconfig" pkg-config "${args[@]}" "$1"
  else
    python3 - "$pkg/lib/pkgconfig/$1.pc" "$cudalib" <<'EOF'
import os, re, sys
path, cudalib = sys.argv[1], sys.argv[2]
env, fields = {"pcfiledir": os.path.dirname(path)}, {}
for line in open(path):
    line = line.split("#", 1)[0].strip()
    if m := re.match(r"^([A-Za-z_][\w.]*)=(.*)$", line): env[m[1]] = m[2].strip()
    elif m := re.match(r"^([A-Za-z.]+):\s*(.*)$", line): fields[m[1]] = m[2]
if cudalib != "/usr/local/cuda/lib64": env["cudalibdir"] = cudalib
expand = lambda s: re.sub(r"\$\{(\w+)\}", lambda m: expand(env[m[1]]), s)
print(expand(fields.get("Cflags", "")), expand(fields.get("Libs", "")))
EOF
  fi
}
static_flags=$(pc_flags ordo-static)
shared_flags=$(pc_flags ordo)
say "pkg-config ordo-static: $static_flags"
say "pkg-config ordo: $shared_flags"
g++ -std=c++17 -O2 -Wall -Wextra -Werror "$work/src/cpp/link_main.cpp" $static_flags -o "$work/build/pc_static"
g++ -std=c++17 -O2 -Wall -Wextra -Werror "$work/src/cpp/link_main.cpp" $shared_flags -o "$work/build/pc_shared"
# With libstdc++ linked statically too (-static-libstdc++, as toolchains that ship only libstdc++.a
# do by default): its personality routine needs the program's DW.ref.__gxx_personality_v0 global.
# (pkg-config's -lstdc++ left out: it would find the shared libstdc++ first.)
g++ -std=c++17 -O2 -Wall -Wextra -Werror "$work/src/cpp/link_main.cpp" ${static_flags//-lstdc++/} -static-libstdc++ \
  -o "$work/build/pc_static_libstdcxx"

# own_kernels.cu with nvcc's command line: compiled once (and once more as the control), linked
# three ways. nvcc -cudart shared links -lcudart: the pip wheels have only libcudart.so.MAJOR, so a
# folder of this run's gives it the name.
gencode=(-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90)
own_src=$work/src/cmake-example/own_kernels.cu
"$nvcc" -std=c++17 -O2 "${gencode[@]}" -I"$pkg/include" -c "$own_src" -o "$work/build/own_kernels.o"
"$nvcc" -std=c++17 -O2 "${gencode[@]}" -I"$pkg/include" -DORDO_NO_KERNEL_RESOLVER -c "$own_src" -o "$work/build/own_kernels_control.o"
cudart_dir=$cudalib
if [ ! -e "$cudalib/libcudart.so" ]; then
  cudart_dir=$work/cudart
  mkdir -p "$cudart_dir"
  ln -s "$cudalib/libcudart.so.$major" "$cudart_dir/libcudart.so"
fi
shared_link=(-L"$pkg/lib" -lordo -Xlinker -rpath -Xlinker "$pkg/lib" -Xlinker -rpath-link -Xlinker "$cudalib" -ldl)
"$nvcc" "$work/build/own_kernels.o" "$pkg/lib/libordo.a" -ldl -lrt -lpthread -lm -o "$work/build/own_static"
"$nvcc" "$work/build/own_kernels.o" "${shared_link[@]}" -o "$work/build/own_shared"
"$nvcc" -cudart shared "$work/build/own_kernels.o" -L"$cudart_dir" "${shared_link[@]}" -o "$work/build/own_shared_cudart"
"$nvcc" "$work/build/own_kernels_control.o" "${shared_link[@]}" -o "$work/build/own_shared_control"

run() {
  echo "--- $*"
  "$@"
}
# A program that exits 77 where there is no CUDA device: on a GPU it must exit with $1 (0: its checks
# passed; 1 for the control), without one with 77 and nothing else.
run_on_device() {
  local want=$1 got=0
  shift
  [ $gpu = 1 ] || want=77
  echo "--- $* (exit $want expected)"
  "$@" || got=$?
  [ "$got" = "$want" ] || { say "FAIL: $(basename "${@: -1}") exited $got, not $want"; exit 1; }
}
ran=0
for p in pc_static pc_shared pc_static_libstdcxx ordo_cpp ordo_cpp_shared; do run env -u LD_LIBRARY_PATH "$work/build/$p"; ran=$((ran + 1)); done
run_on_device 0 env -u LD_LIBRARY_PATH "$work/build/ordo_own_kernels"
run_on_device 0 env -u LD_LIBRARY_PATH "${cuda_env[@]}" "$work/build/ordo_own_kernels_shared"
run_on_device 0 env -u LD_LIBRARY_PATH "$work/build/own_static"
run_on_device 0 env -u LD_LIBRARY_PATH "${cuda_env[@]}" "$work/build/own_shared"
run_on_device 0 env -u LD_LIBRARY_PATH "${cuda_env[@]}" "$work/build/own_shared_cudart"
run_on_device 1 env -u LD_LIBRARY_PATH "${cuda_env[@]}" "$work/build/own_shared_control"
ran=$((ran + 6))
if [ $gpu = 1 ]; then
  run env -u LD_LIBRARY_PATH "$work/build/ordo_example"
  run env -u LD_LIBRARY_PATH "${cuda_env[@]}" "$work/build/ordo_example_shared"
  ran=$((ran + 2))
  own="passed their checks (the control failed, as it must)"
else
  say "no GPU: ordo_example and ordo_example_shared built, not run"
  own="said there is no device (exit 77)"
fi
rm -rf "$work"
say "PASS: 13 programs built against the archive (6 by CMake, 3 with pkg-config, 4 by nvcc), $ran run: the own-kernel ones $own, the others passed their checks"
