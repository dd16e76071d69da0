#!/usr/bin/env bash
# The test command (README, CI): installs what is missing (scripts/setup.sh), then
#  - checks the formatting (cargo fmt, rustfmt.toml);
#  - builds and tests the whole workspace against CUDA 13.0, with clippy (no unwrap/expect/panic
#    in library code), the docs (warnings denied) and the no_std build of ordo-cuda-core;
#  - builds and tests ordo-cuda-sys and ordo-cuda-core against CUDA 12.9 and against 12.3, the oldest
#    supported (own target folders, so the builds do not invalidate each other);
#  - compiles the standalone CUDA experiments (benches/experiments).
# GPU tests are ignored on machines without an NVIDIA device; on one, they run.
set -euo pipefail
cd "$(dirname "$0")/.."
homes=$(bash scripts/setup.sh)
CUDA13_HOME=$(printf '%s\n' "$homes" | sed -n 's/^CUDA13_HOME=//p')
CUDA12_HOME=$(printf '%s\n' "$homes" | sed -n 's/^CUDA12_HOME=//p')
CUDA123_HOME=$(printf '%s\n' "$homes" | sed -n 's/^CUDA123_HOME=//p')

step() { printf '\n=== %s\n' "$*"; }

step "formatting (rustfmt.toml)"
cargo fmt --all --check
step "CUDA 13.0: clippy, workspace, the facade with every feature"
CUDA_HOME=$CUDA13_HOME cargo clippy --workspace --all-targets --features ordo-cuda/full --locked -- -D warnings
step "CUDA 13.0: docs, warnings denied"
RUSTDOCFLAGS="-D warnings" CUDA_HOME=$CUDA13_HOME cargo doc --workspace --features ordo-cuda/full --no-deps --locked
step "CUDA 13.0: ordo-cuda-core without std or alloc; the facade with its default features only"
CUDA_HOME=$CUDA13_HOME cargo build -p ordo-cuda-core --no-default-features --locked
CUDA_HOME=$CUDA13_HOME cargo build -p ordo-cuda --locked
step "CUDA 13.0: tests, workspace, the facade with every feature"
CUDA_HOME=$CUDA13_HOME cargo test --workspace --features ordo-cuda/full --locked
step "CUDA 13.0: a C++ program linked with the C ABI's static library and the static CUDA runtime"
CUDA_HOME=$CUDA13_HOME cargo build -p ordo-cuda-capi --lib --locked
g++ -std=c++17 -Wall -Wextra -Werror -Icapi/include -Iffi-tests/cpp ffi-tests/cpp/link_main.cpp target/debug/libordo_cuda_capi.a \
  -L"$CUDA13_HOME/lib" -lcudart_static -lpthread -ldl -lrt -lm -o target/ffi-link-check
target/ffi-link-check
step "CUDA 13.0: the C/C++ package (scripts/package.sh): only ordo_* exported, SONAME, programs linked through pkg-config"
CUDA_HOME=$CUDA13_HOME bash scripts/package.sh --debug target/package/ordo
pkg=target/package/ordo
leaked=$(readelf -Ws --wide "$pkg/lib/libordo.a" | awk '($5 == "GLOBAL" || $5 == "WEAK") && $7 != "UND" && $8 != "" { print $8 }' | grep -v '^ordo_' || true)
[ -z "$leaked" ] || { echo "libordo.a exports more than ordo_*: $leaked" | head -5; exit 1; }
readelf -d "$pkg/lib/libordo.so" | grep -q 'SONAME.*\[libordo.so.0\]' || { echo "libordo.so: no SONAME libordo.so.0"; exit 1; }
readelf -d "$pkg/lib/libordo.so" | grep -q 'NEEDED.*libcudart.so' || { echo "libordo.so is not linked to libcudart.so"; exit 1; }
g++ -std=c++17 -Wall -Wextra -Werror -Iffi-tests/cpp ffi-tests/cpp/link_main.cpp \
  $(PKG_CONFIG_PATH=$pkg/lib/pkgconfig pkg-config --cflags --libs ordo-static) -L"$CUDA13_HOME/lib" -lcudart_static \
  -o target/package-static-check
target/package-static-check
g++ -std=c++17 -Wall -Wextra -Werror -Iffi-tests/cpp ffi-tests/cpp/link_main.cpp \
  $(PKG_CONFIG_PATH=$pkg/lib/pkgconfig pkg-config --cflags --libs ordo) -Wl,-rpath-link,"$CUDA13_HOME/lib" \
  -o target/package-shared-check
LD_LIBRARY_PATH="$pkg/lib:$CUDA13_HOME/lib" target/package-shared-check
step "CUDA 12.9: tests, ordo-cuda-sys and ordo-cuda-core"
CUDA_HOME=$CUDA12_HOME CARGO_TARGET_DIR="$PWD/target/cuda-12.9" cargo test -p ordo-cuda-sys -p ordo-cuda-core --locked
step "CUDA 12.3, the oldest supported: tests, ordo-cuda-sys and ordo-cuda-core (its wheel has no static runtime: linked to libcudart.so)"
CUDA_HOME=$CUDA123_HOME CARGO_TARGET_DIR="$PWD/target/cuda-12.3" LD_LIBRARY_PATH="$CUDA123_HOME/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  cargo test -p ordo-cuda-sys -p ordo-cuda-core --features ordo-cuda-sys/shared-cudart --locked
step "CUDA 13.0: the standalone experiments compile (benches/experiments; run on a GPU machine, see each file)"
for f in benches/experiments/*.cu; do
  "$CUDA13_HOME/bin/nvcc" -O2 -arch=sm_90 -c "$f" -o "target/$(basename "$f" .cu).o"
done
step "NCCL and NVRTC releases loaded without a GPU: the oldest and newest NCCL, every NVRTC 13.x (scripts/lib-versions.sh)"
CUDA_HOME=$CUDA13_HOME bash scripts/lib-versions.sh
