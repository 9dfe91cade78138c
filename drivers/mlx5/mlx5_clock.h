// mlx5/mlx5_clock.h: the free-running clock of ConnectX NICs.
//
// The mlx5 PMD timestamps received packets in device ticks unless the
// firmware's REAL_TIME_CLOCK_ENABLE is on, and DPDK does not expose the tick
// frequency. libibverbs does: ibv_query_device_ex() reports hca_core_clock in
// kHz. lib/clock (later) fits ticks to TSC by regression; this value is the
// prior it starts from and a cross-check of the fit.
//
//   for (const auto& c : fg::drivers::mlx5::ListDeviceClocks("/sys"))
//     printf("%s %s %lu kHz\n", c.ib_device.c_str(), c.pci.c_str(), c.core_clock_khz);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "port/driver_registry.h"

namespace fg::drivers::mlx5 {

struct DeviceClock {
  std::string ib_device;        // "mlx5_0"
  std::string pci;              // "0000:03:00.0"
  uint64_t core_clock_khz = 0;  // hca_core_clock
  uint64_t timestamp_mask = 0;  // completion_timestamp_mask: bits the ticks wrap at
};

// The PCI address an RDMA device sits on, from <sysfs>/class/infiniband/<dev>/device.
std::string PciOfIbDevice(const std::string& sysfs_root, const std::string& ib_device);

// Every mlx5 RDMA device libibverbs can open, with its clock.
std::vector<DeviceClock> ListDeviceClocks(const std::string& sysfs_root = "/sys");

// Fills Capabilities::device_clock_hz for mlx5_pci ports.
void Annotate(port::Capabilities& caps, const std::vector<DeviceClock>& clocks);

}  // namespace fg::drivers::mlx5
