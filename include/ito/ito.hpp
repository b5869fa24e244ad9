// SPDX-License-Identifier: Apache-2.0
// ito's C++ API in one include.
#pragma once

#include "ito/error.hpp"
#include "ito/options.hpp"
#include "ito/parallel.hpp"
#include "ito/runtime.hpp"
#include "ito/thread.hpp"
#include "ito/ult.hpp"
#include "ito/sync.hpp"
