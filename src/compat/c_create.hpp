// SPDX-License-Identifier: Apache-2.0
// ito_create with a choice of stack, for pthread_create's stack attributes.
#pragma once

#include <cstddef>

#include "compat/posix_sched.hpp"
#include "ito/ito.h"

namespace ito::sched {
struct ult;
}

namespace ito::compat {

struct stack_request {
  void* caller_base = nullptr;  // the caller's memory (pthread_attr_setstack), or null
  std::size_t bytes = 0;        // its size; without caller_base, the size wanted
                                // (a pool stack if it fits, else a dedicated one)
};

// ito_create's work: 0, or EPERM outside a ULT, EINVAL (no function, caller
// memory too small), EAGAIN (no memory for a dedicated stack). A policy
// other than SCHED_OTHER at 0 is stored on the child before it can run.
int create_ult(ito_ult_t* out, void* (*fn)(void*), void* arg, bool detached,
               const stack_request& stack, posix::sched_choice sched = {});

// The live ULT a handle names: 0, or ESRCH when there is none (null, joined,
// reaped, or its stack reused since). Never dereferences freed memory.
int find_ult(ito_ult_t handle, sched::ult** out) noexcept;

}  // namespace ito::compat
