#!/usr/bin/env bash
# Builds ordo's C/C++ package into PREFIX (default: target/package/ordo), as an install tree:
#
#   PREFIX/include/ordo.h, ordo.hpp, ordo/pdl.cuh, ordo/graph.cuh
#   PREFIX/lib/libordo.a                  static library: only the C ABI's ordo_* symbols global
#   PREFIX/lib/libordo.so.MAJOR.MINOR.PATCH, .so.MAJOR (its SONAME), .so
#                                         shared library, linked to libcudart.so (not carrying the
#                                         static runtime: one runtime per process)
#   PREFIX/lib/pkgconfig/ordo.pc, ordo-static.pc
#                                         pkg-config: `pkg-config --cflags --libs ordo` (shared)
#   PREFIX/lib/cmake/ordo/ordoConfig.cmake, ordoConfigVersion.cmake
#                                         find_package(ordo CONFIG): ordo::ordo (static) and
#                                         ordo::ordo_shared; fails on a CUDA major-version mismatch
#
#   bash scripts/package.sh [--debug] [PREFIX]     # from the project root; CUDA_HOME as for cargo
#
# The static library does not bundle the CUDA runtime: the program links one (cudart_static or
# cudart), as nvcc does by default. Built in target/package-build (its own cargo target folder:
# the shared library links the dynamic CUDA runtime, a different build of ordo-cuda-sys).
set -euo pipefail
cd "$(dirname "$0")/.."
profile=release
if [ "${1:-}" = "--debug" ]; then profile=debug; shift; fi
prefix=${1:-target/package/ordo}
build=target/package-build
flags=(--locked -p ordo-cuda-capi --lib --features ordo-cuda-sys/shared-cudart)
[ "$profile" = release ] && flags+=(--release)
CARGO_TARGET_DIR="$PWD/$build" cargo build "${flags[@]}"
out="$build/$profile"
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
major=${version%%.*}
cuda_version=$(sed -n 's/^cargo::metadata=version=//p' "$out"/build/ordo-cuda-sys-*/output | head -n 1)
[ -n "$cuda_version" ] || { echo "package.sh: could not read the CUDA version ordo was built against" >&2; exit 1; }
cuda_major=$((cuda_version / 1000))

rm -rf "$prefix"
mkdir -p "$prefix/include/ordo" "$prefix/lib/pkgconfig" "$prefix/lib/cmake/ordo"
cp capi/include/ordo.h capi/include/ordo.hpp "$prefix/include/"
cp core/include/ordo/pdl.cuh core/include/ordo/graph.cuh "$prefix/include/ordo/"

# The static library, prelinked into one object whose only global definitions are the C ABI's:
# Rust's own symbols (hundreds) and the kernels' host stubs become local, so they can clash with
# nothing in the program. Undefined references (the CUDA runtime, libc, libstdc++) stay.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ld -r --whole-archive "$out/libordo_cuda_capi.a" -o "$work/ordo.o"
# readelf, not nm: binutils' nm hands Rust's objects to an LLVM plugin, which can abort on them.
globals() { readelf -Ws --wide "$1" | awk '($5 == "GLOBAL" || $5 == "WEAK") && $7 != "UND" && $8 != "" { print $8 }' | sort -u; }
globals "$work/ordo.o" | grep '^ordo_' > "$work/keep" || true
[ -s "$work/keep" ] || { echo "package.sh: no ordo_ symbol in libordo.a" >&2; exit 1; }
# Embedded LLVM bitcode (for link-time optimisation from Rust) goes too: binutils' ar and nm hand
# it to the system's LLVM plugin, which may be older than Rust's LLVM and abort on it.
objcopy --keep-global-symbols="$work/keep" --remove-section=.llvmbc --remove-section=.llvmcmd "$work/ordo.o"
rm -f "$prefix/lib/libordo.a"
ar rcs "$prefix/lib/libordo.a" "$work/ordo.o"
left=$(globals "$work/ordo.o" | grep -v '^ordo_' || true)
[ -z "$left" ] || { echo "package.sh: global symbols besides ordo_* left in libordo.a:" >&2; echo "$left" | head -20 >&2; exit 1; }

