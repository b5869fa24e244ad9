// SPDX-License-Identifier: Apache-2.0
// Whether a SIGSEGV was a store, per architecture: what the DSM's fault
// handler needs to make a page readable or writable.
#pragma once

#include <ucontext.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ito::arch {

// The aarch64 decoding, written for any host so that a test can feed it a
// hand-built area. The kernel's signal frame (arch/arm64 sigcontext.h) ends
// in `__reserved`: records of {u32 magic, u32 size (header included, a
// multiple of 16)}, the last a null header; the fault's syndrome is in the
// `esr_context` record {header, u64 esr}. A data abort (exception class 0x24
// from EL0, 0x25 from EL1) says in WnR (bit 6) whether it was a write. The
// kernel places that record in the area itself, never behind an
// `extra_context`, so the walk need not follow one; it stops at the area's
// end whatever the sizes say.
enum class fault_access { read, write, unknown };

inline constexpr std::uint32_t aarch64_esr_magic = 0x45535201;

inline fault_access aarch64_fault_access(const unsigned char* reserved, std::size_t bytes) noexcept {
  constexpr std::size_t header = 8;
  std::size_t at = 0;
  while (bytes - at >= header) {  // at <= bytes always
    std::uint32_t magic;
    std::uint32_t size;
    std::memcpy(&magic, reserved + at, sizeof magic);
    std::memcpy(&size, reserved + at + 4, sizeof size);
    if (magic == 0 || size < header || size > bytes - at) break;  // the end, or malformed
    if (magic == aarch64_esr_magic) {
      if (size < header + sizeof(std::uint64_t)) break;
      std::uint64_t esr;
      std::memcpy(&esr, reserved + at + header, sizeof esr);
      const std::uint64_t exception_class = (esr >> 26) & 0x3f;
      if (exception_class != 0x24 && exception_class != 0x25) break;  // not a data abort
      return (esr & (std::uint64_t{1} << 6)) != 0 ? fault_access::write : fault_access::read;
    }
    at += size;
  }
  return fault_access::unknown;
}

// Whether the fault `context` (a SIGSEGV handler's third argument) describes
// was a store. Where the hardware does not say (no syndrome record), a write:
// serving a read as a write costs a twin but is right, while serving a write
// as a read would leave the page read-only and fault forever.
#if defined(__x86_64__)
inline bool fault_was_write(const ucontext_t* context) noexcept {
  return (context->uc_mcontext.gregs[REG_ERR] & 2) != 0;  // the page fault's error code: W/R
}
#elif defined(__aarch64__)
inline bool fault_was_write(const ucontext_t* context) noexcept {
  return aarch64_fault_access(context->uc_mcontext.__reserved, sizeof context->uc_mcontext.__reserved) !=
         fault_access::read;
}
#else
#error "ito: no fault_was_write for this architecture"
#endif

}  // namespace ito::arch
