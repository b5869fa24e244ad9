#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The DSM benchmark (ito-bench-dsm) with its two ranks on two hosts made of
# namespaces (tests/distributed/netns_pair.sh: network namespaces joined by a
# veth pair, each rank with a host name and IPC namespace of its own), and MPI
# told to use TCP only (UCX_TLS=self,tcp): proof that nothing in the DSM
# assumes memory shared between ranks, and what TCP costs. Needs root and
# iproute2; sets the namespaces up and tears them down.
#
#   bench/dsm_over_tcp.sh [--bin build/release/bench/ito-bench-dsm] [--runs 7] [--pages 256]
#
# Exits 77 where network namespaces cannot be made (a container without
# CAP_NET_ADMIN, or not root): ctest counts that as skipped.
set -euo pipefail

bin=build/release/bench/ito-bench-dsm
runs=7
pages=256
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --pages) pages=$2; shift 2 ;;
    *) echo "usage: $0 [--bin PATH] [--runs N] [--pages N]" >&2; exit 2 ;;
  esac
done
[ -x "$bin" ] || { echo "$0: $bin is not built (make release)" >&2; exit 2; }

# shellcheck source-path=SCRIPTDIR source=../tests/distributed/netns_pair.sh
source "$(dirname "$0")/../tests/distributed/netns_pair.sh"
out=$(mktemp -d)
trap 'netns_pair_down; rm -rf "$out"' EXIT
status=0
netns_pair_up || exit $?

export UCX_TLS=self,tcp ITO_DSM_SIZE=${ITO_DSM_SIZE:-1G}
netns_pair_mpiexec "$out/mpiexec.log" mpiexec "$(realpath "$bin")" --runs "$runs" --pages "$pages" ||
  { cat "$out/mpiexec.log" >&2; exit 1; }
# The last line printed, a finished job gets 10 s to end.
netns_pair_wait 3600 '^one page: rank 1 writes' || status=$?
wait || true
echo "ito-bench-dsm at 2 ranks in two network namespaces over veth (TCP: UCX_TLS=$UCX_TLS):"
grep -v '^HYDRA_LAUNCH' "$out/mpiexec.log"
[ "$status" -ne 124 ] || echo "$0: the job did not end (MPI_Finalize over UCX tcp, docs/DISTRIBUTED.md \"Transports\"): ended it" >&2
exit "$status"
