// SPDX-License-Identifier: Apache-2.0
// One parser per kind of value and the typed lookups every layer calls to read
// an ITO_* variable declared in settings.hpp. An unset or empty variable is
// "not set" (std::nullopt, nullptr); a bad value throws config_error
// (from_environment) worded one way for every variable:
//   ito: NAME=VALUE is invalid: expected <what the variable accepts>
// Lookups read the environment each time: call them at start, never on a
// fast path.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "common/settings.hpp"
#include "ito/options.hpp"

namespace ito::config {

// The parsers: false / nullopt / -1 for text that is not a value of the kind.
// Digits only, no sign or space, no overflow.
bool parse_integer(const char* text, unsigned long long& out) noexcept;
// As parse_integer, then an optional K, M, G or T (either case), in powers of 1024.
bool parse_size(const char* text, unsigned long long& out) noexcept;
// 1, true or yes; 0, false or no.
std::optional<bool> parse_boolean(const char* text) noexcept;
// The index of `text` among s.choices.
int parse_choice(const setting& s, const char* text) noexcept;

// What a variable accepts, as the error message and docs/ENVIRONMENT.md say
// it: "an integer in [1, 1024]", "a size in [16K, 1G] bytes (suffixes K, M,
// G, T allowed)", "1, true or yes; 0, false or no", "fixed, lazy or fair_use".
// `max` narrows an integer's range below the declared one (0: the declared).
std::string accepted_text(const setting& s, unsigned long long max = 0);
// A size written with the largest suffix that divides it: 16K, 64M, 1G, 16T.
std::string size_text(unsigned long long bytes);
// The default as docs/ENVIRONMENT.md shows it.
std::string default_text(const setting& s);

// The one wording of a bad value, for a variable ...
config_error invalid_variable(const setting& s, const char* value, unsigned long long max = 0);
// ... and for the program's option that stands for it (`field`: options.workers).
config_error invalid_option(const char* field, const std::string& value, const setting& s,
                            unsigned long long max = 0);

// The typed lookups. A number (integer or size) within [min, max] (`max`: as
// above); throws config_error otherwise.
std::optional<unsigned long long> number_setting(setting_id id, unsigned long long max = 0);
std::optional<bool> boolean_setting(setting_id id);
// The index of the value among the declared choices.
std::optional<std::size_t> choice_setting(setting_id id);
// The raw text of a signal, path or marker variable; nullptr when unset or empty.
const char* text_setting(setting_id id) noexcept;
// A variable another library owns (Open MPI's OMPI_MCA_osc), as it is;
// nullptr when unset or empty. Read here too: every read of the environment
// is in this file.
const char* foreign_variable(const char* name) noexcept;

// The workers of a runtime started without a count: ITO_WORKERS, else this
// process's share of CPUs where one is set, else the CPUs of the calling
// thread's affinity mask (config_error for a bad ITO_WORKERS).
unsigned default_workers();
// Several processes split the CPUs of their masks (ito::dist's ranks of one
// host): this one's part, taken as its default worker count; 0: none (the
// whole mask).
void set_cpu_share(unsigned cpus) noexcept;

}  // namespace ito::config
