// base/counter.h: a counter written by exactly one thread and read by others.
//
// The data path increments with a plain load + store (no locked
// read-modify-write instruction); readers on other threads see a torn-free
// value because the 64-bit load and store are atomic. This is VPP's
// per-thread counter discipline, made well-defined in C++.
//
//   struct alignas(64) PortCounters { fg::Counter packets, bytes; };
//   counters.packets.Add(n);                 // data-path lcore only
//   uint64_t seen = counters.packets.Read(); // any thread
#pragma once

#include <atomic>
#include <cstdint>

namespace fg {

class Counter {
 public:
  // Only the owning thread may call Add/Set.
  void Add(uint64_t n) { v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
  void Set(uint64_t n) { v_.store(n, std::memory_order_relaxed); }
  uint64_t Read() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};

}  // namespace fg
