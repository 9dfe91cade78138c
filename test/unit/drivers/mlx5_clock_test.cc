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

}  // namespace
}  // namespace fg::drivers::mlx5
