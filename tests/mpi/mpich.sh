#!/bin/sh
# mpich.sh [BUILD]: tycho built against MPICH (Debian's mpich, libmpich-dev,
# installed beside Open MPI) gives the results of one process: a build
# folder of its own (default build-mpich/) configured with MPICH's compiler
# wrapper, the `tycho` target only, then same_bits.lua under mpiexec.mpich at
# -np 2 and 3 (compare.sh: printed hex floats, byte-identical .npy files
# written with MPI-IO), overlap.lua (halos moving while pieces run) and
# misc.sh's cases. Exit 77 (skipped) when MPICH is
# absent; scripts/test runs it when it is there.
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=${1:-$src/build-mpich}
if ! command -v mpicc.mpich >/dev/null 2>&1 || ! command -v mpiexec.mpich >/dev/null 2>&1; then
  echo "skipped: MPICH is not installed (apt-get install mpich libmpich-dev)"
  exit 77
fi
echo "mpich: building $build (MPICH $(mpichversion 2>/dev/null | sed -n 's/MPICH Version: *//p'))"
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DTYCHO_NATIVE=ON -DTYCHO_CUDA=OFF \
  -DTYCHO_MPI=ON -DMPI_C_COMPILER="$(command -v mpicc.mpich)" \
  -DMPIEXEC_EXECUTABLE="$(command -v mpiexec.mpich)" >/dev/null || exit 1
cmake --build "$build" --target tycho -j"${TYCHO_JOBS:-2}" >/dev/null || exit 1
tycho=$build/repl/tycho
if ! ldd "$tycho" | grep -q 'libmpich'; then
  echo "FAIL: $tycho is not linked against MPICH:"
  ldd "$tycho" | grep -i mpi
  exit 1
fi
export TYCHO_MPI_BUILT=1 TYCHO_MPIRUN=mpiexec.mpich
status=0
sh "$here/compare.sh" "$tycho" "$here/same_bits.lua" 2 3 || status=1
TYCHO_CPUS=3 sh "$here/compare.sh" "$tycho" "$here/overlap.lua" 2 3 || status=1 # halos posted (MPI_Isend/Irecv), waited for later
sh "$here/misc.sh" "$tycho" || status=1
[ $status -eq 0 ] && echo "ok: tycho built against MPICH gives the results of one process"
exit $status
