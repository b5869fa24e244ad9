// SPDX-License-Identifier: Apache-2.0
// A 2-D 5-point Jacobi stencil over two n x n grids of doubles on ito's
// ordinary API: every sweep computes each interior point of one grid from its
// four neighbours in the other, in parallel over blocks of rows (split in
// halves, one half in a new ULT), and the grids swap roles between sweeps.
// Its access pattern differs from sort's: each ULT writes its own rows and
// reads one row of each neighbouring block. The same code runs on DSM arrays
// (ito-bench-dist-stencil) and on plain memory in one process (`ito-bench
// dist-stencil`'s reference); the sequential form runs the same sweeps as
// plain loops. The checksum adds the rows up in one fixed tree, so every form
// gives the same bits.
#pragma once

#include <utility>

#include "ito/thread.hpp"

namespace stencil_kernel {

inline constexpr long leaf_rows = 8;  // rows per ULT at the leaves (128 KiB at n = 2048)

// f(lo, hi) over [lo, hi) in blocks of at most leaf_rows rows, the block
// results added up left + right at every split (in ULTs when Parallel). The
// right half of each split runs in a ULT created near its first row of
// `grid` (n doubles a row): in the distributed mode it starts on the rank
// holding that row, so each rank sweeps the rows it holds; elsewhere near()
// changes nothing.
template <bool Parallel, class F>
double over_rows(F f, const double* grid, long n, long lo, long hi) {
  if (hi - lo <= leaf_rows) return f(lo, hi);
  const long mid = lo + (hi - lo) / 2;
  if constexpr (Parallel) {
    auto right =
        ito::create_thread(ito::near(grid + mid * n), over_rows<true, F>, f, grid, n, mid, hi);
    const double left = over_rows<true>(f, grid, n, lo, mid);
    return left + right.get();
  } else {
    const double left = over_rows<false>(f, grid, n, lo, mid);
    return left + over_rows<false>(f, grid, n, mid, hi);
  }
}

// The starting value of point (i, j): the top edge hot, the rest a pattern.
inline double initial(long i, long j) {
  return i == 0 ? 1.0 : static_cast<double>((i * 31 + j * 17) % 97) / 97.0;
}

// Rows [lo, hi) of both grids to their starting values.
inline double init_rows(double* a, double* b, long n, long lo, long hi) {
  for (long i = lo; i < hi; ++i)
    for (long j = 0; j < n; ++j) a[i * n + j] = b[i * n + j] = initial(i, j);
  return 0;
}

// Interior rows [lo, hi) of `to` from `from`; the edges stay as initialised.
inline double sweep_rows(const double* from, double* to, long n, long lo, long hi) {
  for (long i = lo; i < hi; ++i) {
    const double* up = from + (i - 1) * n;
    const double* row = from + i * n;
    const double* down = from + (i + 1) * n;
    double* out = to + i * n;
    for (long j = 1; j < n - 1; ++j) out[j] = 0.25 * (up[j] + down[j] + row[j - 1] + row[j + 1]);
  }
  return 0;
}

inline double sum_rows(const double* a, long n, long lo, long hi) {
  double s = 0;
  for (long i = lo; i < hi; ++i)
    for (long j = 0; j < n; ++j) s += a[i * n + j];
  return s;
}

// Both grids initialised, in parallel ULTs (first touch where they run).
inline void init(double* a, double* b, long n) {
  over_rows<true>([=](long lo, long hi) { return init_rows(a, b, n, lo, hi); }, a, n, 0, n);
}

// `sweeps` parallel sweeps starting from a; returns the grid holding the last.
inline double* run(double* a, double* b, long n, long sweeps) {
  for (long s = 0; s < sweeps; ++s) {
    const double* from = a;
    double* to = b;
    over_rows<true>([=](long lo, long hi) { return sweep_rows(from, to, n, lo, hi); }, to, n, 1,
                    n - 1);
    std::swap(a, b);
  }
  return a;
}

template <bool Parallel>
double checksum(const double* a, long n) {
  return over_rows<Parallel>([=](long lo, long hi) { return sum_rows(a, n, lo, hi); }, a, n, 0, n);
}

// The sequential form: plain loops over the same points.
inline double* run_sequential(double* a, double* b, long n, long sweeps) {
  for (long s = 0; s < sweeps; ++s) {
    sweep_rows(a, b, n, 1, n - 1);
    std::swap(a, b);
  }
  return a;
}

}  // namespace stencil_kernel
