// SPDX-License-Identifier: Apache-2.0
// The one place that names every stack provider: a new stack policy plugs in
// here, not in scheduler.cpp. (The distributed mode needs none: it only says
// where the fixed policy's pool maps its chunks, extension::stack_chunks.)
#include "split/split_provider.hpp"
#include "stack/provider.hpp"

namespace ito::stack {

std::unique_ptr<stack_provider> make_stack_provider(const options& o) {
  switch (o.stacks) {
    case stack_policy::fixed:
      return nullptr;  // the scheduler's own inlined path
    case stack_policy::lazy:
    case stack_policy::fair_use:
      return std::make_unique<sched::split::split_provider>(o);
  }
  return nullptr;
}

}  // namespace ito::stack
