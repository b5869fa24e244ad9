// SPDX-License-Identifier: Apache-2.0
// The ITO_* environment variables ito knows, in one list, and the warning for
// a name that is not one of them (a typo would otherwise be ignored silently).
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "common/environment.hpp"

extern char** environ;

namespace ito {
namespace {

// Every variable read anywhere in ito (docs/ENVIRONMENT.md describes each).
constexpr const char* known_variables[] = {
    "ITO_WORKERS",   "ITO_STACK_SIZE",     "ITO_BIND",          "ITO_STATS",
    "ITO_STACK",     "ITO_STACK_BLOCK_SIZE", "ITO_STACK_ALLOC", "ITO_POOL_MIN",
    "ITO_POOL_MAX",  "ITO_POOL_BIAS",      "ITO_DELEGATE_MODE", "ITO_DUMP_SIGNAL",
    "ITO_DSM_SIZE",  "ITO_DIST_REEXEC",    "ITO_DSM_CHECK",
    "ITO_DIST_PROGRESS_US", "ITO_TRACE",       "ITO_PRELOAD_THREADS", "ITO_DEADLOCK",
    "ITO_DIST_HEARTBEAT_MS", "ITO_DIST_WATCH",
};

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
  for (const char* k : known_variables)
    if (name == k) return true;
  return false;
}

}  // namespace

std::string closest_known_variable(std::string_view name) {
  const char* best = known_variables[0];
  std::size_t best_distance = ~std::size_t{0};
  for (const char* k : known_variables) {
    std::size_t d = edit_distance(name, k);
    if (d < best_distance) best = k, best_distance = d;
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

int deadlock_choice(const char* text) noexcept {
  if (!text || !*text) return 0;
  if (!std::strcmp(text, "report")) return 1;
  if (!std::strcmp(text, "abort")) return 2;
  if (!std::strcmp(text, "ignore")) return 3;
  return -1;
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
