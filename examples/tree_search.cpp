// SPDX-License-Identifier: Apache-2.0
// Branch-and-bound over a tree of choices, one ULT per subtree: the best
// result so far is shared, kept under an ito::mutex (a ULT that waits for it
// lets its worker run other ULTs instead of blocking the OS thread).
// The problem: pick items (value, weight) under a weight limit (0/1 knapsack).
//   ./tree_search [items]
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <vector>

#include <ito/ito.hpp>

struct item {
  int value, weight;
};

struct search {
  std::vector<item> items;
  int capacity = 0;
  ito::mutex best_lock;
  int best = 0;  // guarded by best_lock

  void offer(int value) {
    std::lock_guard<ito::mutex> hold(best_lock);
    if (value > best) best = value;
  }
  int best_so_far() {
    std::lock_guard<ito::mutex> hold(best_lock);
    return best;
  }

  // Everything from item i on could add at most this much value.
  int bound(std::size_t i) const {
    int sum = 0;
    for (; i < items.size(); ++i) sum += items[i].value;
    return sum;
  }

  void explore(std::size_t i, int value, int weight) {
    if (i == items.size()) {
      offer(value);
      return;
    }
    if (value + bound(i) <= best_so_far()) return;  // cannot beat what we have
    const bool spawn = items.size() - i > 12;       // small subtrees: no new ULT
    ito::future<void> taken;
    if (weight + items[i].weight <= capacity) {
      if (spawn)
        taken = ito::create_thread([=, this] { explore(i + 1, value + items[i].value, weight + items[i].weight); });
      else
        explore(i + 1, value + items[i].value, weight + items[i].weight);
    }
    explore(i + 1, value, weight);
    if (taken.valid()) ito::join(taken);
  }
};

// The same answer by dynamic programming, to check the search.
int knapsack_dp(const std::vector<item>& items, int capacity) {
  std::vector<int> best(capacity + 1, 0);
  for (const item& it : items)
    for (int w = capacity; w >= it.weight; --w) best[w] = std::max(best[w], best[w - it.weight] + it.value);
  return best[capacity];
}

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 30;
  search s;
  std::mt19937 rng(7);
  int total_weight = 0;
  for (int i = 0; i < n; ++i) {
    s.items.push_back({static_cast<int>(rng() % 100) + 1, static_cast<int>(rng() % 100) + 1});
    total_weight += s.items.back().weight;
  }
  s.capacity = total_weight / 3;
  ito::start_main_thread([&] { s.explore(0, 0, 0); });
  int expected = knapsack_dp(s.items, s.capacity);
  std::printf("best value %d (dynamic programming: %d): %s\n", s.best, expected,
              s.best == expected ? "same" : "DIFFERENT");
  return s.best == expected ? 0 : 1;
}
