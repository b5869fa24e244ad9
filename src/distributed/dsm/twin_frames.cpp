// SPDX-License-Identifier: Apache-2.0
// Reused twin frames (twin_frames.hpp).
#include "twin_frames.hpp"

#include <sys/mman.h>

#include <algorithm>

#include "reserved_array.hpp"

namespace ito::dist::detail {

namespace {
constexpr std::size_t frame_bytes = 4096;
}

twin_frames::twin_frames(std::size_t pages, std::size_t kept_max)
    : pages_(pages),
      kept_max_(kept_max),
      frames_(reserve_array<char>(pages * frame_bytes)),
      frame_of_(reserve_array<std::size_t>(pages)),
      warm_(reserve_array<std::size_t>(pages)),
      cold_(reserve_array<std::size_t>(pages)),
      returning_(reserve_array<std::size_t>(pages)) {}

twin_frames::~twin_frames() {
  release_array(frames_, pages_ * frame_bytes);
  release_array(frame_of_, pages_);
  release_array(warm_, pages_);
  release_array(cold_, pages_);
  release_array(returning_, pages_);
}

char* twin_frames::at(std::size_t frame) const noexcept { return frames_ + frame * frame_bytes; }

// A page holds at most one frame, so there is always one: warm first (no
// fault), then one given back, then one never used.
std::size_t twin_frames::pop_free() noexcept {
  if (warm_count_) return warm_[--warm_count_];
  if (cold_count_) return cold_[--cold_count_];
  return never_used_++;
}

void twin_frames::give_back_frames(std::size_t n) noexcept {
  if (warm_count_ + n <= kept_max_) {
    for (std::size_t k = 0; k < n; ++k) warm_[warm_count_++] = returning_[k];
    return;
  }
  // One madvise per run of neighbouring frames: frames taken in one interval
  // were mostly taken in order.
  std::sort(returning_, returning_ + n);
  for (std::size_t k = 0; k < n;) {
    std::size_t end = k + 1;
    while (end < n && returning_[end] == returning_[end - 1] + 1) ++end;
    madvise(at(returning_[k]), (end - k) * frame_bytes, MADV_DONTNEED);
    k = end;
  }
  for (std::size_t k = 0; k < n; ++k) cold_[cold_count_++] = returning_[k];
}

}  // namespace ito::dist::detail
