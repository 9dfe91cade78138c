// endpoint/event: typed events cross lcores in each sender's order, a full
// ring refuses (and says so), timers fire in time order and cancelled ones
// never.
#include "endpoint/event.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace fg::endpoint {
namespace {

TEST(Events, EachSendersEventsArriveInOrderAcrossThreads) {
  constexpr uint32_t kPerSender = 200'000;
  Mailbox box(/*senders=*/2, /*capacity=*/64);
  std::vector<std::thread> senders;
  for (uint32_t s = 0; s < 2; ++s) {
    senders.emplace_back([&box, s] {
      for (uint32_t i = 0; i < kPerSender;) {
        const Event e = Event::DataArrivedAt(/*to=*/s, /*from=*/s, DataArrived{.step = i, .bytes = 4096u + i, .iteration = 1}, i);
        if (box.From(s).Push(e)) ++i;  // full: the receiver drains, try again
      }
    });
  }
  std::vector<uint32_t> next(2, 0);
  uint64_t bad = 0;
  while (next[0] < kPerSender || next[1] < kPerSender) {
    box.Drain([&](const Event& e) {
      bad += e.kind != Event::Kind::kDataArrived || e.data_arrived.step != next[e.from] ||
             e.data_arrived.bytes != 4096u + e.data_arrived.step || e.to != e.from;
      ++next[e.from];
    });
  }
  for (auto& t : senders) t.join();
  EXPECT_EQ(bad, 0u);
  EXPECT_EQ(next[0], kPerSender);
  EXPECT_EQ(next[1], kPerSender);
  EXPECT_EQ(box.Drain([](const Event&) {}), 0u);
}

TEST(Events, AFullRingRefusesAndKeepsWhatItHolds) {
  EventRing r(3);  // rounds up to 4
  ASSERT_EQ(r.capacity(), 4u);
  for (uint32_t i = 0; i < 4; ++i) EXPECT_TRUE(r.Push(Event::DataArrivedAt(0, 0, DataArrived{.step = i, .bytes = 0, .iteration = 1}, 0))) << i;
  EXPECT_FALSE(r.Push(Event::DataArrivedAt(0, 0, DataArrived{.step = 99, .bytes = 0, .iteration = 1}, 0)));
  Event e;
  for (uint32_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(r.Pop(e));
    EXPECT_EQ(e.data_arrived.step, i);
  }
  EXPECT_FALSE(r.Pop(e));
}

TEST(Timers, FireInTimeOrderAndCancelledOnesNever) {
  Timers t;
  const uint64_t a = t.Arm(300, 1, 10);
  t.Arm(100, 2, 20);
  t.Arm(100, 3, 30);  // same time: after the one armed first
  const uint64_t d = t.Arm(200, 4, 40);
  t.Cancel(d);
  EXPECT_EQ(t.armed(), 3u);
  EXPECT_EQ(t.next_ns(), 100u);
  std::vector<uint32_t> fired;
  auto note = [&](const Timer& x) { fired.push_back(x.tag); };
  EXPECT_EQ(t.Expire(99, note), 0u);
  EXPECT_EQ(t.Expire(250, note), 2u);
  EXPECT_EQ(fired, (std::vector<uint32_t>{20, 30}));
  t.Cancel(a);
  t.Cancel(a);        // twice: nothing more
  t.Cancel(12345);    // unknown: nothing
  EXPECT_EQ(t.Expire(1000, note), 0u);
  EXPECT_EQ(t.armed(), 0u);
  t.Arm(1100, 5, 50);
  EXPECT_EQ(t.Expire(1100, note), 1u);
  EXPECT_EQ(fired, (std::vector<uint32_t>{20, 30, 50}));
}

}  // namespace
}  // namespace fg::endpoint
