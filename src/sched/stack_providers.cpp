// SPDX-License-Identifier: Apache-2.0
// The one place that names every stack provider: a new stack policy plugs in
// here, not in scheduler.cpp. (The distributed mode needs none: it only says
// where the fixed policy's pool maps its chunks, extension::stack_chunks.)
#include "stack/provider.hpp"
#if defined(__x86_64__)
#include "split/split_provider.hpp"  // split stacks exist on x86-64 only
#endif

namespace ito::stack {

std::unique_ptr<stack_provider> make_stack_provider(const options& o) {
  switch (o.stacks) {
    case stack_policy::fixed:
      return nullptr;  // the scheduler's own inlined path
    case stack_policy::lazy:
    case stack_policy::fair_use:
#if defined(__x86_64__)
      return std::make_unique<sched::split::split_provider>(o);
#else
      break;  // resolve_options refused them at start
#endif
  }
  return nullptr;
}

}  // namespace ito::stack
