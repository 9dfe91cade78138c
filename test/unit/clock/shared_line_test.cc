#include "clock/shared_line.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace fg::clock {
namespace {

TEST(SharedClockLine, ReaderSeesEachPublicationOnce) {
  SharedClockLine cell;
  ClockLine mine;
  uint64_t seen = 0;
  EXPECT_FALSE(cell.Refresh(mine, seen));  // nothing published yet
  ClockLine l;
  l.slope = 1.5625;
  l.nic0 = 1000;
  l.tsc0 = 42;
  cell.Publish(l);
  EXPECT_TRUE(cell.Refresh(mine, seen));
  EXPECT_EQ(mine.slope, 1.5625);
  EXPECT_EQ(mine.nic0, 1000);
  EXPECT_EQ(mine.tsc0, 42);
  EXPECT_FALSE(cell.Refresh(mine, seen));  // unchanged
  EXPECT_EQ(cell.version(), 1u);
}

// A writer publishes lines whose fields all derive from one counter; a reader
// that ever saw fields from two different publications would have a torn copy.
TEST(SharedClockLine, ConcurrentReadsAreNeverTorn) {
  SharedClockLine cell;
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (uint64_t i = 1; !stop.load(std::memory_order_relaxed); ++i) {
      ClockLine l;
      l.slope = static_cast<double>(i);
      l.nic0 = static_cast<double>(i) * 2;
      l.tsc0 = static_cast<double>(i) * 3;
      l.residual_ns = static_cast<double>(i) * 4;
      l.max_residual_ns = static_cast<double>(i) * 5;
      l.nominal = static_cast<double>(i) * 6;
      cell.Publish(l);
      for (uint64_t k = 0; k < (i % 8); ++k) __builtin_ia32_pause();  // writes at varying moments
    }
  });
  ClockLine mine;
  uint64_t seen = 0, torn = 0, refreshed = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
  while (std::chrono::steady_clock::now() < until) {
    if (!cell.Refresh(mine, seen)) continue;
    ++refreshed;
    const double i = mine.slope;
    if (mine.nic0 != i * 2 || mine.tsc0 != i * 3 || mine.residual_ns != i * 4 || mine.max_residual_ns != i * 5 ||
        mine.nominal != i * 6) {
      ++torn;
    }
  }
  stop.store(true);
  writer.join();
  EXPECT_GT(refreshed, 0u);
  EXPECT_EQ(torn, 0u);
}

}  // namespace
}  // namespace fg::clock
