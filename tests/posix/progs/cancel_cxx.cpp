// SPDX-License-Identifier: Apache-2.0
// cancel.c compiled as C++: glibc's cleanup macros become objects, and the
// destructors of a cancelled thread's objects run (cancel_cxx_part.hpp).
#include "cancel.c"
