// SPDX-License-Identifier: Apache-2.0
// Regular files on local file systems, served on the worker when the page
// cache has them. Delegating a call costs two wake-ups (a pool thread's and
// the ULT's): 7-11x NPTL for an open+read+close of a cached file
// (BENCHMARKS.md, "File reads under the preload"). A read tried first with
// RWF_NOWAIT returns at once from the page cache and says EAGAIN otherwise,
// so a worker never waits for a disk; closing a read-only file on a local
// file system has nothing to flush. Everything else stays delegated: a file
// on NFS or FUSE (close flushes or asks the daemon), a FIFO or device.
#pragma once

#include <sys/types.h>

#include <cstddef>

#include "io/delegated_syscall.hpp"

namespace ito::detail {

struct fd_state;

// Run on the delegation pool thread right after an open from a ULT
// succeeded, with the open's flags: records whether fd is a regular file on
// a local file system (and whether it is read-only), or an ordinary
// delegated descriptor.
void classify_opened(int fd, int flags) noexcept;

// An open from a ULT, delegated, and its descriptor classified there.
template <class Open>
int delegated_open(int flags, Open&& open) {
  return delegated_syscall([&] {
    const int fd = open();
    if (fd >= 0) classify_opened(fd, flags);
    return fd;
  });
}

// fd's entry when it is a local file (classify_opened), else null.
fd_state* local_file_entry(int fd) noexcept;

// A read of a local file from a ULT: tried on the worker with RWF_NOWAIT,
// delegated when the page cache cannot serve it. A short read from the
// cache that is not at the end of the file is completed by a delegated
// read, so a read is never shorter than the plain call's. offset -1: at the
// file position (read); else pread's.
ssize_t read_local_file(int fd, fd_state& st, void* buf, std::size_t count, off_t offset);

}  // namespace ito::detail
