#!/usr/bin/env bash
# The test command (README, CI): installs what is missing (scripts/setup.sh), then
#  - checks the formatting (cargo fmt, rustfmt.toml);
#  - builds and tests the whole workspace against CUDA 13.0, with clippy (no unwrap/expect/panic
#    in library code), the docs (warnings denied: the workspace with every feature, and the
#    published crates with their default features) and the no_std build of ordo-cuda-core;
#  - builds and tests the C ABI without its kernels and NCCL features (its exports unchanged);
#  - compiles the standalone CUDA experiments (benches/experiments);
#  - packages every published crate and verifies each on its own, as crates.io would build it, then
#    builds a crate outside the workspace on the packaged crates (its own .cu through
#    ordo-cuda-core's build metadata);
#  - builds the C/C++ archive (scripts/package.sh) and uses it as a C++ team would
#    (scripts/cpp-package-test.sh: CMake and pkg-config, static and shared, outside the checkout);
#  - loads the oldest and newest NCCL and every NVRTC 13.x without a GPU (scripts/lib-versions.sh);
#  - the toolkit matrix's fast mode (scripts/toolkits.sh --fast --test): the oldest and newest
#    12.x and 13.x from the package index, installed when missing, ordo-cuda-sys and
#    ordo-cuda-core tested and the kernels built and their CPU tests run against each that ships
#    nvcc (13.x; cuobjdump installed beside it);
#  - the checked-in bindings are what bindgen makes from the newest 12.x and 13.x
#    (scripts/snapshot.sh --check), and serve the oldest release (ordo-cuda-sys tested against
#    12.3 with them, the bindgen feature off);
#  - the documentation of every published crate as docs.rs builds it: DOCS_RS set, no toolkit;
#    the same for a crate that compiles its own .cu (examples/user-kernel); with a nightly
#    toolchain installed, also with the feature badges docs.rs shows (--cfg ordo_doc_cfg).
# GPU tests are ignored on machines without an NVIDIA device; on one, they run.
set -euo pipefail
cd "$(dirname "$0")/.."
homes=$(bash scripts/setup.sh)
CUDA13_HOME=$(printf '%s\n' "$homes" | sed -n 's/^CUDA13_HOME=//p')
CUDA123_HOME=$(printf '%s\n' "$homes" | sed -n 's/^CUDA123_HOME=//p')

step() { printf '\n=== %s\n' "$*"; }

step "formatting (rustfmt.toml)"
cargo fmt --all --check
step "CUDA 13.0: clippy, workspace, the facade with every feature"
CUDA_HOME=$CUDA13_HOME cargo clippy --workspace --all-targets --features ordo-cuda/full --locked -- -D warnings
step "CUDA 13.0: docs, warnings denied: the workspace with every feature, the published crates with their default features"
RUSTDOCFLAGS="-D warnings" CUDA_HOME=$CUDA13_HOME cargo doc --workspace --features ordo-cuda/full --no-deps --locked
# Selected together, none of these turns on a feature of another that its defaults leave off (the
# facade without kernels, nccl, nvrtc, cublas: its links to them must still resolve).
RUSTDOCFLAGS="-D warnings" CUDA_HOME=$CUDA13_HOME cargo doc -p ordo-cuda-sys -p ordo-cuda-core -p ordo-cuda-kernels \
  -p ordo-cuda-libs -p ordo-cuda-capi -p ordo-cuda-measure -p ordo-cuda --no-deps --locked
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
step "CUDA 13.0: the C ABI without its features (kernels, nccl): built without nvcc-built code, the same exports as the default build, each missing one refusing by name"
CUDA_HOME=$CUDA13_HOME CARGO_TARGET_DIR="$PWD/target/capi-minimal" cargo test -p ordo-cuda-capi --no-default-features --lib --locked
CUDA_HOME=$CUDA13_HOME CARGO_TARGET_DIR="$PWD/target/capi-minimal" cargo build -p ordo-cuda-capi --no-default-features --lib --locked
if cargo tree -p ordo-cuda-capi --no-default-features -e normal --locked | grep -q 'ordo-cuda-kernels\|ordo-cuda-libs'; then
  echo "ordo-cuda-capi --no-default-features still depends on the kernels or the run-time libraries"; exit 1
