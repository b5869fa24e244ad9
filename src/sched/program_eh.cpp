// SPDX-License-Identifier: Apache-2.0
#include "sched/program_eh.hpp"

#include <dlfcn.h>

#include <cxxabi.h>

namespace ito::sched {

eh_globals* program_eh_globals() noexcept {
  using get_globals_fn = void* (*)();
  auto* found = reinterpret_cast<get_globals_fn>(dlsym(RTLD_DEFAULT, "__cxa_get_globals"));
  if (!found) return nullptr;
  // The globals, not the functions, are compared: a non-PIC program's
  // canonical address of a function is its PLT entry, not what dlsym gives.
  void* theirs = found();
  return theirs == abi::__cxa_get_globals() ? nullptr : static_cast<eh_globals*>(theirs);
}

}  // namespace ito::sched
