// SPDX-License-Identifier: Apache-2.0
// fib(n) (one ULT per call) and seed 000's benchmark 1, matfib: every frame
// holds two 64x64 double matrices; spawn fibo(n-1), call fibo(n-2), add, join.
#include <cstring>
#include <stdexcept>

#include "ito/parallel.hpp"
#include "ito/thread.hpp"
#include "split_bench.hpp"

namespace bench::split {
namespace {

long fib(int n) {
  if (n < 2) return n;
  auto child = ito::create_thread(fib, n - 1);
  long b = fib(n - 2);
  return ito::join(child) + b;
}

// Both calls as parallel_invoke branches: a branch becomes a ULT only when
// stolen, so the policies differ only in how the caller's stack grows.
long invoke_fib(int n) {
  if (n < 2) return n;
  long a = 0, b = 0;
  ito::parallel_invoke([&] { a = invoke_fib(n - 1); }, [&] { b = invoke_fib(n - 2); });
  return a + b;
}

[[gnu::noinline]] long seq_fib(int n) { return n < 2 ? n : seq_fib(n - 1) + seq_fib(n - 2); }

constexpr int dim = 64;
using matrix = double[dim][dim];

// out = fib(n) in every entry, computed through the frames' matrices.
[[gnu::noinline]] void matfib(int n, matrix* out) {
  matrix a, b;
  if (n < 2) {
    for (int i = 0; i < dim; ++i)
      for (int j = 0; j < dim; ++j) (*out)[i][j] = n;
    return;
  }
  auto child = ito::create_thread(matfib, n - 1, &a);
  matfib(n - 2, &b);
  ito::join(child);
  for (int i = 0; i < dim; ++i)
    for (int j = 0; j < dim; ++j) (*out)[i][j] = a[i][j] + b[i][j];
}

const ito::stack_policy all_policies[] = {ito::stack_policy::fixed, ito::stack_policy::lazy,
                                          ito::stack_policy::fair_use};

}  // namespace

int fib_command(args& a, const common_flags& c, reporter& out) {
  const int n = static_cast<int>(a.take_int("--n", 35, 2, 45));
  const std::size_t block = parse_sizes("--block", g_block_list.empty() ? "256K" : g_block_list).front();
  a.finish();
  std::vector<unsigned> workers = c.workers.empty() ? std::vector<unsigned>{1, allowed_cpus()} : c.workers;
  if (workers.size() == 2 && workers[0] == workers[1]) workers.pop_back();
  volatile int vn = n;
  for (unsigned w : workers) {
    for (ito::stack_policy p : all_policies) {
      progress("fib(%d), %s, %u worker(s)...", n, name(p), w);
      result r;
      r.bench = "fib";
      r.group = "n=" + std::to_string(n);
      r.impl = std::string("ito ") + name(p);
      r.workers = w;
      r.reference = p == ito::stack_policy::fixed;
      r.ops = static_cast<double>(fib_value(n + 1) - 1) + 1;
      r.note = p == ito::stack_policy::fixed ? "64K stacks" : "blocks " + size_text(block);
      measure_policy(r, c.runs, p, w, block, 0, [&] {
        long v = ito::join(ito::create_thread(fib, static_cast<int>(vn)));
        if (v != fib_value(n)) throw std::runtime_error("fib: wrong result");
      });
      out.add(std::move(r));

      result pi;
      pi.bench = "fib";
      pi.group = "n=" + std::to_string(n);
      pi.impl = std::string("ito ") + name(p) + ", parallel_invoke";
      pi.workers = w;
      pi.ops = static_cast<double>(fib_value(n + 1) - 1) + 1;
      pi.note = "a branch is a ULT only when stolen";
      measure_policy(pi, c.runs, p, w, block, 0, [&] {
        long v = ito::join(ito::create_thread(invoke_fib, static_cast<int>(vn)));
        if (v != fib_value(n)) throw std::runtime_error("fib: wrong result");
      });
      out.add(std::move(pi));
    }
    result r;
    r.bench = "fib";
    r.group = "n=" + std::to_string(n);
    r.impl = "sequential";
    r.workers = w;
    r.ops = static_cast<double>(fib_value(n + 1) - 1) + 1;
    r.note = "plain recursion, one thread";
    measure(r, c.runs, [&] {
      std::int64_t t0 = now_ns();
      long v = seq_fib(vn);
      std::int64_t t = now_ns() - t0;
      do_not_optimize(v);
      return t;
    });
    out.add(std::move(r));
  }
  out.print_table("fib(" + std::to_string(n) + ") under each stack policy");
  return 0;
}

int matfib_command(args& a, const common_flags& c, reporter& out) {
  const int n = static_cast<int>(a.take_int("--n", 20, 2, 30));
  const std::vector<std::size_t> blocks =
      parse_sizes("--block", g_block_list.empty() ? "8K,16K,64K,2M" : g_block_list);
  a.finish();
  std::vector<unsigned> workers = c.workers.empty() ? std::vector<unsigned>{allowed_cpus()} : c.workers;
  for (unsigned w : workers) {
    for (std::size_t block : blocks) {
      for (ito::stack_policy p : all_policies) {
        if (p == ito::stack_policy::fixed && block != blocks.front()) continue;
        progress("matfib(%d), %s, %s blocks, %u worker(s)...", n, name(p), size_text(block).c_str(), w);
        result r;
        r.bench = "matfib";
        r.group = "n=" + std::to_string(n) + " block=" + size_text(block);
        r.impl = std::string("ito ") + name(p);
        r.workers = w;
        r.ops = static_cast<double>(fib_value(n + 1) - 1) + 1;
        // fixed: every ULT needs room for n/2 frames of 64 KiB.
        const std::size_t fixed_stack = (static_cast<std::size_t>(n) / 2 + 4) * 70 * 1024;
        r.note = p == ito::stack_policy::fixed ? "stacks " + size_text((fixed_stack + 4095) / 4096 * 4096)
                                               : "";
        measure_policy(r, c.runs, p, w, block, p == ito::stack_policy::fixed ? fixed_stack : 0, [&] {
          static matrix result;
          matfib(n, &result);
          if (result[0][0] != static_cast<double>(fib_value(n))) throw std::runtime_error("matfib: wrong");
        });
        out.add(std::move(r));
      }
    }
  }
  out.print_table("matfib(" + std::to_string(n) + "): two 64x64 double matrices per frame");
  return 0;
}

}  // namespace bench::split
