// SPDX-License-Identifier: Apache-2.0
// Completing one-sided operations target by target. The DSM never calls
// MPI_Win_flush_all: MPICH 4.0.2 (ch4:ucx) over UCX 1.13's shared-memory
// transports (sysv, posix: the default between ranks of one host) returned
// from it before every operation it covered was complete at its target.
// Measured with a sort over DSM data, one node per rank, 64 KiB fault blocks
// (several Gets to different homes, then one flush_all): wrong results in
// 9 of 10 runs at 3 ranks and 4 of 4 at 4; right in 10 of 10 and 5 of 5 with
// MPI_Win_flush to each rank instead, and 6 of 6 over UCX's tcp or cma
// transports. The lost notices and fetches this caused are the "lost writes"
// earlier sessions saw at 4 ranks (docs/DISTRIBUTED.md, Progress).
#pragma once

#include <cstdint>
#include <vector>

#include "distributed/dsm/transport.hpp"

namespace ito::dist::detail {

// The ranks a batch of operations went to, each once, in the order first
// added; flush() completes them one transport::flush per rank. No allocation
// after construction.
class target_set {
 public:
  target_set() = default;
  explicit target_set(int ranks) : added_(static_cast<std::size_t>(ranks), 0) {
    list_.reserve(static_cast<std::size_t>(ranks));
  }
  void add(int rank) {
    if (added_[static_cast<std::size_t>(rank)]) return;
    added_[static_cast<std::size_t>(rank)] = 1;
    list_.push_back(rank);
  }
  // Completes every operation on `window` to the ranks added since the last
  // flush; false if the transport reported a failure (every rank is flushed
  // anyway).
  bool flush(transport::window window) {
    bool ok = true;
    for (int rank : list_) {
      ok = transport::flush(window, rank) && ok;
      added_[static_cast<std::size_t>(rank)] = 0;
    }
    list_.clear();
    return ok;
  }

 private:
  std::vector<std::uint8_t> added_;
  std::vector<int> list_;
};

}  // namespace ito::dist::detail
