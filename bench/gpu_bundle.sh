#!/usr/bin/env bash
# bench/gpu_bundle.sh — build here what bench/gpu_check.sh runs, for a GPU
# machine that cannot install tycho's Debian packages (a lent node with CUDA
# but no Lua, OpenBLAS, LAPACKE, SLEEF or readline, and no network).
#
#   1. configures and builds build-gpu-check with CUDA (sm_90 + PTX) and
#      without MPI (the bundle would need Open MPI's whole tree);
#   2. packs into build-gpu-bundle/bundle.tar.xz (about 20 MB) what
#      gpu_check.sh --prebuilt runs: the shell, the GPU benchmark, the GPU
#      tests and their fake driver library (stripped), ctest's files,
#      busted with its Lua modules (lua-deps/), and in build-gpu-check/libs the shared
#      libraries they load that are not part of every Linux (glibc, libstdc++
#      and libgcc_s stay: the target's own, newer ones serve).
#
# Then, on the GPU machine, in a copy of this tree:
#
#   tar xJf build-gpu-bundle/bundle.tar.xz
#   bench/gpu_check.sh --prebuilt build-gpu-check
#
# The build's paths are absolute: run it from the same path as here (a
# symbolic link to the copy will do), since ctest and the shell find their
# files through them. Usage: bench/gpu_bundle.sh [build-dir]
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build-gpu-check}
JOBS=$(nproc 2>/dev/null || echo 2)

command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ] ||
  { echo "gpu_bundle: nvcc not found: the bundle would have no CUDA kernels" >&2; exit 2; }
mkdir -p "$BUILD"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DTYCHO_CUDA=ON -DTYCHO_MPI=OFF >"$BUILD/configure.log" 2>&1 ||
  { tail -20 "$BUILD/configure.log"; exit 1; }
grep -q "tycho: CUDA kernels with" "$BUILD/configure.log" ||
  { echo "gpu_bundle: the configure left the CUDA kernels out ($BUILD/configure.log)" >&2; exit 1; }
cmake --build "$BUILD" -j"$JOBS"

# what gpu_check.sh --prebuilt runs: the shell, the GPU benchmark, the GPU
# tests and ctest's files, stripped, in their places under the build dir
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
NAME=$(basename "$BUILD")
S=$STAGE/$NAME
(cd "$BUILD" && find . -name CTestTestfile.cmake -o -name CMakeCache.txt) | while read -r f; do
  mkdir -p "$S/$(dirname "$f")" && cp "$BUILD/$f" "$S/$f"
done
ship=(repl/tycho runtime/src/cuda/tycho_gpu_bench)
for t in "$BUILD"/tests/test_gpu_* "$BUILD"/tests/*.so; do ship+=("tests/$(basename "$t")"); done
for f in "${ship[@]}"; do
  mkdir -p "$S/$(dirname "$f")" && strip -o "$S/$f" "$BUILD/$f"
done
# the libraries they load, except those that every Linux has in a newer
# version anyway (glibc's, libstdc++, libgcc_s): gpu_check.sh --prebuilt
# uses these only where the machine lacks the same soname
mkdir -p "$S/libs"
(cd "$BUILD" && ldd "${ship[@]}") | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u |
  grep -Ev '/(libc|libm|libmvec|libdl|librt|libpthread|libstdc\+\+|libgcc_s|ld-linux-x86-64|libresolv)\.so' |
  while read -r lib; do cp -L "$lib" "$S/libs/"; done
# busted and the Lua modules it needs (lua-busted's packages), for the specs
# that gpu_check.sh runs on the GPU (step 8), and the Lua module tycho.so
# that some specs load
mkdir -p "$S/lua" && cp "$BUILD/lua/tycho.so" "$S/lua/"
if command -v busted >/dev/null 2>&1; then
  mkdir -p "$S/lua-deps/share" "$S/lua-deps/lib"
  cp -L "$(command -v busted)" "$S/lua-deps/busted"
  cp -rL /usr/share/lua/5.4/. "$S/lua-deps/share/"
  cp -rL "/usr/lib/$(gcc -dumpmachine)/lua/5.4/." "$S/lua-deps/lib/"
else
  echo "gpu_bundle: no busted here: gpu_check.sh will skip the specs on the GPU (step 8)"
fi
mkdir -p "$ROOT/build-gpu-bundle"
tar -C "$STAGE" -cJf "$ROOT/build-gpu-bundle/bundle.tar.xz" "$NAME"
echo "gpu_bundle: $ROOT/build-gpu-bundle/bundle.tar.xz ($(du -h "$ROOT/build-gpu-bundle/bundle.tar.xz" | cut -f1)); libraries:"
ls "$S/libs" | sed 's/^/  /'
