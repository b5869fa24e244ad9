// SPDX-License-Identifier: Apache-2.0
// Arrays indexed by page, as large as the region needs but reserved, not
// committed (MAP_NORESERVE): only the entries of pages in use take memory.
#pragma once

#include <sys/mman.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ito::dist::detail {

template <class T>
T* reserve_array(std::size_t n) {
  void* p = mmap(nullptr, n * sizeof(T) + 1, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    std::fprintf(stderr, "ito: dsm: cannot reserve the page tables: %s\n", std::strerror(errno));
    std::exit(2);
  }
  return static_cast<T*>(p);
}

template <class T>
void release_array(T* p, std::size_t n) noexcept {
  if (p) munmap(p, n * sizeof(T) + 1);
}

}  // namespace ito::dist::detail
