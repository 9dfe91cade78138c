// base/request_slot.h: one request at a time from the control thread to a
// polling lcore, answered without a lock.
//
// The control thread sizes the request, then Post()s it (pointer, then a
// sequence bump with release); the lcore's Take() costs one load when nothing
// is new and returns the request and its sequence when something is; the
// lcore answers with Answer(seq), and the control thread waits for Served().
// RX captures and top-flows scans use it.
//
//   fg::RequestSlot<Req> slot;
//   slot.Post(req);                                    // control thread
//   if (auto [r, seq] = slot.Take(); r) { ...; slot.Answer(seq); }   // lcore
//   while (!slot.Served(req)) sleep();                 // control thread
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

namespace fg {

template <typename T>
class RequestSlot {
 public:
  void Post(T& r) {
    req_.store(&r, std::memory_order_relaxed);
    seq_.store(seq_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }
  bool Served(const T& r) const {
    return req_.load(std::memory_order_relaxed) == &r &&
           ack_.load(std::memory_order_acquire) == seq_.load(std::memory_order_relaxed);
  }
  // Lcore: whether a request was posted since the last Take.
  bool Pending() const { return seq_.load(std::memory_order_acquire) != taken_; }
  // Lcore: that request and its sequence (to Answer), or {nullptr, 0}.
  std::pair<T*, uint64_t> Take() {
    const uint64_t seq = seq_.load(std::memory_order_acquire);
    if (seq == taken_) return {nullptr, 0};
    taken_ = seq;
    return {req_.load(std::memory_order_relaxed), seq};
  }
  void Answer(uint64_t seq) { ack_.store(seq, std::memory_order_release); }

 private:
  alignas(64) std::atomic<uint64_t> seq_{0};
  std::atomic<T*> req_{nullptr};
  alignas(64) std::atomic<uint64_t> ack_{0};
  uint64_t taken_ = 0;  // lcore
};

}  // namespace fg