# The shared library: its SONAME is libordo.so.MAJOR (set by build.rs).
cp "$out/libordo_cuda_capi.so" "$prefix/lib/libordo.so.$version"
ln -sf "libordo.so.$version" "$prefix/lib/libordo.so.$major"
ln -sf "libordo.so.$major" "$prefix/lib/libordo.so"

# pkg-config: ordo (the shared library; the program links the CUDA runtime's libcudart.so it
# needs from the toolkit's lib folder) and ordo-static (the static library; the program adds a CUDA
# runtime, -lcudart_static as nvcc does).
cat > "$prefix/lib/pkgconfig/ordo.pc" <<EOF
prefix=\${pcfiledir}/../..
includedir=\${prefix}/include
libdir=\${prefix}/lib

Name: ordo
Description: Stream-correct CUDA runtime streams, events, memory, launch and graphs (C ABI of ordo, shared; needs libcudart.so.$cuda_major)
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -lordo
EOF
cat > "$prefix/lib/pkgconfig/ordo-static.pc" <<EOF
prefix=\${pcfiledir}/../..
includedir=\${prefix}/include
libdir=\${prefix}/lib

Name: ordo-static
Description: Stream-correct CUDA runtime streams, events, memory, launch and graphs (C ABI of ordo, static; add a CUDA $cuda_major runtime)
Version: $version
Cflags: -I\${includedir}
Libs: \${libdir}/libordo.a -lstdc++ -lpthread -ldl -lrt -lm
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

cat > "$prefix/lib/cmake/ordo/ordoConfig.cmake" <<EOF
# ordo $version, built against CUDA $cuda_version.
#   find_package(ordo CONFIG REQUIRED)
#   target_link_libraries(app PRIVATE ordo::ordo)         # static; links CUDA::cudart_static
#   target_link_libraries(app PRIVATE ordo::ordo_shared)  # shared; links CUDA::cudart
get_filename_component(_ordo_prefix "\${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
set(ordo_CUDA_VERSION $cuda_version)
set(ordo_CUDA_VERSION_MAJOR $cuda_major)
include(CMakeFindDependencyMacro)
find_dependency(CUDAToolkit)
find_dependency(Threads)
if(NOT CUDAToolkit_VERSION_MAJOR EQUAL ordo_CUDA_VERSION_MAJOR)
  set(ordo_FOUND FALSE)
  set(ordo_NOT_FOUND_MESSAGE "ordo $version was built against CUDA $cuda_version (major $cuda_major); this project found CUDA \${CUDAToolkit_VERSION}. Build ordo against the same CUDA major version.")
  return()
endif()
if(NOT TARGET ordo::ordo)
  add_library(ordo::ordo STATIC IMPORTED)
  set_target_properties(ordo::ordo PROPERTIES
    IMPORTED_LOCATION "\${_ordo_prefix}/lib/libordo.a"
    INTERFACE_INCLUDE_DIRECTORIES "\${_ordo_prefix}/include"
    INTERFACE_LINK_LIBRARIES "CUDA::cudart_static;Threads::Threads;\${CMAKE_DL_LIBS};rt;m;stdc++")
  add_library(ordo::ordo_shared SHARED IMPORTED)
  set_target_properties(ordo::ordo_shared PROPERTIES
    IMPORTED_LOCATION "\${_ordo_prefix}/lib/libordo.so.$version"
    IMPORTED_SONAME "libordo.so.$major"
    INTERFACE_INCLUDE_DIRECTORIES "\${_ordo_prefix}/include"
    INTERFACE_LINK_LIBRARIES "CUDA::cudart")
endif()
EOF
echo "package.sh: ordo $version (CUDA $cuda_version) in $prefix"
