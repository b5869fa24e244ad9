// SPDX-License-Identifier: Apache-2.0
// The benchmark harness: command-line flags, repeated timed runs (median, min,
// max), peak RSS, and the two output formats (a table, or JSON lines).
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "arch/cpu_relax.hpp"

namespace bench {

// --- Keeping results alive -------------------------------------------------

// Makes the compiler assume `v` is read (and memory clobbered), so the
// computation producing it cannot be optimised away.
template <class T>
inline void do_not_optimize(const T& v) {
  asm volatile("" : : "r,m"(v) : "memory");
}
inline void clobber_memory() { asm volatile("" : : : "memory"); }

using ito::arch::cpu_relax;  // the spin hint (pause, isb on aarch64)

// --- Clocks and memory -----------------------------------------------------

std::int64_t now_ns();
// Peak resident set size (VmHWM) of the process, in KiB.
long peak_rss_kb();
// Current resident set size (VmRSS), in KiB.
long current_rss_kb();
// Resets the peak to the current RSS (Linux: /proc/self/clear_refs, "5").
// Returns false where that is not possible: peaks then only grow.
bool reset_peak_rss();

// Number of CPUs this process may run on.
unsigned allowed_cpus();

// --- Command line ----------------------------------------------------------

// A bad command line: main prints the usage on stderr and exits with 2.
struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The flags every subcommand takes.
struct common_flags {
  std::vector<unsigned> workers;  // empty: the subcommand's standard set
  int runs = 5;
  bool json = false;
};

// --only A,B: run and report only the rows whose impl name contains A or B
// (for profiling one system). Empty: everything.
void set_only(const std::string& patterns);
bool selected(const std::string& impl);

// The flags after the subcommand's name. Each flag is taken once by name;
// anything left over at finish() is an error.
class args {
 public:
  args(int argc, char** argv, int first);
  // Takes --workers, --runs, --json.
  common_flags take_common(int default_runs = 5);
  bool take_switch(const std::string& name);
  long long take_int(const std::string& name, long long fallback, long long lo, long long hi);
  std::string take_string(const std::string& name, std::string fallback);
  // "1,2,4" after `name`, or the fallback.
  std::vector<unsigned> take_list(const std::string& name, std::vector<unsigned> fallback);
  // Rejects anything not taken yet.
  void finish() const;

 private:
  bool find(const std::string& name, std::string* value, bool wants_value);
  std::vector<std::string> items_;
  std::vector<bool> used_;
};

// Parses "1,2,4".
std::vector<unsigned> parse_uint_list(const std::string& flag, const std::string& text);

// --- Measurements ----------------------------------------------------------

struct result {
  std::string bench;   // "fib", "create-join", ...
  std::string group;   // rows with equal bench+group+workers are compared
  std::string impl;    // "ito", "oneTBB task_group", ...
  unsigned workers = 1;
  std::vector<std::pair<std::string, std::string>> params;  // the inputs, as JSON values
  bool available = true;  // false: comparison not built in ("n/a")
  std::string note;       // why n/a, or what the row measures
  bool reference = false;  // the ito row the group's ratios divide
  double median_ms = 0, min_ms = 0, max_ms = 0;
  double ops = 0;         // operations per run (spawns, yields, lock pairs...)
  double ns_per_op = 0;   // median_ns / ops
  long peak_rss_kb = 0;   // process peak over the runs of this row; < 0: not measured here
  std::vector<std::pair<std::string, double>> extra;  // other numbers worth keeping
};

// Runs `once` `runs` times; `once` returns the nanoseconds of its timed region
// (it may set up and tear down around it). Fills the timing fields and the peak
// RSS; ops must be set by the caller for ns_per_op (it is divided afterwards).
void measure(result& r, int runs, const std::function<std::int64_t()>& once);
// Fills the timing fields from per-run times (ns) measured by the caller.
void summarize(result& r, std::vector<std::int64_t> ns);
// The median of some values.
double median(std::vector<double> v);
// A comparison that was not built in.
result not_available(std::string bench, std::string group, std::string impl, unsigned workers,
                     std::string why);

// --- Output ----------------------------------------------------------------

// Prints JSON lines as results come, or collects them for one table.
class reporter {
 public:
  explicit reporter(bool json) : json_(json) {}
  void add(result r);
  // Prints the table (text mode); a no-op in JSON mode.
  void print_table(const std::string& title) const;
  const std::vector<result>& results() const { return results_; }

 private:
  bool json_;
  std::vector<result> results_;
};

std::string json_string(const std::string& s);
std::string format_ms(double ms);
std::string format_ns(double ns);

// The demo's last screen: per case, ito's row beside the fastest other
// system measured in the same run, as a ratio and a word (summary.cpp).
void print_summary(const std::vector<result>& all);

// fib(n) by iteration: what every fib benchmark checks its result against.
inline long fib_value(int n) {
  long a = 0, b = 1;
  for (int i = 0; i < n; ++i) {
    long c = a + b;
    a = b;
    b = c;
  }
  return a;
}

// Prints a progress note on stderr (kept off stdout so JSON stays clean).
void progress(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace bench
