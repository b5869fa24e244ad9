// SPDX-License-Identifier: Apache-2.0
// Cilksort's shape on ito's ordinary API: sort both halves in parallel, then
// merge them in parallel (split the larger run at its middle, find that value
// in the other by binary search, merge the two sides in parallel), then copy
// back in parallel. The same code runs on DSM arrays (ito-bench-dist-sort)
// and on plain memory in one process (`ito-bench dist-sort`'s reference).
//
// `Access` says how a leaf reaches its data: `plain_access` touches it (on
// DSM arrays a page this rank does not hold faults in), while the DSM
// benchmark's checkout access checks each leaf's ranges out first (one
// transfer per home, as Itoyori's cilksort does). The fill and the check
// run in parallel too, so each part of the array is written first where its
// ULT runs, as a program that scales would. Each split runs its second half
// in a ULT created near that half's output (ito::near): in the distributed
// mode it starts on the rank holding that part of the array, so the leaves
// sort and merge mostly where their data lives; elsewhere near() changes
// nothing.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>

#include "ito/thread.hpp"

namespace sort_kernel {

inline constexpr long cutoff = 4096;  // below this, sequential

// No explicit access: the leaves load and store.
struct plain_access {
  struct scope {};
  template <class T>
  static scope read(const T*, long) {
    return {};
  }
  template <class T>
  static scope write(T*, long) {
    return {};
  }
  template <class T>
  static scope read_write(T*, long) {
    return {};
  }
};

template <class Access = plain_access>
void merge(const int* a, long na, const int* b, long nb, int* out) {
  if (na < nb) {
    std::swap(a, b);
    std::swap(na, nb);
  }
  if (na + nb <= cutoff) {
    [[maybe_unused]] const auto in_a = Access::read(a, na);
    [[maybe_unused]] const auto in_b = Access::read(b, nb);
    [[maybe_unused]] const auto to = Access::write(out, na + nb);
    std::merge(a, a + na, b, b + nb, out);
    return;
  }
  const long ma = na / 2;
  const long mb = std::lower_bound(b, b + nb, a[ma]) - b;
  out[ma + mb] = a[ma];
  int* right_out = out + ma + mb + 1;
  auto right = ito::create_thread(ito::near(right_out), merge<Access>, a + ma + 1, na - ma - 1,
                                  b + mb, nb - mb, right_out);
  merge<Access>(a, ma, b, mb, out);
  right.get();
}

template <class Access = plain_access>
void copy(const int* from, int* to, long n) {
  if (n <= cutoff) {
    [[maybe_unused]] const auto in = Access::read(from, n);
    [[maybe_unused]] const auto out = Access::write(to, n);
    std::copy(from, from + n, to);
    return;
  }
  auto right = ito::create_thread(ito::near(to + n / 2), copy<Access>, from + n / 2, to + n / 2,
                                  n - n / 2);
  copy<Access>(from, to, n / 2);
  right.get();
}

// Sorts a[0, n), using tmp[0, n).
template <class Access = plain_access>
void sort(int* a, int* tmp, long n) {
  if (n <= cutoff) {
    [[maybe_unused]] const auto here = Access::read_write(a, n);
    std::sort(a, a + n);
    return;
  }
  const long h = n / 2;
  auto right = ito::create_thread(ito::near(a + h), sort<Access>, a + h, tmp + h, n - h);
  sort<Access>(a, tmp, h);
  right.get();
  merge<Access>(a, h, a + h, n - h, tmp);
  copy<Access>(tmp, a, n);
}

// Element i of the input of run `seed`: a hash of both, so that any part
// can be filled independently.
inline int value_at(long i, unsigned seed) {
  std::uint64_t x = (static_cast<std::uint64_t>(seed) << 40) + static_cast<std::uint64_t>(i);
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  return static_cast<int>(x % 1'000'000'007u);
}

template <class Access = plain_access>
void fill(int* a, long n, unsigned seed, long first = 0) {
  if (n <= cutoff) {
    [[maybe_unused]] const auto out = Access::write(a, n);
    for (long i = 0; i < n; ++i) a[i] = value_at(first + i, seed);
    return;
  }
  auto right = ito::create_thread(ito::near(a + n / 2), fill<Access>, a + n / 2, n - n / 2, seed,
                                  first + n / 2);
  fill<Access>(a, n / 2, seed, first);
  right.get();
}

// What a check of the array adds up: a sum that ignores the order (so the
// input's and the sorted output's agree) and the places where a value is
// below its left neighbour (0 when sorted).
struct summary {
  std::uint64_t sum = 0;
  long descents = 0;
};

template <class Access = plain_access>
summary check(const int* a, long n, const int* before = nullptr) {
  if (n <= cutoff) {
    [[maybe_unused]] const auto in = Access::read(a, n);
    summary s;
    if (before && n > 0) {
      const int left_neighbour = *before;  // one int of the previous block
      s.descents += a[0] < left_neighbour;
    }
    for (long i = 0; i < n; ++i) {
      s.sum += static_cast<std::uint64_t>(a[i]) * 0x9E3779B1u;
      if (i > 0) s.descents += a[i] < a[i - 1];
    }
    return s;
  }
  const long h = n / 2;
  auto right = ito::create_thread(ito::near(a + h), check<Access>, a + h, n - h, a + h - 1);
  const summary l = check<Access>(a, h, before);
  const summary r = right.get();
  return {l.sum + r.sum, l.descents + r.descents};
}

}  // namespace sort_kernel
