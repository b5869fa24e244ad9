# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2034  # sourced: the caller reads the variables
# Sourced (bash, root, iproute2): two hosts on this machine for a 2-rank MPI
# job. Each is a network namespace, the two joined by a veth pair; each rank
# also runs in a UTS namespace with a host name of its own and an IPC
# namespace of its own. MPICH's hydra places one rank on each address it is
# given (MPI_Comm_split_type then puts each rank alone, and UCX cannot reach
# the other by shared memory), and ito, which tells hosts apart by host name
# (the peer watch: a pidfd for a rank on its own host, heartbeats for one on
# another), sees two hosts as well. mpiexec runs in the first namespace with
# hydra's manual launcher: it prints one proxy command per host, which
# netns_pair_mpiexec starts in that host's namespaces.
#
#   source tests/distributed/netns_pair.sh
#   trap netns_pair_down EXIT
#   netns_pair_up || exit $?      # 77 where namespaces cannot be made (no CAP_NET_ADMIN)
#   netns_pair_mpiexec LOG MPIEXEC [OPTIONS] PROGRAM [ARGS]   # all output in LOG
#   netns_pair_wait LIMIT_S [DONE_REGEX]   # mpiexec's status, or 124: it ran too long
#
# Names are this shell's own (two runs at once do not meet); the addresses
# exist only inside the namespaces.

netns_pair_ns=("ito-pair-$$-0" "ito-pair-$$-1")
netns_pair_veth=("itop$$a" "itop$$b")
netns_pair_addr=(10.213.0.1 10.213.0.2)
netns_pair_host=("ito-host-a" "ito-host-b")
netns_pair_launcher=
netns_pair_proxies=()
netns_pair_log=

# Creates the namespaces and the link. Returns 77 where they cannot be made,
# 2 where a tool is missing.
netns_pair_up() {
  [ "$(id -u)" = 0 ] || { echo "netns_pair: network namespaces need root" >&2; return 77; }
  command -v ip > /dev/null || { echo "netns_pair: needs iproute2 (ip)" >&2; return 2; }
  local err k
  if ! err=$(ip netns add "${netns_pair_ns[0]}" 2>&1); then
    echo "netns_pair: cannot create network namespaces here: $err" >&2
    return 77
  fi
  if ! unshare --uts --ipc true 2> /dev/null; then
    echo "netns_pair: cannot create UTS and IPC namespaces here" >&2
    return 77
  fi
  ip netns add "${netns_pair_ns[1]}" &&
    ip link add "${netns_pair_veth[0]}" type veth peer name "${netns_pair_veth[1]}" || return 1
  for k in 0 1; do
    ip link set "${netns_pair_veth[$k]}" netns "${netns_pair_ns[$k]}" &&
      ip -n "${netns_pair_ns[$k]}" addr add "${netns_pair_addr[$k]}/24" dev "${netns_pair_veth[$k]}" &&
      ip -n "${netns_pair_ns[$k]}" link set "${netns_pair_veth[$k]}" up &&
      ip -n "${netns_pair_ns[$k]}" link set lo up || return 1
  done
}

# Starts the job: mpiexec (its pid in netns_pair_launcher) in the first
# namespace, one rank per host, and each host's proxy in its namespaces.
# Returns non-zero, the log saying why, if mpiexec printed no proxies.
netns_pair_mpiexec() {
  local log=$1 mpiexec=$2 k proxy
  shift 2
  netns_pair_log=$log
  ip netns exec "${netns_pair_ns[0]}" "$mpiexec" -launcher manual \
    -hosts "${netns_pair_addr[0]},${netns_pair_addr[1]}" -n 2 -ppn 1 "$@" > "$log" 2>&1 < /dev/null &
  netns_pair_launcher=$!
  for _ in $(seq 100); do
    grep -q HYDRA_LAUNCH_END "$log" 2> /dev/null && break
    sleep 0.1
  done
  grep -q HYDRA_LAUNCH_END "$log" || return 1
  k=0
  while read -r proxy; do
    # shellcheck disable=SC2016,SC2086  # $0 is the host name; the proxy's command line, split into words
    ip netns exec "${netns_pair_ns[$k]}" unshare --uts --ipc \
      sh -c 'echo "$0" > /proc/sys/kernel/hostname && exec "$@"' "${netns_pair_host[$k]}" $proxy < /dev/null &
    netns_pair_proxies+=($!)
    k=$((k + 1))
  done < <(sed -n 's/^HYDRA_LAUNCH: //p' "$log")
}

# Waits for the job, at most LIMIT_S seconds, or 10 s once its log matches
# DONE_REGEX (grep -E): over UCX's tcp transport a finished job may hang in
# MPI_Finalize (docs/DISTRIBUTED.md, "Transports"). Returns mpiexec's status,
# or 124 when the job ran too long and was ended.
netns_pair_wait() {
  local deadline=$((SECONDS + $1)) done_regex=${2:-}
  while kill -0 "$netns_pair_launcher" 2> /dev/null && [ "$SECONDS" -lt "$deadline" ]; do
    sleep 0.1
    if [ -n "$done_regex" ] && grep -qE "$done_regex" "$netns_pair_log"; then
      [ "$deadline" -le $((SECONDS + 10)) ] || deadline=$((SECONDS + 10))
      done_regex=
    fi
  done
  if kill -0 "$netns_pair_launcher" 2> /dev/null; then
    # mpiexec, the proxies and the ranks (no notice of each one killed)
    { netns_pair_down; wait "$netns_pair_launcher" "${netns_pair_proxies[@]}"; } 2> /dev/null
    return 124
  fi
  wait "$netns_pair_launcher"
}

# Ends whatever still runs in the namespaces (a job that hung) and removes
# them.
netns_pair_down() {
  local n pid
  for n in "${netns_pair_ns[@]}"; do
    for pid in $(ip netns pids "$n" 2> /dev/null); do kill -KILL "$pid" 2> /dev/null; done
    ip netns del "$n" 2> /dev/null
  done
  return 0
}
