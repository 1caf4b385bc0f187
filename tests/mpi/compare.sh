#!/bin/sh
# compare.sh TYCHO SCRIPT NP...: SCRIPT prints the same lines and saves
# byte-identical .npy files (into $TYCHO_OUT) under `mpirun -np NP` as in a
# plain run of TYCHO. Check mode is on (TYCHO_MPI_CHECK=1) and launches of
# 1,000 elements or more are split among ranks (TYCHO_MPI_MIN_ELEMS), so that
# small arrays exercise the exchange. Exit 77 (skipped) without MPI.
set -u
tycho=$1
script=$2
shift 2
. "$(dirname "$0")/env.sh"
tmp=$(mktemp -d /tmp/tycho-mpi.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/plain"
if ! TYCHO_OUT="$tmp/plain" timeout 120 "$tycho" "$script" >"$tmp/plain.txt"; then
  echo "FAIL: the plain run of $script failed"
  exit 1
fi
status=0
for np in "$@"; do
  mkdir "$tmp/np$np"
  if ! TYCHO_OUT="$tmp/np$np" TYCHO_MPI_CHECK=1 TYCHO_MPI_MIN_ELEMS=${TYCHO_MPI_MIN_ELEMS:-1000} \
      timeout 120 $MPIRUN -np "$np" "$tycho" "$script" >"$tmp/np$np.txt" 2>"$tmp/np$np.err"; then
    echo "FAIL: mpirun -np $np $script failed:"
    cat "$tmp/np$np.err"
    status=1
    continue
  fi
  if ! diff "$tmp/plain.txt" "$tmp/np$np.txt"; then
    echo "FAIL: -np $np printed other lines than the plain run (< plain, > -np $np)"
    status=1
  fi
  for f in "$tmp"/plain/*.npy; do
    [ -e "$f" ] || continue
    if ! cmp "$f" "$tmp/np$np/$(basename "$f")"; then
      echo "FAIL: -np $np saved another $(basename "$f")"
      status=1
    fi
  done
  [ $status -eq 0 ] && echo "ok: -np $np: $(wc -l <"$tmp/plain.txt") lines and $(ls "$tmp/plain" | wc -l) .npy files the same"
done
exit $status
