// SPDX-License-Identifier: Apache-2.0
#include "harness.hpp"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

namespace bench {

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

namespace {

long status_field_kb(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::size_t len = std::strlen(field);
  while (std::getline(in, line)) {
    if (line.compare(0, len, field) == 0 && line.size() > len && line[len] == ':')
      return std::strtol(line.c_str() + len + 1, nullptr, 10);
  }
  return -1;
}

}  // namespace

long peak_rss_kb() {
  long kb = status_field_kb("VmHWM");
  if (kb >= 0) return kb;
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;  // KiB on Linux
}

long current_rss_kb() { return status_field_kb("VmRSS"); }

bool reset_peak_rss() {
  std::FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (!f) return false;
  bool ok = std::fputs("5", f) >= 0;
  ok = (std::fclose(f) == 0) && ok;
  return ok;
}

unsigned allowed_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return static_cast<unsigned>(CPU_COUNT(&set));
}

// --- Command line ----------------------------------------------------------

args::args(int argc, char** argv, int first) {
  for (int i = first; i < argc; ++i) items_.emplace_back(argv[i]);
  used_.assign(items_.size(), false);
}

bool args::find(const std::string& name, std::string* value, bool wants_value) {
  for (std::size_t i = 0; i < items_.size(); ++i) {
    if (used_[i]) continue;
    const std::string& s = items_[i];
    if (s == name) {
      used_[i] = true;
      if (!wants_value) return true;
      if (i + 1 >= items_.size() || used_[i + 1])
        throw usage_error(name + " needs a value");
      used_[i + 1] = true;
      *value = items_[i + 1];
      return true;
    }
    if (wants_value && s.size() > name.size() + 1 && s.compare(0, name.size(), name) == 0 &&
        s[name.size()] == '=') {
      used_[i] = true;
      *value = s.substr(name.size() + 1);
      return true;
    }
  }
  return false;
}

namespace {

long long parse_int(const std::string& flag, const std::string& text, long long lo, long long hi) {
  // Accept 1e6-style values too: they are common in benchmark sizes.
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (end && *end == 'e') {
    char* end2 = nullptr;
    long exp = std::strtol(end + 1, &end2, 10);
    if (end2 != end + 1 && *end2 == '\0' && exp >= 0 && exp <= 18) {
      for (long i = 0; i < exp && v <= hi; ++i) v *= 10;
      end = end2;
    }
  }
  if (text.empty() || errno != 0 || !end || *end != '\0' || v < lo || v > hi) {
    std::ostringstream m;
    m << flag << ": '" << text << "' is not an integer in [" << lo << ", " << hi << "]";
    throw usage_error(m.str());
  }
  return v;
}

}  // namespace

std::vector<unsigned> parse_uint_list(const std::string& flag, const std::string& text) {
  std::vector<unsigned> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ','))
    out.push_back(static_cast<unsigned>(parse_int(flag, item, 1, 1024)));
  if (out.empty()) throw usage_error(flag + " needs at least one number");
  return out;
}

namespace {
std::vector<std::string> g_only;
}

void set_only(const std::string& patterns) {
  g_only.clear();
  std::stringstream ss(patterns);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) g_only.push_back(item);
}

bool selected(const std::string& impl) {
  if (g_only.empty()) return true;
  for (const auto& p : g_only)
    if (impl.find(p) != std::string::npos) return true;
  return false;
}

common_flags args::take_common(int default_runs) {
  common_flags c;
  c.runs = default_runs;
  std::string v;
  while (find("--workers", &v, true)) {
    auto more = parse_uint_list("--workers", v);
    c.workers.insert(c.workers.end(), more.begin(), more.end());
  }
  if (find("--runs", &v, true)) c.runs = static_cast<int>(parse_int("--runs", v, 1, 1000));
  c.json = take_switch("--json");
  if (find("--only", &v, true)) set_only(v);
  return c;
}

bool args::take_switch(const std::string& name) {
  std::string unused;
  return find(name, &unused, false);
}

long long args::take_int(const std::string& name, long long fallback, long long lo, long long hi) {
  std::string v;
  if (!find(name, &v, true)) return fallback;
  return parse_int(name, v, lo, hi);
}

