// SPDX-License-Identifier: Apache-2.0
#include "stack/valgrind_stacks.hpp"

#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>

#include <map>
#include <mutex>

namespace ito::stack {
namespace {

// Valgrind's ids by stack base. Only used under Valgrind.
struct registry {
  std::mutex mutex;
  std::map<const char*, unsigned> ids;
};
registry& stacks() {
  static auto* r = new registry;  // never destroyed: stacks may go after static destructors
  return *r;
}

}  // namespace

void announce_stack(const stack_block& s) noexcept {
  if (!RUNNING_ON_VALGRIND) return;
  const unsigned id = VALGRIND_STACK_REGISTER(s.lo, s.hi);
  registry& r = stacks();
  std::lock_guard hold(r.mutex);
  try {
    r.ids[s.lo] = id;
  } catch (...) {  // out of memory under Valgrind: the stack stays registered
  }
}

void withdraw_stack(const stack_block& s) noexcept {
  if (!RUNNING_ON_VALGRIND) return;
  registry& r = stacks();
  std::lock_guard hold(r.mutex);
  if (auto it = r.ids.find(s.lo); it != r.ids.end()) {
    VALGRIND_STACK_DEREGISTER(it->second);
    r.ids.erase(it);
  }
}

void withdraw_stacks_in(const char* lo, const char* hi) noexcept {
  if (!RUNNING_ON_VALGRIND) return;
  registry& r = stacks();
  std::lock_guard hold(r.mutex);
  auto it = r.ids.lower_bound(lo);
  while (it != r.ids.end() && it->first < hi) {
    VALGRIND_STACK_DEREGISTER(it->second);
    it = r.ids.erase(it);
  }
}

}  // namespace ito::stack

#else  // built without Valgrind's header: nothing to tell

namespace ito::stack {
void announce_stack(const stack_block&) noexcept {}
void withdraw_stack(const stack_block&) noexcept {}
void withdraw_stacks_in(const char*, const char*) noexcept {}
}  // namespace ito::stack

#endif
