// SPDX-License-Identifier: Apache-2.0
// The cheap pseudo-random numbers thieves pick their victims with
// (xorshift64*): a few shifts on a per-worker state, no lock, no call.
#pragma once

#include <cstdint>

namespace ito::common {

// Steps `state` (never 0) and returns the next number.
inline std::uint64_t next_random(std::uint64_t& state) noexcept {
  std::uint64_t x = state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  state = x;
  return x * 0x2545F4914F6CDD1Dull;
}

}  // namespace ito::common
