// SPDX-License-Identifier: Apache-2.0
// The public ito::runtime class and the queries about the running context.
#include "ito/runtime.hpp"

#include <cstdio>
#include <cstdlib>

#include "ito/error.hpp"
#include "sched/preempt.hpp"
#include "sched/runtime_control.hpp"
#include "sched/scheduler.hpp"

namespace ito {

namespace {
sched::runtime_state* g_owned = nullptr;
}

runtime::runtime(const options& requested) {
  options resolved;
  try {
    resolved = resolve_options(requested);
    sched::check_preemption_available(resolved);
  } catch (const config_error& e) {
    if (e.from_environment()) {
      // The user's environment, not the program, is wrong: say so and stop.
      std::fprintf(stderr, "%s\n", e.what());
      std::exit(2);
    }
    throw;
  }
  g_owned = sched::start_runtime(resolved);
}

runtime::~runtime() {
  sched::stop_runtime(g_owned);
  g_owned = nullptr;
}

unsigned runtime::workers() const noexcept {
  return static_cast<unsigned>(g_owned->workers.size());
}
const options& runtime::settings() const noexcept { return g_owned->opts; }

bool in_ult() noexcept { return sched::current_ult() != nullptr; }

int current_worker_index() noexcept {
  sched::worker* w = sched::current_worker();
  return w && w->current ? static_cast<int>(w->index) : -1;
}

}  // namespace ito
