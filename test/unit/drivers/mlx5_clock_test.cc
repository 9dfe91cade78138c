#include "mlx5/mlx5_clock.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace fg::drivers::mlx5 {
namespace {

TEST(Mlx5Clock, PciAddressFromSysfsLink) {
  namespace fs = std::filesystem;
  fs::path root = fs::temp_directory_path() / ("fg-sysfs-" + std::to_string(getpid()));
  fs::create_directories(root / "class/infiniband/mlx5_1");
  fs::create_directories(root / "devices/pci0000:00/0000:00:02.0/0000:03:00.1");
  fs::create_directory_symlink("../../../devices/pci0000:00/0000:00:02.0/0000:03:00.1",
                               root / "class/infiniband/mlx5_1/device");
  EXPECT_EQ(PciOfIbDevice(root.string(), "mlx5_1"), "0000:03:00.1");
  EXPECT_EQ(PciOfIbDevice(root.string(), "mlx5_9"), "");
  fs::remove_all(root);
}

TEST(Mlx5Clock, AnnotatesOnlyTheMatchingPort) {
  port::Capabilities caps;
  caps.driver = "mlx5_pci";
  caps.device = "0000:03:00.1";
  std::vector<DeviceClock> clocks = {{"mlx5_0", "0000:03:00.0", 156250, 0x7fffffffffffffff},
                                     {"mlx5_1", "0000:03:00.1", 1000000, 0xffffffffffff}};
  Annotate(caps, clocks);
  EXPECT_DOUBLE_EQ(caps.device_clock_hz, 1e9);
  ASSERT_EQ(caps.driver_notes.size(), 1u);
  EXPECT_NE(caps.driver_notes[0].find("mlx5_1 free-running clock 1000000 kHz"), std::string::npos);
}

TEST(Mlx5Clock, RegistryAppliesToMlx5PortsOnly) {
  port::DriverRegistry registry;
  int calls = 0;
  registry.Add("mlx5_pci", [&](port::Capabilities&) { ++calls; });
  port::Capabilities ring;
  ring.driver = "net_ring";
  registry.Annotate(ring);
  port::Capabilities cx;
  cx.driver = "mlx5_pci";
  registry.Annotate(cx);
  EXPECT_EQ(calls, 1);
}

TEST(Mlx5Clock, RealTimeModeIsARealisticUtcReading) {
  const uint64_t now = 1'764'500'000'123'456'789ull;                             // late 2025, ns
  EXPECT_EQ(ClassifyClock(now + 37'000'000'000ull, now), ClockMode::kRealTime);  // TAI vs UTC: 37 s apart
  EXPECT_EQ(ClassifyClock(now - 3'600'000'000'000ull, now), ClockMode::kRealTime);
  EXPECT_EQ(ClassifyClock(123'456'789'012ull, now), ClockMode::kFreeRunning);  // ticks since device reset
  EXPECT_EQ(ClassifyClock(now / 2, now), ClockMode::kFreeRunning);
}

TEST(Mlx5Clock, TimestampDriverNamesTheClockAndItsNominalRate) {
  const port::TimestampDriver ticks = MakeTimestampDriver(ClockMode::kFreeRunning, 1'000'000);
  EXPECT_DOUBLE_EQ(ticks.nominal_units_per_ns, 1.0);  // 1 GHz
  EXPECT_NE(ticks.clock.find("free-running"), std::string::npos);
  EXPECT_NE(ticks.clock.find("1000000 kHz"), std::string::npos);
  const port::TimestampDriver slow = MakeTimestampDriver(ClockMode::kFreeRunning, 156'250);
  EXPECT_DOUBLE_EQ(slow.nominal_units_per_ns, 0.15625);
  const port::TimestampDriver rt = MakeTimestampDriver(ClockMode::kRealTime, 1'000'000);
  EXPECT_DOUBLE_EQ(rt.nominal_units_per_ns, 1.0);
  EXPECT_NE(rt.clock.find("real-time"), std::string::npos);
  EXPECT_TRUE(static_cast<bool>(rt.read));
  EXPECT_FALSE(rt.stamps_without_offload);  // only with the PMD's offload
}

}  // namespace
}  // namespace fg::drivers::mlx5
