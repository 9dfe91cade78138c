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
//
// A counter block (a struct whose members are all uint64_t counts, such as
// a stream's responder counts) is summed and differenced member by member
// without naming its members: a count added to the block is summed across
// lcores and shown since a base reading with no other line.
//
//   struct Counts { uint64_t sent = 0, dropped = 0; };
//   fg::EachCount(total, part, [](uint64_t& t, uint64_t p) { t += p; });
#pragma once

#include <array>
#include <atomic>
#include <bit>
#include <cstdint>
#include <type_traits>

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

// Applies op(a's count, b's count) to each count of a counter block `T`:
// a struct of uint64_t members only (no padding, no other type: checked as
// far as the language can, by size and by having no padding bytes).
template <class T, class Op>
void EachCount(T& a, const T& b, Op op) {
  static_assert(std::is_trivially_copyable_v<T> && std::has_unique_object_representations_v<T> &&
                    sizeof(T) % sizeof(uint64_t) == 0 && alignof(T) == alignof(uint64_t),
                "a counter block holds uint64_t counts only");
  using Words = std::array<uint64_t, sizeof(T) / sizeof(uint64_t)>;
  Words x = std::bit_cast<Words>(a);
  const Words y = std::bit_cast<Words>(b);
  for (size_t i = 0; i < x.size(); ++i) op(x[i], y[i]);
  a = std::bit_cast<T>(x);
}

}  // namespace fg
