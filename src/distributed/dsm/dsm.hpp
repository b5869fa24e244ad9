// SPDX-License-Identifier: Apache-2.0
// The page-based DSM over the iso-address region (seed 003, §3), home-based,
// multiple readers and multiple writers, for data-race-free programs:
//
// - Every page has a home rank, fixed by the first rank to touch it (a
//   compare-and-swap in the page's directory entry, kept by its manager rank,
//   page % P). The home's copy is the master, which it reads and writes in
//   place. The home also keeps the page's readers (a mask), which every
//   other rank joins before its first fetch.
// - Elsewhere a page is Invalid (PROT_NONE), Shared (a read-only copy fetched
//   from the home at a read fault) or Modified (writable, with a twin taken at
//   the write fault). Pinned pages stay Modified (writable, with a twin)
//   across fences.
// - sd_fence (release) sends each Modified page's diff against its twin to
//   the home (only the bytes this rank changed: writers of different bytes of
//   one page merge), makes the page Shared again, and then sends a write
//   notice to the page's other readers. The home's own writes are notified
//   too: pages others read are write-protected on their home until its first
//   store, then compared with a twin at each release.
// - si_fence (acquire) makes Invalid the Shared copies that notices name, so
//   the next read fetches what others released, and merges the master into
//   the Modified pages they name (pinned ones in place, their access kept);
//   other copies stay.
//   Data moves only at faults and at this rank's own fences.
//
// All of this runs between nodes. A job whose ranks all form one node
// (node_memory.hpp) maps one copy read-write in every rank and runs none of
// it: fences are memory fences, pins and checkouts are counted. In a job of
// several nodes, some of several ranks ("node homes"), a rank is home of the
// pages homed on any rank of its node: its view maps them from the node's
// memory, where they are read and written in place, and it runs the home's
// side of the protocol for them with its own protections and twins (its own
// stores are what it notifies); a page homed on another node is copied into
// this rank's own memory, as with one node per rank. The readers of a node's
// pages are kept in the node's memory, so that any rank of it notifies them,
// and a rank that begins to read a page marks the read-elsewhere boards of
// every rank of the home's node.
//
// MPI only ever reads and writes the region's alias (never a protected page).
// A rank that services a fault calls MPI from its SIGSEGV handler: the fault
// is synchronous, and no thread holds the DSM lock while touching the view.
// One-sided transfers need the target rank to make MPI progress: each rank's
// progress thread (progress.hpp) enters MPI often enough that a home busy
// computing still serves faults and diffs.
#pragma once

#include <cstddef>

#include "ito/dist.hpp"

namespace ito::dist::detail {

struct dist_state;

// The bytes of the words that follow the pages in the DSM's window (the
// readers masks and two page boards), page-rounded, for `pages` pages.
std::size_t sharing_bytes_for(std::size_t pages) noexcept;
// Collective, after the region is reserved: windows, page tables, the fault
// handler (installed after MPI's own, which it chains to for other addresses).
void start_dsm(dist_state& st);
// Collective: releases what start_dsm set up.
void stop_dsm(dist_state& st) noexcept;

void sd_fence();
void si_fence();
// sd_fence then si_fence as one step, Modified pages included: what an
// acquire needs while other threads of this rank keep writing (with the two
// fences apart, a page written again between them stays Modified and stale
// in the bytes other ranks released). Pinned pages are released and kept.
void release_and_invalidate();
// On every rank, for a fresh collective array (whole pages from p): sets the
// homes of its pages as `where` says, with no message (every rank computes
// the same); this rank's own pages become read-write at once.
void place_pages(void* p, std::size_t bytes, const distribution& where);
// The rank that holds p's page (its home), or -1: not a DSM address, a page
// whose home this rank has not learnt (nobody asked the directory), or ranks
// that share one copy (every rank holds every page: none is nearer).
// Never blocks, no MPI: create_thread(near(p)) asks it on a ULT's stack.
int placement_rank(const void* p) noexcept;
void pin(void* p, std::size_t bytes);
void unpin(void* p, std::size_t bytes);
// checkout (ito/dist.hpp): the range's pages brought in with one transfer
// per run homed on one rank, then pinned; its checkin is unpin.
void check_out_pages(void* p, std::size_t bytes, access how);
// The same when every page of the range is held here or homed here already
// (no MPI: it may run on a ULT's stack); false, and nothing done, otherwise.
bool check_out_held_pages(void* p, std::size_t bytes, access how);
// This process's counters (zero without a runtime).
dsm_stats stats() noexcept;
// Ends the process after an MPI call of the DSM failed: "ito: dsm: <what>
// failed" on stderr, then abort (a half-done transfer leaves no consistent
// state to go on from).
[[noreturn]] void mpi_failed(const char* what);

}  // namespace ito::dist::detail
