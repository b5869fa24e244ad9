// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <stdexcept>

#include "ito/runtime.hpp"
#include "ito/thread.hpp"
#include "sched/worker.hpp"
#include "split/split_provider.hpp"
#include "split_bench.hpp"

namespace bench::split {

std::string g_block_list;

const char* name(ito::stack_policy p) {
  switch (p) {
    case ito::stack_policy::fixed: return "fixed";
    case ito::stack_policy::lazy: return "lazy";
    case ito::stack_policy::fair_use: return "fair_use";
  }
  return "?";
}

std::vector<std::size_t> parse_sizes(const std::string& flag, const std::string& text) {
  std::vector<std::size_t> out;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t comma = text.find(',', pos);
    std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    std::size_t used = 0;
    unsigned long long v = 0;
    try {
      v = std::stoull(item, &used);
    } catch (const std::exception&) {
      throw usage_error(flag + ": bad size '" + item + "'");
    }
    std::string suffix = item.substr(used);
    if (suffix == "K" || suffix == "k") v <<= 10;
    else if (suffix == "M" || suffix == "m") v <<= 20;
    else if (!suffix.empty()) throw usage_error(flag + ": bad size '" + item + "'");
    out.push_back(v);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

std::string size_text(std::size_t b) {
  if (b >= (1u << 20) && b % (1u << 20) == 0) return std::to_string(b >> 20) + "M";
  if (b >= 1024 && b % 1024 == 0) return std::to_string(b >> 10) + "K";
  return std::to_string(b);
}

run_info run_under(ito::stack_policy p, unsigned workers, std::size_t block,
                   std::size_t fixed_stack, const std::function<void()>& body) {
  ito::options o;
  o.workers = workers;
  o.stacks = p;
  if (p != ito::stack_policy::fixed) o.stack_block_size = block;
  if (fixed_stack) o.stack_size = fixed_stack;
  run_info info;
  ito::runtime rt(o);
  auto* state = ito::sched::g_runtime.load();
  if (p != ito::stack_policy::fixed) ito::sched::split::provider(state).segments.reset_peak();
  std::int64_t t0 = now_ns();
  ito::join(ito::create_thread(body));
  info.ns = now_ns() - t0;
  info.peak_stack_bytes = p == ito::stack_policy::fixed
                              ? state->stacks.stacks_mapped() * state->stacks.stack_size()
                              : ito::sched::split::provider(state).segments.peak_bytes();
  return info;
}

void measure_policy(result& r, int runs, ito::stack_policy p, unsigned workers, std::size_t block,
                    std::size_t fixed_stack, const std::function<void()>& body) {
  std::vector<double> peaks;
  measure(r, runs, [&] {
    run_info info = run_under(p, workers, block, fixed_stack, body);
    peaks.push_back(static_cast<double>(info.peak_stack_bytes) / 1e6);
    return info.ns;
  });
  r.extra.push_back({"peak_stack_MB", median(peaks)});
}

}  // namespace bench::split
