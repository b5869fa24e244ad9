// SPDX-License-Identifier: Apache-2.0
// ITO_POOL_MIN, ITO_POOL_MAX, ITO_POOL_BIAS: read for every option a program
// leaves unset, and checked with the options it sets.
#include <algorithm>
#include <string>

#include "common/setting_values.hpp"
#include "ito/os_pool.hpp"

namespace ito {
namespace {

using config::setting_id;

// The option if set, else the variable if set, else `fallback`; the declared
// range (its top narrowed to `max` when non-zero) is checked either way, and
// the message names whichever was wrong.
unsigned pick(const std::optional<unsigned>& option, const char* field, setting_id id,
              unsigned fallback, unsigned max = 0) {
  const config::setting& s = config::declared(id);
  if (option) {
    if (*option < s.min || *option > (max ? max : s.max))
      throw config::invalid_option(field, std::to_string(*option), s, max);
    return *option;
  }
  return static_cast<unsigned>(config::number_setting(id, max).value_or(fallback));
}

}  // namespace

os_pool_options resolve_pool_options(os_pool_options o) {
  const unsigned max = pick(o.max_threads, "os_pool_options.max_threads", setting_id::pool_max,
                            os_pool_options::default_max);
  // The minimum is checked against the maximum just resolved.
  const unsigned min = pick(o.min_threads, "os_pool_options.min_threads", setting_id::pool_min,
                            std::min(os_pool_options::default_min, max), max);
  const unsigned bias = pick(o.bias, "os_pool_options.bias", setting_id::pool_bias,
                             os_pool_options::default_bias);
  o.max_threads = max;
  o.min_threads = min;
  o.bias = bias;
  return o;
}

}  // namespace ito
