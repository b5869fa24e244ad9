// SPDX-License-Identifier: Apache-2.0
// ito/dist.h: the C API over ito::dist, error numbers instead of exceptions.
#include "ito/dist.h"

#include <cerrno>
#include <cstdio>
#include <new>

#include "compat/c_errors.hpp"
#include "ito/dist.hpp"
#include "ito/error.hpp"
#include "ito/options.hpp"

namespace {

ito::dist::runtime* g_c_runtime = nullptr;

template <class Call>
int guarded(Call&& call) noexcept {
  try {
    call();
    return 0;
  } catch (...) {
    return ito::compat::code_of_current_exception();
  }
}

}  // namespace

extern "C" {

int ito_dist_init(int* argc, char*** argv, size_t region_bytes) {
  if (g_c_runtime) return EBUSY;
  return guarded([&] {
    ito::dist::options o;
    o.region_bytes = region_bytes;
    g_c_runtime = new ito::dist::runtime(argc, argv, o);
  });
}

int ito_dist_finalize(void) {
  if (!g_c_runtime) return EPERM;
  delete g_c_runtime;
  g_c_runtime = nullptr;
  return 0;
}

int ito_dist_rank(int* rank) {
  if (!rank) return EINVAL;
  return guarded([&] { *rank = ito::dist::rank(); });
}

int ito_dist_size(int* size) {
  if (!size) return EINVAL;
  return guarded([&] { *size = ito::dist::size(); });
}

int ito_dist_barrier(void) {
  return guarded([] { ito::dist::barrier(); });
}

int ito_dist_region(void** base, size_t* bytes) {
  if (!base || !bytes) return EINVAL;
  return guarded([&] {
    const ito::dist::region_info r = ito::dist::region();
    *base = r.base;
    *bytes = r.bytes;
  });
}

}  // extern "C"
