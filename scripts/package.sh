#!/usr/bin/env bash
# Builds ordo's C/C++ package: a relocatable archive that a C or C++ project uses with no Rust, no
# libclang and no nvcc of ordo's (its own CUDA toolkit of the same major version suffices).
#
#   bash scripts/package.sh [--debug] [OUT]
#
# OUT (default: $CARGO_TARGET_DIR/dist, or target/dist) receives, NAME being
# ordo-VERSION-linux-ARCH-cudaMAJOR:
#   OUT/NAME/          the package, ready to use where it lies
#   OUT/NAME.tar.gz    the same folder as one archive, to unpack anywhere
# The last line printed is the archive's path. Cargo builds in $CARGO_TARGET_DIR/package-build (or
# target/package-build): a target folder of its own, since the shared library links the dynamic
# CUDA runtime (another build of ordo-cuda-sys than the workspace's). CUDA_HOME as for cargo.
#
# The package:
#   include/ordo.h, ordo.hpp, ordo/pdl.cuh, ordo/graph.cuh
#   lib/libordo.a            static library, prelinked: only the C ABI's ordo_* symbols global. It
#                            does not carry the CUDA runtime: the program links one (one runtime a
#                            process), as nvcc does by default
#   lib/libordo.so.VERSION, .so.MAJOR (its SONAME), .so
#                            shared library, linked to libcudart.so.CUDA_MAJOR
#   lib/cmake/ordo/          find_package(ordo CONFIG): ordo::ordo (static), ordo::ordo_shared
#   lib/pkgconfig/           ordo.pc (shared), ordo-static.pc
#   share/doc/ordo/          README, LICENSE-MIT, LICENSE-APACHE
# Nothing in it names a folder of the machine that built it: the CMake and pkg-config files find
# the package relative to themselves, and the CUDA runtime on the machine that uses it.
set -euo pipefail
profile=release
if [ "${1:-}" = "--debug" ]; then profile=debug; shift; fi
# Relative folders are the caller's: resolved before leaving the caller's folder.
absolute() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
[ -n "${1:-}" ] && out_dir=$(absolute "$1")
[ -n "${CARGO_TARGET_DIR:-}" ] && target=$(absolute "$CARGO_TARGET_DIR")
cd "$(dirname "$0")/.."
root=$PWD
target=${target:-$root/target}
out_dir=${out_dir:-$target/dist}
build=$target/package-build

flags=(--locked -p ordo-cuda-capi --lib --features ordo-cuda-sys/shared-cudart)
[ "$profile" = release ] && flags+=(--release)
CARGO_TARGET_DIR=$build cargo build "${flags[@]}"
out=$build/$profile
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
major=${version%%.*}
# The CUDA version this build of ordo-cuda-sys found (the newest build script output, should an
# older toolkit's be left in the folder).
sys_output=$(ls -t "$out"/build/ordo-cuda-sys-*/output 2>/dev/null | head -n 1 || true)
cuda_version=$([ -n "$sys_output" ] && sed -n 's/^cargo::metadata=version=//p' "$sys_output" | head -n 1 || true)
[ -n "$cuda_version" ] || { echo "package.sh: could not read the CUDA version ordo was built against" >&2; exit 1; }
cuda_major=$((cuda_version / 1000))
cuda_text="$cuda_major.$(((cuda_version % 1000) / 10))"
name=ordo-$version-linux-$(uname -m)-cuda$cuda_major
prefix=$out_dir/$name

rm -rf "$prefix" "$out_dir/$name.tar.gz"
mkdir -p "$prefix/include/ordo" "$prefix/lib/pkgconfig" "$prefix/lib/cmake/ordo" "$prefix/share/doc/ordo"
cp capi/include/ordo.h capi/include/ordo.hpp "$prefix/include/"
cp core/include/ordo/pdl.cuh core/include/ordo/graph.cuh "$prefix/include/ordo/"
cp -L LICENSE-MIT LICENSE-APACHE "$prefix/share/doc/ordo/"

