#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The DSM benchmark (ito-bench-dsm) with its two ranks in two network
# namespaces joined by a veth pair, each also in an IPC namespace of its own,
# and MPI told to use TCP only (UCX_TLS=self,tcp): proof that nothing in the
# DSM assumes memory shared between ranks, and what TCP costs. Needs root
# and iproute2; sets the namespaces up and tears them down.
#
#   bench/dsm_over_tcp.sh [--bin build/release/bench/ito-bench-dsm] [--runs 7] [--pages 256]
#
# Exits 77 where network namespaces cannot be made (a container without
# CAP_NET_ADMIN): ctest counts that as skipped.
# mpiexec runs in the first namespace with MPICH hydra's manual launcher:
# it prints one proxy command per host, which this script starts in that
# host's namespace.
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
[ "$(id -u)" = 0 ] || { echo "$0: network namespaces need root" >&2; exit 2; }
command -v ip > /dev/null || { echo "$0: needs iproute2 (ip)" >&2; exit 2; }

# Names of this run's own (two runs at once do not meet); addresses are
# per namespace.
ns=("ito-dsm-$$-0" "ito-dsm-$$-1")
veth=("itod$$a" "itod$$b")
addr=(10.213.0.1 10.213.0.2)
out=$(mktemp -d)
cleanup() {
  for n in "${ns[@]}"; do ip netns del "$n" 2> /dev/null || true; done
  rm -rf "$out"
}
trap cleanup EXIT

if ! ip netns add "${ns[0]}" 2> "$out/netns.err"; then
  echo "$0: cannot create network namespaces here: $(cat "$out/netns.err")" >&2
  exit 77
fi
ip netns add "${ns[1]}"
ip link add "${veth[0]}" type veth peer name "${veth[1]}"
for k in 0 1; do
  ip link set "${veth[$k]}" netns "${ns[$k]}"
  ip -n "${ns[$k]}" addr add "${addr[$k]}/24" dev "${veth[$k]}"
  ip -n "${ns[$k]}" link set "${veth[$k]}" up
  ip -n "${ns[$k]}" link set lo up
done

# mpiexec prints the proxies' commands and then waits for them to connect.
export UCX_TLS=self,tcp ITO_DSM_SIZE=${ITO_DSM_SIZE:-1G}
ip netns exec "${ns[0]}" mpiexec -launcher manual -hosts "${addr[0]},${addr[1]}" -n 2 -ppn 1 \
  "$(realpath "$bin")" --runs "$runs" --pages "$pages" > "$out/mpiexec.log" 2>&1 &
launcher=$!
for _ in $(seq 100); do
  grep -q HYDRA_LAUNCH_END "$out/mpiexec.log" 2> /dev/null && break
  sleep 0.1
done
grep -q HYDRA_LAUNCH_END "$out/mpiexec.log" || { cat "$out/mpiexec.log" >&2; exit 1; }
k=0
while read -r proxy; do
  # shellcheck disable=SC2086  # the proxy's command line, split into words
  ip netns exec "${ns[$k]}" unshare --ipc $proxy &
  k=$((k + 1))
done < <(sed -n 's/^HYDRA_LAUNCH: //p' "$out/mpiexec.log")
status=0
wait "$launcher" || status=$?
wait || true
echo "ito-bench-dsm at 2 ranks in two network namespaces over veth (TCP: UCX_TLS=$UCX_TLS):"
grep -v '^HYDRA_LAUNCH' "$out/mpiexec.log"
exit "$status"
