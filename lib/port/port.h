// port/port.h: opening, configuring, starting and stopping DPDK ethdev ports.
//
// A Port owns its mbuf pool and its queues. Open() resolves the device the
// plan named (PCI address, vdev name, or the built-in loopback, which EAL was
// told to create as a net_ring vdev), checks the plan against the device's
// limits (queues, descriptors, MTU) and fails with a message naming the port
// instead of silently clamping. Capabilities, stats and xstats are plain
// structs: no rte_*.h leaks from this header.
//
//   fg::port::PortOptions o{.name = "p0", .dpdk_name = "net_ring_fg0"};
//   auto p = fg::port::Port::Open(o);
//   FG_RETURN_IF_ERROR((*p)->Start());
//   fg::port::Capabilities c = (*p)->capabilities();
//   uint16_t id = (*p)->id();          // for rte_eth_tx_burst in lib/tx
//   fg::port::Stats s = (*p)->stats();
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "clock/clock_fit.h"

struct rte_mempool;

namespace fg::port {

struct PortOptions {
  std::string name;       // the plan's name for the port
  std::string dpdk_name;  // ethdev name: "net_ring_fg0", "0000:03:00.0", "net_af_packet0"
  uint16_t rx_queues = 1;
  uint16_t tx_queues = 1;
  uint16_t rx_desc = 1024;
  uint16_t tx_desc = 1024;
  uint32_t mtu = 1500;
  uint32_t mbufs = 0;   // 0: MbufsNeeded()
  unsigned lcores = 1;  // lcores that will use the pool (per-lcore caches)
  bool promiscuous = true;
};

// Pool size a port needs: descriptors on both sides, frames in flight in a
// loopback ring, per-lcore caches and bursts, plus margin.
uint32_t MbufsNeeded(const PortOptions& o);
// Data room of one mbuf for `mtu`: headroom + the largest frame, single segment.
uint32_t MbufDataRoom(uint32_t mtu);

struct Capabilities {
  std::string driver;  // e.g. "net_ring", "mlx5_pci"
  std::string device;  // ethdev name
  std::string mac;
  int socket = -1;
  uint16_t max_rx_queues = 0, max_tx_queues = 0;
  uint16_t max_rx_desc = 0, max_tx_desc = 0;
  uint32_t min_mtu = 0, max_mtu = 0;
  bool link_up = false;
  uint32_t link_speed_mbps = 0;       // 0 = unknown
  std::vector<uint32_t> speeds_mbps;  // advertised speed capabilities
  bool rx_hw_timestamp = false;       // RTE_ETH_RX_OFFLOAD_TIMESTAMP
  bool tx_send_on_timestamp = false;  // RTE_ETH_TX_OFFLOAD_SEND_ON_TIMESTAMP
  bool read_clock = false;            // rte_eth_read_clock works
  bool timesync = false;              // IEEE 1588 timesync ops answer
  bool queue_rate_limit = false;      // rte_eth_set_queue_rate_limit (ixgbe, txgbe, cnxk in 22.11)
  std::vector<std::string> rx_offloads, tx_offloads;
  // Filled by drivers/ (DriverRegistry): the NIC's free-running clock, if known.
  double device_clock_hz = 0;
  std::vector<std::string> driver_notes;  // one line each, for `fabricgen ports`

  // Line rate in bit/s (L1) for "% of line rate"; 0 when unknown.
  double line_bps() const { return link_speed_mbps * 1e6; }
};

// Where a port's received mbufs carry a per-packet RX timestamp (the
// standard rte_mbuf timestamp dynfield), and in which unit. Only drivers
// whose unit fabricgen knows are used; others keep software timestamps.
struct RxTimestamp {
  enum class Unit { kNone, kMicroseconds /* net_pcap: the pcap record time */ };
  Unit unit = Unit::kNone;
  int offset = -1;    // dynfield offset in the mbuf
  uint64_t flag = 0;  // ol_flags bit set on mbufs that carry one
  // From the stamp's unit to the nanoseconds the TX signature uses. A pcap
  // record time is already in that timebase for captures `craft` wrote.
  clock::ClockLine line;
  const char* observation_point() const {
    return unit == Unit::kMicroseconds ? "pcap record time (us), per packet" : "tsc: software";
  }
};

struct Stats {
  uint64_t rx_packets = 0, tx_packets = 0, rx_bytes = 0, tx_bytes = 0;
  uint64_t rx_missed = 0, rx_errors = 0, tx_errors = 0, rx_nombuf = 0;
};

struct Xstat {
  std::string name;
  uint64_t value = 0;
};

class Port {
 public:
  static absl::StatusOr<std::unique_ptr<Port>> Open(const PortOptions& options);
  ~Port();  // stops and closes the device, frees the pool
  Port(const Port&) = delete;
  Port& operator=(const Port&) = delete;

  absl::Status Start();
  void Stop();

  uint16_t id() const { return id_; }
  const PortOptions& options() const { return options_; }
  const std::string& name() const { return options_.name; }
  rte_mempool* pool() const { return pool_; }
  const Capabilities& capabilities() const { return caps_; }
  const RxTimestamp& rx_timestamp() const { return rx_ts_; }
  // Notes about choices made for this port (e.g. MTU fixed by the PMD).
  const std::vector<std::string>& notes() const { return notes_; }

  Stats stats() const;
  std::vector<Xstat> xstats() const;
  void ResetStats();
  // Refreshes link state (speed, up/down) in capabilities().
  void RefreshLink();
  // Lets NIC drivers add what they know (see port/driver_registry.h).
  template <typename Registry>
  void Annotate(const Registry& registry) {
    registry.Annotate(caps_);
  }

 private:
  Port() = default;
  PortOptions options_;
  uint16_t id_ = 0;
  rte_mempool* pool_ = nullptr;
  Capabilities caps_;
  RxTimestamp rx_ts_;
  std::vector<std::string> notes_;
  bool started_ = false;
};

// The mbuf dynfield where TX records which template an mbuf's data holds, so
// a recycled mbuf only needs its header prefix rewritten (registered once per
// process; -1 if registration failed: TX then copies whole templates).
int TxTemplateTagOffset();

// Reads capabilities of a port that need not be configured (for `fabricgen ports`).
absl::StatusOr<Capabilities> ProbeCapabilities(uint16_t port_id);
// Every ethdev EAL probed: (id, name).
std::vector<std::pair<uint16_t, std::string>> ListPorts();

}  // namespace fg::port
