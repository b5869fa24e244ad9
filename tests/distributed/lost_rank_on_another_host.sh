#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A rank on another host lost while the other waits for it in a barrier:
# killed (SIGKILL), or hung (it stops itself: its connections stay open, so
# only its silence can tell). The two hosts are namespaces (netns_pair.sh:
# another network, host name and IPC namespace each, MPI over TCP between
# veths), and nothing tells the runtime to use heartbeats: it must find that
# the peer is on another host, where no pidfd can watch it, and its
# heartbeats must name the rank. hydra is told not to clean up
# (-disable-auto-cleanup), under which plain MPI waits in the barrier
# forever: the job must end non-zero, with the line naming rank 1 on its
# host, within 20 s. Exit 77 (skipped) where namespaces cannot be made.
#   lost_rank_on_another_host.sh MPIEXEC EXITED_RANK kill|hang
set -u
mpiexec=$1 program=$2 how=$3
# shellcheck source-path=SCRIPTDIR source=netns_pair.sh
source "$(dirname "$0")/netns_pair.sh"
log=$(mktemp)
trap 'netns_pair_down; rm -f "$log"' EXIT
netns_pair_up || exit $?

export UCX_TLS=self,tcp
netns_pair_mpiexec "$log" "$mpiexec" -disable-auto-cleanup "$program" "$how" ||
  { cat "$log"; echo "FAIL: mpiexec printed no proxies"; exit 1; }
SECONDS=0
netns_pair_wait 20
rc=$?
grep -v '^HYDRA_LAUNCH' "$log"
echo "job status $rc after $SECONDS s"
[ "$rc" -ne 124 ] || { echo "FAIL: the job still ran after 20 s"; exit 1; }
[ "$rc" -ne 0 ] || { echo "FAIL: the job ended with status 0"; exit 1; }
! grep -q "got past a barrier" "$log" || { echo "FAIL: a rank got past the barrier"; exit 1; }
grep -qE "ito: dist: rank 1 \(on ${netns_pair_host[1]}\) (has not been heard from for [0-9]+ s|could not be reached by MPI) while the distributed runtime was running" "$log" ||
  { echo "FAIL: no line naming rank 1 on ${netns_pair_host[1]}"; exit 1; }
echo "rank 1 on another host ($how) was named by heartbeats and the job ended"
