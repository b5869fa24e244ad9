// SPDX-License-Identifier: Apache-2.0
#include "io/errno_now.hpp"

#include <cerrno>

namespace ito::detail {

int& errno_now() noexcept {
  // A side effect the optimiser must keep: the function is neither pure nor
  // const, so each call asks glibc again.
  asm volatile("" ::: "memory");
  return errno;
}

}  // namespace ito::detail
