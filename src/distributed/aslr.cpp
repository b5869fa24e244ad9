// SPDX-License-Identifier: Apache-2.0
#include "distributed/aslr.hpp"

#include <fcntl.h>
#include <sys/personality.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/setting_values.hpp"

namespace ito::dist::detail {
namespace {

// Set in the re-executed image.
constexpr const char* reexec_marker = config::declared(config::setting_id::dist_reexec).name;

// argv as the kernel has it (the program may have changed its own argv).
std::vector<std::string> own_arguments() {
  std::vector<std::string> args;
  const int fd = ::open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return args;
  std::string all;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) all.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  for (std::size_t pos = 0; pos < all.size();) {
    const std::size_t end = all.find('\0', pos);
    args.push_back(all.substr(pos, end - pos));
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return args;
}

}  // namespace

bool aslr_off() noexcept {
  const int p = personality(0xffffffff);
  return p != -1 && (p & ADDR_NO_RANDOMIZE) != 0;
}

void reexec_without_aslr() noexcept {
  if (aslr_off() || config::text_setting(config::setting_id::dist_reexec)) return;
  const int p = personality(0xffffffff);
  if (p == -1 || personality(static_cast<unsigned long>(p) | ADDR_NO_RANDOMIZE) == -1) return;
  std::vector<std::string> args = own_arguments();
  if (args.empty()) return;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  setenv(reexec_marker, "1", 1);
  std::fflush(nullptr);
  ::execv("/proc/self/exe", argv.data());
  // Still here: run on randomised (the caller reports what that means).
  unsetenv(reexec_marker);
  personality(static_cast<unsigned long>(p));
}

}  // namespace ito::dist::detail
