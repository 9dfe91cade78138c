// base/spsc_ring.h: a single-producer, single-consumer ring of small records.
//
// The worker handoff (VPP's handoff queues, Seastar's share-nothing message
// queues): the lcore that receives a frame for a flow another lcore owns
// pushes a record here, the owner pops it on its next poll. One producer
// thread, one consumer thread, no lock; a batch costs one release store on
// each side (never one atomic per record), and each side caches the other's
// index so it reads the shared line only when its cached view runs out.
//
//   fg::SpscRing<Rec> ring(1024);                 // capacity: a power of two
//   size_t pushed = ring.Push(recs, n);           // producer: as many as fit
//   size_t got = ring.Pop(out, 32);               // consumer: up to 32
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>

namespace fg {

template <typename T>
class SpscRing {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  explicit SpscRing(size_t capacity)
      : mask_(std::bit_ceil(capacity < 2 ? size_t{2} : capacity) - 1), slots_(new T[mask_ + 1]) {}
  SpscRing(const SpscRing&) = delete;
  SpscRing& operator=(const SpscRing&) = delete;

  size_t capacity() const { return mask_ + 1; }

  // Producer: copies up to n records in; returns how many fit.
  size_t Push(const T* recs, size_t n) {
    if (n == 0) return 0;
    size_t free = capacity() - (tail_ - head_cache_);
    if (free < n) {
      head_cache_ = head_.load(std::memory_order_acquire);
      free = capacity() - (tail_ - head_cache_);
      if (free < n) n = free;
    }
    for (size_t i = 0; i < n; ++i) slots_[(tail_ + i) & mask_] = recs[i];
    tail_ += n;
    tail_pub_.store(tail_, std::memory_order_release);
    return n;
  }

  // Consumer: moves up to n records out; returns how many.
  size_t Pop(T* out, size_t n) {
    size_t avail = tail_cache_ - head_own_;
    if (avail == 0) {
      tail_cache_ = tail_pub_.load(std::memory_order_acquire);
      avail = tail_cache_ - head_own_;
      if (avail == 0) return 0;
    }
    if (n > avail) n = avail;
    for (size_t i = 0; i < n; ++i) out[i] = slots_[(head_own_ + i) & mask_];
    head_own_ += n;
    head_.store(head_own_, std::memory_order_release);
    return n;
  }

  // Either side, any time: records pushed and not yet popped (a view).
  size_t Size() const {
    return tail_pub_.load(std::memory_order_acquire) - head_.load(std::memory_order_acquire);
  }

 private:
  const size_t mask_;
  std::unique_ptr<T[]> slots_;
  // Producer's line: its own index and its view of the consumer's.
  alignas(64) size_t tail_ = 0;
  size_t head_cache_ = 0;
  // Consumer's line.
  alignas(64) size_t head_own_ = 0;
  size_t tail_cache_ = 0;
  // The published indices, each on its own line.
  alignas(64) std::atomic<size_t> tail_pub_{0};
  alignas(64) std::atomic<size_t> head_{0};
};

}  // namespace fg
