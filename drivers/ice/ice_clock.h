// ice/ice_clock.h: the PHC of Intel E810 NICs as the RX timestamp clock.
//
// The ice PMD (DPDK 22.11) writes each received frame's PHC time in ns into
// the standard RX timestamp dynfield when RTE_ETH_RX_OFFLOAD_TIMESTAMP is on
// (it then uses the scalar RX path). ice has no read_clock op in 22.11: the
// PHC is read with rte_eth_timesync_read_time after rte_eth_timesync_enable,
// which this driver's enable() calls before the port starts.
// rte_eth_timesync_read_rx_timestamp covers only the last PTP frame and is
// not used.
//
//   fg::port::DriverRegistry registry;
//   fg::drivers::RegisterIce(registry);   // or RegisterAll
#pragma once

#include <cstdint>
#include <ctime>

#include "port/driver_registry.h"

namespace fg::drivers::ice {

// PHC time from the timesync API as ns; negative times (an unset PHC read
// before the epoch) clamp to 0.
uint64_t TimespecToNs(const timespec& ts);

// The timestamp driver for an ice port.
port::TimestampDriver MakeTimestampDriver();

}  // namespace fg::drivers::ice

namespace fg::drivers {
void RegisterIce(port::DriverRegistry& registry);
}  // namespace fg::drivers
