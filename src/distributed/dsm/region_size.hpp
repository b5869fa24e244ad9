// SPDX-License-Identifier: Apache-2.0
// The iso-address region's size: the program's, else ITO_DSM_SIZE, else the
// default. Sizes take a K, M, G or T suffix (powers of 1024).
#pragma once

#include <cstddef>

#include "common/settings.hpp"

namespace ito::dist::detail {

// As declared for ITO_DSM_SIZE.
inline constexpr auto& region_setting = config::declared(config::setting_id::dsm_size);
inline constexpr std::size_t default_region_bytes = region_setting.fallback;
inline constexpr std::size_t min_region_bytes = region_setting.min;
inline constexpr std::size_t max_region_bytes = region_setting.max;

// Throws config_error (from_environment for ITO_DSM_SIZE) naming the value
// and the range.
std::size_t resolve_region_bytes(std::size_t requested);

}  // namespace ito::dist::detail
