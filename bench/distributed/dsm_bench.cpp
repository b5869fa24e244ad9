// SPDX-License-Identifier: Apache-2.0
// What the DSM adds to MPI's own one-sided transfers, per page, at 2+ ranks:
//   mpiexec -n 2 ito-bench-dsm [--pages 256] [--runs 7] [--rows]
// (`ito-bench dsm` launches it with --rows, once per memory mode: rank 1
// then prints one line per row, run_report.hpp, instead of the tables).
// Rank 0 is every page's home; rank 1 measures. Each row is the median over
// runs of ns per page, beside the MPI call sequence that moves the same bytes
// by hand (a window over plain memory), and the ratio.
//   fetch:   read one byte of a page this rank does not hold (fault, fetch, map)
//            vs MPI_Get of 4 KiB + MPI_Win_flush
//   release: write one byte of a held page, then sd_fence (fault, twin, diff)
//            vs MPI_Put of 1 byte per page + one MPI_Win_flush_all
//            (the write faults alone are printed under it)
//   barrier: ito::dist::barrier() (release + MPI_Barrier + acquire, no pages)
//            vs MPI_Barrier
// Then the sweep of seed 003's listing 3: for 64 B ... 1 MiB homed on rank 0,
// rank 1's time to read it (one load per 64 B), write it (one store per
// 64 B), sd_fence and si_fence, and read it again after that acquire (what
// nobody else wrote stays: write notices), in microseconds; and a one-page
// round trip: rank 1 writes a page and releases, rank 0 acquires and reads it
// (on a new page each time, homed by first touch or by the default block
// distribution, then on one page again and again);
// and 1 MiB homed on rank 0 read by rank 1 through a checkout, against
// MPI_Get of the same 1 MiB, first into new memory and then again after rank
// 0 rewrote it. Pages are homed by first touch elsewhere.
#include <mpi.h>
#include <signal.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "ito/dist.hpp"
#include "run_report.hpp"

