// SPDX-License-Identifier: Apache-2.0
// An `Access` for the kernels (sort_kernel.hpp): each leaf checks its ranges
// out of the DSM (ito::dist::checkout) for its scope, instead of faulting
// their pages in one by one.
#pragma once

#include <cstddef>

#include "ito/dist.hpp"

struct checkout_access {
  template <class T>
  static ito::dist::checkout<const T> read(const T* p, long n) {
    return {p, static_cast<std::size_t>(n), ito::dist::access::read};
  }
  template <class T>
  static ito::dist::checkout<T> write(T* p, long n) {
    return {p, static_cast<std::size_t>(n), ito::dist::access::write};
  }
  template <class T>
  static ito::dist::checkout<T> read_write(T* p, long n) {
    return {p, static_cast<std::size_t>(n), ito::dist::access::read_write};
  }
};
