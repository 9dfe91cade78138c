#include "mlx5/mlx5_clock.h"

#include <infiniband/verbs.h>
#include <rte_ethdev.h>

#include <ctime>
#include <filesystem>

#include "absl/strings/str_format.h"

namespace fg::drivers {
namespace mlx5 {

std::string PciOfIbDevice(const std::string& sysfs_root, const std::string& ib_device) {
  std::error_code ec;
  auto target = std::filesystem::read_symlink(sysfs_root + "/class/infiniband/" + ib_device + "/device", ec);
  if (ec) return "";
  return target.filename().string();  // ../../../0000:03:00.0 -> 0000:03:00.0
}

std::vector<DeviceClock> ListDeviceClocks(const std::string& sysfs_root) {
  std::vector<DeviceClock> out;
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr) return out;
  for (int i = 0; i < n; ++i) {
    const std::string name = ibv_get_device_name(list[i]);
    if (name.rfind("mlx5", 0) != 0) continue;
    ibv_context* ctx = ibv_open_device(list[i]);
    if (ctx == nullptr) continue;
    ibv_device_attr_ex attr{};
    if (ibv_query_device_ex(ctx, nullptr, &attr) == 0) {
      out.push_back(
          DeviceClock{name, PciOfIbDevice(sysfs_root, name), attr.hca_core_clock, attr.completion_timestamp_mask});
    }
    ibv_close_device(ctx);
  }
  ibv_free_device_list(list);
  return out;
}

void Annotate(port::Capabilities& caps, const std::vector<DeviceClock>& clocks) {
  for (const DeviceClock& c : clocks) {
    if (c.pci.empty() || c.pci != caps.device || c.core_clock_khz == 0) continue;
    caps.device_clock_hz = static_cast<double>(c.core_clock_khz) * 1e3;
    caps.driver_notes.push_back(absl::StrFormat(
        "mlx5: %s free-running clock %d kHz (ibverbs hca_core_clock), wraps at mask 0x%x; RX timestamps are "
        "device ticks unless firmware REAL_TIME_CLOCK_ENABLE is set",
        c.ib_device, c.core_clock_khz, c.timestamp_mask));
  }
}

ClockMode ClassifyClock(uint64_t reading, uint64_t realtime_ns) {
  constexpr uint64_t kDayNs = 86'400'000'000'000ull;
  const uint64_t d = reading > realtime_ns ? reading - realtime_ns : realtime_ns - reading;
  return d < kDayNs ? ClockMode::kRealTime : ClockMode::kFreeRunning;
}

port::TimestampDriver MakeTimestampDriver(ClockMode mode, uint64_t core_clock_khz) {
  port::TimestampDriver d;
  if (mode == ClockMode::kRealTime) {
    d.clock = "mlx5 real-time clock (ns since 1970, firmware REAL_TIME_CLOCK_ENABLE)";
    d.nominal_units_per_ns = 1;
  } else if (core_clock_khz != 0) {
    d.clock =
        absl::StrFormat("mlx5 free-running device clock (ticks, %d kHz per ibverbs hca_core_clock)", core_clock_khz);
    d.nominal_units_per_ns = static_cast<double>(core_clock_khz) / 1e6;
  } else {
    d.clock = "mlx5 free-running device clock (ticks, rate from the fit)";
    d.nominal_units_per_ns = 1;
  }
  d.read = [](uint16_t port_id, uint64_t* now) { return rte_eth_read_clock(port_id, now); };
  return d;
}

}  // namespace mlx5

void RegisterMlx5(port::DriverRegistry& registry) {
  registry.Add("mlx5_pci", [](port::Capabilities& caps) { mlx5::Annotate(caps, mlx5::ListDeviceClocks()); });
  registry.AddTimestamps("mlx5_pci", [](const port::Capabilities& caps) -> std::optional<port::TimestampDriver> {
    uint16_t id = 0;
    if (rte_eth_dev_get_port_by_name(caps.device.c_str(), &id) != 0) return std::nullopt;
    uint64_t now = 0;
    if (rte_eth_read_clock(id, &now) != 0) return std::nullopt;  // no clock: software stamps
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    const uint64_t realtime = static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
    return mlx5::MakeTimestampDriver(mlx5::ClassifyClock(now, realtime),
                                     static_cast<uint64_t>(caps.device_clock_hz / 1e3));
  });
}

}  // namespace fg::drivers
