// SPDX-License-Identifier: Apache-2.0
// The CPUs of this rank's host, as the host's ranks see them at start. By
// default a process runs a worker per CPU of its affinity mask; ranks that
// mpiexec starts on one host without binding them all have the whole host in
// their masks, so `mpiexec -n 2` on 2 cores ran 4 workers and 2 progress
// threads on 2 cores (and each rank's waits for the other spin on a core the
// other needs). The ranks of a host now split the CPUs their masks share:
// each takes its part as its default worker count (ITO_WORKERS and an
// explicit options::workers still decide where given).
#pragma once

namespace ito::dist::detail {

struct host_cpus {
  unsigned cpus = 1;     // CPUs in the union of the host's ranks' affinity masks
  unsigned workers = 1;  // the workers the host's ranks will run together
};

// Collective over the host's ranks (MPI_COMM_TYPE_SHARED). The ranks whose
// masks overlap this rank's split its mask's CPUs among themselves in rank
// order (the first ones take one more where they do not divide); the share
// becomes this process's default worker count (config::set_cpu_share; the
// caller sets it back to 0 at the end). `workers` adds up each rank's
// config::default_workers() over the host (a bad ITO_WORKERS counts as more
// than any host has CPUs: the runtime's start names it).
host_cpus share_host_cpus();

// The rule: a rank's part of the `own` CPUs of its mask, which `sharing`
// ranks' masks overlap (itself included), `before_me` of them earlier in
// rank order. At least 1 (more ranks than CPUs, or no mask read).
unsigned cpu_share(unsigned own, unsigned sharing, unsigned before_me) noexcept;

}  // namespace ito::dist::detail
