// SPDX-License-Identifier: Apache-2.0
#include "dist/region_size.hpp"

#include <cstdlib>
#include <string>

#include "ito/options.hpp"

namespace ito::dist::detail {
namespace {

// "64G", "512M", "1T", "68719476736"; false when it is none of those.
bool parse_size(const char* text, std::size_t* out) {
  if (!text || *text < '0' || *text > '9') return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(text, &end, 10);
  if (errno != 0) return false;
  unsigned shift = 0;
  switch (*end) {
    case '\0': break;
    case 'K': case 'k': shift = 10; ++end; break;
    case 'M': case 'm': shift = 20; ++end; break;
    case 'G': case 'g': shift = 30; ++end; break;
    case 'T': case 't': shift = 40; ++end; break;
    default: return false;
  }
  if (*end != '\0' || (shift && n > (~0ull >> shift))) return false;
  *out = static_cast<std::size_t>(n << shift);
  return true;
}

std::string range_text() { return "between 64M and 16T (a K, M, G or T suffix is allowed)"; }

}  // namespace

std::size_t resolve_region_bytes(std::size_t requested) {
  std::size_t bytes = requested;
  const char* env = nullptr;
  if (bytes == 0) {
    env = std::getenv("ITO_DSM_SIZE");
    if (env && *env) {
      if (!parse_size(env, &bytes) || bytes < min_region_bytes || bytes > max_region_bytes)
        throw config_error(std::string("ito: dsm: ITO_DSM_SIZE=") + env + " is invalid: expected " +
                               range_text(),
                           true);
    } else {
      bytes = default_region_bytes;
    }
  } else if (bytes < min_region_bytes || bytes > max_region_bytes) {
    throw config_error("ito: dsm: options::region_bytes=" + std::to_string(bytes) +
                           " is invalid: expected " + range_text(),
                       false);
  }
  const std::size_t page = 4096;
  return (bytes + page - 1) / page * page;
}

}  // namespace ito::dist::detail
