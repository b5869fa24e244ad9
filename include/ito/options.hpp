// SPDX-License-Identifier: Apache-2.0
// Runtime options: what a program can set in code, and the ITO_* variables that
// fill in whatever it leaves at zero.
#pragma once

#include "ito/cxx20.hpp"

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>

namespace ito {

// Where ULT stacks come from. `fixed` works with any code; `lazy` and
// `fair_use` need code built with -fsplit-stack and linked with ito's split-stack
// runtime (CMake target ito::split_stack; see docs/SPLIT_STACKS.md).
enum class stack_policy { fixed, lazy, fair_use };

// How lazy/fair_use obtain their stack blocks.
enum class stack_alloc { mmap, malloc };

// Whose floating-point control words (rounding mode, exception masks,
// flush-to-zero: MXCSR and the x87 control word) a ULT runs with.
// per_ult: its own, carried by every switch, as each POSIX thread has its
// own. per_worker: its worker's; the switch reads and loads none, so a ULT
// that changes them changes them for whatever runs next on its worker. For
// programs that leave the modes alone after start, and only on x86-64 (an
// `stmxcsr` a switch, ~3 ns on AMD Zen 3; aarch64 always carries FPCR).
enum class fp_mode_scope { per_ult, per_worker };

struct options {
  unsigned workers = 0;          // 0: ITO_WORKERS, else the CPUs in the affinity mask
                                 // (under ito::dist: the rank's share of its host's CPUs)
  std::size_t stack_size = 0;    // bytes; 0: ITO_STACK_SIZE, else default_stack_size
  std::optional<bool> bind;      // pin worker i to the i-th allowed CPU; unset: ITO_BIND
  std::optional<bool> stats;     // print per-worker counters at exit; unset: ITO_STATS
  stack_policy stacks = stack_policy::fixed;  // fixed: ITO_STACK may override it
  std::size_t stack_block_size = 0;  // lazy/fair_use block bytes; 0: ITO_STACK_BLOCK_SIZE, else default
  std::optional<stack_alloc> stack_allocator;  // unset: ITO_STACK_ALLOC, else mmap
  // Preemption: a ULT that runs this many µs while others wait for its
  // worker is interrupted and queued behind them; 0: never (cooperative).
  // Unset: ITO_PREEMPT, else 0 (under libito-preload.so: 10,000). Needs ito
  // in a shared library (libito.so or the preload), the fixed stack policy,
  // and no ThreadSanitizer: otherwise a nonzero value is a config_error.
  std::optional<unsigned> preempt_us;
  // Each ULT made by pthread_create or ito_create gets a TLS block of its
  // own (`__thread`, `thread_local`, errno, the locale), switched with it;
  // the main ULT and create_thread's ULTs keep their worker's. Unset:
  // ITO_ULT_TLS, else off. x86-64 with glibc only, and not with the
  // sanitizers, the lazy/fair_use policies or ito::dist: a config_error
  // at start otherwise (docs/POSIX.md, "TLS and errno").
  std::optional<bool> ult_tls;
  // Unset: ITO_FP_MODES (`ult` or `worker`), else per_ult.
  std::optional<fp_mode_scope> fp_modes;

  static constexpr std::size_t default_stack_size = 64 * 1024;
  static constexpr std::size_t min_stack_size = 16 * 1024;
  static constexpr std::size_t max_stack_size = std::size_t{1} << 30;
  static constexpr unsigned max_workers = 1024;
  static constexpr std::size_t default_stack_block_size = 256 * 1024;
  static constexpr std::size_t min_stack_block_size = 8 * 1024;
  static constexpr std::size_t max_stack_block_size = std::size_t{64} << 20;
  static constexpr unsigned max_preempt_us = 1'000'000;
};

// A bad option value, or a bad ITO_* variable; what() names it and the accepted range.
class config_error : public std::invalid_argument {
 public:
  config_error(const std::string& what, bool from_environment)
      : std::invalid_argument(what), from_environment_(from_environment) {}
  // True when an ITO_* variable, not the program's options, is at fault.
  bool from_environment() const noexcept { return from_environment_; }

 private:
  bool from_environment_;
};

// Fills every unset field from the environment and checks all of them.
// Throws config_error.
options resolve_options(options requested);

// True when this program was linked with ito's split-stack runtime, so that the
// lazy and fair_use policies can run.
bool split_stack_runtime_linked() noexcept;

}  // namespace ito
