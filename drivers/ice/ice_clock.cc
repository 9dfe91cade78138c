#include "ice/ice_clock.h"

#include <rte_ethdev.h>

namespace fg::drivers {
namespace ice {

uint64_t TimespecToNs(const timespec& ts) {
  if (ts.tv_sec < 0) return 0;
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

port::TimestampDriver MakeTimestampDriver() {
  port::TimestampDriver d;
  d.clock = "ice PHC (ns)";
  d.nominal_units_per_ns = 1;
  d.enable = [](uint16_t port_id) { return rte_eth_timesync_enable(port_id); };
  d.read = [](uint16_t port_id, uint64_t* now) {
    timespec ts{};
    if (int ret = rte_eth_timesync_read_time(port_id, &ts); ret != 0) return ret;
    *now = TimespecToNs(ts);
    return 0;
  };
  return d;
}

}  // namespace ice

void RegisterIce(port::DriverRegistry& registry) {
  registry.AddTimestamps("net_ice", [](const port::Capabilities&) -> std::optional<port::TimestampDriver> {
    return ice::MakeTimestampDriver();
  });
}

}  // namespace fg::drivers
