// SPDX-License-Identifier: Apache-2.0
// ito's C++ API in one include. What is declared in ito::detail (and in the
// headers under ito/detail/) is internal: not for programs to name.
//
// The distributed mode is separate: ito/dist.hpp (ito::dist), which comes with
// the ito-dist library and its MPI (link ito::dist, or pkg-config ito-dist).
#pragma once

#include "ito/error.hpp"
#include "ito/options.hpp"
#include "ito/runtime.hpp"
#include "ito/ult.hpp"
#include "ito/thread.hpp"
#include "ito/parallel.hpp"
#include "ito/sync.hpp"
#include "ito/io.hpp"
#include "ito/os_pool.hpp"
#include "ito/delegate.hpp"
#include "ito/flow.hpp"