namespace {

constexpr std::size_t page = 4096;

double now_ns() {
  return static_cast<double>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::vector<double> g_first_writes;  // of the release row: the write faults alone

// What this machine charges for the DSM's mechanism without the DSM: a store
// to a protected page, a SIGSEGV handler that unprotects it, the store again;
// and mprotect alone. (VMs differ by 5x here, so runs on two machines compare
// only through these.) Returns {fault + mprotect, mprotect} in ns per page,
// one value per run.
void unprotect_on_fault(int, siginfo_t* info, void*) {
  auto at = reinterpret_cast<std::uintptr_t>(info->si_addr) & ~std::uintptr_t{4095};
  mprotect(reinterpret_cast<void*>(at), 4096, PROT_READ | PROT_WRITE);
}
std::pair<std::vector<double>, std::vector<double>> protection_costs(std::size_t pages) {
  struct sigaction mine {}, dsm {};
  mine.sa_sigaction = &unprotect_on_fault;
  mine.sa_flags = SA_SIGINFO;
  sigaction(SIGSEGV, &mine, &dsm);  // the DSM's handler back afterwards
  auto* p = static_cast<volatile char*>(mmap(nullptr, pages * 4096, PROT_READ | PROT_WRITE,
                                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  for (std::size_t i = 0; i < pages; ++i) p[i * 4096] = 1;
  std::vector<double> fault, plain;
  for (int r = 0; r < 5; ++r) {
    for (std::size_t i = 0; i < pages; ++i) mprotect(const_cast<char*>(p) + i * 4096, 4096, PROT_NONE);
    double t0 = now_ns();
    for (std::size_t i = 0; i < pages; ++i) p[i * 4096] = 2;
    double t1 = now_ns();
    for (std::size_t i = 0; i < pages; ++i) mprotect(const_cast<char*>(p) + i * 4096, 4096, PROT_READ);
    double t2 = now_ns();
    fault.push_back((t1 - t0) / static_cast<double>(pages));
    plain.push_back((t2 - t1) / static_cast<double>(pages));
  }
  munmap(const_cast<char*>(p), pages * 4096);
  sigaction(SIGSEGV, &dsm, nullptr);
  return {fault, plain};
}

struct row {
  std::vector<double> dsm, mpi;
};

// One run of the DSM rows: fresh pages, homed on rank 0.
void dsm_run(std::size_t pages, row& fetch, row& release, row& barrier) {
  const int me = ito::dist::rank();
  auto* p = static_cast<volatile unsigned char*>(
      ito::dist::alloc_collective(pages * page, ito::dist::distribution::first_touch()));
  if (me == 0)
    for (std::size_t i = 0; i < pages; ++i) p[i * page] = 1;  // first touch: rank 0 is home
  ito::dist::barrier();
  if (me == 1) {
    unsigned sum = 0;
    double t0 = now_ns();
    for (std::size_t i = 0; i < pages; ++i) sum += p[i * page + 1];
    double t1 = now_ns();
    for (std::size_t i = 0; i < pages; ++i) p[i * page + 2] = static_cast<unsigned char>(sum);
    double t_written = now_ns();
    ito::dist::sd_fence();
    double t2 = now_ns();
    fetch.dsm.push_back((t1 - t0) / static_cast<double>(pages));
    release.dsm.push_back((t2 - t1) / static_cast<double>(pages));
    g_first_writes.push_back((t_written - t1) / static_cast<double>(pages));
  }
  ito::dist::barrier();
  // Untimed: the home's first release after rank 1 began to read its pages
  // write-protects them (so that its writes notify), a one-off per page.
  ito::dist::barrier();
  constexpr int barriers = 200;
  double t0 = now_ns();
  for (int i = 0; i < barriers; ++i) ito::dist::barrier();
  barrier.dsm.push_back((now_ns() - t0) / barriers);
}

void mpi_run(std::size_t pages, MPI_Win win, char* local, row& fetch, row& release, row& barrier) {
  const int me = ito::dist::rank();
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == 1) {
    double t0 = now_ns();
    for (std::size_t i = 0; i < pages; ++i) {
      MPI_Get(local + i * page, page, MPI_BYTE, 0, static_cast<MPI_Aint>(i * page), page, MPI_BYTE, win);
      MPI_Win_flush(0, win);
    }
    double t1 = now_ns();
    for (std::size_t i = 0; i < pages; ++i)
      MPI_Put(local + i * page + 2, 1, MPI_BYTE, 0, static_cast<MPI_Aint>(i * page + 2), 1, MPI_BYTE, win);
    MPI_Win_flush_all(win);
    double t2 = now_ns();
    fetch.mpi.push_back((t1 - t0) / static_cast<double>(pages));
    release.mpi.push_back((t2 - t1) / static_cast<double>(pages));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  constexpr int barriers = 200;
  double t0 = now_ns();
  for (int i = 0; i < barriers; ++i) MPI_Barrier(MPI_COMM_WORLD);
  barrier.mpi.push_back((now_ns() - t0) / barriers);
}

struct sweep_row {
  std::vector<double> read, write, sd, si, reread;
};

// One run of the sweep at `bytes`: fresh memory homed on rank 0.
void sweep_run(std::size_t bytes, sweep_row& row) {
  const int me = ito::dist::rank();
  auto* p = static_cast<volatile unsigned char*>(
      ito::dist::alloc_collective(bytes, ito::dist::distribution::first_touch()));
  if (me == 0)
    for (std::size_t i = 0; i < bytes; i += page) p[i] = 1;
  ito::dist::barrier();
  if (me == 1) {
    unsigned sum = 0;
    const double t0 = now_ns();
    for (std::size_t i = 0; i < bytes; i += 64) sum += p[i];
    const double t1 = now_ns();
    for (std::size_t i = 0; i < bytes; i += 64) p[i + 1] = static_cast<unsigned char>(sum + i);
    const double t2 = now_ns();
    ito::dist::sd_fence();
    const double t3 = now_ns();
    ito::dist::si_fence();
    const double t4 = now_ns();
    for (std::size_t i = 0; i < bytes; i += 64) sum += p[i];
    const double t5 = now_ns();
    row.read.push_back((t1 - t0) / 1000);
    row.write.push_back((t2 - t1) / 1000);
    row.sd.push_back((t3 - t2) / 1000);
    row.si.push_back((t4 - t3) / 1000);
    row.reread.push_back((t5 - t4) / 1000);
  }
  ito::dist::barrier();
}

// Rank 1 writes a page and releases; rank 0 acquires and reads it. The page's
// home is rank 2 (at 2 ranks: rank 0, the reader). Microseconds from rank 1's
// store to rank 0 holding the value, the broadcast that signals it included.
// `p`: a new array (every page never touched: the first time pays the
// directory and the kernel's first touch of each copy) or one used before
// (what a loop over the same data pays: a write fault on a held copy, its
// twin, the diff and the notice).
double page_round_trip(volatile unsigned char* p, unsigned char value) {
  const int me = ito::dist::rank();
  if (me == 2 % ito::dist::size() && p[0] == 0) p[0] = 1;  // the home: rank 2, or 0 at 2 ranks
  ito::dist::barrier();
  if (me == 0) (void)p[0];  // rank 0 holds a (soon stale) copy
  ito::dist::barrier();
  double t0 = 0, us = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == 1) {
    t0 = now_ns();
    p[0] = value;
    ito::dist::sd_fence();
  }
  MPI_Bcast(&t0, 1, MPI_DOUBLE, 1, MPI_COMM_WORLD);  // the signal; same clock on one host
  if (me == 0) {
    ito::dist::si_fence();
    if (p[0] == value) us = (now_ns() - t0) / 1000;
  }
  ito::dist::barrier();
  return us;
}

volatile unsigned char* new_round_trip_page() {
  return static_cast<volatile unsigned char*>(
      ito::dist::alloc_collective(2 * page, ito::dist::distribution::first_touch()));
}

// The same page homed where the default distribution (block) puts it: a
// page of its own per rank, so the home is rank 2's (0's at 2 ranks) as
// above, but known from the allocation: the writer's fault asks no
// directory.
volatile unsigned char* new_placed_round_trip_page() {
  const int ranks = ito::dist::size();
  auto* p = static_cast<volatile unsigned char*>(
      ito::dist::alloc_collective(static_cast<std::size_t>(ranks) * page));
  return p + static_cast<std::size_t>(2 % ranks) * page;
}

// 1 MiB homed on rank 0 (first touch), read by rank 1 through a checkout,
// beside MPI_Get of 1 MiB from a window over plain memory; rank 0 sits in
// ito::dist::barrier meanwhile (MPI progress, both ways). Two cases, since a
// transfer into memory never touched pays the kernel's first-touch faults
// (~2 us a page here, most of a 1 MiB Get: measured 700 against 180 us):
//   first: a new array, every home and page unknown to rank 1; the Get
//          goes into a new mapping;
//   again: the same array after rank 0 rewrote it and the barrier dropped
//          rank 1's copies (write notices); the Get into the same buffer.
struct checkout_rows {
  std::vector<double> first_dsm, first_mpi, again_dsm, again_mpi;
};

constexpr std::size_t checkout_bytes = 1 << 20;

// Reads the range through a checkout, one load per 64 B; microseconds.
double timed_checkout(const unsigned char* p, unsigned* sum) {
  const double t0 = now_ns();
  {
    ito::dist::checkout<const unsigned char> in(p, checkout_bytes, ito::dist::access::read);
    for (std::size_t i = 0; i < checkout_bytes; i += 64) *sum += in[i];
  }
  return (now_ns() - t0) / 1000;
}

double timed_get(MPI_Win win, const unsigned char* into, unsigned* sum) {
  const double t0 = now_ns();
  MPI_Get(const_cast<unsigned char*>(into), checkout_bytes, MPI_BYTE, 0, 0, checkout_bytes,
          MPI_BYTE, win);
  MPI_Win_flush(0, win);
  for (std::size_t i = 0; i < checkout_bytes; i += 64) *sum += into[i];
  return (now_ns() - t0) / 1000;
}

void checkout_run(MPI_Win win, const unsigned char* touched, checkout_rows& rows) {
  const int me = ito::dist::rank();
  auto* p = static_cast<unsigned char*>(
      ito::dist::alloc_collective(checkout_bytes, ito::dist::distribution::first_touch()));
  unsigned sum = 0;
  for (int pass = 0; pass < 2; ++pass) {
    if (me == 0)
      for (std::size_t i = 0; i < checkout_bytes; i += page)
        p[i] = static_cast<unsigned char>(i / page + pass);
    ito::dist::barrier();
    if (me == 1 && pass == 0) {
      auto* fresh = static_cast<unsigned char*>(mmap(nullptr, checkout_bytes, PROT_READ | PROT_WRITE,
                                                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
      rows.first_dsm.push_back(timed_checkout(p, &sum));
      rows.first_mpi.push_back(timed_get(win, fresh, &sum));
      munmap(fresh, checkout_bytes);
    } else if (me == 1) {
      rows.again_dsm.push_back(timed_checkout(p, &sum));
      rows.again_mpi.push_back(timed_get(win, touched, &sum));
    }
    ito::dist::barrier();
  }
  if (sum == 1) std::puts("");  // keep the loads
}

}  // namespace

int main(int argc, char** argv) {
  ito::dist::runtime dist(&argc, &argv);
  std::size_t pages = 256;
  int runs = 7;
  bool rows = false;
  bool flags_ok = true;
  for (int i = 1; flags_ok && i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--rows") rows = true;
    else if (i + 1 >= argc) flags_ok = false;
    else if (flag == "--pages") pages = std::strtoul(argv[++i], nullptr, 10);
    else if (flag == "--runs") runs = std::atoi(argv[++i]);
    else flags_ok = false;
  }
  if (!flags_ok || ito::dist::size() < 2 || pages == 0 || runs <= 0) {
    if (ito::dist::rank() == 0)
      std::fprintf(stderr, "usage: mpiexec -n 2 ito-bench-dsm [--pages N>0] [--runs N>0] [--rows]\n");
    return 2;
  }
  std::vector<char> local(pages * page, 0);
  std::vector<char> exposed(pages * page, 0);
  MPI_Win win;
  MPI_Win_create(exposed.data(), static_cast<MPI_Aint>(exposed.size()), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
  MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
  row fetch, release, barrier;
  for (int r = 0; r < runs; ++r) {  // alternate which goes first
    if (r % 2 == 0) {
      dsm_run(pages, fetch, release, barrier);
      mpi_run(pages, win, local.data(), fetch, release, barrier);
    } else {
      mpi_run(pages, win, local.data(), fetch, release, barrier);
      dsm_run(pages, fetch, release, barrier);
    }
  }
  MPI_Win_unlock_all(win);
  MPI_Win_free(&win);
  const auto pages_d = static_cast<double>(pages);
  if (ito::dist::rank() == 1 && rows) {
    run_report::print_row("fetch", "ito dsm", pages_d, fetch.dsm);
    run_report::print_row("fetch", "raw MPI", pages_d, fetch.mpi);
    run_report::print_row("release", "ito dsm", pages_d, release.dsm);
    run_report::print_row("release", "raw MPI", pages_d, release.mpi);
    run_report::print_row("release", "ito dsm first writes", pages_d, g_first_writes);
    run_report::print_row("barrier", "ito dsm", 1, barrier.dsm);
    run_report::print_row("barrier", "raw MPI", 1, barrier.mpi);
    const auto [fault_ns, mprotect_ns] = protection_costs(pages);
    run_report::print_row("protection fault", "calibration: fault + mprotect", pages_d, fault_ns);
    run_report::print_row("protection fault", "calibration: mprotect", pages_d, mprotect_ns);
  } else if (ito::dist::rank() == 1) {
    std::printf("dsm at %d ranks, %zu pages, median of %d runs (ns per page; barrier: ns each)\n",
                ito::dist::size(), pages, runs);
    std::printf("%-8s %12s %12s %8s\n", "row", "ito dsm", "raw MPI", "ratio");
    auto print = [](const char* name, const row& r) {
      const double d = median(r.dsm), m = median(r.mpi);
      std::printf("%-8s %12.0f %12.0f %7.2fx\n", name, d, m, d / m);
    };
    print("fetch", fetch);
    print("release", release);
    std::printf("  (of which the first writes, a fault and a twin each: %.0f)\n", median(g_first_writes));
    print("barrier", barrier);
    const auto [fault_ns, mprotect_ns] = protection_costs(pages);
    std::printf("this machine: a protection fault handled by mprotect %.0f ns a page, mprotect "
                "alone %.0f ns\n", median(fault_ns), median(mprotect_ns));
    std::fflush(stdout);
  }
  ito::dist::barrier();

  const std::size_t sizes[] = {64, 4096, 65536, 1 << 20};
  std::vector<sweep_row> sweep(std::size(sizes));
  for (int r = 0; r < runs; ++r)
    for (std::size_t k = 0; k < std::size(sizes); ++k) sweep_run(sizes[k], sweep[k]);
  if (ito::dist::rank() == 1 && rows) {
    const std::pair<const char*, std::vector<double> sweep_row::*> columns[] = {
        {"ito dsm read", &sweep_row::read},         {"ito dsm write", &sweep_row::write},
        {"ito dsm sd_fence", &sweep_row::sd},       {"ito dsm si_fence", &sweep_row::si},
        {"ito dsm reread", &sweep_row::reread}};
    for (std::size_t k = 0; k < std::size(sizes); ++k) {
      const std::string group = "listing 3, " + std::to_string(sizes[k]) + " B";
      for (const auto& [impl, column] : columns) {
        std::vector<double> ns = sweep[k].*column;
        for (double& v : ns) v *= 1000;  // measured in us
        run_report::print_row(group.c_str(), impl, 1, ns);
      }
    }
  } else if (ito::dist::rank() == 1) {
    std::printf("\nseed 003 listing 3 at %d ranks, median of %d runs, microseconds (rank 1; home rank 0)\n",
                ito::dist::size(), runs);
    std::printf("%-9s %10s %10s %10s %10s %10s\n", "bytes", "read", "write", "sd_fence", "si_fence",
                "reread");
    for (std::size_t k = 0; k < std::size(sizes); ++k)
      std::printf("%-9zu %10.1f %10.1f %10.1f %10.1f %10.1f\n", sizes[k], median(sweep[k].read),
                  median(sweep[k].write), median(sweep[k].sd), median(sweep[k].si),
                  median(sweep[k].reread));
    std::fflush(stdout);
  }
  {
    std::vector<unsigned char> from(checkout_bytes, 1), into(checkout_bytes, 0);
    MPI_Win big;
    MPI_Win_create(from.data(), static_cast<MPI_Aint>(from.size()), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &big);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, big);
    checkout_rows c;
    for (int r = 0; r < runs; ++r) checkout_run(big, into.data(), c);
    MPI_Win_unlock_all(big);
    MPI_Win_free(&big);
    if (ito::dist::rank() == 1 && rows) {
      for (auto* v : {&c.first_dsm, &c.first_mpi, &c.again_dsm, &c.again_mpi})
        for (double& x : *v) x *= 1000;
      run_report::print_row("checkout: read 1 MiB homed elsewhere, first", "ito dsm", 1, c.first_dsm);
      run_report::print_row("checkout: read 1 MiB homed elsewhere, first", "raw MPI", 1, c.first_mpi);
      run_report::print_row("checkout: read 1 MiB homed elsewhere, again", "ito dsm", 1, c.again_dsm);
      run_report::print_row("checkout: read 1 MiB homed elsewhere, again", "raw MPI", 1, c.again_mpi);
    } else if (ito::dist::rank() == 1) {
      std::printf("\n1 MiB homed on rank 0, read by rank 1, us (median of %d): checkout, MPI_Get + "
                  "flush\n  first read (new memory): %8.1f %8.1f\n  read again (rewritten):  %8.1f "
                  "%8.1f\n", runs, median(c.first_dsm), median(c.first_mpi), median(c.again_dsm),
                  median(c.again_mpi));
    }
  }
  std::vector<double> trips, placed, again;
  for (int r = 0; r < runs; ++r) trips.push_back(page_round_trip(new_round_trip_page(), 42));
  for (int r = 0; r < runs; ++r) placed.push_back(page_round_trip(new_placed_round_trip_page(), 42));
  volatile unsigned char* reused = new_round_trip_page();
  (void)page_round_trip(reused, 2);  // the first time, not counted
  for (int r = 0; r < runs; ++r) again.push_back(page_round_trip(reused, static_cast<unsigned char>(3 + r % 200)));
  // Rank 0 measured them; rank 1 prints every table, in order.
  MPI_Bcast(trips.data(), runs, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  MPI_Bcast(placed.data(), runs, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  MPI_Bcast(again.data(), runs, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (ito::dist::rank() == 1 && rows) {
    for (auto* v : {&trips, &placed, &again})
      for (double& x : *v) x *= 1000;
    run_report::print_row("one-page round trip", "ito dsm", 1, trips);
    run_report::print_row("one-page round trip, block-distributed page", "ito dsm", 1, placed);
    run_report::print_row("one-page round trip, same page again", "ito dsm", 1, again);
  } else if (ito::dist::rank() == 1) {
    std::printf("\none page: rank 1 writes + sd_fence, rank 0 si_fence + reads it: %.1f us, homed "
                "by the block distribution %.1f us, the same page again %.1f us (medians of %d)\n",
                median(trips), median(placed), median(again), runs);
  }
  ito::dist::barrier();
}
