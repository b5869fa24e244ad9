// SPDX-License-Identifier: Apache-2.0
// ito's C++ headers need C++20: say so plainly instead of a template error.
// (The C headers, ito/ito.h and ito/sync.h, need nothing.)
#pragma once

#if !defined(__cplusplus) || __cplusplus < 202002L
#error "ito's C++ headers need C++20: compile with -std=c++20 (or set CMAKE_CXX_STANDARD 20); C programs include ito/ito.h"
#endif
