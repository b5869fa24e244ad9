// SPDX-License-Identifier: Apache-2.0
// Resolves ito::options: each field the program leaves unset from its ITO_*
// variable (setting_values.hpp), then its default; each checked.
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "ito/options.hpp"
#include "common/environment.hpp"
#include "common/setting_values.hpp"

namespace ito {

namespace {

using config::setting_id;
using config::declared;

unsigned allowed_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return static_cast<unsigned>(n);
  }
  return 1;
}

// ITO_TRACE's file, opened (created) now: a path that cannot be written
// stops the start rather than losing the trace at the end. Here, not in
// src/trace, which reads the settings (common must not call up into it).
void check_trace_path(const char* path) {
  const int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    throw config_error(std::string("ito: ITO_TRACE=") + path + " cannot be written: " +
                           std::strerror(errno) + " (expected a file path, e.g. trace.json)",
                       true);
  close(fd);
}

}  // namespace

// Defined only by ito's split-stack runtime library (src/split/morestack/),
// which the ito::split_stack CMake target links into programs built with
// -fsplit-stack.
extern "C" [[gnu::weak]] const int ito_split_stack_runtime;

bool split_stack_runtime_linked() noexcept { return &ito_split_stack_runtime != nullptr; }

namespace {
std::atomic<unsigned> g_cpu_share{0};
}  // namespace

void config::set_cpu_share(unsigned cpus) noexcept { g_cpu_share.store(cpus, std::memory_order_relaxed); }

unsigned config::default_workers() {
  const auto n = config::number_setting(setting_id::workers);
  if (n) return static_cast<unsigned>(*n);
  const unsigned share = g_cpu_share.load(std::memory_order_relaxed);
  return share != 0 ? share : allowed_cpus();
}

options resolve_options(options o) {
  warn_about_unknown_variables();
  const config::setting& workers = declared(setting_id::workers);
  if (o.workers == 0) {
    o.workers = config::default_workers();
  } else if (o.workers > workers.max) {
    throw config::invalid_option("options.workers", std::to_string(o.workers), workers);
  }

  const config::setting& stack_size = declared(setting_id::stack_size);
  if (o.stack_size == 0) {
    o.stack_size = config::number_setting(setting_id::stack_size).value_or(stack_size.fallback);
  } else if (o.stack_size < stack_size.min || o.stack_size > stack_size.max) {
    throw config::invalid_option("options.stack_size", std::to_string(o.stack_size), stack_size);
  }
  // Whole pages: the guard below each stack is mprotect'ed, and pages are 4 KiB
  // on x86-64 but 16 or 64 KiB on many aarch64 kernels.
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  o.stack_size = (o.stack_size + page - 1) & ~(page - 1);

  // In the order of the choices declared for ITO_STACK.
  constexpr stack_policy policies[] = {stack_policy::fixed, stack_policy::lazy, stack_policy::fair_use};
  if (auto i = config::choice_setting(setting_id::stack)) o.stacks = policies[*i];
#if !defined(__x86_64__)
  // GCC has no -fsplit-stack for this architecture (aarch64: "not supported by
  // this compiler configuration"), so no program here can grow its stack.
  if (o.stacks != stack_policy::fixed)
    throw config_error(
        std::string("ito: ITO_STACK / options.stacks: the ") +
            (o.stacks == stack_policy::lazy ? "lazy" : "fair_use") +
            " stack policy needs split stacks (gcc -fsplit-stack), which exist on x86-64 only; "
            "on this architecture use ITO_STACK=fixed",
        config::text_setting(setting_id::stack) != nullptr);
#endif
  if (o.stacks != stack_policy::fixed && !split_stack_runtime_linked())
    throw config_error(
        std::string("ito: ITO_STACK / options.stacks: the ") +
            (o.stacks == stack_policy::lazy ? "lazy" : "fair_use") +
            " stack policy needs a program built with -fsplit-stack and linked with ito's "
            "split-stack runtime (CMake: link ito::split_stack; see docs/SPLIT_STACKS.md); "
            "this program is not, so use ITO_STACK=fixed",
        config::text_setting(setting_id::stack) != nullptr);

  const config::setting& block = declared(setting_id::stack_block_size);
  if (o.stack_block_size == 0) {
    o.stack_block_size = config::number_setting(setting_id::stack_block_size).value_or(block.fallback);
  } else if (o.stack_block_size < block.min || o.stack_block_size > block.max) {
    throw config::invalid_option("options.stack_block_size", std::to_string(o.stack_block_size),
                                 block);
  }
  o.stack_block_size = (o.stack_block_size + page - 1) & ~(page - 1);

  if (!o.stack_allocator) {
    constexpr stack_alloc allocators[] = {stack_alloc::mmap, stack_alloc::malloc};
    o.stack_allocator = allocators[config::choice_setting(setting_id::stack_alloc).value_or(0)];
  }

  // Read later, by layers that cannot stop the start: checked here.
  if (const char* v = config::text_setting(setting_id::dump_signal); v && dump_signal_from(v) == 0)
    throw config::invalid_variable(declared(setting_id::dump_signal), v);
  (void)config::choice_setting(setting_id::deadlock);
  (void)config::choice_setting(setting_id::deque_fence);
  if (const char* v = config::text_setting(setting_id::trace)) check_trace_path(v);

  const config::setting& preempt = declared(setting_id::preempt);
  if (!o.preempt_us) {
    o.preempt_us = static_cast<unsigned>(config::number_setting(setting_id::preempt).value_or(0));
  } else if (*o.preempt_us > preempt.max) {
    throw config::invalid_option("options.preempt_us", std::to_string(*o.preempt_us), preempt);
  }

  if (!o.bind) o.bind = config::boolean_setting(setting_id::bind).value_or(false);
  if (!o.stats) o.stats = config::boolean_setting(setting_id::stats).value_or(false);
  if (!o.ult_tls) o.ult_tls = config::boolean_setting(setting_id::ult_tls).value_or(false);
  if (!o.fp_modes) {
    constexpr fp_mode_scope scopes[] = {fp_mode_scope::per_ult, fp_mode_scope::per_worker};
    o.fp_modes = scopes[config::choice_setting(setting_id::fp_modes).value_or(0)];
  }
  return o;
}

}  // namespace ito
