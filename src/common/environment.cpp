// SPDX-License-Identifier: Apache-2.0
// The warning for an ITO_* name that settings.hpp does not declare (a typo
// would otherwise be ignored silently), and ITO_DUMP_SIGNAL's parser.
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "common/environment.hpp"
#include "common/settings.hpp"

extern char** environ;

namespace ito {
namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::size_t row[64];
  if (b.size() >= 64) return b.size();
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t above = row[j];
      std::size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, substitute});
      diagonal = above;
    }
  }
  return row[b.size()];
}

bool is_known(std::string_view name) {
  for (const config::setting& s : config::settings)
    if (name == s.name) return true;
  return false;
}

}  // namespace

std::string closest_known_variable(std::string_view name) {
  const char* best = config::settings[0].name;
  std::size_t best_distance = ~std::size_t{0};
  for (const config::setting& s : config::settings) {
    std::size_t d = edit_distance(name, s.name);
    if (d < best_distance) best = s.name, best_distance = d;
  }
  return best;
}

int dump_signal_from(const char* text) noexcept {
  int sig = 0;
  if (*text >= '0' && *text <= '9') {
    char* end = nullptr;
    long v = std::strtol(text, &end, 10);
    if (*end == '\0' && v > 0 && v < NSIG) sig = static_cast<int>(v);
  } else {
    const char* name = std::strncmp(text, "SIG", 3) == 0 ? text + 3 : text;
    for (int s = 1; s < NSIG && !sig; ++s) {
      const char* abbrev = sigabbrev_np(s);
      if (abbrev && !std::strcmp(name, abbrev)) sig = s;
    }
  }
  // These mean something else to the process (or cannot be caught).
  if (sig == SIGKILL || sig == SIGSTOP || sig == SIGSEGV || sig == SIGBUS) return 0;
  return sig;
}

void warn_about_unknown_variables() noexcept {
  static bool warned = false;  // once per process: runtimes may start many times
  if (warned || !environ) return;
  warned = true;
  for (char** e = environ; *e; ++e) {
    if (std::strncmp(*e, "ITO_", 4) != 0) continue;
    const char* eq = std::strchr(*e, '=');
    std::string_view name(*e, eq ? static_cast<std::size_t>(eq - *e) : std::strlen(*e));
    if (is_known(name)) continue;
    std::string close = closest_known_variable(name);
    std::fprintf(stderr, "ito: warning: unknown environment variable %.*s (did you mean %s?); "
                 "ito ignores it\n", static_cast<int>(name.size()), name.data(), close.c_str());
  }
}

}  // namespace ito
