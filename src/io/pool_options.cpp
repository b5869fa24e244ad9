// SPDX-License-Identifier: Apache-2.0
// ITO_POOL_MIN, ITO_POOL_MAX, ITO_POOL_BIAS: read for every option a program
// leaves unset, and checked with the options it sets.
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>

#include "ito/os_pool.hpp"

namespace ito {
namespace {

// A whole decimal number and nothing else.
bool parse_unsigned(const char* text, unsigned long long& out) {
  if (!text || *text < '0' || *text > '9') return false;
  errno = 0;
  char* end = nullptr;
  out = std::strtoull(text, &end, 10);
  return errno == 0 && *end == '\0';
}

// The option if set, else the variable if set, else the default; `lo`..`hi`
// is checked either way, and the message names whichever was wrong.
unsigned pick(const std::optional<unsigned>& option, const char* field, const char* variable,
              unsigned fallback, unsigned lo, unsigned hi, const std::string& what_range) {
  if (option) {
    if (*option < lo || *option > hi)
      throw config_error("ito: os_pool_options." + std::string(field) + "=" +
                             std::to_string(*option) + " is invalid: expected " + what_range,
                         false);
    return *option;
  }
  const char* v = std::getenv(variable);
  if (!v || !*v) return fallback;
  unsigned long long n = 0;
  if (!parse_unsigned(v, n) || n < lo || n > hi)
    throw config_error(std::string("ito: ") + variable + "=" + v + " is invalid: expected " +
                           what_range,
                       true);
  return static_cast<unsigned>(n);
}

std::string range(unsigned lo, unsigned hi) {
  return "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
}

}  // namespace

os_pool_options resolve_pool_options(os_pool_options o) {
  constexpr unsigned top = os_pool_options::limit_max;
  const unsigned max = pick(o.max_threads, "max_threads", "ITO_POOL_MAX",
                            os_pool_options::default_max, 1, top, range(1, top));
  // The minimum is checked against the maximum just resolved.
  const unsigned min = pick(o.min_threads, "min_threads", "ITO_POOL_MIN",
                            std::min(os_pool_options::default_min, max), 0, max,
                            range(0, max) + " (at most the pool's maximum)");
  const unsigned bias = pick(o.bias, "bias", "ITO_POOL_BIAS", os_pool_options::default_bias, 1,
                             os_pool_options::limit_bias, range(1, os_pool_options::limit_bias));
  o.max_threads = max;
  o.min_threads = min;
  o.bias = bias;
  return o;
}

}  // namespace ito
