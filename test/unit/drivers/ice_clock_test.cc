#include "ice/ice_clock.h"

#include <gtest/gtest.h>

namespace fg::drivers::ice {
namespace {

TEST(IceClock, TimespecToNanoseconds) {
  EXPECT_EQ(TimespecToNs(timespec{1'764'500'000, 123'456'789}), 1'764'500'000'123'456'789ull);
  EXPECT_EQ(TimespecToNs(timespec{0, 5}), 5u);
  EXPECT_EQ(TimespecToNs(timespec{-1, 0}), 0u);
}

TEST(IceClock, RegisteredForNetIceOnlyWithTimesyncEnable) {
  port::DriverRegistry registry;
  RegisterIce(registry);
  port::Capabilities ring;
  ring.driver = "net_ring";
  EXPECT_FALSE(registry.Timestamps(ring).has_value());
  port::Capabilities e810;
  e810.driver = "net_ice";
  auto d = registry.Timestamps(e810);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->clock, "ice PHC (ns)");
  EXPECT_DOUBLE_EQ(d->nominal_units_per_ns, 1.0);
  EXPECT_TRUE(static_cast<bool>(d->enable));  // rte_eth_timesync_enable before start
  EXPECT_TRUE(static_cast<bool>(d->read));
}

}  // namespace
}  // namespace fg::drivers::ice
