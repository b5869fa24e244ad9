// SPDX-License-Identifier: Apache-2.0
#include "distributed/scheduler/error_transport.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <exception>
#include <typeinfo>

#include "distributed/scheduler/ult_image.hpp"
#include "ito/dist.hpp"
#include "ito/thread.hpp"
#include "sched/ult.hpp"

namespace ito::dist::detail {
namespace {

using error_box = ito::detail::result_box<std::exception_ptr>;

error_box* error_box_of(const sched::ult* u) {
  if (!u->frame_error_offset) return nullptr;
  return reinterpret_cast<error_box*>(static_cast<char*>(u->frame) + u->frame_error_offset);
}

std::string readable(const std::type_info* t) {
  if (!t) return "an exception of unknown type";
  int status = -1;
  char* name = abi::__cxa_demangle(t->name(), nullptr, nullptr, &status);
  std::string out = status == 0 ? name : t->name();
  std::free(name);
  return out;
}

}  // namespace

std::string export_error(sched::ult* u) {
  error_box* box = error_box_of(u);
  if (!box || !box->has) return {};
  std::exception_ptr e = box->take();  // leaves a moved-from (null) pointer in the box
  std::string what;
  try {
    std::rethrow_exception(e);
  } catch (const ito::dist::remote_error& x) {
    return std::string(x.type_name()) + '\0' + x.what();  // passing through (home → joiner)
  } catch (const std::exception& x) {
    what = x.what();
    return readable(abi::__cxa_current_exception_type()) + '\0' + what;
  } catch (...) {
    return readable(abi::__cxa_current_exception_type()) + '\0' + what;
  }
}

void import_error(sched::ult* u, const char* text, std::size_t len) {
  error_box* box = error_box_of(u);
  if (!box || !len) return;
  const std::string all(text, len);
  const std::size_t split = all.find('\0');
  ::new (box->bytes) std::exception_ptr(std::make_exception_ptr(
      ito::dist::remote_error(all.substr(0, split), all.substr(split + 1))));
  box->has = true;
}

void require_exportable(const sched::ult* u) {
  const error_box* box = error_box_of(u);
  if (u->frame_result_local && !u->exited && !(box && box->has))
    fail_for(u,
             "its result is not trivially copyable (it may point into this process's memory), "
             "and a ULT on another process joins it: return a trivially copyable value, or "
             "join it on the process that created it (docs/DISTRIBUTED.md)");
}

}  // namespace ito::dist::detail
