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
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/tsc.h"
#include "clock/clock_fit.h"
#include "clock/shared_line.h"
#include "port/kernel_if.h"

struct rte_mempool;

namespace fg::port {

class DriverRegistry;

// How a port's received frames get their RX time.
enum class RxTimestamps {
  kAuto,      // the NIC's per-packet stamps where a driver in drivers/ knows their clock, else software
  kSoftware,  // TSC after rte_eth_rx_burst, always
  kHardware,  // the NIC's stamps, or Open() fails saying why not
};

// rx_queues / tx_queues: one per worker lcore (lcores - 1), within the device's maximum.
inline constexpr uint16_t kAutoQueues = 0xFFFF;

struct PortOptions {
  std::string name;       // the plan's name for the port
  std::string dpdk_name;  // ethdev name: "net_ring_fg0", "0000:03:00.0", "net_af_packet0"
  uint16_t rx_queues = 1;  // or kAutoQueues
  uint16_t tx_queues = 1;  // or kAutoQueues
  uint16_t rx_desc = 1024;
  uint16_t tx_desc = 1024;
  uint32_t mtu = 1500;
  uint32_t mbufs = 0;   // 0: MbufsNeeded()
  uint32_t link_speed_mbps = 0;  // the line rate to use instead of the PMD's link speed (0: the PMD's)
  unsigned lcores = 1;  // lcores that will use the pool (per-lcore caches)
  bool promiscuous = true;
  RxTimestamps rx_timestamps = RxTimestamps::kAuto;
  // Send-on-timestamp: each TX burst leaves at a NIC-clock time (mlx5 tx_pp);
  // needs a driver that knows the NIC clock and the PMD's offload.
  bool tx_scheduled = false;
  int64_t tx_lead_ns = 100'000;  // how far ahead of its due time a burst is handed to the NIC
  // NIC knowledge from drivers/ (clocks, timestamp units); may be null.
  const DriverRegistry* drivers = nullptr;
  // The kernel interface behind the PMD (af_packet's iface=), whose counters
  // show drops the PMD cannot see; "" for a NIC or a virtual device.
  std::string kernel_iface = "";
  // RX receives the very mbufs TX sent, untouched (the built-in loopback: a
  // net_ring pair inside this process). RX then leaves their TX template tags
  // (port::TxTemplateTagOffset), so TX stamps them again without copying the
  // template: every other writer of an mbuf clears the tag (the responder's
  // answers, the CM exchange's MADs), and RX writes nothing into a frame.
  bool rx_is_own_tx = false;
};

// How a port's received frames reach its RX queues. With more than one RX
// queue, by the NIC's RSS hash over what the PMD can hash of IP and UDP (a
// RoCEv2 or UET flow's entropy is its UDP source port, so flows spread and
// each flow stays on one queue); a PMD without RSS (net_ring, af_packet)
// puts frames where it does, and RX lcores hand frames of flows they do not
// own to the owner (docs/architecture.md, "The engine").
struct RxSpread {
  uint64_t rss_hf = 0;      // RTE_ETH_RSS_* bits asked of the PMD (0: no RSS)
  std::string description;  // "one queue", "rss: ipv4, ipv6, udp (4 queues)", "none: ..."
};
// From the hash functions the device offers (rte_eth_dev_info.flow_type_rss_offloads).
RxSpread ChooseRxSpread(uint64_t offered_rss_hf, uint16_t rx_queues);

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
  uint64_t rss_offloads = 0;  // hash functions RSS offers (rte_eth_dev_info.flow_type_rss_offloads)
  // Filled by drivers/ (DriverRegistry): the NIC's free-running clock, if known.
  double device_clock_hz = 0;
  std::vector<std::string> driver_notes;  // one line each, for `fabricgen ports`

  // Line rate in bit/s (L1) for "% of line rate"; 0 when unknown.
  double line_bps() const { return link_speed_mbps * 1e6; }
};

// What a NIC driver (drivers/) knows about the clock its PMD writes into the
// RX timestamp dynfield. The port fits that clock to TSC ns (NicClock) so
// NIC RX times and TSC TX stamps subtract.
struct TimestampDriver {
  std::string clock;                    // what the stamps count, for reports ("mlx5 device clock, ticks")
  double nominal_units_per_ns = 1;      // what the driver claims (ticks/ns; 1 for a ns PHC)
  bool stamps_without_offload = false;  // the PMD stamps every mbuf without advertising the offload
  // After configure, before start (ice: rte_eth_timesync_enable); 0 or -errno. May be empty.
  std::function<int(uint16_t port_id)> enable;
  // The NIC clock now, in the stamps' unit; 0 or -errno.
  std::function<int(uint16_t port_id, uint64_t* now)> read;
};

