// SPDX-License-Identifier: Apache-2.0
// The DSM's transport: everything the protocol asks of the other ranks'
// memory, and the messages it sends them, in its own terms. The rooms
// (fetch, directory, diffs, release, the boards, diff mail) call these and
// nothing of MPI for it; transport_mpi.cpp is the one
// implementation, over MPI RMA. Another (an in-process one for tests, an MPI
// with other rules) is another .cpp that defines the same functions, chosen
// when the library is linked: no indirection on the fault path, where these
// run (docs/ARCHITECTURE.md, the DSM's transport).
//
// Two windows, opened collectively by open_windows, each rank exposing its
// own memory at the same offsets:
//   data       bytes: the rank's node alias (the region, then the globals,
//              page p at p * page_bytes), then its sharing words (readers
//              masks, boards) from sharing_at on. Offsets in bytes.
//   directory  64-bit entries (page p's at rank p % ranks, index p / ranks:
//              home + 1, or 0 before its first touch). Offsets in entries.
//
// The rules every one-sided operation below follows unless it says
// otherwise (the mail has its own, below):
//   - Non-blocking: it only starts. Its origin buffers (what it sends, where
//     it reads into, `compare`/`mine` too) must stay untouched and alive
//     until flush(window, target) returns; only then are its results there.
//   - Ordered: the accumulate-like ones (or_words, read_words, read_entries,
//     claim_entry) are applied at a target in the order one rank issued them
//     within one window (MPI's default accumulate ordering), so a
//     read_words after an or_words to one target sees it. get and put are
//     not ordered with anything before the flush.
//   - Atomic: or_words, read_words, read_entries and claim_entry are atomic
//     per 64-bit word with each other; get and put are not.
//   - Progress: it completes only while the target makes transport progress.
//     MPICH's one-sided operations to a rank complete only while that rank
//     is inside MPI (progress.hpp: each rank's progress thread enters it
//     every ITO_DIST_PROGRESS_US), so a flush waits for the target's progress
//     thread, and an operation to oneself needs one's own.
//   - Fault path: it may be called from the DSM's SIGSEGV handler
//     (fault.cpp: serve_fault, with the DSM lock held, inside the handler)
//     on the way to bringing a page in: the directory's claim_entry and
//     read_entries, get, or_words, read_words and flush all are. With MPICH
//     that works: the fault is synchronous, and the DSM never hands MPI a
//     pointer into the protected view (its buffers are the aliases), so the
//     handler does not interrupt MPI (a program that passes DSM memory to
//     MPI itself could fault inside MPI). An MPI that cannot do one of these
//     from the handler needs the fault to hand the operation to another
//     thread instead. (Open MPI 4.1.0-4.1.4's crash in a first touch's
//     compare-and-swap was not the handler's doing but a CAS aimed at the
//     caller's own rank: transport_mpi.cpp does that one in memory there.)
//   - Any thread, with the DSM lock held (the rooms' callers hold it); the
//     windows are the only state they share.
//   - Errors: false when the transport reported a failure; the caller names
//     what failed (mpi_failed) and ends the process.
//
// Not here yet: remote frees (remote_free.cpp: the allocator's messages, on
// the progress thread), the collectives of start and end (a barrier,
// allreduces), and ito::dist::barrier's (api/runtime.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ito::dist::detail::transport {

enum class window : std::uint8_t { data, directory };

// Collective, once per DSM (start_dsm): the data window over `data_bytes`
// bytes from `data` (this rank's node alias and sharing words), the
// directory over `entry_count` entries from `entries`; both open for
// passive-target operations to every rank until close_windows.
bool open_windows(char* data, std::size_t data_bytes, std::int64_t* entries,
                  std::size_t entry_count);
// Collective (stop_dsm), after every operation completed.
void close_windows() noexcept;

// --- the data window (offsets in bytes) ---

// `bytes` bytes at `at` of the target into `into` (pages: a fault's, a
// checkout's runs, the master). At most 2^31 - 1 bytes.
bool get(int target, std::size_t at, void* into, std::size_t bytes);
// `runs` runs of bytes, run k at offset run_at[k] both from `from` and from
// `at` on the target, run_length[k] long: a page's diff, one transfer (an
// MPI indexed type for several runs; MPI keeps it until completion).
bool put_runs(int target, std::size_t at, const char* from, const int* run_at,
              const int* run_length, int runs);
// Bitwise-or of `count` words from `bits` into the target's words at `at`
// (a readers mask joined, boards marked).
bool or_words(int target, std::size_t at, const std::uint64_t* bits, std::size_t count);
// An atomic read of `count` words at `at` into `into`: a page read as one
// operation ordered after this rank's or_words to the same target (a first
// fetch in one round trip), or a readers mask read.
bool read_words(int target, std::size_t at, std::uint64_t* into, std::size_t count);

// --- the directory (offsets in entries) ---

// An atomic read of `count` entries from `index` into `into`.
bool read_entries(int target, std::size_t index, std::int64_t* into, std::size_t count);
// Entry `index` becomes *mine if it is 0; its value before into *found.
bool claim_entry(int target, std::size_t index, const std::int64_t* mine, std::int64_t* found);

// --- completion ---

// Blocks until every operation this rank started on `w` to `target` is
// complete, at the target and here. The DSM never completes all targets at
// once (target_flush.hpp says why).
bool flush(window w, int target);

// --- mail: a release's diffs, one message per home (diff_mail.hpp) ---
// On a channel of the mail's own (MPI: a communicator), so that nothing else
// matches them. Not from the fault path: a release sends (its thread, the
// DSM lock held), and any thread may receive: the releaser while it waits, a
// home's progress thread, a thread waiting in a barrier. A mail arrives only
// when the home looks (receive_mail), so delivery needs the home's progress
// thread or one of its threads waiting; the sender looks meanwhile too
// (diff_mail.cpp: two ranks releasing to each other both finish).

// Collective, after open_windows; `ranks` bounds the mail in flight.
bool open_mail(int ranks);
// Collective, after the progress thread stopped.
void close_mail() noexcept;
// Starts sending `count` words from `words` to `home` (the buffer stays
// untouched until mail_delivered says done), and awaiting its acknowledgement.
bool send_mail(int home, const std::uint64_t* words, std::size_t count);
// *done: whether every mail sent since the last *done is acknowledged
// (non-blocking; then the buffers are free).
bool mail_delivered(bool* done);
// The next mail that arrived, whole into `into` (resized), its sender in
// *from; *got false when none has (non-blocking). A mail goes to exactly one
// receiver, whichever thread asks.
bool receive_mail(std::vector<std::uint64_t>& into, int* from, bool* got);
// Tells `to` its mail was applied (blocking only until sent).
bool acknowledge_mail(int to);

}  // namespace ito::dist::detail::transport
