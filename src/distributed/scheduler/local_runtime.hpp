// SPDX-License-Identifier: Apache-2.0
// This rank's ito runtime, as the distributed scheduler's parts see it: null
// until it is complete (sched::g_runtime is published before its workers
// exist) and after it stopped. Set under the wire's poll lock, so a message
// handler sees it either absent or whole.
#pragma once

namespace ito::sched {
struct runtime_state;
}

namespace ito::dist::detail {

void set_local_runtime(sched::runtime_state* rt) noexcept;
sched::runtime_state* local_runtime() noexcept;

}  // namespace ito::dist::detail