// A NIC clock sampled against the TSC by the control thread (bracketed
// readings, least squares, ClockFit) and published to RX lcores through a
// SharedClockLine. Samples every few ms, re-fit on Publish().
class NicClock {
 public:
  NicClock(uint16_t port_id, TimestampDriver driver, TscClock tsc, size_t window = 32);
  // One (TSC, NIC, TSC) reading; false when the NIC clock could not be read.
  bool Sample();
  // Fits the kept samples and publishes the line; false until two distinct samples.
  bool Publish();
  // `readings` samples `spacing_us` apart (blocking), then Publish(): before
  // traffic, so the first frames are mapped by a fresh line.
  void Calibrate(int readings, int spacing_us);
  const clock::SharedClockLine& shared() const { return shared_; }
  const std::optional<clock::ClockLine>& line() const { return line_; }
  const TimestampDriver& driver() const { return driver_; }
  uint64_t samples() const { return samples_; }
  uint64_t read_failures() const { return read_failures_; }
  size_t window() const { return window_; }  // readings each fit uses (the newest)

 private:
  uint16_t port_id_;
  size_t window_;
  TimestampDriver driver_;
  TscClock tsc_;
  clock::ClockFit fit_;
  clock::SharedClockLine shared_;
  std::optional<clock::ClockLine> line_;
  uint64_t samples_ = 0, read_failures_ = 0;
};

// Where a port's received mbufs carry a per-packet RX timestamp (the
// standard rte_mbuf timestamp dynfield), and in which unit. Only drivers
// whose unit fabricgen knows are used; others keep software timestamps.
struct RxTimestamp {
  enum class Unit {
    kNone,
    kMicroseconds,  // net_pcap: the pcap record time
    kNicClock,      // a NIC clock a driver describes, fitted to TSC ns (NicClock)
  };
  Unit unit = Unit::kNone;
  int offset = -1;    // dynfield offset in the mbuf
  uint64_t flag = 0;  // ol_flags bit set on mbufs that carry one
  // From the stamp's unit to the nanoseconds the TX signature uses: fixed
  // (a pcap record time is already in that timebase for captures `craft`
  // wrote), or re-fitted during the run (`shared`, from the port's NicClock).
  clock::ClockLine line;
  const clock::SharedClockLine* shared = nullptr;
  std::string clock;  // the driver's name for the clock
  std::string observation_point() const;
};

// Send-on-timestamp on a port: the TX timestamp dynfield and flag, the NIC
// clock line to convert a TSC departure time, and the lead.
struct TxSchedule {
  int offset = -1;
  uint64_t flag = 0;
  clock::ClockLine line;
  const clock::SharedClockLine* shared = nullptr;
  int64_t lead_ns = 0;
  bool enabled() const { return offset >= 0; }
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
  // How received frames reach the RX queues (report.json ports[].rx_distribution).
  const RxSpread& rx_spread() const { return rx_spread_; }
  const TxSchedule& tx_schedule() const { return tx_sched_; }
  // The NIC clock RX stamps count, when they come from one (else null).
  NicClock* nic_clock() { return nic_clock_.get(); }
  // Notes about choices made for this port (e.g. MTU fixed by the PMD).
  const std::vector<std::string>& notes() const { return notes_; }

  Stats stats() const;
  std::vector<Xstat> xstats() const;
  // The kernel interface's counters since ResetStats (invalid without one),
  // with what the port's own packet sockets dropped (socket_drops; control
  // thread only: each reading takes the kernel's count).
  KernelCounters kernel_stats() const;
  // net_af_packet: asks the kernel to send what waits in the port's packet
  // sockets' TX rings (KickPacketSockets); from any thread. Returns the
  // sockets whose kernel refused for now; 0 on any other port.
  int KickKernelTx() const { return KickPacketSockets(packet_sockets_); }
  void ResetStats();
  // Refreshes link state (speed, up/down) in capabilities().
  void RefreshLink();
  // Control thread, while no lcore polls the port (before or between runs):
  // sends one frame on TX queue 0, waiting up to 100 ms for room; and
  // hands each frame waiting on its RX queues to `take`, then frees it
  // (returns how many). Gateway resolution and QP set-up use these.
  absl::Status SendControlFrame(std::span<const uint8_t> frame);
  size_t ReceiveControlFrames(const std::function<void(std::span<const uint8_t>)>& take);

 private:
  Port() = default;
  // Decides per-packet NIC RX timestamps (options_.rx_timestamps, the
  // drivers, the device): adds the offload and registers the dynfield.
  absl::Status ChooseRxTimestamps(uint64_t& rx_offloads);
  // Sets up send-on-timestamp when options_.tx_scheduled (or fails saying why).
  absl::Status ChooseTxSchedule(uint64_t& tx_offloads);
  PortOptions options_;
  uint16_t id_ = 0;
  rte_mempool* pool_ = nullptr;
  Capabilities caps_;
  RxTimestamp rx_ts_;
  RxSpread rx_spread_;
  TxSchedule tx_sched_;
  std::optional<TimestampDriver> ts_driver_;  // the clock behind rx_ts_ (kNicClock) and tx_sched_
  std::unique_ptr<NicClock> nic_clock_;
  std::vector<std::string> notes_;
  KernelCounters kernel_base_;  // at ResetStats
  std::vector<int> packet_sockets_;  // net_af_packet's, found at Start
  // Every packet socket of this process on kernel_iface (the PMD's: af_packet's,
  // libpcap's), found at Start, and the drops they reported since ResetStats.
  std::vector<int> stat_sockets_;
  mutable int64_t socket_drops_ = 0;
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
