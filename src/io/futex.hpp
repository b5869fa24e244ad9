// SPDX-License-Identifier: Apache-2.0
// Kept so that code written against the io layer's futex calls still builds:
// the calls themselves live in src/os/ (futex.hpp, adaptive_spin.hpp).
#pragma once

#include <atomic>
#include <cstdint>

#include "os/adaptive_spin.hpp"
#include "os/futex.hpp"

namespace ito::detail {

using os::adaptive_spin;

inline void futex_wait(std::atomic<std::uint32_t>* word, std::uint32_t expected) noexcept {
  os::futex_wait(word, expected);
}

inline void futex_wake_one(std::atomic<std::uint32_t>* word) noexcept { os::futex_wake_one(word); }

}  // namespace ito::detail
