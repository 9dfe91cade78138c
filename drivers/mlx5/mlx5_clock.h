// mlx5/mlx5_clock.h: the free-running clock of ConnectX NICs.
//
// The mlx5 PMD timestamps received packets in device ticks unless the
// firmware's REAL_TIME_CLOCK_ENABLE is on, and DPDK does not expose the tick
// frequency. libibverbs does: ibv_query_device_ex() reports hca_core_clock in
// kHz. The port (port::NicClock) fits ticks to TSC ns by regression; this
// value is the nominal rate the fit's drift is reported against.
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

// What rte_eth_read_clock and the RX timestamps count. A free-running
// counter starts near zero when the device resets; with the firmware's
// REAL_TIME_CLOCK_ENABLE the PMD delivers ns since 1970 instead. A reading
// within a day of the host's CLOCK_REALTIME is taken for the latter.
enum class ClockMode { kFreeRunning, kRealTime };
ClockMode ClassifyClock(uint64_t reading, uint64_t realtime_ns);

// The timestamp driver for a port: its clock's name and nominal rate
// (`core_clock_khz` from ibverbs for ticks; 0 when unknown), reads through
// rte_eth_read_clock.
port::TimestampDriver MakeTimestampDriver(ClockMode mode, uint64_t core_clock_khz);

}  // namespace fg::drivers::mlx5
