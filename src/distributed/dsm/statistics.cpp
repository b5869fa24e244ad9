// SPDX-License-Identifier: Apache-2.0
#include "distributed/dsm/statistics.hpp"

#include <cstdio>
#include <mutex>

#include "distributed/dsm/dsm.hpp"

namespace ito::dist::detail {

void print_stats(const dsm& d) {
  const dsm_stats& c = d.stats;
  std::fprintf(stderr,
               "ito: dsm: stats: rank %d: %llu pages fetched (and %llu checkout or block "
               "transfers), %llu diffs sent in %llu transfers, %llu write notices sent, %llu "
               "copies invalidated, %llu write faults on watched home pages, %llu twin pages "
               "kept\n",
               d.rank, static_cast<unsigned long long>(c.fetches),
               static_cast<unsigned long long>(c.fetch_transfers),
               static_cast<unsigned long long>(c.diffs_sent),
               static_cast<unsigned long long>(c.diff_transfers),
               static_cast<unsigned long long>(c.notices_sent),
               static_cast<unsigned long long>(c.invalidations),
               static_cast<unsigned long long>(c.home_write_faults),
               static_cast<unsigned long long>(c.twin_pages_kept));
}

dsm_stats stats() noexcept {
  dsm* d = g_dsm.load(std::memory_order_acquire);
  if (!d) return {};
  std::lock_guard hold(d->lock);
  return d->stats;
}

}  // namespace ito::dist::detail
