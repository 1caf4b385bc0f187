#!/bin/sh
# run.sh [TYCHO] [REPS]: weak scaling of split stores at np = 1 and 2 (one
# thread per rank), not a test. Each rank holds what a user's rank would,
# arrays far larger than the caches (128 MiB per f64 array), so that the
# per-iteration fixed costs (a collective, a flush) weigh as on a cluster:
#   stream.lua: x = x * 1.0001 + 1, 16M float64 per rank, 10 iterations,
#     a flush each, then the same without flushes (one fused launch);
#   black_scholes.lua: bench/workloads/black_scholes.lua's step, 4M options
#     per rank (5 arrays of 32 MiB), 5 iterations, a flush each;
#   stencil.lua: bench/workloads/stencil.lua's step, 4096 x 4096 points per
#     rank (5793 x 5793 at np=2), 10 iterations;
#   cg.lua: bench/workloads/cg.lua, 2048 x 2048 per rank (2896 x 2896 at
#     np=2), 2 x 20 iterations, its whole run timed;
# np=1 and np=2 in alternation (A B A B ...), and prints each one's median
# time, the weak-scaling efficiency t(np=1) / t(np=2) (and the same ratio
# of rank 0's CPU time, os.clock, which the other jobs of a loaded machine
# disturb less than the wall time: it leaves out the time a rank waits for
# a core), and the bytes,
# messages and collectives rank 0 received per iteration and the seconds
# rank 0 spent in MPI calls; np=2 runs with split stores (the default) and
# replicated ones (TYCHO_MPI_REPLICATED=1; REPLICATED=0 skips them). For
# stream and Black-Scholes a third variant, "two alone", runs two np=1
# processes at once with no MPI: each does what a rank does, so its
# efficiency is the most weak scaling can reach on this machine (the cores
# share the memory bandwidth). On a
# shared machine the ranks must yield while they wait
# (OMPI_MCA_mpi_yield_when_idle: a rank spinning in MPI steals the core the
# other rank computes on).
set -u
here=$(cd "$(dirname "$0")" && pwd)
tycho=${1:-$here/../../build/repl/tycho}
reps=${2:-5}
replicated=${REPLICATED:-1}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
export OMP_WAIT_POLICY=passive OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle:-1}
MPIRUN="mpirun --oversubscribe --bind-to none"
tmp=$(mktemp -d /tmp/tycho-scaling.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
field() { sed -n "s|.* $1=\([^ ]*\).*|\1|p" | head -1; }

bench() { # bench LABEL NAME ARGS1 ARGS2 [pair]
  label=$1
  shift
  name=$1
  rm -f "$tmp/$name".*
  variants=2
  [ "$replicated" = 1 ] && variants="2 r"
  [ "${4:-}" = pair ] && variants="$variants p"
  for _ in $(seq "$reps"); do
    timeout 300 "$tycho" --cpus 1 "$here/$name.lua" $2 >>"$tmp/$name.1" || echo "FAIL: np=1 $name"
    timeout 300 $MPIRUN -np 2 "$tycho" --cpus 1 "$here/$name.lua" $3 >>"$tmp/$name.2" || echo "FAIL: np=2 $name"
    if [ "${4:-}" = pair ]; then # two np=1 processes at once: the machine's ceiling
      timeout 300 "$tycho" --cpus 1 "$here/$name.lua" $2 >"$tmp/$name.pa" &
      timeout 300 "$tycho" --cpus 1 "$here/$name.lua" $2 >"$tmp/$name.pb" || echo "FAIL: two alone $name"
      wait $! || echo "FAIL: two alone $name"
      cat "$tmp/$name.pa" "$tmp/$name.pb" >>"$tmp/$name.p"
    fi
    [ "$replicated" = 1 ] || continue
    TYCHO_MPI_REPLICATED=1 timeout 300 $MPIRUN -np 2 "$tycho" --cpus 1 "$here/$name.lua" $3 \
      >>"$tmp/$name.r" || echo "FAIL: np=2 replicated $name"
  done
  t1=$(grep "^$name" "$tmp/$name.1" | field time | median)
  c1=$(grep "^$name" "$tmp/$name.1" | field cpu | median)
  for v in $variants; do
    t2=$(grep "^$name" "$tmp/$name.$v" | field time | median)
    c2=$(grep "^$name" "$tmp/$name.$v" | field cpu | median)
    line=$(grep "^$name" "$tmp/$name.$v" | head -1)
    early=$(echo "$line" | field early/iter) # pieces run while halos moved (stencil, cg)
    if [ "$v" = p ]; then
      printf '%-13s %-10s np=1 %.3f s  2 at once %.3f s  efficiency %3.0f%% (CPU time %3.0f%%)  (no MPI: the ceiling)\n' \
        "$label" "two alone" "$t1" "$t2" \
        "$(echo "$t1 $t2" | awk '{print 100 * $1 / $2}')" "$(echo "$c1 $c2" | awk '{print 100 * $1 / $2}')"
      continue
    fi
    printf '%-13s %-10s np=1 %.3f s  np=2 %.3f s  efficiency %3.0f%% (CPU time %3.0f%%)  per iteration at np=2: %s B in %s messages, %s collectives, %s s in MPI%s\n' \
      "$label" "$([ $v = 2 ] && echo split || echo replicated)" "$t1" "$t2" \
      "$(echo "$t1 $t2" | awk '{print 100 * $1 / $2}')" "$(echo "$c1 $c2" | awk '{print 100 * $1 / $2}')" \
      "$(echo "$line" | field bytes/iter)" \
      "$(echo "$line" | field msgs/iter)" "$(echo "$line" | field collectives/iter)" \
      "$(echo "$line" | field mpi/iter)" "${early:+, $early pieces while halos moved}"
  done
}

echo "weak scaling, $reps runs each in alternation, medians; load: $(cut -d' ' -f1-3 /proc/loadavg), $(getconf _NPROCESSORS_ONLN) cores"
# a flush per update (a loop that reads a value each iteration), then none (fused)
bench stream stream "n=16777216 iters=10" "n=16777216 iters=10" pair
bench stream_fused stream "n=16777216 iters=10 flush=0" "n=16777216 iters=10 flush=0" pair
bench black_scholes black_scholes "n=4194304 iters=5" "n=4194304 iters=5" pair
bench stencil stencil "n=4096 iters=10" "n=5793 iters=10"
bench cg cg "n=2048 max_iters=20" "n=2896 max_iters=20"