# The static library, prelinked into one object whose only global definitions are the C ABI's
# (and the hidden DW.ref.* below):
# Rust's own symbols (hundreds) and the kernels' host stubs become local, so they can clash with
# nothing in the program. Undefined references (the CUDA runtime, libc, libstdc++) stay.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ld -r --whole-archive "$out/libordo_cuda_capi.a" -o "$work/ordo.o"
# readelf, not nm: binutils' nm hands Rust's objects to an LLVM plugin, which can abort on them.
globals() { readelf -Ws --wide "$1" | awk '($5 == "GLOBAL" || $5 == "WEAK") && $7 != "UND" && $8 != "" { print $8 }' | sort -u; }
globals "$work/ordo.o" | grep '^ordo_' > "$work/keep" || true
[ -s "$work/keep" ] || { echo "package.sh: no ordo_ symbol in libordo.a" >&2; exit 1; }
# The personality routines' DWARF references (DW.ref.__gxx_personality_v0, weak and hidden: they
# leave no object file) stay global: libstdc++.a's eh_personality.o refers to the one the program's
# objects define, and a program linked with a static libstdc++ (-static-libstdc++, or a toolchain
# that ships only libstdc++.a) failed to link when ordo's had become local.
globals "$work/ordo.o" | grep '^DW\.ref\.' >> "$work/keep" || true
# Embedded LLVM bitcode (for link-time optimisation from Rust) goes too: binutils' ar and nm hand
# it to the system's LLVM plugin, which may be older than Rust's LLVM and abort on it.
objcopy --keep-global-symbols="$work/keep" --remove-section=.llvmbc --remove-section=.llvmcmd "$work/ordo.o"
ar rcs "$prefix/lib/libordo.a" "$work/ordo.o"
left=$(globals "$work/ordo.o" | grep -v '^ordo_\|^DW\.ref\.' || true)
[ -z "$left" ] || { echo "package.sh: global symbols besides ordo_* left in libordo.a:" >&2; echo "$left" | head -20 >&2; exit 1; }

# The shared library: its SONAME is libordo.so.MAJOR (set by capi/build.rs).
cp "$out/libordo_cuda_capi.so" "$prefix/lib/libordo.so.$version"
ln -sf "libordo.so.$version" "$prefix/lib/libordo.so.$major"
ln -sf "libordo.so.$major" "$prefix/lib/libordo.so"

# pkg-config. Both files link on their own: they name the CUDA runtime too, from `cudalibdir`,
# NVIDIA's default install folder unless given (`pkg-config --define-variable=cudalibdir=DIR`), by
# file name (the pip wheels have libcudart.so.MAJOR and no libcudart.so). The shared one records
# both folders as the program's run path and keeps the program's own link to libcudart.so.MAJOR
# (which --as-needed would drop when only libordo.so calls it: the loader would then look for it
# without the program's run path), so the program runs with no LD_LIBRARY_PATH.
cat > "$prefix/lib/pkgconfig/ordo.pc" <<EOF
prefix=\${pcfiledir}/../..
includedir=\${prefix}/include
libdir=\${prefix}/lib
# The CUDA $cuda_major runtime's folder (libcudart.so.$cuda_major): --define-variable=cudalibdir=DIR for another.
cudalibdir=/usr/local/cuda/lib64

