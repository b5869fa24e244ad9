// SPDX-License-Identifier: Apache-2.0
// An intrusive FIFO of ULTs behind a small lock, for the paths that are not hot:
// ULTs woken from outside a worker, and ULTs bound to one worker.
#pragma once

#include <atomic>
#include <mutex>

#include "sched/ult.hpp"

namespace ito::sched {

class ult_queue {
 public:
  void push(ult* u) {
    std::lock_guard lock(mutex_);
    u->next = nullptr;
    if (tail_) tail_->next = u; else head_ = u;
    tail_ = u;
    size_.fetch_add(1, std::memory_order_release);
  }
  ult* pop() {
    if (size_.load(std::memory_order_acquire) == 0) return nullptr;
    std::lock_guard lock(mutex_);
    ult* u = head_;
    if (!u) return nullptr;
    head_ = u->next;
    if (!head_) tail_ = nullptr;
    u->next = nullptr;
    size_.fetch_sub(1, std::memory_order_relaxed);
    return u;
  }
  bool looks_empty() const noexcept { return size_.load(std::memory_order_relaxed) == 0; }

 private:
  std::mutex mutex_;
  ult* head_ = nullptr;
  ult* tail_ = nullptr;
  std::atomic<long> size_{0};
};

}  // namespace ito::sched
