#!/bin/sh
# run.sh [TYCHO] [REPS]: weak scaling of split stores at np = 1 and 2 (one
# thread per rank), not a test. Runs stream.lua (x = x * 1.0001 + 1, 1M
# float64 per rank, 20 iterations) and stencil.lua (bench/workloads/
# stencil.lua's step, about 1000 x 1000 points per rank, 20 iterations;
# cg.lua: bench/workloads/cg.lua, 500 x 500 per rank, 2 x 30 iterations,
# its whole run timed),
# np=1 and np=2 in alternation (A B A B ...), and prints each one's median
# time, the weak-scaling efficiency t(np=1) / t(np=2), and the bytes,
# messages and collectives rank 0 received per iteration; np=2 runs with
# split stores (the default) and replicated ones (TYCHO_MPI_REPLICATED=1). On a shared
# machine the ranks must yield while they wait (OMPI_MCA_mpi_yield_when_idle:
# a rank spinning in MPI steals the core the other rank computes on).
set -u
here=$(cd "$(dirname "$0")" && pwd)
tycho=${1:-$here/../../build/repl/tycho}
reps=${2:-5}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
export OMP_WAIT_POLICY=passive OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle:-1}
MPIRUN="mpirun --oversubscribe --bind-to none"
tmp=$(mktemp -d /tmp/tycho-scaling.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
field() { sed -n "s|.* $1=\([^ ]*\).*|\1|p" | head -1; }

bench() { # bench LABEL NAME ARGS1 ARGS2
  label=$1
  shift
  name=$1
  rm -f "$tmp/$name".*
  for _ in $(seq "$reps"); do
    timeout 300 "$tycho" --cpus 1 "$here/$name.lua" $2 >>"$tmp/$name.1" || echo "FAIL: np=1 $name"
    timeout 300 $MPIRUN -np 2 "$tycho" --cpus 1 "$here/$name.lua" $3 >>"$tmp/$name.2" || echo "FAIL: np=2 $name"
    TYCHO_MPI_REPLICATED=1 timeout 300 $MPIRUN -np 2 "$tycho" --cpus 1 "$here/$name.lua" $3 \
      >>"$tmp/$name.r" || echo "FAIL: np=2 replicated $name"
  done
  t1=$(grep "^$name" "$tmp/$name.1" | field time | median)
  for v in 2 r; do
    t2=$(grep "^$name" "$tmp/$name.$v" | field time | median)
    line=$(grep "^$name" "$tmp/$name.$v" | head -1)
    printf '%-13s %-10s np=1 %.3f s  np=2 %.3f s  efficiency %3.0f%%  per iteration at np=2: %s B in %s messages, %s collectives\n' \
      "$label" "$([ $v = 2 ] && echo split || echo replicated)" "$t1" "$t2" \
      "$(echo "$t1 $t2" | awk '{print 100 * $1 / $2}')" "$(echo "$line" | field bytes/iter)" \
      "$(echo "$line" | field msgs/iter)" "$(echo "$line" | field collectives/iter)"
  done
}

echo "weak scaling, $reps runs each in alternation, medians; load: $(cut -d' ' -f1-3 /proc/loadavg), $(getconf _NPROCESSORS_ONLN) cores"
# a flush per update (a loop that reads a value each iteration), then none (fused)
bench stream stream "n=1000000 iters=20" "n=1000000 iters=20"
bench stream_fused stream "n=1000000 iters=20 flush=0" "n=1000000 iters=20 flush=0"
bench stencil stencil "n=1000 iters=20" "n=1414 iters=20"
bench cg cg "n=500 max_iters=30" "n=707 max_iters=30"