std::string args::take_string(const std::string& name, std::string fallback) {
  std::string v;
  return find(name, &v, true) ? v : fallback;
}

std::vector<unsigned> args::take_list(const std::string& name, std::vector<unsigned> fallback) {
  std::string v;
  if (!find(name, &v, true)) return fallback;
  return parse_uint_list(name, v);
}

void args::finish() const {
  for (std::size_t i = 0; i < items_.size(); ++i)
    if (!used_[i]) throw usage_error("unknown argument '" + items_[i] + "'");
}

// --- Measurements ----------------------------------------------------------

void measure(result& r, int runs, const std::function<std::int64_t()>& once) {
  if (!selected(r.impl)) return;
  reset_peak_rss();
  std::vector<std::int64_t> ns;
  ns.reserve(static_cast<std::size_t>(runs));
  for (int i = 0; i < runs; ++i) ns.push_back(once());
  r.peak_rss_kb = peak_rss_kb();
  summarize(r, std::move(ns));
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void summarize(result& r, std::vector<std::int64_t> ns) {
  std::vector<double> ms;
  for (auto t : ns) ms.push_back(static_cast<double>(t) / 1e6);
  std::sort(ms.begin(), ms.end());
  const std::size_t n = ms.size();
  r.median_ms = n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
  r.min_ms = ms.front();
  r.max_ms = ms.back();
  r.ns_per_op = r.ops > 0 ? r.median_ms * 1e6 / r.ops : 0;
}

result not_available(std::string bench, std::string group, std::string impl, unsigned workers,
                     std::string why) {
  result r;
  r.bench = std::move(bench);
  r.group = std::move(group);
  r.impl = std::move(impl);
  r.workers = workers;
  r.available = false;
  r.note = std::move(why);
  return r;
}

// --- Output ----------------------------------------------------------------

std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          o += buf;
        } else {
          o += c;
        }
    }
  }
  return o + "\"";
}

