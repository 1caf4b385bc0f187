# env.sh: what every MPI test sets (sourced). Skips (exit 77) when tycho was
# built without MPI or mpirun is missing; runs as root and oversubscribed on
# a 2-core machine, one OpenMP thread per rank.
if [ "${TYCHO_MPI_BUILT:-0}" != 1 ]; then
  echo "skipped: tycho was built without MPI (TYCHO_MPI=OFF)"
  exit 77
fi
# TYCHO_MPIRUN: another launcher (mpich.sh: mpiexec.mpich)
if ! command -v "${TYCHO_MPIRUN:-mpirun}" >/dev/null 2>&1; then
  echo "skipped: no ${TYCHO_MPIRUN:-mpirun}"
  exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
export OMPI_MCA_rmaps_base_oversubscribe=1
MPIRUN=${TYCHO_MPIRUN:-"mpirun --oversubscribe --bind-to none"}
