#!/bin/sh
# failures.sh TYCHO: how a run on several ranks fails (docs/mpi.md): an
# error every rank raises is printed once and ends the job with status 1; an
# error on one rank is printed once, with its rank, and stops the others
# (MPI_Abort); control that diverged stops with "control diverged"; a piece
# that fails in a split launch raises the same error on every rank; print
# writes from rank 0 only unless TYCHO_MPI_PRINT=all; a bad TYCHO_MPI_OVERLAP
# stops the job with a message. Exit 77 without MPI.
set -u
tycho=$1
dir=$(dirname "$0")
. "$dir/env.sh"
tmp=$(mktemp -d /tmp/tycho-mpi.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
status=0
fail() {
  echo "FAIL: $*"
  echo "--- stdout"; cat "$tmp/out"; echo "--- stderr"; cat "$tmp/err"
  status=1
}
run() { # run NP CASE [ENV...]: rc in $rc
  np=$1 case=$2
  shift 2
  env TYCHO_MPI_CHECK=1 TYCHO_MPI_MIN_ELEMS=1000 "$@" timeout 60 $MPIRUN -np "$np" "$tycho" \
    "$dir/errors.lua" "$case" >"$tmp/out" 2>"$tmp/err"
  rc=$?
}
count() { grep -c -- "$1" "$tmp/err"; }

run 3 everywhere
[ $rc -eq 1 ] || fail "everywhere: status $rc, expected 1"
[ "$(count 'boom everywhere')" = 1 ] || fail "everywhere: the message is not printed once"
grep -q 'rank [0-9]:' "$tmp/err" && fail "everywhere: a rank is named"
[ "$(grep -c '^sum' "$tmp/out")" = 1 ] || fail "everywhere: print is not from rank 0 only"

run 2 one_rank
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "one_rank: status $rc, expected an abort"
[ "$(count 'tycho: rank 1: .*boom on rank 1')" = 1 ] || fail "one_rank: rank 1's message is not printed once"

run 2 diverged
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "diverged: status $rc, expected an abort"
[ "$(count 'control diverged at launch #[0-9]* on rank 1')" = 1 ] || fail "diverged: no divergence message"

run 3 piece TYCHO_MPI_PRINT=all
[ $rc -eq 0 ] || fail "piece: status $rc"
[ "$(grep -c "false.*task 'check' failed in piece P: .*element 250000 is bad" "$tmp/out")" = 3 ] ||
  fail "piece: not every rank raised the task's error"
[ "$(grep -c 'still works	22500225000.0' "$tmp/out")" = 3 ] || fail "piece: the runtime is not usable after"

run 3 print
[ $rc -eq 0 ] && [ "$(cat "$tmp/out")" = "rank	0	of	3" ] || fail "print: rank 0 alone prints"
run 3 print TYCHO_MPI_PRINT=all
[ $rc -eq 0 ] && [ "$(sort "$tmp/out" | tr '\n' ' ')" = "rank	0	of	3 rank	1	of	3 rank	2	of	3 " ] ||
  fail "print: TYCHO_MPI_PRINT=all prints from every rank"

run 2 print TYCHO_MPI_OVERLAP=yes
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "overlap: status $rc for a bad TYCHO_MPI_OVERLAP"
grep -q "TYCHO_MPI_OVERLAP: expected '0' or '1'" "$tmp/err" || fail "overlap: no message for a bad value"

[ $status -eq 0 ] && echo "ok: failures under mpirun behave"
exit $status
