// clock/shared_line.h: a ClockLine the control thread re-fits and RX lcores
// read, without locks.
//
// One writer (the control thread) publishes; any number of readers copy the
// line once per burst. A sequence counter (odd while a write is under way)
// tells a reader that its copy may be torn; it then keeps the line it had,
// which is at most one re-fit old. Nothing on the read side writes shared
// memory, so readers never contend with each other or slow the writer.
//
//   fg::clock::SharedClockLine cell;
//   cell.Publish(line);                  // control thread
//   fg::clock::ClockLine mine;
//   uint64_t seen = 0;
//   cell.Refresh(mine, seen);            // RX lcore, once per burst: cheap when unchanged
#pragma once

#include <atomic>
#include <cstdint>

#include "clock/clock_fit.h"

namespace fg::clock {

class SharedClockLine {
 public:
  // Single writer.
  void Publish(const ClockLine& line) {
    const uint64_t s = seq_.load(std::memory_order_relaxed);
    seq_.store(s + 1, std::memory_order_relaxed);  // odd: writing
    std::atomic_thread_fence(std::memory_order_release);
    Store(line);
    seq_.store(s + 2, std::memory_order_release);
  }
  // Copies the line into `out` if a newer one than `seen` is complete; returns
  // whether `out` changed. `seen` starts at 0 (nothing published yet).
  bool Refresh(ClockLine& out, uint64_t& seen) const {
    const uint64_t s1 = seq_.load(std::memory_order_acquire);
    if (s1 == seen || (s1 & 1) != 0) return false;
    ClockLine copy = Load();
    std::atomic_thread_fence(std::memory_order_acquire);
    if (seq_.load(std::memory_order_relaxed) != s1) return false;  // torn: keep the old one
    out = copy;
    seen = s1;
    return true;
  }
  // Publications so far.
  uint64_t version() const { return seq_.load(std::memory_order_acquire) / 2; }

 private:
  // The fields as relaxed atomics: a torn read is detected by the sequence,
  // never undefined behaviour.
  void Store(const ClockLine& l) {
    slope_.store(l.slope, std::memory_order_relaxed);
    nic_ref_.store(l.nic_ref, std::memory_order_relaxed);
    tsc_ref_.store(l.tsc_ref, std::memory_order_relaxed);
    nic0_.store(l.nic0, std::memory_order_relaxed);
    tsc0_.store(l.tsc0, std::memory_order_relaxed);
    residual_.store(l.residual_ns, std::memory_order_relaxed);
    max_residual_.store(l.max_residual_ns, std::memory_order_relaxed);
    nominal_.store(l.nominal, std::memory_order_relaxed);
  }
  ClockLine Load() const {
    ClockLine l;
    l.slope = slope_.load(std::memory_order_relaxed);
    l.nic_ref = nic_ref_.load(std::memory_order_relaxed);
    l.tsc_ref = tsc_ref_.load(std::memory_order_relaxed);
    l.nic0 = nic0_.load(std::memory_order_relaxed);
    l.tsc0 = tsc0_.load(std::memory_order_relaxed);
    l.residual_ns = residual_.load(std::memory_order_relaxed);
    l.max_residual_ns = max_residual_.load(std::memory_order_relaxed);
    l.nominal = nominal_.load(std::memory_order_relaxed);
    return l;
  }

  alignas(64) std::atomic<uint64_t> seq_{0};
  std::atomic<uint64_t> nic_ref_{0}, tsc_ref_{0};
  std::atomic<double> slope_{1}, nic0_{0}, tsc0_{0}, residual_{0}, max_residual_{0}, nominal_{1};
};

}  // namespace fg::clock
