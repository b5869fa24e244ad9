// SPDX-License-Identifier: Apache-2.0
#include "compat/c_errors.hpp"

#include <cerrno>
#include <cstdio>
#include <new>
#include <system_error>

#include "ito/error.hpp"
#include "ito/options.hpp"

namespace ito::compat {

int code_of_current_exception() noexcept {
  try {
    throw;
  } catch (const ito::usage_error& e) {
    return e.code();
  } catch (const ito::config_error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return EINVAL;
  } catch (const std::bad_alloc&) {
    return ENOMEM;
  } catch (const std::system_error& e) {
    return e.code().value() ? e.code().value() : EINVAL;
  } catch (...) {
    return EINVAL;
  }
}

}  // namespace ito::compat
