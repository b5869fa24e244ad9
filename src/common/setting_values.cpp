// SPDX-License-Identifier: Apache-2.0
// The parsers, the one wording of a bad value, and the typed lookups
// (setting_values.hpp).
#include "common/setting_values.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace ito::config {
namespace {

const char* value_of(const setting& s) noexcept {
  const char* v = std::getenv(s.name);
  return v && *v ? v : nullptr;
}

std::string listed_choices(const setting& s) {
  std::size_t n = 0;
  while (n < std::size(s.choices) && !s.choices[n].empty()) ++n;
  std::string text;
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0) text += i + 1 == n ? " or " : ", ";
    text += s.choices[i];
  }
  return text;
}

}  // namespace

namespace {

// Decimal digits (no sign, no space: strtoull would take both), then, where
// `suffixes`, one of K, M, G, T (powers of 1024, either case).
bool parse_number(const char* text, unsigned long long& out, bool suffixes) noexcept {
  if (!text || *text < '0' || *text > '9') return false;
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (errno != 0) return false;
  unsigned shift = 0;
  if (suffixes) {
    switch (*end) {
      case 'k': case 'K': shift = 10; ++end; break;
      case 'm': case 'M': shift = 20; ++end; break;
      case 'g': case 'G': shift = 30; ++end; break;
      case 't': case 'T': shift = 40; ++end; break;
      default: break;
    }
  }
  if (*end != '\0' || v > (~0ull >> shift)) return false;
  out = v << shift;
  return true;
}

}  // namespace

bool parse_integer(const char* text, unsigned long long& out) noexcept {
  return parse_number(text, out, false);
}

bool parse_size(const char* text, unsigned long long& out) noexcept {
  return parse_number(text, out, true);
}

std::optional<bool> parse_boolean(const char* text) noexcept {
  if (!text) return std::nullopt;
  if (!std::strcmp(text, "1") || !std::strcmp(text, "true") || !std::strcmp(text, "yes")) return true;
  if (!std::strcmp(text, "0") || !std::strcmp(text, "false") || !std::strcmp(text, "no")) return false;
  return std::nullopt;
}

int parse_choice(const setting& s, const char* text) noexcept {
  if (!text) return -1;
  for (std::size_t i = 0; i < std::size(s.choices); ++i)
    if (!s.choices[i].empty() && s.choices[i] == text) return static_cast<int>(i);
  return -1;
}

std::string size_text(unsigned long long bytes) {
  static constexpr char suffixes[] = "KMGT";
  int i = -1;
  while (i < 3 && bytes != 0 && bytes % 1024 == 0) bytes /= 1024, ++i;
  std::string text = std::to_string(bytes);
  if (i >= 0) text += suffixes[i];
  return text;
}

std::string accepted_text(const setting& s, unsigned long long max) {
  const unsigned long long top = max ? max : s.max;
  const std::string note = *s.accepts_note ? std::string(" (") + s.accepts_note + ")" : "";
  switch (s.kind) {
    case setting_kind::integer:
      return "an integer in [" + std::to_string(s.min) + ", " + std::to_string(top) + "]" + note;
    case setting_kind::size:
      return "a size in [" + size_text(s.min) + ", " + size_text(top) +
             "] bytes (suffixes K, M, G, T allowed)" + note;
    case setting_kind::boolean: return "1, true or yes; 0, false or no";
    case setting_kind::choice: return listed_choices(s);
    case setting_kind::signal:
    case setting_kind::path:
    case setting_kind::marker: return s.accepts_note;
  }
  return {};
}

std::string default_text(const setting& s) {
  if (*s.default_text) return s.default_text;
  return s.kind == setting_kind::size ? size_text(s.fallback) : std::to_string(s.fallback);
}

namespace {

std::string invalid_text(const std::string& what, const std::string& value, const setting& s,
                         unsigned long long max) {
  return "ito: " + what + "=" + value + " is invalid: expected " + accepted_text(s, max);
}

}  // namespace

config_error invalid_variable(const setting& s, const char* value, unsigned long long max) {
  return config_error(invalid_text(s.name, value, s, max), true);
}

config_error invalid_option(const char* field, const std::string& value, const setting& s,
                            unsigned long long max) {
  return config_error(invalid_text(field, value, s, max), false);
}

std::optional<unsigned long long> number_setting(setting_id id, unsigned long long max) {
  const setting& s = declared(id);
  const char* v = value_of(s);
  if (!v) return std::nullopt;
  unsigned long long n = 0;
  const bool parsed = s.kind == setting_kind::size ? parse_size(v, n) : parse_integer(v, n);
  if (!parsed || n < s.min || n > (max ? max : s.max)) throw invalid_variable(s, v, max);
  return n;
}

std::optional<bool> boolean_setting(setting_id id) {
  const setting& s = declared(id);
  const char* v = value_of(s);
  if (!v) return std::nullopt;
  if (auto b = parse_boolean(v)) return b;
  throw invalid_variable(s, v);
}

std::optional<std::size_t> choice_setting(setting_id id) {
  const setting& s = declared(id);
  const char* v = value_of(s);
  if (!v) return std::nullopt;
  const int i = parse_choice(s, v);
  if (i < 0) throw invalid_variable(s, v);
  return static_cast<std::size_t>(i);
}

const char* text_setting(setting_id id) noexcept { return value_of(declared(id)); }

const char* foreign_variable(const char* name) noexcept {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

}  // namespace ito::config
