// SPDX-License-Identifier: Apache-2.0
// errno of the OS thread running the caller *now*.
//
// A ULT may resume on another OS thread after any wait (a park, a delegated
// call, a sleep), and glibc declares __errno_location `const`, so the
// compiler may keep errno's address from before the wait and then read or
// write the errno of the thread the ULT left (ThreadSanitizer caught it).
// Every errno access in this layer goes through errno_now(), which the
// compiler cannot fold into an earlier call.
#pragma once

namespace ito::detail {

[[gnu::noinline]] int& errno_now() noexcept;

}  // namespace ito::detail