Name: ordo
Description: Stream-correct CUDA runtime streams, events, memory, launch and graphs (ordo's C ABI, shared library; built against CUDA $cuda_text)
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -lordo -Wl,-rpath,\${libdir} -L\${cudalibdir} -Wl,--push-state,--no-as-needed -l:libcudart.so.$cuda_major -Wl,--pop-state -Wl,-rpath,\${cudalibdir}
EOF
cat > "$prefix/lib/pkgconfig/ordo-static.pc" <<EOF
prefix=\${pcfiledir}/../..
includedir=\${prefix}/include
libdir=\${prefix}/lib
# The CUDA $cuda_major runtime's folder (libcudart_static.a): --define-variable=cudalibdir=DIR for another.
cudalibdir=/usr/local/cuda/lib64

Name: ordo-static
Description: Stream-correct CUDA runtime streams, events, memory, launch and graphs (ordo's C ABI, static library; built against CUDA $cuda_text)
Version: $version
Cflags: -I\${includedir}
Libs: \${libdir}/libordo.a -L\${cudalibdir} -lcudart_static -lstdc++ -lpthread -ldl -lrt -lm
EOF

cat > "$prefix/lib/cmake/ordo/ordoConfigVersion.cmake" <<EOF
# 0.x: any version may change the ABI, so only the same version is compatible; from 1.0 on, the
# same major version at least as new as the one asked for.
set(PACKAGE_VERSION "$version")
if(NOT PACKAGE_FIND_VERSION OR PACKAGE_FIND_VERSION VERSION_EQUAL PACKAGE_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
elseif("$major" STREQUAL "0" OR PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION
       OR NOT PACKAGE_FIND_VERSION_MAJOR STREQUAL "$major")
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
endif()
EOF

sed -e "s/@VERSION@/$version/g" -e "s/@MAJOR@/$major/g" -e "s/@CUDA_VERSION@/$cuda_version/g" \
  -e "s/@CUDA_MAJOR@/$cuda_major/g" -e "s/@CUDA_TEXT@/$cuda_text/g" scripts/ordoConfig.cmake.in \
  > "$prefix/lib/cmake/ordo/ordoConfig.cmake"

cat > "$prefix/share/doc/ordo/README" <<EOF
ordo $version: the C ABI of ordo (https://crates.io/crates/ordo-cuda), built against CUDA $cuda_text
for Linux $(uname -m). Use it with a CUDA $cuda_major toolkit or runtime.

CMake:       find_package(ordo $version CONFIG REQUIRED) with this folder in CMAKE_PREFIX_PATH, then
             target_link_libraries(app PRIVATE ordo::ordo)   (static; or ordo::ordo_shared).
             The CUDA runtime is found beside the project's CUDA compiler, in CUDAToolkit_ROOT,
             CUDA_HOME or CUDA_PATH, beside nvcc on PATH, or in /usr/local/cuda; set
             ordo_CUDART_STATIC / ordo_CUDART_SHARED to name the files yourself.
pkg-config:  PKG_CONFIG_PATH=<this folder>/lib/pkgconfig pkg-config --cflags --libs ordo
             (or ordo-static); add --define-variable=cudalibdir=DIR when the CUDA runtime is not
             in /usr/local/cuda/lib64.
Headers:     include/ordo.h (C99), include/ordo.hpp (C++17), include/ordo/pdl.cuh and
             include/ordo/graph.cuh for your own kernels.
Your kernels: include cuda_runtime.h before ordo.h where you pass them to ordo_launch_kernel or
             ordo_pdl_plan_launch (every .cu file does): ordo then finds them in every link,
             libordo.so beside the program's own static CUDA runtime included (ordo.h, "LINKING
             AND YOUR OWN KERNELS").

Licensed under either of the Apache License, Version 2.0 (LICENSE-APACHE) or the MIT license
(LICENSE-MIT), at your option.
EOF

# Nothing of this machine's folders in the package's text files.
local_dirs=(-e "$root" -e "$target")
[ -n "${CUDA_HOME:-}" ] && local_dirs+=(-e "$CUDA_HOME")
[ "${#HOME}" -gt 1 ] && local_dirs+=(-e "$HOME")
if grep -rlF "${local_dirs[@]}" "$prefix/lib/cmake" "$prefix/lib/pkgconfig" "$prefix/share"; then
  echo "package.sh: the files above name a folder of this machine" >&2
  exit 1
fi

tar -C "$out_dir" --owner=0 --group=0 --numeric-owner -czf "$out_dir/$name.tar.gz" "$name"
echo "package.sh: ordo $version (CUDA $cuda_text) in $prefix"
echo "$out_dir/$name.tar.gz"
