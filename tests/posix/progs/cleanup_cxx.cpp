// SPDX-License-Identifier: Apache-2.0
// cleanup.c compiled as C++: glibc's macros make a handler an object whose
// destructor runs as pthread_exit unwinds the thread.
#include "cleanup.c"
