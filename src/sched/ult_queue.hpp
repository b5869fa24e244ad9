// SPDX-License-Identifier: Apache-2.0
// Intrusive FIFOs of ULTs: one behind a small lock for the paths that are not
// hot (ULTs woken from outside a worker, or bound to another worker), and one
// its owner alone uses (a bound ULT made ready on its own worker: the main
// ULT's yields and wake-ups, which must take no lock).
#pragma once

#include <atomic>
#include <mutex>

#include "sched/ult.hpp"

namespace ito::sched {

// The list both share: linked through ult::next, no synchronisation.
class ult_list {
 public:
  void push(ult* u) noexcept {
    u->next = nullptr;
    if (tail_) tail_->next = u; else head_ = u;
    tail_ = u;
  }
  ult* pop() noexcept {
    ult* u = head_;
    if (!u) return nullptr;
    head_ = u->next;
    if (!head_) tail_ = nullptr;
    u->next = nullptr;
    return u;
  }
  bool empty() const noexcept { return !head_; }

 private:
  ult* head_ = nullptr;
  ult* tail_ = nullptr;
};

class ult_queue {
 public:
  void push(ult* u) {
    std::lock_guard lock(mutex_);
    list_.push(u);
    size_.fetch_add(1, std::memory_order_release);
  }
  ult* pop() {
    if (size_.load(std::memory_order_acquire) == 0) return nullptr;
    std::lock_guard lock(mutex_);
    ult* u = list_.pop();
    if (u) size_.fetch_sub(1, std::memory_order_relaxed);
    return u;
  }
  bool looks_empty() const noexcept { return size_.load(std::memory_order_relaxed) == 0; }

 private:
  std::mutex mutex_;
  ult_list list_;
  std::atomic<long> size_{0};
};

// One worker's own: only that worker pushes and pops, with plain loads and
// stores. Other threads may ask looks_empty() (a hint, as for the others).
class owner_ult_fifo {
 public:
  void push(ult* u) noexcept {
    list_.push(u);
    nonempty_.store(true, std::memory_order_relaxed);
  }
  ult* pop() noexcept {
    ult* u = list_.pop();
    if (u && list_.empty()) nonempty_.store(false, std::memory_order_relaxed);
    return u;
  }
  bool looks_empty() const noexcept { return !nonempty_.load(std::memory_order_relaxed); }

 private:
  ult_list list_;
  std::atomic<bool> nonempty_{false};  // for other threads' looks_empty
};

}  // namespace ito::sched