namespace {

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string to_json(const result& r) {
  std::ostringstream o;
  o << "{\"bench\":" << json_string(r.bench) << ",\"impl\":" << json_string(r.impl)
    << ",\"workers\":" << r.workers << ",\"params\":{";
  for (std::size_t i = 0; i < r.params.size(); ++i)
    o << (i ? "," : "") << json_string(r.params[i].first) << ":" << r.params[i].second;
  o << "}";
  if (r.available) {
    o << ",\"median_ms\":" << json_number(r.median_ms) << ",\"min_ms\":" << json_number(r.min_ms)
      << ",\"max_ms\":" << json_number(r.max_ms) << ",\"ns_per_op\":" << json_number(r.ns_per_op)
      << ",\"peak_rss_kb\":" << (r.peak_rss_kb < 0 ? "null" : std::to_string(r.peak_rss_kb));
  } else {
    o << ",\"median_ms\":null,\"min_ms\":null,\"max_ms\":null,\"ns_per_op\":null,"
         "\"peak_rss_kb\":null";
  }
  o << ",\"available\":" << (r.available ? "true" : "false")
    << ",\"group\":" << json_string(r.group) << ",\"ops\":" << json_number(r.ops);
  if (!r.extra.empty()) {
    o << ",\"extra\":{";
    for (std::size_t i = 0; i < r.extra.size(); ++i)
      o << (i ? "," : "") << json_string(r.extra[i].first) << ":"
        << json_number(r.extra[i].second);
    o << "}";
  }
  if (!r.note.empty()) o << ",\"note\":" << json_string(r.note);
  o << "}";
  return o.str();
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

std::string format_ns(double ns) {
  if (ns >= 100000) return fmt("%.0f", ns);
  if (ns >= 100) return fmt("%.1f", ns);
  return fmt("%.2f", ns);
}

std::string format_ms(double ms) {
  if (ms >= 1000) return fmt("%.0f", ms);
  if (ms >= 10) return fmt("%.1f", ms);
  return fmt("%.3f", ms);
}

void reporter::add(result r) {
  if (!selected(r.impl)) return;
  if (json_) {
    std::printf("%s\n", to_json(r).c_str());
    std::fflush(stdout);
  }
  results_.push_back(std::move(r));
}

void reporter::print_table(const std::string& title) const {
  if (json_) return;
  // Ratios: within bench+group+workers, the reference ito row's ns/op divided
  // by each comparison row's ns/op.
  std::map<std::string, const result*> refs;
  auto key = [](const result& r) {
    return r.bench + '\x1f' + r.group + '\x1f' + std::to_string(r.workers);
  };
  for (const auto& r : results_)
    if (r.reference && r.available && !refs.count(key(r))) refs[key(r)] = &r;

  const char* head[] = {"bench", "case", "W", "impl", "median ms", "min ms", "max ms",
                        "ns/op", "peak RSS MiB", "ito/this", "notes"};
  constexpr int ncol = 11;
  // Rows of one case stay together, cases in the order they first appeared.
  std::map<std::string, std::size_t> first_seen;
  for (std::size_t i = 0; i < results_.size(); ++i) first_seen.emplace(key(results_[i]), i);
  std::vector<const result*> order;
  for (const auto& r : results_) order.push_back(&r);
  std::stable_sort(order.begin(), order.end(), [&](const result* a, const result* b) {
    return first_seen[key(*a)] < first_seen[key(*b)];
  });

  std::vector<std::vector<std::string>> rows;
  for (const result* rp : order) {
    const result& r = *rp;
    std::vector<std::string> row(ncol);
    row[0] = r.bench;
    row[1] = r.group;
    row[2] = std::to_string(r.workers);
    row[3] = r.impl;
    if (r.available) {
      row[4] = format_ms(r.median_ms);
      row[5] = format_ms(r.min_ms);
      row[6] = format_ms(r.max_ms);
      row[7] = r.ops > 0 ? format_ns(r.ns_per_op) : "-";
      row[8] = r.peak_rss_kb < 0 ? "-" : fmt("%.1f", static_cast<double>(r.peak_rss_kb) / 1024.0);
      auto it = refs.find(key(r));
      // Only other systems get a ratio; ito's own variants are compared by eye.
      if (r.impl.rfind("ito", 0) == 0 || r.impl.rfind("calibration", 0) == 0 ||
          it == refs.end() || r.ns_per_op <= 0) {
        row[9] = "-";
      } else {
        row[9] = fmt("%.3f", it->second->ns_per_op / r.ns_per_op);
      }
    } else {
      for (int c = 4; c <= 9; ++c) row[c] = "n/a";
    }
    std::string notes = r.note;
    for (const auto& [k, v] : r.extra) {
      if (!notes.empty()) notes += "; ";
      notes += k + "=" + fmt("%.4g", v);
    }
    row[10] = notes;
    rows.push_back(std::move(row));
  }
  std::size_t width[ncol];
  for (int c = 0; c < ncol; ++c) {
    width[c] = std::strlen(head[c]);
    for (const auto& row : rows) width[c] = std::max(width[c], row[c].size());
  }
  auto print_row = [&](const std::vector<std::string>& row) {
    std::string line;
    for (int c = 0; c < ncol; ++c) {
      const bool left = c == 0 || c == 1 || c == 3 || c == 10;
      std::string cell = row[static_cast<std::size_t>(c)];
      std::string pad(width[c] - cell.size(), ' ');
      line += left ? cell + pad : pad + cell;
      if (c + 1 < ncol) line += "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::printf("%s\n", line.c_str());
  };
  std::printf("== %s\n", title.c_str());
  std::printf("   times: median (min, max) of the runs; ns/op = median / operations;\n"
              "   ito/this = ito's ns/op / this row's ns/op in the same case and W "
              "(< 1: ito is faster, > 1: ito is slower)\n");
  print_row(std::vector<std::string>(head, head + ncol));
  std::string prev;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    std::string k = key(*order[i]);
    if (i && k != prev) std::printf("\n");
    prev = k;
    print_row(rows[i]);
  }
  std::printf("\n");
  std::fflush(stdout);
}

void progress(const char* f, ...) {
  std::va_list ap;
  va_start(ap, f);
  std::vfprintf(stderr, f, ap);
  va_end(ap);
  std::fputc('\n', stderr);
}

}  // namespace bench
