// SPDX-License-Identifier: Apache-2.0
// Every ITO_* environment variable, declared once: its name, the kind of value
// it takes, its range, its default and one line of documentation. The parsers
// and typed lookups (setting_values.hpp) read their ranges here, the warning
// about an unknown ITO_* name (environment.cpp) reads the names here, and
// settings_test checks that docs/ENVIRONMENT.md's table says the same, row for
// row. A new variable is one more row here and one more row there.
#pragma once

#include <cstddef>
#include <string_view>

#include "ito/options.hpp"
#include "ito/os_pool.hpp"

namespace ito::config {

enum class setting_kind {
  integer,  // decimal digits only
  size,     // decimal digits with an optional K, M, G or T suffix (powers of 1024)
  boolean,  // 1, true or yes; 0, false or no
  choice,   // one of `choices`
  signal,   // a signal name or number (environment.cpp: dump_signal_from)
  path,     // a file path (checked by its reader)
  marker,   // set by ito itself
};

enum class setting_id : unsigned {
  workers, stack_size, bind, stats, stack, stack_block_size, stack_alloc, deque_fence,
  pool_min, pool_max, pool_bias, dump_signal, deadlock, trace, preload_threads,
  delegate_mode, dsm_size, dsm_block, dsm_check, dist_progress_us, dist_idle_progress_us,
  dist_heartbeat_ms, dist_watch, dist_reexec, dist_node, preempt, ult_tls, fp_modes,
  count
};

struct setting {
  setting_id id;
  const char* name;
  setting_kind kind;
  unsigned long long min = 0, max = 0;  // integer and size: the accepted range
  unsigned long long fallback = 0;      // integer and size: the default value
  std::string_view choices[4] = {};     // choice: the accepted words, in the order of their enum
  // The default as docs/ENVIRONMENT.md shows it; empty: `fallback` written out.
  const char* default_text = "";
  // What the value may be, beyond its kind: appended in parentheses to an
  // integer's range; for signal, path and marker the whole description.
  const char* accepts_note = "";
  const char* doc = "";  // one line: what the variable does
};

inline constexpr unsigned long long kib = 1024, mib = kib << 10, gib = mib << 10, tib = gib << 10;

// clang-format off
inline constexpr setting settings[] = {
    {.id = setting_id::workers, .name = "ITO_WORKERS", .kind = setting_kind::integer,
     .min = 1, .max = options::max_workers, .default_text = "CPUs in the affinity mask (ito::dist: the rank's share of its host's)",
     .doc = "worker OS threads of the runtime"},
    {.id = setting_id::stack_size, .name = "ITO_STACK_SIZE", .kind = setting_kind::size,
     .min = options::min_stack_size, .max = options::max_stack_size,
     .fallback = options::default_stack_size,
     .default_text = "64K; under `libito-preload.so` the stack limit (`ulimit -s`) up to 2M",
     .doc = "bytes per ULT stack (`fixed` policy), rounded up to pages; a child the main ULT joins "
            "before it started runs inline on the main ULT's own stack, at least this large "
            "([ARCHITECTURE.md](ARCHITECTURE.md), \"join inline\")"},
    {.id = setting_id::bind, .name = "ITO_BIND", .kind = setting_kind::boolean, .default_text = "no",
     .doc = "pin worker *i* to the *i*-th allowed CPU"},
    {.id = setting_id::stats, .name = "ITO_STATS", .kind = setting_kind::boolean, .default_text = "no",
     .doc = "print counters when each layer stops: the scheduler's per worker, the DSM's and the "
            "distributed scheduler's per rank (below)"},
    {.id = setting_id::stack, .name = "ITO_STACK", .kind = setting_kind::choice,
     .choices = {"fixed", "lazy", "fair_use"}, .default_text = "`fixed`",
     .doc = "stack policy; `lazy`/`fair_use` need a program linked with `ito::split_stack` "
            "([SPLIT_STACKS.md](SPLIT_STACKS.md))"},
    {.id = setting_id::stack_block_size, .name = "ITO_STACK_BLOCK_SIZE", .kind = setting_kind::size,
     .min = options::min_stack_block_size, .max = options::max_stack_block_size,
     .fallback = options::default_stack_block_size,
     .doc = "`lazy`/`fair_use` segment block size"},
    {.id = setting_id::stack_alloc, .name = "ITO_STACK_ALLOC", .kind = setting_kind::choice,
     .choices = {"mmap", "malloc"}, .default_text = "`mmap`",
     .doc = "how `lazy`/`fair_use` blocks are obtained"},
    {.id = setting_id::deque_fence, .name = "ITO_DEQUE_FENCE", .kind = setting_kind::choice,
     .choices = {"asymmetric", "full"},
     .default_text = "`asymmetric` where cheap to set up (below), else `full`",
     .doc = "how a worker's pop from its own deque is ordered against thieves: `asymmetric` leaves "
            "the pop without a fence and makes each steal call `membarrier`; `full` fences every "
            "pop ([ARCHITECTURE.md](ARCHITECTURE.md))"},
    {.id = setting_id::pool_min, .name = "ITO_POOL_MIN", .kind = setting_kind::integer,
     .min = 0, .max = os_pool_options::limit_max, .fallback = os_pool_options::default_min,
     .accepts_note = "at most the pool's maximum",
     .doc = "OS threads an `ito::os_pool` keeps ([IO.md](IO.md))"},
    {.id = setting_id::pool_max, .name = "ITO_POOL_MAX", .kind = setting_kind::integer,
     .min = 1, .max = os_pool_options::limit_max, .fallback = os_pool_options::default_max,
     .doc = "most OS threads of an `ito::os_pool` at once (the delegation pool's default: 10000)"},
    {.id = setting_id::pool_bias, .name = "ITO_POOL_BIAS", .kind = setting_kind::integer,
     .min = 1, .max = os_pool_options::limit_bias, .fallback = os_pool_options::default_bias,
     .doc = "idle pool threads tolerated beyond total/8 before retiring"},
    {.id = setting_id::dump_signal, .name = "ITO_DUMP_SIGNAL", .kind = setting_kind::signal,
     .default_text = "none",
     .accepts_note = "a signal name or number (e.g. SIGUSR2), not SIGKILL, SIGSTOP, SIGSEGV or SIGBUS",
     .doc = "on that signal, list the live ULTs on stderr (`ito::dump_ults`)"},
    {.id = setting_id::deadlock, .name = "ITO_DEADLOCK", .kind = setting_kind::choice,
     .choices = {"report", "abort", "ignore"}, .default_text = "as `abort`",
     .doc = "what to do when every ULT, the main one included, is blocked on ito's own objects "
            "and nothing can wake any of them (below)"},
    {.id = setting_id::trace, .name = "ITO_TRACE", .kind = setting_kind::path, .default_text = "none",
     .accepts_note = "a file path the program may write",
     .doc = "write a Chrome/Perfetto trace of every worker and pool thread there when the runtime "
            "ends ([DEBUGGING.md](DEBUGGING.md)); a path that cannot be written stops the program "
            "at start"},
    {.id = setting_id::preload_threads, .name = "ITO_PRELOAD_THREADS", .kind = setting_kind::choice,
     .choices = {"auto", "ult", "os"}, .default_text = "`auto`",
     .doc = "under `libito-preload.so`: run the program's threads as ULTs (`ult`), leave them OS "
            "threads (`os`), or choose at start (`auto`; [POSIX.md](POSIX.md))"},
    {.id = setting_id::delegate_mode, .name = "ITO_DELEGATE_MODE", .kind = setting_kind::choice,
     .choices = {"keep_running", "block_worker"}, .default_text = "`keep_running`",
     .doc = "how `ito::delegate` runs a blocking call: on a pool thread while the worker runs "
            "other ULTs, or on the worker itself"},
    {.id = setting_id::dsm_size, .name = "ITO_DSM_SIZE", .kind = setting_kind::size,
     .min = 64 * mib, .max = 16 * tib, .fallback = 64 * gib,
     .doc = "bytes of the distributed mode's iso-address region, reserved (not committed) on every "
            "rank ([DISTRIBUTED.md](DISTRIBUTED.md))"},
    {.id = setting_id::dsm_block, .name = "ITO_DSM_BLOCK", .kind = setting_kind::size,
     .min = 4 * kib, .max = 1 * mib, .fallback = 4 * kib,
     .accepts_note = "whole pages: rounded down to a multiple of 4K",
     .doc = "bytes a fault on a page homed on another node brings in: the aligned block around "
            "it, its pages this rank does not hold, one transfer per home "
            "([DISTRIBUTED.md](DISTRIBUTED.md))"},
    {.id = setting_id::dsm_check, .name = "ITO_DSM_CHECK", .kind = setting_kind::boolean,
     .default_text = "yes in builds without `NDEBUG`, no in release",
     .doc = "the DSM checks each page's home copy before sending a diff and reports a byte another "
            "rank also wrote between the same fences (a data race) on stderr; set to yes, it makes "
            "every rank a node of its own, as the check is part of the page protocol "
            "([DISTRIBUTED.md](DISTRIBUTED.md))"},
    {.id = setting_id::dist_progress_us, .name = "ITO_DIST_PROGRESS_US", .kind = setting_kind::integer,
     .min = 0, .max = 1'000'000, .fallback = 100, .accepts_note = "0: no progress thread",
     .doc = "microseconds between each rank's progress thread's entries into MPI, so that other "
            "ranks' one-sided transfers complete while it computes "
            "([DISTRIBUTED.md](DISTRIBUTED.md))"},
    {.id = setting_id::dist_idle_progress_us, .name = "ITO_DIST_IDLE_PROGRESS_US",
     .kind = setting_kind::integer, .min = 0, .max = 1'000'000, .fallback = 20,
     .default_text = "20 where the host's CPUs hold every rank's workers, else 0",
     .accepts_note = "0: ITO_DIST_PROGRESS_US's",
     .doc = "microseconds between the progress thread's entries into MPI while every worker of its "
            "rank is idle, on a precise timer: a rank with nothing to run serves others' transfers "
            "sooner; pays where each rank has a core of its own, costs where ranks share cores "
            "([DISTRIBUTED.md](DISTRIBUTED.md))"},
    {.id = setting_id::dist_heartbeat_ms, .name = "ITO_DIST_HEARTBEAT_MS", .kind = setting_kind::integer,
     .min = 0, .max = 60'000, .fallback = 1000, .accepts_note = "0: no heartbeats",
     .doc = "milliseconds between heartbeats to each rank that no pidfd can watch (another host or "
            "pid namespace); 10 intervals (at least 3 s) of silence stop the job "
            "([DISTRIBUTED.md](DISTRIBUTED.md))"},
    {.id = setting_id::dist_watch, .name = "ITO_DIST_WATCH", .kind = setting_kind::choice,
     .choices = {"auto", "heartbeat"}, .default_text = "`auto`",
     .doc = "`heartbeat` watches every other rank by heartbeats, even on this host (tests the "
            "other-host path on one machine)"},
    {.id = setting_id::dist_reexec, .name = "ITO_DIST_REEXEC", .kind = setting_kind::marker,
     .default_text = "unset", .accepts_note = "set by ito",
     .doc = "marks the image a rank re-executed with ASLR off; set it yourself only to keep ASLR on "
            "(code addresses then differ between ranks)"},
    {.id = setting_id::dist_node, .name = "ITO_DIST_NODE", .kind = setting_kind::choice,
     .choices = {"host", "rank", "pair"}, .default_text = "`host`",
     .doc = "`host`: ranks that can map one copy of memory (found by MPI, then tried) form a node "
            "and share the DSM region with plain loads and stores; `rank`: one node per rank, every "
            "page through the DSM protocol; `pair`: a host's ranks form nodes of two, in rank "
            "order (`rank` and `pair` test and measure the protocol between nodes on one machine; "
            "[DISTRIBUTED.md](DISTRIBUTED.md))"},
    {.id = setting_id::preempt, .name = "ITO_PREEMPT", .kind = setting_kind::integer,
     .min = 0, .max = options::max_preempt_us, .default_text = "0; 10000 under `libito-preload.so`",
     .accepts_note = "0: never",
     .doc = "time slice in µs: a ULT that runs this long while others wait for its worker is "
            "interrupted and queued behind them; from source, `libito.so` or `libito.a` linked "
            "with `ito-text.ld` (CMake's `ito::ito` and `pkg-config --static` add it; "
            "[ARCHITECTURE.md](ARCHITECTURE.md), \"Preemption\")"},
    {.id = setting_id::ult_tls, .name = "ITO_ULT_TLS", .kind = setting_kind::boolean,
     .default_text = "no; yes under `libito-preload.so` for a program with TLS of its own, "
                     "and for the threads created after a module with TLS is loaded (`dlopen`, or "
                     "an NSS or `iconv` module that glibc loads itself)",
     .doc = "give each thread made by `pthread_create` or `ito_create` a TLS block of its own "
            "(`__thread`, `thread_local`, errno), switched with it; x86-64 and glibc, not under "
            "the sanitizers, a split-stack policy or `ito::dist` ([POSIX.md](POSIX.md), "
            "\"TLS and errno\")"},
    {.id = setting_id::fp_modes, .name = "ITO_FP_MODES", .kind = setting_kind::choice,
     .choices = {"ult", "worker"}, .default_text = "`ult`",
     .doc = "`ult`: each thread keeps its own floating-point control words (rounding mode, "
            "exception masks, flush-to-zero), carried by every switch, as under NPTL; `worker`: "
            "threads run with their worker's and a switch reads none (x86-64: saves an `stmxcsr`, "
            "~3 ns a switch on AMD Zen 3), so a thread that changes them changes them for the next "
            "on its worker ([ARCHITECTURE.md](ARCHITECTURE.md), \"The control words\")"},
};
// clang-format on

// Rows in the order of setting_id, so that a lookup is an index.
constexpr bool rows_in_id_order() {
  if (std::size(settings) != static_cast<std::size_t>(setting_id::count)) return false;
  for (std::size_t i = 0; i < std::size(settings); ++i)
    if (static_cast<std::size_t>(settings[i].id) != i) return false;
  return true;
}
static_assert(rows_in_id_order(), "settings[] must list every setting_id once, in order");

constexpr const setting& declared(setting_id id) { return settings[static_cast<std::size_t>(id)]; }

}  // namespace ito::config
