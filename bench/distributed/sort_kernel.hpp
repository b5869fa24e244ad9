// SPDX-License-Identifier: Apache-2.0
// Cilksort's shape on ito's ordinary API: sort both halves in parallel, then
// merge them in parallel (split the larger run at its middle, find that value
// in the other by binary search, merge the two sides in parallel), then copy
// back in parallel. The same code runs on DSM arrays (ito-bench-dist-sort)
// and on plain memory in one process (`ito-bench dist-sort`'s reference).
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>

#include "ito/thread.hpp"

namespace sort_kernel {

inline constexpr long cutoff = 4096;  // below this, sequential

inline void merge(const int* a, long na, const int* b, long nb, int* out) {
  if (na < nb) {
    std::swap(a, b);
    std::swap(na, nb);
  }
  if (na + nb <= cutoff) {
    std::merge(a, a + na, b, b + nb, out);
    return;
  }
  const long ma = na / 2;
  const long mb = std::lower_bound(b, b + nb, a[ma]) - b;
  out[ma + mb] = a[ma];
  auto left = ito::create_thread(merge, a, ma, b, mb, out);
  merge(a + ma + 1, na - ma - 1, b + mb, nb - mb, out + ma + mb + 1);
  left.get();
}

inline void copy(const int* from, int* to, long n) {
  if (n <= cutoff) {
    std::copy(from, from + n, to);
    return;
  }
  auto left = ito::create_thread(copy, from, to, n / 2);
  copy(from + n / 2, to + n / 2, n - n / 2);
  left.get();
}

// Sorts a[0, n), using tmp[0, n).
inline void sort(int* a, int* tmp, long n) {
  if (n <= cutoff) {
    std::sort(a, a + n);
    return;
  }
  const long h = n / 2;
  auto left = ito::create_thread(sort, a, tmp, h);
  sort(a + h, tmp + h, n - h);
  left.get();
  merge(a, h, a + h, n - h, tmp);
  copy(tmp, a, n);
}

inline void fill(int* a, long n, unsigned seed) {
  std::uint64_t x = 0x9E3779B97F4A7C15ull * seed;
  for (long i = 0; i < n; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    a[i] = static_cast<int>(x % 1'000'000'007u);
  }
}

inline std::uint64_t checksum(const int* a, long n) {
  std::uint64_t s = 0;
  for (long i = 0; i < n; ++i) s += static_cast<std::uint64_t>(a[i]) * 0x9E3779B1u;
  return s;
}

inline bool is_sorted(const int* a, long n) { return std::is_sorted(a, a + n); }

}  // namespace sort_kernel
