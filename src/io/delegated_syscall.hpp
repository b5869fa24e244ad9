// SPDX-License-Identifier: Apache-2.0
// A system call run through delegation, with its errno carried back: errno is
// per thread, and the call ran on a pool thread.
#pragma once

#include <cerrno>

#include "io/errno_now.hpp"
#include "io/fork_child.hpp"
#include "ito/delegate.hpp"

namespace ito::detail {

template <class Call>
auto delegated_syscall(Call&& call) -> decltype(call()) {
  // A pool thread would run it in the parent (see io/fork_child.hpp).
  if (in_vfork_child()) [[unlikely]] return call();
  using R = decltype(call());
  struct outcome {
    R value;
    int error;
  };
  outcome o = ito::delegate([&call]() noexcept -> outcome {
    R v = call();
    return {v, v < 0 ? errno_now() : 0};
  });
  if (o.value < 0) errno_now() = o.error;
  return o.value;
}

}  // namespace ito::detail
