// SPDX-License-Identifier: Apache-2.0
// Reads and checks the ITO_* environment variables and the options struct.
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "ito/options.hpp"
#include "common/environment.hpp"
#include "trace/trace.hpp"

namespace ito {

namespace {

std::string range_message(const char* name, const char* value, const std::string& accepted) {
  return std::string("ito: ") + name + "=" + value + " is invalid: expected " + accepted;
}

// Parses a whole decimal number with an optional K/M/G suffix (powers of 1024).
bool parse_size(const char* text, unsigned long long& out, bool allow_suffix) {
  if (!text || !*text) return false;
  if (*text == '-' || *text == '+') return false;
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(text, &end, 10);
  if (errno != 0 || end == text) return false;
  if (allow_suffix && *end) {
    unsigned shift = 0;
    switch (*end) {
      case 'k': case 'K': shift = 10; break;
      case 'm': case 'M': shift = 20; break;
      case 'g': case 'G': shift = 30; break;
      default: return false;
    }
    ++end;
    if (v > (~0ull >> shift)) return false;
    v <<= shift;
  }
  if (*end) return false;
  out = v;
  return true;
}

std::optional<bool> env_flag(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  if (!std::strcmp(v, "1") || !std::strcmp(v, "true") || !std::strcmp(v, "yes")) return true;
  if (!std::strcmp(v, "0") || !std::strcmp(v, "false") || !std::strcmp(v, "no")) return false;
  throw config_error(range_message(name, v, "1, true or yes; 0, false or no"), true);
}

unsigned allowed_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return static_cast<unsigned>(n);
  }
  return 1;
}

}  // namespace

// Defined only by ito's split-stack runtime library (src/split/morestack/),
// which the ito::split_stack CMake target links into programs built with
// -fsplit-stack.
extern "C" [[gnu::weak]] const int ito_split_stack_runtime;

bool split_stack_runtime_linked() noexcept { return &ito_split_stack_runtime != nullptr; }

