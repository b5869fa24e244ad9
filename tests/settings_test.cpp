// SPDX-License-Identifier: Apache-2.0
// The ITO_* declarations (src/common/settings.hpp): each kind's parser, the
// one wording of a bad value and the declared ranges, for every variable;
// docs/ENVIRONMENT.md's table row for row against the declarations; and no
// reader of the environment outside the one that parses it.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <iostream>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "common/setting_values.hpp"
#include "common/settings.hpp"

namespace {

using namespace ito::config;

struct scoped_env {
  const char* name;
  scoped_env(const char* n, const std::string& v) : name(n) { setenv(n, v.c_str(), 1); }
  ~scoped_env() { unsetenv(name); }
};

// What the typed lookup of `s` makes of `value`: "ok", or the error's text.
std::string lookup(const setting& s, const std::string& value, unsigned long long max = 0) {
  scoped_env e(s.name, value);
  try {
    switch (s.kind) {
      case setting_kind::integer:
      case setting_kind::size: (void)number_setting(s.id, max); break;
      case setting_kind::boolean: (void)boolean_setting(s.id); break;
      case setting_kind::choice: (void)choice_setting(s.id); break;
      default: (void)text_setting(s.id); break;
    }
  } catch (const ito::config_error& err) {
    EXPECT_TRUE(err.from_environment()) << s.name;
    return err.what();
  }
  return "ok";
}

std::string wording(const setting& s, const std::string& value, unsigned long long max = 0) {
  return std::string("ito: ") + s.name + "=" + value + " is invalid: expected " +
         accepted_text(s, max);
}

bool checked(const setting& s) {
  return s.kind == setting_kind::integer || s.kind == setting_kind::size ||
         s.kind == setting_kind::boolean || s.kind == setting_kind::choice;
}

TEST(settings_parsers, integers_are_plain_decimal_digits) {
  unsigned long long n = 7;
  EXPECT_TRUE(parse_integer("0", n) && n == 0);
  EXPECT_TRUE(parse_integer("1024", n) && n == 1024);
  for (const char* bad : {"", "-3", "+3", " 3", "4x", "0x10", "1K", "99999999999999999999999"})
    EXPECT_FALSE(parse_integer(bad, n)) << '"' << bad << '"';
  EXPECT_FALSE(parse_integer(nullptr, n));
}

TEST(settings_parsers, sizes_take_one_binary_suffix_in_either_case) {
  unsigned long long n = 0;
  EXPECT_TRUE(parse_size("4096", n) && n == 4096);
  EXPECT_TRUE(parse_size("64k", n) && n == 64ull << 10);
  EXPECT_TRUE(parse_size("512M", n) && n == 512ull << 20);
  EXPECT_TRUE(parse_size("1g", n) && n == 1ull << 30);
  EXPECT_TRUE(parse_size("16T", n) && n == 16ull << 40);
  for (const char* bad : {"", "K", "-1", "+64K", " 64K", "64KB", "64X", "1.5G", "16777216T"})
    EXPECT_FALSE(parse_size(bad, n)) << '"' << bad << '"';
}

TEST(settings_parsers, booleans_have_one_set_of_spellings) {
  for (const char* yes : {"1", "true", "yes"}) EXPECT_EQ(parse_boolean(yes), true) << yes;
  for (const char* no : {"0", "false", "no"}) EXPECT_EQ(parse_boolean(no), false) << no;
  for (const char* bad : {"", "2", "on", "off", "TRUE", "y"})
    EXPECT_EQ(parse_boolean(bad), std::nullopt) << bad;
}

TEST(settings_parsers, a_choice_is_one_of_the_declared_words) {
  const setting& stack = declared(setting_id::stack);
  EXPECT_EQ(parse_choice(stack, "fixed"), 0);
  EXPECT_EQ(parse_choice(stack, "fair_use"), 2);
  EXPECT_EQ(parse_choice(stack, "Fixed"), -1);
  EXPECT_EQ(parse_choice(stack, ""), -1);  // the unused slots are empty: never a match
  EXPECT_EQ(accepted_text(stack), "fixed, lazy or fair_use");
  EXPECT_EQ(accepted_text(declared(setting_id::dist_watch)), "auto or heartbeat");
}

TEST(settings_parsers, sizes_are_written_with_the_largest_exact_suffix) {
  EXPECT_EQ(size_text(16 * kib), "16K");
  EXPECT_EQ(size_text(64 * mib), "64M");
  EXPECT_EQ(size_text(16 * tib), "16T");
  EXPECT_EQ(size_text(1536), "1536");
  EXPECT_EQ(size_text(0), "0");
}

TEST(settings_wording, one_message_shape_names_the_variable_the_value_and_what_it_accepts) {
  EXPECT_EQ(lookup(declared(setting_id::workers), "0"),
            "ito: ITO_WORKERS=0 is invalid: expected an integer in [1, 1024]");
  EXPECT_EQ(lookup(declared(setting_id::dsm_size), "32M"),
            "ito: ITO_DSM_SIZE=32M is invalid: expected a size in [64M, 16T] bytes (suffixes K, "
            "M, G, T allowed)");
  EXPECT_EQ(lookup(declared(setting_id::dist_progress_us), "1000001"),
            "ito: ITO_DIST_PROGRESS_US=1000001 is invalid: expected an integer in [0, 1000000] "
            "(0: no progress thread)");
  EXPECT_EQ(lookup(declared(setting_id::pool_min), "5", 4),
            "ito: ITO_POOL_MIN=5 is invalid: expected an integer in [0, 4] (at most the pool's "
            "maximum)");
  EXPECT_EQ(lookup(declared(setting_id::stats), "2"),
            "ito: ITO_STATS=2 is invalid: expected 1, true or yes; 0, false or no");
  EXPECT_EQ(lookup(declared(setting_id::dist_watch), "sometimes"),
            "ito: ITO_DIST_WATCH=sometimes is invalid: expected auto or heartbeat");
}

TEST(settings_wording, an_option_that_stands_for_a_variable_is_worded_the_same) {
  const ito::config_error e = invalid_option("options.workers", "5000", declared(setting_id::workers));
  EXPECT_FALSE(e.from_environment());
  EXPECT_STREQ(e.what(), "ito: options.workers=5000 is invalid: expected an integer in [1, 1024]");
}

TEST(settings_ranges, every_checked_variable_rejects_a_word_with_the_one_wording) {
  for (const setting& s : settings) {
    if (!checked(s)) continue;
    EXPECT_EQ(lookup(s, "bogus"), wording(s, "bogus")) << s.name;
  }
}

TEST(settings_ranges, every_number_takes_its_bounds_and_nothing_past_them) {
  for (const setting& s : settings) {
    if (s.kind != setting_kind::integer && s.kind != setting_kind::size) continue;
    EXPECT_EQ(lookup(s, std::to_string(s.min)), "ok") << s.name;
    EXPECT_EQ(lookup(s, std::to_string(s.max)), "ok") << s.name;
    if (s.min > 0) {
      EXPECT_EQ(lookup(s, std::to_string(s.min - 1)), wording(s, std::to_string(s.min - 1)));
    }
    EXPECT_EQ(lookup(s, std::to_string(s.max + 1)), wording(s, std::to_string(s.max + 1)));
    if (!*s.default_text) {  // the fallback is the documented default: within range
      EXPECT_GE(s.fallback, s.min) << s.name;
      EXPECT_LE(s.fallback, s.max) << s.name;
    }
  }
}

TEST(settings_ranges, unset_and_empty_are_both_not_set) {
  const setting& s = declared(setting_id::workers);
  unsetenv(s.name);
  EXPECT_EQ(number_setting(s.id), std::nullopt);
  scoped_env e(s.name, "");
  EXPECT_EQ(number_setting(s.id), std::nullopt);
  EXPECT_EQ(text_setting(setting_id::trace), nullptr);
}

TEST(settings_ranges, a_narrower_maximum_is_checked_and_named) {
  const setting& s = declared(setting_id::pool_min);
  scoped_env e(s.name, "3");
  EXPECT_EQ(number_setting(s.id, 3), 3u);
  EXPECT_THROW((void)number_setting(s.id, 2), ito::config_error);
}

// docs/ENVIRONMENT.md's table, one row per variable, exactly as the
// declarations would write it.
std::string expected_row(const setting& s) {
  return std::string("| `") + s.name + "` | " + accepted_text(s) + " | " + default_text(s) + " | " +
         s.doc + " |";
}

TEST(settings_docs, environment_md_documents_exactly_the_declared_variables) {
  std::ifstream in(std::string(SOURCE_ROOT) + "/docs/ENVIRONMENT.md");
  ASSERT_TRUE(in) << "docs/ENVIRONMENT.md not found under " << SOURCE_ROOT;
  std::map<std::string, std::string> documented;  // name -> its row
  const std::string row_start = "| `ITO_";
  for (std::string line; std::getline(in, line);) {
    if (line.compare(0, row_start.size(), row_start) != 0) continue;
    const std::size_t end = line.find('`', 3);
    if (end != std::string::npos) documented[line.substr(3, end - 3)] = line;
  }
  std::string expected_table;
  for (const setting& s : settings) expected_table += expected_row(s) + "\n";
  for (const setting& s : settings) {
    auto it = documented.find(s.name);
    if (it == documented.end()) {
      ADD_FAILURE() << s.name << " is declared but has no row in docs/ENVIRONMENT.md";
      continue;
    }
    EXPECT_EQ(it->second, expected_row(s)) << s.name << "'s row differs from its declaration";
    documented.erase(it);
  }
  for (const auto& [name, row] : documented)
    ADD_FAILURE() << name << " is documented but not declared in src/common/settings.hpp";
  if (HasFailure()) std::cerr << "The table as declared:\n" << expected_table;
}

// A call of getenv: the name as a whole word, then '(' after optional spaces.
bool calls_getenv(const std::string& text) {
  const std::string name = "getenv";
  for (std::size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1)) {
    const bool word_start = at == 0 || !(std::isalnum(static_cast<unsigned char>(text[at - 1])) ||
                                         text[at - 1] == '_');
    std::size_t next = at + name.size();
    while (next < text.size() && (text[next] == ' ' || text[next] == '\t')) ++next;
    if (word_start && next < text.size() && text[next] == '(') return true;
  }
  return false;
}

TEST(settings_docs, a_getenv_call_is_recognised) {
  EXPECT_TRUE(calls_getenv("const char* v = std::getenv(\"ITO_X\");"));
  EXPECT_TRUE(calls_getenv("x = getenv (name);"));
  EXPECT_FALSE(calls_getenv("secure_getenv_like(); // getenv is not called here"));
}

// Only setting_values.cpp reads the environment: any other getenv in src/
// (the C or C++ library call) would be a variable parsed outside the table.
TEST(settings_docs, only_the_typed_lookups_read_the_environment) {
  namespace fs = std::filesystem;
  const fs::path src = fs::path(SOURCE_ROOT) / "src";
  std::size_t files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(src)) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".cpp" && ext != ".hpp" && ext != ".c" && ext != ".h") continue;
    ++files;
    if (entry.path() == src / "common" / "setting_values.cpp") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    const std::string body = text.str();
    EXPECT_FALSE(calls_getenv(body))
        << entry.path() << " calls getenv: declare the variable in src/common/settings.hpp and "
                           "use a lookup from src/common/setting_values.hpp";
  }
  EXPECT_GT(files, 50u);  // the tree was found
}

}  // namespace
