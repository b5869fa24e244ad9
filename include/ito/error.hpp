// SPDX-License-Identifier: Apache-2.0
// Errors thrown by ito's C++ API.
#pragma once

#include "ito/cxx20.hpp"

#include <stdexcept>
#include <string>

namespace ito {

// The API was used wrongly: a ULT-only call outside a ULT, joining a detached
// or already-joined ULT, unlocking a mutex the caller does not hold...
// code() is the POSIX error code the C API returns for the same mistake.
class usage_error : public std::logic_error {
 public:
  usage_error(int code, const std::string& what) : std::logic_error(what), code_(code) {}
  int code() const noexcept { return code_; }

 private:
  int code_;
};

}  // namespace ito
