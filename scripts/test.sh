#!/usr/bin/env bash
# The test command (README, CI): installs what is missing (scripts/setup.sh), then
#  - checks the formatting (cargo fmt, rustfmt.toml);
#  - builds and tests the whole workspace against CUDA 13.0, with clippy (no unwrap/expect/panic
#    in library code), the docs (warnings denied) and the no_std build of ordo-core;
#  - builds and tests ordo-cuda-sys and ordo-core against CUDA 12.9 and against 12.3, the oldest
#    supported (own target folders, so the builds do not invalidate each other);
#  - compiles the standalone CUDA experiments (benches/experiments);
#  - the toolkit matrix's fast mode (scripts/toolkits.sh --fast --test): the oldest and newest
#    12.x and 13.x from the package index, installed when missing, ordo-cuda-sys and ordo-core
#    tested and the kernels built against each;
#  - the checked-in bindings are what bindgen makes from the newest 12.x and 13.x
#    (scripts/snapshot.sh --check), and serve the oldest release (ordo-cuda-sys tested against
#    12.3 with them, the bindgen feature off);
#  - the documentation as docs.rs builds it: DOCS_RS set, no toolkit, no libclang.
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
step "CUDA 13.0: clippy, workspace"
CUDA_HOME=$CUDA13_HOME cargo clippy --workspace --all-targets --locked -- -D warnings
step "CUDA 13.0: docs, warnings denied"
RUSTDOCFLAGS="-D warnings" CUDA_HOME=$CUDA13_HOME cargo doc --workspace --no-deps --locked
step "CUDA 13.0: ordo-core without std or alloc; the facade without its kernels"
CUDA_HOME=$CUDA13_HOME cargo build -p ordo-core --no-default-features --locked
CUDA_HOME=$CUDA13_HOME cargo build -p ordo --no-default-features --features std --locked
step "CUDA 13.0: tests, workspace"
CUDA_HOME=$CUDA13_HOME cargo test --workspace --locked
step "CUDA 13.0: a C++ program linked with libordo.a and the static CUDA runtime"
CUDA_HOME=$CUDA13_HOME cargo build -p ordo --lib --locked
g++ -std=c++17 -Wall -Wextra -Werror -Iinclude -Iffi-tests/cpp ffi-tests/cpp/link_main.cpp target/debug/libordo.a \
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
step "CUDA 12.9: tests, ordo-cuda-sys and ordo-core"
CUDA_HOME=$CUDA12_HOME CARGO_TARGET_DIR="$PWD/target/cuda-12.9" cargo test -p ordo-cuda-sys -p ordo-core --locked
step "CUDA 12.3, the oldest supported: tests, ordo-cuda-sys and ordo-core (its wheel has no static runtime: linked to libcudart.so)"
CUDA_HOME=$CUDA123_HOME CARGO_TARGET_DIR="$PWD/target/cuda-12.3" LD_LIBRARY_PATH="$CUDA123_HOME/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  cargo test -p ordo-cuda-sys -p ordo-core --features ordo-cuda-sys/shared-cudart --locked
step "CUDA 13.0: the standalone experiments compile (benches/experiments; run on a GPU machine, see each file)"
for f in benches/experiments/*.cu; do
  "$CUDA13_HOME/bin/nvcc" -O2 -arch=sm_90 -c "$f" -o "target/$(basename "$f" .cu).o"
done
step "the toolkit matrix, fast: the oldest and newest 12.x and 13.x (scripts/toolkits.sh --fast --test)"
# This branch's crate names (the script's defaults are the names after the rename).
SYS_PKG=ordo-cuda-sys CORE_PKG=ordo-core KERNELS_PKG=ordo-kernels bash scripts/toolkits.sh --fast --test
step "the checked-in bindings are bindgen's output for the newest 12.x and 13.x (scripts/snapshot.sh --check)"
bash scripts/snapshot.sh --check
step "CUDA 12.3 with the checked-in 12.x bindings (no bindgen): tests, ordo-cuda-sys"
CUDA_HOME=$CUDA123_HOME CARGO_TARGET_DIR="$PWD/target/cuda-12.3" LD_LIBRARY_PATH="$CUDA123_HOME/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  cargo test -p ordo-cuda-sys --no-default-features --features shared-cudart --locked
step "docs as docs.rs builds them: DOCS_RS, no toolkit (none found: an empty cache, nothing on PATH), warnings denied"
mkdir -p target/no-toolkit
env -u CUDA_HOME -u CUDA_PATH DOCS_RS=1 ORDO_CUDA_CACHE="$PWD/target/no-toolkit" PATH="$(dirname "$(command -v cargo)"):/usr/bin:/bin" \
  CARGO_TARGET_DIR="$PWD/target/docs-rs" RUSTDOCFLAGS="-D warnings" cargo doc -p ordo-cuda-sys -p ordo-core --no-deps --locked