options resolve_options(options o) {
  warn_about_unknown_variables();
  const std::string workers_range = "an integer in [1, " + std::to_string(options::max_workers) + "]";
  if (o.workers == 0) {
    if (const char* v = std::getenv("ITO_WORKERS"); v && *v) {
      unsigned long long n = 0;
      if (!parse_size(v, n, false) || n < 1 || n > options::max_workers)
        throw config_error(range_message("ITO_WORKERS", v, workers_range), true);
      o.workers = static_cast<unsigned>(n);
    } else {
      o.workers = allowed_cpus();
    }
  } else if (o.workers > options::max_workers) {
    throw config_error("ito: options.workers=" + std::to_string(o.workers) +
                       " is invalid: expected " + workers_range, false);
  }

  const std::string stack_range = "a size in [16K, 1G] bytes (suffixes K, M, G allowed)";
  if (o.stack_size == 0) {
    if (const char* v = std::getenv("ITO_STACK_SIZE"); v && *v) {
      unsigned long long n = 0;
      if (!parse_size(v, n, true) || n < options::min_stack_size || n > options::max_stack_size)
        throw config_error(range_message("ITO_STACK_SIZE", v, stack_range), true);
      o.stack_size = static_cast<std::size_t>(n);
    } else {
      o.stack_size = options::default_stack_size;
    }
  } else if (o.stack_size < options::min_stack_size || o.stack_size > options::max_stack_size) {
    throw config_error("ito: options.stack_size=" + std::to_string(o.stack_size) +
                       " is invalid: expected " + stack_range, false);
  }
  // Whole pages: the guard below each stack is mprotect'ed, and pages are 4 KiB
  // on x86-64 but 16 or 64 KiB on many aarch64 kernels.
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  o.stack_size = (o.stack_size + page - 1) & ~(page - 1);

  if (const char* v = std::getenv("ITO_STACK"); v && *v) {
    if (!std::strcmp(v, "fixed")) o.stacks = stack_policy::fixed;
    else if (!std::strcmp(v, "lazy")) o.stacks = stack_policy::lazy;
    else if (!std::strcmp(v, "fair_use")) o.stacks = stack_policy::fair_use;
    else throw config_error(range_message("ITO_STACK", v, "fixed, lazy or fair_use"), true);
  }
#if !defined(__x86_64__)
  // GCC has no -fsplit-stack for this architecture (aarch64: "not supported by
  // this compiler configuration"), so no program here can grow its stack.
  if (o.stacks != stack_policy::fixed)
    throw config_error(
        std::string("ito: ITO_STACK / options.stacks: the ") +
            (o.stacks == stack_policy::lazy ? "lazy" : "fair_use") +
            " stack policy needs split stacks (gcc -fsplit-stack), which exist on x86-64 only; "
            "on this architecture use ITO_STACK=fixed",
        std::getenv("ITO_STACK") != nullptr);
#endif
  if (o.stacks != stack_policy::fixed && !split_stack_runtime_linked())
    throw config_error(
        std::string("ito: ITO_STACK / options.stacks: the ") +
            (o.stacks == stack_policy::lazy ? "lazy" : "fair_use") +
            " stack policy needs a program built with -fsplit-stack and linked with ito's "
            "split-stack runtime (CMake: link ito::split_stack; see docs/SPLIT_STACKS.md); "
            "this program is not, so use ITO_STACK=fixed",
        std::getenv("ITO_STACK") != nullptr);

  const std::string block_range = "a size in [8K, 64M] bytes (suffixes K, M, G allowed)";
  if (o.stack_block_size == 0) {
    if (const char* v = std::getenv("ITO_STACK_BLOCK_SIZE"); v && *v) {
      unsigned long long n = 0;
      if (!parse_size(v, n, true) || n < options::min_stack_block_size ||
          n > options::max_stack_block_size)
        throw config_error(range_message("ITO_STACK_BLOCK_SIZE", v, block_range), true);
      o.stack_block_size = static_cast<std::size_t>(n);
    } else {
      o.stack_block_size = options::default_stack_block_size;
    }
  } else if (o.stack_block_size < options::min_stack_block_size ||
             o.stack_block_size > options::max_stack_block_size) {
    throw config_error("ito: options.stack_block_size=" + std::to_string(o.stack_block_size) +
                       " is invalid: expected " + block_range, false);
  }
  o.stack_block_size = (o.stack_block_size + page - 1) & ~(page - 1);

  if (!o.stack_allocator) {
    o.stack_allocator = stack_alloc::mmap;
    if (const char* v = std::getenv("ITO_STACK_ALLOC"); v && *v) {
      if (!std::strcmp(v, "mmap")) o.stack_allocator = stack_alloc::mmap;
      else if (!std::strcmp(v, "malloc")) o.stack_allocator = stack_alloc::malloc;
      else throw config_error(range_message("ITO_STACK_ALLOC", v, "mmap or malloc"), true);
    }
  }

  if (const char* v = std::getenv("ITO_DUMP_SIGNAL"); v && *v && dump_signal_from(v) == 0)
    throw config_error(range_message("ITO_DUMP_SIGNAL", v,
                                     "a signal name or number (e.g. SIGUSR2), not SIGKILL, "
                                     "SIGSTOP, SIGSEGV or SIGBUS"),
                       true);

  if (const char* v = std::getenv("ITO_DEADLOCK"); v && deadlock_choice(v) < 0)
    throw config_error(range_message("ITO_DEADLOCK", v, "report, abort or ignore"), true);

  if (const char* v = std::getenv("ITO_TRACE"); v && *v) trace::check_path(v);

  if (!o.bind) o.bind = env_flag("ITO_BIND").value_or(false);
  if (!o.stats) o.stats = env_flag("ITO_STATS").value_or(false);
  return o;
}

}  // namespace ito
