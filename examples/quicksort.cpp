// SPDX-License-Identifier: Apache-2.0
// Parallel quicksort: each partition sorts its two sides with
// ito::parallel_invoke, which makes a ULT only for a side another worker
// takes; a side nobody takes is a plain call. Small ranges are sorted in
// place: even a call through the branch deque costs ~10 ns.
//   ./quicksort [elements]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include <ito/ito.hpp>

void quicksort(int* first, int* last) {
  if (last - first < 2048) {
    std::sort(first, last);
    return;
  }
  int pivot = first[(last - first) / 2];
  // Three-way split, so that runs of equal keys end the recursion.
  int* lt = std::partition(first, last, [pivot](int x) { return x < pivot; });
  int* gt = std::partition(lt, last, [pivot](int x) { return x == pivot; });
  ito::parallel_invoke([=] { quicksort(first, lt); }, [=] { quicksort(gt, last); });
}

int main(int argc, char** argv) {
  std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10'000'000;
  std::vector<int> v(n);
  std::mt19937 rng(42);
  for (int& x : v) x = static_cast<int>(rng() % 1'000'000);
  ito::start_main_thread([&] { quicksort(v.data(), v.data() + v.size()); });
  bool sorted = std::is_sorted(v.begin(), v.end());
  std::printf("sorted %zu elements: %s\n", n, sorted ? "yes" : "NO");
  return sorted ? 0 : 1;
}
