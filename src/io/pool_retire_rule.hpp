// SPDX-License-Identifier: Apache-2.0
// The pool's thread garbage collection (retiring surplus idle threads), as a
// pure class the pool steps at each transition to sleep (so tests can drive it
// without threads or timers).
//
// The slack is total/8 + bias (12.5 %: a shift, as the paper chose). When
// slack < sleeping holds on (max - total) consecutive sleeps, the thread going
// to sleep exits instead. Many idle threads near max are reclaimed fast (few
// sleeps needed); near the slack, or with few threads, reclamation slows.
#pragma once

namespace ito::detail {

class retire_rule {
 public:
  retire_rule(unsigned min_threads, unsigned max_threads, unsigned bias) noexcept
      : min_(min_threads), max_(max_threads), bias_(bias) {}

  // A thread is about to sleep. `total` threads exist and `sleeping` are asleep
  // counting this one. True: this thread exits instead (total drops by one).
  bool should_retire(unsigned total, unsigned sleeping) noexcept {
    // Never below the minimum; and a sleep that does not satisfy the condition
    // breaks the run of consecutive ones.
    if (total <= min_ || (total >> 3) + bias_ >= sleeping) {
      streak_ = 0;
      return false;
    }
    ++streak_;
    // At total == max the paper's count is zero; one satisfying sleep (this
    // one) is the least that can be observed.
    const unsigned needed = total < max_ ? max_ - total : 1;
    if (streak_ < needed) return false;
    streak_ = 0;
    return true;
  }

  unsigned streak() const noexcept { return streak_; }

 private:
  unsigned min_, max_, bias_;
  unsigned streak_ = 0;  // consecutive sleeps on which slack < sleeping held
};

}  // namespace ito::detail
