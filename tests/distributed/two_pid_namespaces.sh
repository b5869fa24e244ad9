#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Two ranks on one host, the second in a pid namespace of its own (and a
# mount namespace with its own /proc): MPI groups them as one host, but they
# cannot open each other's memory, so the runtime must find that out, say so
# on one line, and run one node per rank, the DSM correct over the page
# protocol. MPI talks TCP here (UCX's shared-memory transports find their
# peer by pid). Exit 77 (skipped) where namespaces cannot be made.
#   two_pid_namespaces.sh MPIEXEC DSM_TEST
set -u
mpiexec=$1 dsm_test=$2
unshare --pid --fork --mount-proc true 2> /dev/null || { echo "no pid namespaces here"; exit 77; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# A finished run may still hang in MPI_Finalize over UCX's tcp transport
# (docs/DISTRIBUTED.md, "Transports"; 1 run in 5 here): the log decides, and
# once the tests have reported the job gets 10 s to end before it is killed.
# Over TCP: UCX_TLS for MPICH; for Open MPI also its BTLs, and osc/ucx for
# the windows (osc/rdma cannot work over btl/tcp, and osc/pt2pt refuses
# MPI_THREAD_MULTIPLE: MPI_Win_create fails). Open MPI's rank is
# OMPI_COMM_WORLD_RANK, MPICH's PMI_RANK.
UCX_TLS=self,tcp OMPI_MCA_btl=self,tcp OMPI_MCA_osc=ucx ITO_TEST_NODES=per_rank "$mpiexec" -n 2 sh -c \
  'if [ "${PMI_RANK:-$OMPI_COMM_WORLD_RANK}" = 1 ]; then exec unshare --pid --fork --mount-proc "$0" "$@"; else exec "$0" "$@"; fi' \
  "$dsm_test" '--gtest_filter=*nodes_are*:*write_before_sd*:*writers_of_different_bytes*' --gtest_color=no \
  > "$log" 2>&1 < /dev/null &
job=$!
waited=0 after_report=0
while kill -0 "$job" 2> /dev/null && [ "$waited" -lt 1200 ] && [ "$after_report" -lt 100 ]; do
  sleep 0.1
  waited=$((waited + 1))
  if grep -qE "\[  (PASSED|FAILED) +\]" "$log"; then after_report=$((after_report + 1)); fi
done
if kill -0 "$job" 2> /dev/null; then
  kill -TERM "$job"  # the launcher ends its ranks
  sleep 2
  kill -KILL "$job" 2> /dev/null
fi
wait "$job" 2> /dev/null
cat "$log"
grep -q "ito: dist: the 2 ranks MPI places on host .* cannot map one copy of memory" "$log" || { echo "FAIL: no line about the fallback"; exit 1; }
grep -q "\[  PASSED  \] 3 tests" "$log" || { echo "FAIL: the DSM tests did not all pass"; exit 1; }
echo "one node per rank, said once, and correct"
