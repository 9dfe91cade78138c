// endpoint/event.h: typed events between endpoints on different lcores, and
// each lcore's timers: what a collective's barrier is made of (one rank's
// QP endpoint telling another "your step's data has arrived"; a step that
// starts `delay` late).
//
// An Event is a typed record: its kind says which of its fields hold
// (nothing is packed into another field's name). Each receiving lcore has a
// Mailbox of single-producer, single-consumer rings, one per sending lcore,
// so a send is two relaxed loads, a copy and a release store, and order is
// kept per sender; a full ring refuses the event (the sender counts it: a
// tester limit, never a silent loss). Timers are a min-heap per lcore, read
// by its own poll loop only. DPDK-free; the rings allocate at set-up only
// (the timers' heap grows with the timers armed).
//
//   fg::endpoint::Mailbox box(/*senders=*/2, /*capacity=*/1024);      // lcore 1's
//   box.From(0).Push(fg::endpoint::Event::DataArrivedAt(7, 3, {.step = 2, .bytes = 4096, .iteration = 1}, now));  // on lcore 0
//   box.Drain([&](const fg::endpoint::Event& e) { ranks[e.to].OnEvent(e); });                  // on lcore 1
//   fg::endpoint::Timers t;
//   t.Arm(now + 5'000, /*endpoint=*/7, /*tag=*/1);
//   t.Expire(now_ns, [&](const fg::endpoint::Timer& x) { ranks[x.endpoint].OnTimer(x.tag); });
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <queue>
#include <vector>

#include "absl/container/flat_hash_set.h"

namespace fg::endpoint {

// "The data of your step has arrived": a receiving endpoint tells the one
// whose barrier waits on it.
struct DataArrived {  // (no member initializers: a union member; DataArrived{} is all zero)
  uint32_t step;       // the collective's step (its index in the schedule)
  uint64_t bytes;      // bytes of the step that arrived, checked
  uint32_t iteration;  // the iteration it belongs to (the receiver may not have started it yet)
};

struct Event {
  enum class Kind : uint8_t { kDataArrived = 1 };
  Kind kind = Kind::kDataArrived;
  uint32_t to = 0;     // the receiving endpoint (its index on the receiving lcore)
  uint32_t from = 0;   // the sending endpoint (its index on the sending lcore)
  uint64_t at_ns = 0;  // when the sender raised it (TX timebase ns)
  union {
    DataArrived data_arrived{};  // kind kDataArrived
  };
  static Event DataArrivedAt(uint32_t to, uint32_t from, DataArrived d, uint64_t at_ns) {
    Event e;
    e.kind = Kind::kDataArrived;
    e.to = to;
    e.from = from;
    e.at_ns = at_ns;
    e.data_arrived = d;
    return e;
  }
};

// Events from one lcore to one other: a fixed ring (capacity a power of two),
// one producer, one consumer.
class EventRing {
 public:
  explicit EventRing(size_t capacity) : slots_(RoundUp(capacity)), mask_(slots_.size() - 1) {}
  // On the sending lcore. False: full (nothing written).
  bool Push(const Event& e) {
    const uint64_t head = head_.load(std::memory_order_relaxed);
    if (head - tail_.load(std::memory_order_acquire) == slots_.size()) return false;
    slots_[head & mask_] = e;
    head_.store(head + 1, std::memory_order_release);
    return true;
  }
  // On the receiving lcore.
  bool Pop(Event& e) {
    const uint64_t tail = tail_.load(std::memory_order_relaxed);
    if (tail == head_.load(std::memory_order_acquire)) return false;
    e = slots_[tail & mask_];
    tail_.store(tail + 1, std::memory_order_release);
    return true;
  }
  size_t capacity() const { return slots_.size(); }

 private:
  static size_t RoundUp(size_t n) {
    size_t c = 1;
    while (c < n) c <<= 1;
    return c;
  }
  std::vector<Event> slots_;
  const size_t mask_;
  alignas(64) std::atomic<uint64_t> head_{0};  // written by the producer
  alignas(64) std::atomic<uint64_t> tail_{0};  // written by the consumer
};

// One lcore's incoming events: a ring per sending lcore.
class Mailbox {
 public:
  Mailbox(uint32_t senders, size_t capacity) {
    for (uint32_t i = 0; i < senders; ++i) rings_.push_back(std::make_unique<EventRing>(capacity));
  }
  EventRing& From(uint32_t sender) { return *rings_[sender]; }
  // Hands every waiting event to f, each sender's in the order sent; returns how many.
  template <class F>
  size_t Drain(F&& f) {
    size_t n = 0;
    Event e;
    for (auto& r : rings_) {
      while (r->Pop(e)) {
        f(static_cast<const Event&>(e));
        ++n;
      }
    }
    return n;
  }

 private:
  std::vector<std::unique_ptr<EventRing>> rings_;
};

struct Timer {
  uint64_t at_ns = 0;     // when it is due
  uint32_t endpoint = 0;  // whose (its index on this lcore)
  uint32_t tag = 0;       // the endpoint's own meaning
  uint64_t id = 0;        // Arm's, for Cancel
};

// One lcore's timers, due in time order (ties: in the order armed).
class Timers {
 public:
  uint64_t Arm(uint64_t at_ns, uint32_t endpoint, uint32_t tag) {
    const uint64_t id = ++last_id_;
    heap_.push(Timer{at_ns, endpoint, tag, id});
    live_.insert(id);
    return id;
  }
  // An armed timer never fires; an expired, cancelled or unknown id: nothing.
  void Cancel(uint64_t id) { live_.erase(id); }
  // Runs f for every timer due at now_ns, earliest first; returns how many ran.
  template <class F>
  size_t Expire(uint64_t now_ns, F&& f) {
    size_t n = 0;
    while (!heap_.empty() && heap_.top().at_ns <= now_ns) {
      const Timer t = heap_.top();
      heap_.pop();
      if (live_.erase(t.id) == 0) continue;  // cancelled
      f(t);
      ++n;
    }
    return n;
  }
  // When the earliest timer armed is due (a cancelled one may still count); nullopt: none.
  std::optional<uint64_t> next_ns() const {
    if (heap_.empty()) return std::nullopt;
    return heap_.top().at_ns;
  }
  size_t armed() const { return live_.size(); }

 private:
  struct Later {
    bool operator()(const Timer& a, const Timer& b) const {
      return a.at_ns != b.at_ns ? a.at_ns > b.at_ns : a.id > b.id;
    }
  };
  std::priority_queue<Timer, std::vector<Timer>, Later> heap_;
  absl::flat_hash_set<uint64_t> live_;
  uint64_t last_id_ = 0;
};

}  // namespace fg::endpoint