fi
ordo_exports() { readelf -Ws --wide "$1" | awk '$5 == "GLOBAL" && $7 != "UND" && $8 ~ /^ordo_/ { print $8 }' | sort -u; }
diff <(ordo_exports target/debug/libordo_cuda_capi.a) <(ordo_exports target/capi-minimal/debug/libordo_cuda_capi.a) \
  || { echo "the C ABI's exports differ with and without its features (ffi-tests/tests/abi.rs checks them against ordo.h)"; exit 1; }
g++ -std=c++17 -Wall -Wextra -Werror -Icapi/include -Iffi-tests/cpp ffi-tests/cpp/link_main.cpp target/capi-minimal/debug/libordo_cuda_capi.a \
  -L"$CUDA13_HOME/lib" -lcudart_static -lpthread -ldl -lrt -lm -o target/ffi-link-check-minimal
step "CUDA 13.0: the C/C++ archive (scripts/package.sh): only ordo_* exported, SONAME; used with CMake and pkg-config outside the checkout"
archive=$(CUDA_HOME=$CUDA13_HOME bash scripts/package.sh --debug target/dist | tail -n 1)
pkg=${archive%.tar.gz}
leaked=$(readelf -Ws --wide "$pkg/lib/libordo.a" | awk '($5 == "GLOBAL" || $5 == "WEAK") && $7 != "UND" && $8 != "" && $6 != "HIDDEN" { print $8 }' | grep -v '^ordo_' || true)
[ -z "$leaked" ] || { echo "libordo.a exports more than ordo_*: $leaked" | head -5; exit 1; }
readelf -d "$pkg/lib/libordo.so" | grep -q 'SONAME.*\[libordo.so.0\]' || { echo "libordo.so: no SONAME libordo.so.0"; exit 1; }
readelf -d "$pkg/lib/libordo.so" | grep -q 'NEEDED.*libcudart.so' || { echo "libordo.so is not linked to libcudart.so"; exit 1; }
! readelf -d "$pkg/lib/libordo.so" | grep -q 'RPATH\|RUNPATH' || { echo "libordo.so has a run path of this machine"; exit 1; }
CUDA_HOME=$CUDA13_HOME bash scripts/cpp-package-test.sh "$archive"
step "CUDA 13.0: the README's C++ example as printed, built against the archive (static and shared)"
CUDA_HOME=$CUDA13_HOME bash scripts/readme-cpp.sh "$archive"
step "CUDA 13.0: the standalone experiments compile (benches/experiments; run on a GPU machine, see each file)"
for f in benches/experiments/*.cu; do
  "$CUDA13_HOME/bin/nvcc" -O2 -arch=sm_90 -c "$f" -o "target/$(basename "$f" .cu).o"
done
step "crates.io: every published crate packaged and verified on its own, in dependency order"
published=(ordo-cuda-sys ordo-cuda-core ordo-cuda-kernels ordo-cuda-libs ordo-cuda-capi ordo-cuda-measure ordo-cuda)
# Verification unpacks each package from a local registry (target/package-verify/package/tmp-registry) into
# cargo's source cache, under a folder named for that registry's path, and reuses a folder already
# there: an earlier run's packages of the same version would be built instead of this run's. Only
# ordo's own packages from such local registries (folders named "-HASH") are removed.
for d in "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/; do
  for p in "${published[@]}"; do rm -rf "$d$p-"*; done
done
# Verified in a target folder of its own, emptied first: cargo takes a registry package as never
# changing, so an earlier run's build of ordo-cuda-core 0.1.0 would stand in for this run's.
rm -rf target/package-verify
CUDA_HOME=$CUDA13_HOME CARGO_TARGET_DIR="$PWD/target/package-verify" cargo package --workspace --exclude ordo-ffi-tests \
  --exclude ordo-benches --exclude ordo-example-user-kernel --allow-dirty --locked
for p in "${published[@]}"; do
  files=$(cargo package -p "$p" --list --allow-dirty --locked 2>/dev/null)
  for f in LICENSE-MIT LICENSE-APACHE README.md; do
    grep -qx "$f" <<<"$files" || { echo "$p: the package has no $f"; exit 1; }
  done
  ! grep -E '^(\.ci|scripts|benches|ffi-tests|experiments|target)/' <<<"$files" || { echo "$p: the package holds the files above"; exit 1; }
done
cargo metadata --no-deps --format-version 1 --locked | python3 -c '
import json, sys
for p in json.load(sys.stdin)["packages"]:
    if p["publish"] == []:
        continue
    keys = ("description", "license", "documentation", "readme", "rust_version", "keywords", "categories")
    missing = [k for k in keys if not p.get(k)]
    name, version, license, rust, docs = (p[k] for k in ("name", "version", "license", "rust_version", "documentation"))
    if missing or "example.invalid" in json.dumps(p):
        sys.exit(f"{name}: no {missing} in its metadata, or a placeholder")
    print(f"{name} {version}: {license}, rust {rust}, {docs}")
'
step "crates outside the workspace on the packaged crates: their own .cu compiled with ordo-cuda-core's build metadata, and the facade's"
# examples/embedder/ordo (on ordo-cuda-core) and examples/embedder/facade (on ordo-cuda) in a fresh
# folder, ordo's crates as from crates.io, patched to the packages verified above; resolved from
# the registry cache (--offline).
repo=$PWD
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
outside=$(mktemp -d "${TMPDIR:-/tmp}/ordo-outside.XXXXXX")
cp -r examples/embedder/. "$outside/"
patched() { for p in "$@"; do printf -- '--config\npatch.crates-io.%s.path="%s"\n' "$p" "$repo/target/package-verify/package/$p-$version"; done; }
for app in "ordo ordo-cuda-sys ordo-cuda-core" "facade ordo-cuda-sys ordo-cuda-core ordo-cuda"; do
  set -- $app
  mapfile -t patches < <(patched "${@:2}")
  (cd "$outside/$1" && CUDA_HOME=$CUDA13_HOME CARGO_TARGET_DIR="$repo/target/outside-crate" cargo build --offline "${patches[@]}")
done
rm -rf "$outside"
step "NCCL and NVRTC releases loaded without a GPU: the oldest and newest NCCL, every NVRTC 13.x (scripts/lib-versions.sh)"
CUDA_HOME=$CUDA13_HOME bash scripts/lib-versions.sh
step "the toolkit matrix, fast: the oldest and newest 12.x and 13.x (scripts/toolkits.sh --fast --test)"
bash scripts/toolkits.sh --fast --test
step "the checked-in bindings are bindgen's output for the newest 12.x and 13.x (scripts/snapshot.sh --check)"
bash scripts/snapshot.sh --check
step "CUDA 12.3 with the checked-in 12.x bindings (no bindgen): tests, ordo-cuda-sys"
CUDA_HOME=$CUDA123_HOME CARGO_TARGET_DIR="$PWD/target/cuda-12.3" LD_LIBRARY_PATH="$CUDA123_HOME/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  cargo test -p ordo-cuda-sys --no-default-features --features shared-cudart --locked
step "docs as docs.rs builds them: DOCS_RS, no toolkit (none found: an empty cache, nothing on PATH), no nvcc, warnings denied"
mkdir -p target/no-toolkit
# Runs its arguments (NAME=VALUE settings first, as env takes them) where docs.rs builds: DOCS_RS set,
# no toolkit to be found.
docs_rs() {
  env -u CUDA_HOME -u CUDA_PATH DOCS_RS=1 ORDO_CUDA_CACHE="$PWD/target/no-toolkit" PATH="$(dirname "$(command -v cargo)"):/usr/bin:/bin" \
    CARGO_TARGET_DIR="$PWD/target/docs-rs" "$@"
}
mapfile -t docs_rs_crates < <(printf -- '-p\n%s\n' "${published[@]}")
docs_rs RUSTDOCFLAGS="-D warnings --cfg docsrs" cargo doc "${docs_rs_crates[@]}" --features ordo-cuda/full --no-deps --locked
# A crate that compiles its own .cu with the nvcc ordo publishes (examples/user-kernel): with DOCS_RS
# its build script compiles nothing, as ordo-cuda-core's docs (docs::user_kernels) tell such a crate to.
docs_rs RUSTDOCFLAGS="-D warnings --cfg docsrs" cargo doc -p ordo-example-user-kernel --no-deps --locked
# The feature badges: docs.rs's rustdoc is nightly and is also given --cfg ordo_doc_cfg
# ([package.metadata.docs.rs]), which turns on the unstable `doc_cfg` (stable rustdoc refuses it, so
# `--cfg docsrs` alone turns on nothing unstable). Checked where a nightly toolchain is installed,
# warnings allowed (a new nightly may bring new lints).
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  docs_rs CARGO_TARGET_DIR="$PWD/target/docs-rs-nightly" RUSTDOCFLAGS="--cfg docsrs --cfg ordo_doc_cfg" \
    cargo +nightly doc "${docs_rs_crates[@]}" --features ordo-cuda/full --no-deps --locked
else
  echo "no nightly toolchain: the feature badges (--cfg ordo_doc_cfg) are not checked"
fi
