// SPDX-License-Identifier: Apache-2.0
// The C APIs (ito.h, sync.h, dist.h) return error numbers: what an exception
// escaping one of their entry points becomes.
#pragma once

namespace ito::compat {

// Call inside a catch block. usage_error: its code; config_error: EINVAL,
// its message printed (a bad option or environment value is worth saying
// once); bad_alloc: ENOMEM; system_error: its code; anything else: EINVAL.
int code_of_current_exception() noexcept;

}  // namespace ito::compat
