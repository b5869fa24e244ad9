// SPDX-License-Identifier: Apache-2.0
#include "distributed/dsm/region_size.hpp"

#include <string>

#include "common/setting_values.hpp"

namespace ito::dist::detail {

std::size_t resolve_region_bytes(std::size_t requested) {
  std::size_t bytes = requested;
  if (bytes == 0) {
    bytes = config::number_setting(config::setting_id::dsm_size).value_or(default_region_bytes);
  } else if (bytes < min_region_bytes || bytes > max_region_bytes) {
    throw config::invalid_option("ito::dist::options.region_bytes", std::to_string(bytes),
                                 config::declared(config::setting_id::dsm_size));
  }
  const std::size_t page = 4096;
  return (bytes + page - 1) / page * page;
}

}  // namespace ito::dist::detail
