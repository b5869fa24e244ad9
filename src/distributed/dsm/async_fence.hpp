// SPDX-License-Identifier: Apache-2.0
// sd_fence_async / si_fence_async: the fence on a thread of ito's OS-thread
// pool, then the caller's callback there.
#pragma once

namespace ito::dist::detail {

// Returns once no asynchronous fence is running or queued (the runtime's
// destructor calls it before tearing the DSM down).
void wait_for_async_fences() noexcept;

}  // namespace ito::dist::detail
