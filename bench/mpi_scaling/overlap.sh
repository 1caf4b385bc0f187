#!/bin/sh
# overlap.sh [TYCHO] [REPS] [CPUS]: stencil.lua at np=2 (5793 x 5793, 10
# iterations, CPUS processors per rank, default 2) with the halo exchange
# posted while the pieces that read no halo run (the default) and blocking
# before the pieces (TYCHO_MPI_OVERLAP=0), in alternation (A B A B ...);
# prints each one's median time, rank 0's seconds in MPI calls per
# iteration and the pieces it ran while halos moved. Not a test. At --cpus
# 1 a rank holds one piece, which reads halos: nothing overlaps; at 2 each
# edge rank's outer piece does; from 3 every rank's middle pieces do.
set -u
here=$(cd "$(dirname "$0")" && pwd)
tycho=${1:-$here/../../build/repl/tycho}
reps=${2:-5}
cpus=${3:-2}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
export OMP_WAIT_POLICY=passive OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle:-1}
MPIRUN="mpirun --oversubscribe --bind-to none"
tmp=$(mktemp -d /tmp/tycho-overlap.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
field() { sed -n "s|.* $1=\([^ ]*\).*|\1|p"; }

echo "stencil np=2 --cpus $cpus, $reps runs each in alternation, medians; load: $(cut -d' ' -f1-3 /proc/loadavg), $(getconf _NPROCESSORS_ONLN) cores"
for _ in $(seq "$reps"); do
  for v in 1 0; do
    TYCHO_MPI_OVERLAP=$v timeout 300 $MPIRUN -np 2 "$tycho" --cpus "$cpus" "$here/stencil.lua" n=5793 iters=10 \
      >>"$tmp/$v" || echo "FAIL: TYCHO_MPI_OVERLAP=$v"
  done
done
for v in 1 0; do
  printf 'TYCHO_MPI_OVERLAP=%s  time %.3f s  cpu %.3f s  per iteration: %s s in MPI, %s pieces while halos moved\n' "$v" \
    "$(grep '^stencil' "$tmp/$v" | field time | median)" "$(grep '^stencil' "$tmp/$v" | field cpu | median)" \
    "$(grep '^stencil' "$tmp/$v" | field mpi/iter | median)" "$(grep '^stencil' "$tmp/$v" | field early/iter | median)"
done
