// SPDX-License-Identifier: Apache-2.0
// A ULT's image coming home (src/distributed/scheduler/ult_image.hpp), without
// MPI: the bytes it carries land, and the join word and this process's own
// fields are never written, not even for a moment. A joiner here reads the
// join word without the tables' lock; a copy that ended on another process
// carries `remote|ended` there, which such a joiner once read mid-copy and
// took for another ULT's join (EINVAL, 1 CI run in 3 at 4 ranks).
#include "distributed/scheduler/ult_image.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <thread>
#include <vector>

#include "sched/join_word.hpp"
#include "sched/ult.hpp"

namespace {

namespace detail = ito::dist::detail;
namespace sched = ito::sched;

constexpr std::size_t stack_bytes = 16 * 1024;

// A stack of this process's with a descriptor at its top, as a home has it.
struct home_stack {
  alignas(64) unsigned char bytes[stack_bytes];
  sched::ult* u = nullptr;
  home_stack() {
    std::memset(bytes, 0x11, sizeof bytes);
    // As the scheduler places one: 64-byte aligned, below the top word.
    const auto top = reinterpret_cast<std::uintptr_t>(hi()) - sizeof(std::uint64_t);
    u = ::new (reinterpret_cast<void*>((top - sizeof(sched::ult)) & ~std::uintptr_t{63})) sched::ult;
  }
  char* lo() { return reinterpret_cast<char*>(bytes); }
  char* hi() { return lo() + stack_bytes; }
};

// The bytes another process sends back: the same stack as it left it there.
std::vector<char> image_from_elsewhere(home_stack& s, char* from) {
  std::vector<char> image(from, s.hi());
  auto* there = reinterpret_cast<sched::ult*>(image.data() + (reinterpret_cast<char*>(s.u) - from));
  there->sp = from + 8;
  there->resumes = 41;
  there->exited = true;
  // What the other process's copy held: its end over `remote`, no registry,
  // a foreign stack.
  there->join_state.store(sched::join_remote | sched::join_ended_bit, std::memory_order_relaxed);
  there->registry = reinterpret_cast<sched::ult_registry*>(std::uintptr_t{0xdead0000});
  there->registry_prev = reinterpret_cast<sched::ult*>(std::uintptr_t{0xdead1000});
  there->registry_next = reinterpret_cast<sched::ult*>(std::uintptr_t{0xdead2000});
  there->stack_from = sched::stack_origin::foreign;
  std::memset(image.data(), 0x77, 64);  // the frames below the descriptor
  return image;
}

TEST(UltImage, AnImageComingHomeLeavesTheJoinWordAndLocalFieldsAlone) {
  auto s = std::make_unique<home_stack>();
  sched::ult* u = s->u;
  auto* own_registry = reinterpret_cast<sched::ult_registry*>(std::uintptr_t{0x1000});
  auto* prev = reinterpret_cast<sched::ult*>(std::uintptr_t{0x2000});
  auto* next = reinterpret_cast<sched::ult*>(std::uintptr_t{0x3000});
  u->registry = own_registry;
  u->registry_prev = prev;
  u->registry_next = next;
  u->stack_from = sched::stack_origin::pool;
  sched::join_word::restore(u, sched::join_remote);  // away, as departing left it

  char* from = s->lo() + 1024;
  const std::vector<char> image = image_from_elsewhere(*s, from);
  detail::header h{};
  h.descriptor = detail::addr(u);
  h.start = detail::addr(from);
  h.len = image.size();

  // A joiner here looks at the join word the whole time.
  std::atomic<bool> done{false};
  std::atomic<std::uintptr_t> other_seen{sched::join_remote};
  std::thread joiner([&] {
    while (!done.load(std::memory_order_acquire)) {
      const std::uintptr_t w = sched::join_word::read(u);
      if (w != sched::join_remote) other_seen.store(w, std::memory_order_relaxed);
    }
  });
  for (int i = 0; i < 20000; ++i) detail::write_home_copy(u, h, image.data());
  done.store(true, std::memory_order_release);
  joiner.join();

  EXPECT_EQ(other_seen.load(), sched::join_remote)
      << "a joiner saw the other process's join word while the image was written";
  EXPECT_EQ(sched::join_word::read(u), sched::join_remote);
  EXPECT_EQ(u->registry, own_registry);
  EXPECT_EQ(u->registry_prev, prev);
  EXPECT_EQ(u->registry_next, next);
  EXPECT_EQ(u->stack_from, sched::stack_origin::pool);
  // What the ULT did elsewhere came home.
  EXPECT_EQ(u->sp, from + 8);
  EXPECT_EQ(u->resumes, 41u);
  EXPECT_TRUE(u->exited);
  EXPECT_EQ(static_cast<unsigned char>(from[0]), 0x77);
  EXPECT_EQ(static_cast<unsigned char>(from[63]), 0x77);
  EXPECT_EQ(static_cast<unsigned char>(s->lo()[0]), 0x11) << "bytes below the image were written";
}

}  // namespace
