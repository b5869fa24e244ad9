// SPDX-License-Identifier: Apache-2.0
// The demo's one-screen answer to "what is ito good at": for each case it
// ran, ito's reference row beside the fastest other system measured in the
// same run (NPTL, std::thread, oneTBB, OpenMP, Boost.Fiber... whichever were
// built), as a ratio and a word. The tables above it hold every row.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "harness.hpp"

namespace bench {
namespace {

// Rows that are no other system: ito's own variants, calibrations, and
// plain sequential code (the floor every threading system is measured from).
bool no_other_system(const result& r) {
  return r.impl.rfind("ito", 0) == 0 || r.impl.rfind("calibration", 0) == 0 ||
         r.impl.rfind("sequential", 0) == 0;
}

struct line {
  std::string bench, group, workers, ito_ns, other, other_ns, verdict;
};

// "2.3x faster", "1.4x slower", or "even" within 5 %.
std::string verdict(double ito_ns, double other_ns) {
  char buf[48];
  const double ratio = other_ns / ito_ns;
  if (ratio >= 1.05) {
    std::snprintf(buf, sizeof buf, "%.1fx faster", ratio);
  } else if (ratio <= 1 / 1.05) {
    std::snprintf(buf, sizeof buf, "%.1fx slower", 1 / ratio);
  } else {
    return "even";
  }
  return buf;
}

}  // namespace

void print_summary(const std::vector<result>& all) {
  // Cases in the order they first appeared; in each, ito's reference row and
  // the fastest other row with a time per operation.
  std::vector<std::string> order;
  std::map<std::string, const result*> ito, best;
  for (const result& r : all) {
    if (!r.available || r.ns_per_op <= 0) continue;
    const std::string key = r.bench + '\x1f' + r.group + '\x1f' + std::to_string(r.workers);
    if (!ito.count(key) && !best.count(key)) order.push_back(key);
    if (r.reference && !ito.count(key)) {
      ito[key] = &r;
    } else if (!no_other_system(r) && (!best.count(key) || r.ns_per_op < best[key]->ns_per_op)) {
      best[key] = &r;
    }
  }
  std::vector<line> lines;
  int faster = 0, slower = 0;
  for (const std::string& key : order) {
    if (!ito.count(key) || !best.count(key)) continue;  // nothing to compare with
    const result& i = *ito[key];
    const result& o = *best[key];
    line l{i.bench, i.group, std::to_string(i.workers), format_ns(i.ns_per_op), o.impl,
           format_ns(o.ns_per_op), verdict(i.ns_per_op, o.ns_per_op)};
    if (l.verdict.find("faster") != std::string::npos) ++faster;
    if (l.verdict.find("slower") != std::string::npos) ++slower;
    lines.push_back(l);
  }
  if (lines.empty()) return;
  std::size_t w[6] = {5, 4, 1, 10, 14, 10};
  for (const line& l : lines) {
    w[0] = std::max(w[0], l.bench.size());
    w[1] = std::max(w[1], l.group.size());
    w[2] = std::max(w[2], l.workers.size());
    w[3] = std::max(w[3], l.ito_ns.size());
    w[4] = std::max(w[4], l.other.size());
    w[5] = std::max(w[5], l.other_ns.size());
  }
  auto row = [&](const std::string& a, const std::string& b, const std::string& c,
                 const std::string& d, const std::string& e, const std::string& f,
                 const std::string& g) {
    std::printf("%-*s  %-*s  %*s  %*s  %-*s  %*s  %s\n", int(w[0]), a.c_str(), int(w[1]), b.c_str(),
                int(w[2]), c.c_str(), int(w[3]), d.c_str(), int(w[4]), e.c_str(), int(w[5]),
                f.c_str(), g.c_str());
  };
  std::printf("== ito in one screen: each case beside the fastest other system measured in this run\n"
              "   (ns per operation, medians of small runs: a noisy machine moves them; the tables\n"
              "   above have every row, BENCHMARKS.md the full sizes)\n");
  row("bench", "case", "W", "ito ns/op", "fastest other", "its ns/op", "ito is");
  for (const line& l : lines) row(l.bench, l.group, l.workers, l.ito_ns, l.other, l.other_ns, l.verdict);
  std::printf("\nito is faster in %d of %zu cases, slower in %d.\n", faster, lines.size(), slower);
  std::fflush(stdout);
}

}  // namespace bench
