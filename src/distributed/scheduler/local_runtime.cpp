// SPDX-License-Identifier: Apache-2.0
#include "distributed/scheduler/local_runtime.hpp"

#include <atomic>

namespace ito::dist::detail {
namespace {
std::atomic<sched::runtime_state*> g_local{nullptr};
}

void set_local_runtime(sched::runtime_state* rt) noexcept { g_local.store(rt, std::memory_order_release); }
sched::runtime_state* local_runtime() noexcept { return g_local.load(std::memory_order_acquire); }

}  // namespace ito::dist::detail
