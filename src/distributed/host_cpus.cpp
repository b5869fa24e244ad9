// SPDX-License-Identifier: Apache-2.0
#include "distributed/host_cpus.hpp"

#include <mpi.h>
#include <sched.h>

#include <vector>

#include "common/setting_values.hpp"

namespace ito::dist::detail {
namespace {

// The workers this rank will run by default; for a bad ITO_WORKERS, more
// than any host has CPUs.
unsigned workers_to_come() noexcept {
  try {
    return config::default_workers();
  } catch (...) {
    return CPU_SETSIZE + 1;
  }
}

}  // namespace

unsigned cpu_share(unsigned own, unsigned sharing, unsigned before_me) noexcept {
  if (own == 0 || sharing == 0) return 1;  // no mask read: as the runtime's own default
  const unsigned share = own / sharing + (before_me < own % sharing ? 1 : 0);
  return share == 0 ? 1 : share;  // more ranks than CPUs
}

host_cpus share_host_cpus() {
  MPI_Comm host;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host);
  int me = 0, ranks = 1;
  MPI_Comm_rank(host, &me);
  MPI_Comm_size(host, &ranks);
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof mine, &mine) != 0) CPU_ZERO(&mine);
  std::vector<cpu_set_t> masks(static_cast<std::size_t>(ranks));
  MPI_Allgather(&mine, sizeof mine, MPI_BYTE, masks.data(), sizeof mine, MPI_BYTE, host);

  host_cpus h;
  cpu_set_t all;
  CPU_ZERO(&all);
  unsigned sharing = 0, before_me = 0;  // ranks whose masks overlap mine (me included)
  for (int r = 0; r < ranks; ++r) {
    cpu_set_t& m = masks[static_cast<std::size_t>(r)];
    CPU_OR(&all, &all, &m);
    cpu_set_t common;
    CPU_AND(&common, &m, &mine);
    if (CPU_COUNT(&common) == 0) continue;
    ++sharing;
    if (r < me) ++before_me;
  }
  h.cpus = static_cast<unsigned>(CPU_COUNT(&all));
  config::set_cpu_share(cpu_share(static_cast<unsigned>(CPU_COUNT(&mine)), sharing, before_me));

  const unsigned my_workers = workers_to_come();
  MPI_Allreduce(&my_workers, &h.workers, 1, MPI_UNSIGNED, MPI_SUM, host);
  MPI_Comm_free(&host);
  return h;
}

}  // namespace ito::dist::detail
