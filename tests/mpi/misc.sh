#!/bin/sh
# misc.sh TYCHO: under mpirun (docs/mpi.md): .npy files saved by the ranks
# together (MPI-IO) are byte-identical to a plain run's and leave no
# temporary file, and save/load errors are the same on every rank; os.exit
# ends the job with the script's status and no complaint from the launcher;
# --trace writes one file per rank; in check mode a rank that flushes more
# often than the others stops the job with "control diverged" instead of
# hanging. Every mpirun runs under `timeout`. Exit 77 without MPI.
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
run() { # run NP CASE [ARGS...]: rc in $rc; the case's files in $tmp/files
  np=$1 case=$2
  shift 2
  rm -rf "$tmp/files" && mkdir "$tmp/files"
  TYCHO_MPI_CHECK=1 TYCHO_MPI_MIN_ELEMS=1000 timeout 60 $MPIRUN -np "$np" "$tycho" "$@" \
    "$dir/misc.lua" "$case" "$tmp/files" >"$tmp/out" 2>"$tmp/err"
  rc=$?
}
complaint() { grep -qi 'finalize\|exited improperly\|abort' "$tmp/err"; }

# MPI-IO: the files of a plain run, byte for byte, at 2 and 3 ranks
mkdir "$tmp/plain"
timeout 60 "$tycho" "$dir/misc.lua" io "$tmp/plain" >"$tmp/plain.txt" 2>&1 || {
  echo "FAIL: the plain io run"; cat "$tmp/plain.txt"; exit 1; }
for np in 2 3; do
  run $np io
  [ $rc -eq 0 ] || fail "io -np $np: status $rc"
  diff "$tmp/plain.txt" "$tmp/out" >/dev/null || fail "io -np $np: other lines than the plain run"
  for f in m t s; do
    cmp "$tmp/plain/$f.npy" "$tmp/files/$f.npy" || fail "io -np $np: $f.npy differs"
  done
  [ "$(ls "$tmp/files" | tr '\n' ' ')" = "m.npy s.npy t.npy " ] ||
    fail "io -np $np: other files than the three saved (a temporary left?): $(ls "$tmp/files")"
done
grep -q "to a folder	false	.*OUT.*is a directory, not a regular file" "$tmp/out" || fail "io: saving to a folder"
grep -q "to a device	false	.*it is a character device" "$tmp/out" || fail "io: saving to /dev/null"
grep -q "missing	false	.*cannot open 'OUT/missing.npy'" "$tmp/out" || fail "io: loading a missing file"
[ -c /dev/null ] || fail "/dev/null is no longer a device"

# os.exit finalizes MPI: the script's status, no complaint
run 2 exit0
{ [ $rc -eq 0 ] && ! complaint && [ "$(grep -c '^sum' "$tmp/out")" = 1 ]; } || fail "exit0: status $rc"
run 2 exit3
{ [ $rc -eq 3 ] && ! grep -qi 'finalize\|improperly' "$tmp/err"; } || fail "exit3: status $rc"
run 2 exit_close
{ [ $rc -eq 0 ] && ! complaint; } || fail "exit_close: status $rc"

# --trace: one file per rank
run 2 trace --trace "$tmp/files/trace.json"
{ [ $rc -eq 0 ] && [ "$(ls "$tmp/files" | tr '\n' ' ')" = "trace.rank0.json trace.rank1.json " ] &&
  grep -q traceEvents "$tmp/files/trace.rank1.json"; } || fail "trace: $(ls "$tmp/files")"

# check mode: a rank flushing more often stops the job, it does not hang
run 2 uneven_end
{ [ $rc -ne 0 ] && [ $rc -ne 124 ] &&
  grep -q "control diverged on rank 1: rank 0 ends the script; rank 1 flushes [0-9]* launch" "$tmp/err"; } ||
  fail "uneven_end: status $rc"
run 2 uneven_exit
{ [ $rc -ne 0 ] && [ $rc -ne 124 ] &&
  grep -q "control diverged on rank 1: rank 0 ends the script; rank 1 flushes" "$tmp/err"; } ||
  fail "uneven_exit: status $rc"
run 2 uneven_save
{ [ $rc -ne 0 ] && [ $rc -ne 124 ] &&
  grep -q "control diverged on rank 1: rank 0 saves a .npy file; rank 1 flushes" "$tmp/err"; } ||
  fail "uneven_save: status $rc"

[ $status -eq 0 ] && echo "ok: MPI-IO, os.exit, --trace and uneven flushes under mpirun behave"
exit $status
