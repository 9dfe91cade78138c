#include "port/port.h"

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>
#include <rte_mempool.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "base/status.h"
#include "base/units.h"
#include "port/driver_registry.h"

namespace fg::port {
namespace {

constexpr uint32_t kCacheSize = 256;
constexpr uint32_t kBurst = 64;
// net_ring keeps up to this many frames in flight per queue (its ring size).
constexpr uint32_t kLoopbackRingSize = 1024;

absl::Status RteError(int ret, const std::string& what) {
  return absl::InternalError(absl::StrFormat("%s: %s (%d)", what, rte_strerror(-ret), ret));
}

std::vector<uint32_t> SpeedsFromCapa(uint32_t capa) {
  static constexpr std::pair<uint32_t, uint32_t> kMap[] = {
      {RTE_ETH_LINK_SPEED_1G, 1000},   {RTE_ETH_LINK_SPEED_10G, 10000},   {RTE_ETH_LINK_SPEED_25G, 25000},
      {RTE_ETH_LINK_SPEED_40G, 40000}, {RTE_ETH_LINK_SPEED_50G, 50000},   {RTE_ETH_LINK_SPEED_100G, 100000},
      {RTE_ETH_LINK_SPEED_56G, 56000}, {RTE_ETH_LINK_SPEED_200G, 200000},
  };
  std::vector<uint32_t> out;
  for (auto [bit, mbps] : kMap) {
    if (capa & bit) out.push_back(mbps);
  }
  return out;
}

template <typename NameFn>
std::vector<std::string> OffloadNames(uint64_t capa, NameFn name) {
  std::vector<std::string> out;
  for (int b = 0; b < 64; ++b) {
    if (capa & (1ull << b)) out.push_back(name(1ull << b));
  }
  return out;
}

absl::StatusOr<uint16_t> FindPort(const std::string& dpdk_name) {
  uint16_t id;
  if (rte_eth_dev_get_port_by_name(dpdk_name.c_str(), &id) == 0) return id;
  // Accept a PCI address without its domain ("03:00.0" for "0000:03:00.0").
  std::string names;
  RTE_ETH_FOREACH_DEV(id) {
    char name[RTE_ETH_NAME_MAX_LEN];
    if (rte_eth_dev_get_name_by_port(id, name) != 0) continue;
    std::string n(name);
    if (n.size() > dpdk_name.size() && n.ends_with(dpdk_name) && n[n.size() - dpdk_name.size() - 1] == ':') {
      return id;
    }
    names += (names.empty() ? "" : ", ") + n;
  }
  return absl::NotFoundError(absl::StrFormat(
      "no DPDK port named '%s' (ports present: %s); check the device string and that its driver is bound "
      "(dpdk-devbind.py) or loadable",
      dpdk_name, names.empty() ? "none" : names));
}

}  // namespace

int TxTemplateTagOffset() {
  static const rte_mbuf_dynfield kDesc = {"fabricgen_tx_template", sizeof(uint64_t), alignof(uint64_t), 0};
  return rte_mbuf_dynfield_register(&kDesc);  // idempotent: the same name gives the same offset
}

uint32_t MbufDataRoom(uint32_t mtu) {
  // Ethernet header 14 + two VLAN tags 8 + FCS 4 on top of the L3 MTU, and 32
  // bytes of slack: the TX path copies templates in 32-byte blocks.
  const uint32_t frame = mtu + 14 + 8 + 4 + 32;
  return RTE_PKTMBUF_HEADROOM + std::max<uint32_t>(frame, 2048);
}

uint32_t MbufsNeeded(const PortOptions& o) {
  // Queues `auto` count one per worker (before the device is known: at most that).
  const uint64_t workers = o.lcores > 1 ? o.lcores - 1 : 1;
  const uint64_t rxq = o.rx_queues == kAutoQueues ? workers : o.rx_queues;
  const uint64_t txq = o.tx_queues == kAutoQueues ? workers : o.tx_queues;
  const uint64_t n = rxq * o.rx_desc + txq * o.tx_desc + rxq * kLoopbackRingSize +
                     uint64_t{o.lcores} * (kCacheSize + 2 * kBurst) + 1024;
  // Mempools are most compact at 2^k - 1 elements.
  return static_cast<uint32_t>(std::bit_ceil(n + 1) - 1);
}

absl::StatusOr<Capabilities> ProbeCapabilities(uint16_t id) {
  Capabilities c;
  rte_eth_dev_info info;
  if (int ret = rte_eth_dev_info_get(id, &info); ret != 0) return RteError(ret, "rte_eth_dev_info_get");
  c.driver = info.driver_name ? info.driver_name : "";
  char name[RTE_ETH_NAME_MAX_LEN] = {};
  rte_eth_dev_get_name_by_port(id, name);
  c.device = name;
  rte_ether_addr mac;
  if (rte_eth_macaddr_get(id, &mac) == 0) {
    c.mac = absl::StrFormat("%02x:%02x:%02x:%02x:%02x:%02x", mac.addr_bytes[0], mac.addr_bytes[1], mac.addr_bytes[2],
                            mac.addr_bytes[3], mac.addr_bytes[4], mac.addr_bytes[5]);
  }
  c.socket = rte_eth_dev_socket_id(id);
  c.max_rx_queues = info.max_rx_queues;
  c.max_tx_queues = info.max_tx_queues;
  c.max_rx_desc = info.rx_desc_lim.nb_max;
  c.max_tx_desc = info.tx_desc_lim.nb_max;
  c.min_mtu = info.min_mtu;
  c.max_mtu = info.max_mtu;
  c.speeds_mbps = SpeedsFromCapa(info.speed_capa);
  c.rx_hw_timestamp = info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_TIMESTAMP;
  c.tx_send_on_timestamp = info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_SEND_ON_TIMESTAMP;
  uint64_t clk;
  c.read_clock = rte_eth_read_clock(id, &clk) == 0;
  timespec ts;
  c.timesync = rte_eth_timesync_read_time(id, &ts) != -ENOTSUP;
  c.queue_rate_limit = c.driver == "net_ixgbe" || c.driver == "net_txgbe" || c.driver == "net_cnxk";
  c.rx_offloads = OffloadNames(info.rx_offload_capa, [](uint64_t o) { return rte_eth_dev_rx_offload_name(o); });
  c.rss_offloads = info.flow_type_rss_offloads;
  c.tx_offloads = OffloadNames(info.tx_offload_capa, [](uint64_t o) { return rte_eth_dev_tx_offload_name(o); });
  rte_eth_link link{};
  if (rte_eth_link_get_nowait(id, &link) == 0) {
    c.link_up = link.link_status == RTE_ETH_LINK_UP;
    c.link_speed_mbps = link.link_speed == RTE_ETH_SPEED_NUM_UNKNOWN ? 0 : link.link_speed;
  }
  return c;
}

RxSpread ChooseRxSpread(uint64_t offered, uint16_t rx_queues) {
  if (rx_queues <= 1) return RxSpread{0, rx_queues == 1 ? "one queue" : "no RX queues"};
  // What the frames of a stream differ by: addresses, and the UDP ports
  // (RoCEv2/UET entropy in the source port). Fragments and TCP are not ours.
  static constexpr std::pair<uint64_t, const char*> kHashes[] = {
      {RTE_ETH_RSS_IPV4, "ipv4"},
      {RTE_ETH_RSS_IPV6, "ipv6"},
      {RTE_ETH_RSS_NONFRAG_IPV4_UDP, "ipv4-udp"},
      {RTE_ETH_RSS_NONFRAG_IPV6_UDP, "ipv6-udp"},
  };
  RxSpread out;
  std::string names;
  for (const auto& [bit, name] : kHashes) {
    if ((offered & bit) == 0) continue;
    out.rss_hf |= bit;
    names += (names.empty() ? "" : ", ") + std::string(name);
  }
  out.description =
      out.rss_hf != 0
          ? absl::StrFormat("rss: %s (%d queues)", names, rx_queues)
          : absl::StrFormat("none: the PMD offers no RSS over IP/UDP; frames reach its %d queues as it puts them, "
                            "and each RX lcore hands frames of flows it does not own to their owner",
                            rx_queues);
  return out;
}

std::vector<std::pair<uint16_t, std::string>> ListPorts() {
  std::vector<std::pair<uint16_t, std::string>> out;
  uint16_t id;
  RTE_ETH_FOREACH_DEV(id) {
    char name[RTE_ETH_NAME_MAX_LEN] = {};
    rte_eth_dev_get_name_by_port(id, name);
    out.emplace_back(id, name);
  }
  return out;
}

absl::StatusOr<std::unique_ptr<Port>> Port::Open(const PortOptions& options) {
  const std::string where = absl::StrFormat("port '%s' (%s)", options.name, options.dpdk_name);
  auto id = FindPort(options.dpdk_name);
  if (!id.ok()) return absl::NotFoundError(absl::StrFormat("port '%s': %s", options.name, id.status().message()));
  auto caps = ProbeCapabilities(*id);
  if (!caps.ok()) return caps.status();
  if (options.drivers != nullptr) options.drivers->Annotate(*caps);
  // Queues `auto`: one per worker lcore (each worker sends on its own TX
  // queue and polls its own RX queue), as many as the device has.
  PortOptions o = options;
  const uint16_t workers = static_cast<uint16_t>(std::max(1u, o.lcores > 1 ? o.lcores - 1 : 1u));
  if (o.tx_queues == kAutoQueues) o.tx_queues = std::max<uint16_t>(1, std::min(workers, caps->max_tx_queues));
  if (o.rx_queues == kAutoQueues) o.rx_queues = std::min(workers, caps->max_rx_queues);

  if (o.rx_queues > caps->max_rx_queues || o.tx_queues > caps->max_tx_queues) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: %d RX / %d TX queues asked, the device has at most %d / %d",
                                                      where, o.rx_queues, o.tx_queues, caps->max_rx_queues,
                                                      caps->max_tx_queues));
  }
  if (o.mtu < caps->min_mtu || (caps->max_mtu != 0 && o.mtu > caps->max_mtu)) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: MTU %d B is outside the device's range %d..%d B", where,
                                                      o.mtu, caps->min_mtu, caps->max_mtu));
  }

  std::unique_ptr<Port> p(new Port());
  p->options_ = o;
  p->id_ = *id;
  if (o.link_speed_mbps != 0 && o.link_speed_mbps != caps->link_speed_mbps) {
    // Read before the device starts: a NIC may not know its link speed yet.
    p->notes_.push_back(absl::StrFormat(
        "%s: line rate %s as the plan sets it (ports[].link_speed)%s", where, FormatBitRate(o.link_speed_mbps * 1e6),
        caps->link_speed_mbps != 0 ? "; the PMD reports " + FormatBitRate(caps->link_speed_mbps * 1e6) : ""));
    caps->link_speed_mbps = o.link_speed_mbps;
  }
  p->caps_ = std::move(*caps);
  if (p->options_.mbufs == 0) p->options_.mbufs = MbufsNeeded(o);

  const std::string pool_name = absl::StrFormat("fg_pool_%d", p->id_);
  const uint32_t room = MbufDataRoom(o.mtu);
  p->pool_ = rte_pktmbuf_pool_create(pool_name.c_str(), p->options_.mbufs, kCacheSize, 0, static_cast<uint16_t>(room),
                                     p->caps_.socket < 0 ? SOCKET_ID_ANY : p->caps_.socket);
  if (p->pool_ == nullptr) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "%s: cannot create a pool of %d mbufs of %d B (%s); give EAL more memory (-m MB, or hugepages via "
        "tools/setup.sh) or lower ports[].mbufs",
        where, p->options_.mbufs, room, rte_strerror(rte_errno)));
  }

  rte_eth_dev_info info;
  rte_eth_dev_info_get(p->id_, &info);
  rte_eth_conf conf{};
  conf.rxmode.mtu = o.mtu;
  if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE) {
    conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE;  // one pool, refcnt 1: cheaper frees
  }
  FG_RETURN_IF_ERROR(p->ChooseRxTimestamps(conf.rxmode.offloads));
  FG_RETURN_IF_ERROR(p->ChooseTxSchedule(conf.txmode.offloads));
  p->rx_spread_ = ChooseRxSpread(info.flow_type_rss_offloads, o.rx_queues);
  if (p->rx_spread_.rss_hf != 0) {
    conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
    conf.rx_adv_conf.rss_conf.rss_key = nullptr;  // the PMD's default key; its RETA spreads over every queue
    conf.rx_adv_conf.rss_conf.rss_hf = p->rx_spread_.rss_hf;
  }
  if (int ret = rte_eth_dev_configure(p->id_, o.rx_queues, o.tx_queues, &conf); ret != 0) {
    return RteError(ret, where + ": rte_eth_dev_configure");
  }
  if (p->ts_driver_ && p->ts_driver_->enable) {
    if (int ret = p->ts_driver_->enable(p->id_); ret != 0) {
      const std::string why =
          absl::StrFormat("%s: enabling the NIC clock for RX timestamps failed (%s)", where, rte_strerror(-ret));
      if (o.rx_timestamps == RxTimestamps::kHardware || o.tx_scheduled) return absl::FailedPreconditionError(why);
      p->notes_.push_back(why + "; software RX timestamps instead");
      p->ts_driver_.reset();
      p->rx_ts_ = RxTimestamp{};
    }
  }
  uint16_t rx_desc = o.rx_desc, tx_desc = o.tx_desc;
  if (int ret = rte_eth_dev_adjust_nb_rx_tx_desc(p->id_, &rx_desc, &tx_desc); ret != 0) {
    return RteError(ret, where + ": rte_eth_dev_adjust_nb_rx_tx_desc");
  }
  if (rx_desc != o.rx_desc || tx_desc != o.tx_desc) {
    p->notes_.push_back(absl::StrFormat("%s: descriptors adjusted by the driver to RX %d, TX %d (asked %d, %d)", where,
                                        rx_desc, tx_desc, o.rx_desc, o.tx_desc));
  }
  const int socket = p->caps_.socket < 0 ? static_cast<int>(SOCKET_ID_ANY) : p->caps_.socket;
  for (uint16_t q = 0; q < o.rx_queues; ++q) {
    if (int ret = rte_eth_rx_queue_setup(p->id_, q, rx_desc, socket, nullptr, p->pool_); ret != 0) {
      return RteError(ret, absl::StrFormat("%s: RX queue %d setup", where, q));
    }
  }
  for (uint16_t q = 0; q < o.tx_queues; ++q) {
    rte_eth_txconf txc = info.default_txconf;
    txc.offloads = conf.txmode.offloads;
    if (int ret = rte_eth_tx_queue_setup(p->id_, q, tx_desc, socket, &txc); ret != 0) {
      return RteError(ret, absl::StrFormat("%s: TX queue %d setup", where, q));
    }
  }
  uint16_t mtu = 0;
  if (rte_eth_dev_get_mtu(p->id_, &mtu) == 0 && mtu != o.mtu) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: MTU %d B asked, the device kept %d B", where, o.mtu, mtu));
  }
  return p;
}

absl::Status Port::ChooseRxTimestamps(uint64_t& rx_offloads) {
  const PortOptions& o = options_;
  const std::string where = absl::StrFormat("port '%s' (%s)", o.name, o.dpdk_name);
  if (o.rx_timestamps == RxTimestamps::kSoftware || o.rx_queues == 0) return absl::OkStatus();
  if (caps_.driver == "net_pcap") return absl::OkStatus();  // its own stamps (pcap record times), see Start()
  std::optional<TimestampDriver> ts = o.drivers != nullptr ? o.drivers->Timestamps(caps_) : std::nullopt;
  std::string why_not;
  if (!ts) {
    why_not = absl::StrFormat("no driver in drivers/ knows the RX timestamp clock of PMD %s", caps_.driver);
  } else if (!caps_.rx_hw_timestamp && !ts->stamps_without_offload) {
    why_not = absl::StrFormat("PMD %s does not offer RTE_ETH_RX_OFFLOAD_TIMESTAMP on this device", caps_.driver);
  }
  if (!why_not.empty()) {
    if (o.rx_timestamps == RxTimestamps::kHardware) {
      return absl::FailedPreconditionError(
          absl::StrFormat("%s: hardware RX timestamps asked, but %s (timestamps: software or auto)", where, why_not));
    }
    return absl::OkStatus();  // auto: software, as for every PMD without a driver
  }
  if (caps_.rx_hw_timestamp) rx_offloads |= RTE_ETH_RX_OFFLOAD_TIMESTAMP;
  int off = -1;
  uint64_t flag = 0;
  if (int ret = rte_mbuf_dyn_rx_timestamp_register(&off, &flag); ret != 0 || off < 0 || flag == 0) {
    return absl::InternalError(
        absl::StrFormat("%s: cannot register the RX timestamp dynfield (%s)", where, rte_strerror(rte_errno)));
  }
  ts_driver_ = std::move(ts);
  rx_ts_ = RxTimestamp{};
  rx_ts_.unit = RxTimestamp::Unit::kNicClock;
  rx_ts_.offset = off;
  rx_ts_.flag = flag;
  rx_ts_.clock = ts_driver_->clock;
  return absl::OkStatus();
}

absl::Status Port::ChooseTxSchedule(uint64_t& tx_offloads) {
  const PortOptions& o = options_;
  if (!o.tx_scheduled) return absl::OkStatus();
  const std::string where = absl::StrFormat("port '%s' (%s)", o.name, o.dpdk_name);
  std::optional<TimestampDriver> ts =
      ts_driver_ ? ts_driver_ : (o.drivers != nullptr ? o.drivers->Timestamps(caps_) : std::nullopt);
  if (!ts) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s: send-on-timestamp asked, but no driver in drivers/ knows the clock of PMD %s", where, caps_.driver));
  }
  if (!caps_.tx_send_on_timestamp && !ts->stamps_without_offload) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s: send-on-timestamp asked, but PMD %s does not offer RTE_ETH_TX_OFFLOAD_SEND_ON_TIMESTAMP here (mlx5 "
        "needs the devarg tx_pp=<ns>)",
        where, caps_.driver));
  }
  int off = -1;
  uint64_t flag = 0;
  if (int ret = rte_mbuf_dyn_tx_timestamp_register(&off, &flag); ret != 0 || off < 0 || flag == 0) {
    return absl::InternalError(
        absl::StrFormat("%s: cannot register the TX timestamp dynfield (%s)", where, rte_strerror(rte_errno)));
  }
  if (caps_.tx_send_on_timestamp) tx_offloads |= RTE_ETH_TX_OFFLOAD_SEND_ON_TIMESTAMP;
  ts_driver_ = std::move(ts);
  tx_sched_.offset = off;
  tx_sched_.flag = flag;
  tx_sched_.lead_ns = o.tx_lead_ns;
  return absl::OkStatus();
}

absl::Status Port::Start() {
  if (started_) return absl::OkStatus();
  if (int ret = rte_eth_dev_start(id_); ret != 0) {
    return RteError(ret, absl::StrFormat("port '%s': rte_eth_dev_start", name()));
  }
  started_ = true;
  const bool af_packet =
      absl::StartsWith(options_.dpdk_name, "net_af_packet") || absl::StartsWith(options_.dpdk_name, "eth_af_packet");
  if (af_packet && !options_.kernel_iface.empty()) {
    packet_sockets_ = PacketSocketsOf(options_.kernel_iface);
  }
  if (!options_.kernel_iface.empty()) {
    stat_sockets_ = PacketSocketsOf(options_.kernel_iface);
    ReadSocketDrops(stat_sockets_);  // from here: the kernel resets its count as it answers
    socket_drops_ = 0;
  }
  if (ts_driver_ && !nic_clock_) {
    // Fit the NIC clock before the first frame: a few bracketed readings
    // ~0.2 ms apart; the engine keeps sampling and re-fitting during runs.
    nic_clock_ = std::make_unique<NicClock>(id_, *ts_driver_, TscClock(rte_get_tsc_hz()));
    nic_clock_->Calibrate(8, 200);
    if (!nic_clock_->line()) {
      const std::string why = absl::StrFormat(
          "port '%s': the %s cannot be read (rte_eth_read_clock / timesync), so its RX stamps cannot be mapped to "
          "TSC time",
          name(), ts_driver_->clock);
      if (options_.rx_timestamps == RxTimestamps::kHardware || tx_sched_.enabled()) {
        return absl::FailedPreconditionError(why);
      }
      notes_.push_back(why + "; software RX timestamps instead");
      nic_clock_.reset();
      ts_driver_.reset();
      rx_ts_ = RxTimestamp{};
    } else {
      if (rx_ts_.unit == RxTimestamp::Unit::kNicClock) {
        rx_ts_.shared = &nic_clock_->shared();
        rx_ts_.line = *nic_clock_->line();
      }
      if (tx_sched_.enabled()) {
        tx_sched_.shared = &nic_clock_->shared();
        tx_sched_.line = *nic_clock_->line();
      }
    }
  }
  // net_pcap registers the RX timestamp dynfield itself (by the time the port
  // has started) and stamps every mbuf with its pcap record time in
  // microseconds, without advertising the offload: verified with DPDK 22.11.
  if (caps_.driver == "net_pcap" && options_.rx_timestamps != RxTimestamps::kSoftware) {
    const int off = rte_mbuf_dynfield_lookup(RTE_MBUF_DYNFIELD_TIMESTAMP_NAME, nullptr);
    const int bit = rte_mbuf_dynflag_lookup(RTE_MBUF_DYNFLAG_RX_TIMESTAMP_NAME, nullptr);
    if (off >= 0 && bit >= 0) {
      rx_ts_ = RxTimestamp{};
      rx_ts_.unit = RxTimestamp::Unit::kMicroseconds;
      rx_ts_.offset = off;
      rx_ts_.flag = uint64_t{1} << bit;
      rx_ts_.line.slope = 1e-3;  // microseconds per ns
      rx_ts_.line.nominal = 1e-3;
    }
  }
  if (options_.promiscuous) {
    int ret = rte_eth_promiscuous_enable(id_);
    if (ret != 0 && ret != -ENOTSUP) {
      notes_.push_back(absl::StrFormat("port '%s': promiscuous mode not enabled (%s)", name(), rte_strerror(-ret)));
    }
  }
  RefreshLink();
  return absl::OkStatus();
}

std::string RxTimestamp::observation_point() const {
  switch (unit) {
    case Unit::kMicroseconds: return "pcap record time (us), per packet";
    case Unit::kNicClock: return absl::StrFormat("NIC hardware RX timestamp, per packet: %s, fitted to TSC ns", clock);
    default: return "tsc: software";
  }
}

NicClock::NicClock(uint16_t port_id, TimestampDriver driver, TscClock tsc, size_t window)
    : port_id_(port_id),
      window_(window),
      driver_(std::move(driver)),
      tsc_(tsc),
      fit_(driver_.nominal_units_per_ns, window) {}

bool NicClock::Sample() {
  // The tightest of three brackets: a reading delayed by an interrupt or a
  // slow register read would sit off the line by half its bracket.
  uint64_t best_before = 0, best_after = 0, best_nic = 0;
  for (int i = 0; i < 3; ++i) {
    uint64_t nic = 0;
    const uint64_t before = ReadTsc();
    const int ret = driver_.read ? driver_.read(port_id_, &nic) : -ENOTSUP;
    const uint64_t after = ReadTsc();
    if (ret != 0) {
      ++read_failures_;
      return false;
    }
    if (i == 0 || after - before < best_after - best_before) {
      best_before = before;
      best_after = after;
      best_nic = nic;
    }
  }
  fit_.Add(tsc_.ToNs(best_before), best_nic, tsc_.ToNs(best_after));
  ++samples_;
  return true;
}

void NicClock::Calibrate(int readings, int spacing_us) {
  for (int i = 0; i < readings; ++i) {
    Sample();
    if (i + 1 < readings) rte_delay_us_block(spacing_us);
  }
  Publish();
}

bool NicClock::Publish() {
  auto l = fit_.Solve();
  if (!l) return false;
  line_ = *l;
  shared_.Publish(*l);
  return true;
}

void Port::Stop() {
  if (!started_) return;
  rte_eth_dev_stop(id_);
  started_ = false;
}

Port::~Port() {
  Stop();
  rte_eth_dev_close(id_);
  if (pool_ != nullptr) rte_mempool_free(pool_);
}

void Port::RefreshLink() {
  rte_eth_link link{};
  if (rte_eth_link_get_nowait(id_, &link) == 0) {
    caps_.link_up = link.link_status == RTE_ETH_LINK_UP;
    caps_.link_speed_mbps = options_.link_speed_mbps != 0                 ? options_.link_speed_mbps
                            : link.link_speed == RTE_ETH_SPEED_NUM_UNKNOWN ? 0
                                                                           : link.link_speed;
  }
}

Stats Port::stats() const {
  rte_eth_stats s{};
  Stats out;
  if (rte_eth_stats_get(id_, &s) != 0) return out;
  out.rx_packets = s.ipackets;
  out.tx_packets = s.opackets;
  out.rx_bytes = s.ibytes;
  out.tx_bytes = s.obytes;
  out.rx_missed = s.imissed;
  out.rx_errors = s.ierrors;
  out.tx_errors = s.oerrors;
  out.rx_nombuf = s.rx_nombuf;
  return out;
}

std::vector<Xstat> Port::xstats() const {
  std::vector<Xstat> out;
  int n = rte_eth_xstats_get_names(id_, nullptr, 0);
  if (n <= 0) return out;
  std::vector<rte_eth_xstat_name> names(n);
  std::vector<rte_eth_xstat> values(n);
  if (rte_eth_xstats_get_names(id_, names.data(), n) != n) return out;
  int got = rte_eth_xstats_get(id_, values.data(), n);
  for (int i = 0; i < got && i < n; ++i) {
    if (values[i].id < static_cast<uint64_t>(n)) out.push_back({names[values[i].id].name, values[i].value});
  }
  return out;
}

void Port::ResetStats() {
  rte_eth_stats_reset(id_);
  rte_eth_xstats_reset(id_);
  kernel_base_ = ReadKernelCounters(options_.kernel_iface);
  ReadSocketDrops(stat_sockets_);  // what the sockets dropped before: not this trial's
  socket_drops_ = 0;
}

KernelCounters Port::kernel_stats() const {
  KernelCounters k = ReadKernelCounters(options_.kernel_iface) - kernel_base_;
  const int64_t drops = ReadSocketDrops(stat_sockets_);
  if (drops >= 0) socket_drops_ += drops;
  k.socket_drops = k.valid && drops >= 0 ? socket_drops_ : -1;
  return k;
}

}  // namespace fg::port

namespace fg::port {

absl::Status Port::SendControlFrame(std::span<const uint8_t> frame) {
  rte_mbuf* m = rte_pktmbuf_alloc(pool_);
  if (m == nullptr) return absl::ResourceExhaustedError(absl::StrFormat("port %s: its mbuf pool is empty", name()));
  char* d = rte_pktmbuf_append(m, static_cast<uint16_t>(frame.size()));
  if (d == nullptr) {
    rte_pktmbuf_free(m);
    return absl::InternalError(absl::StrFormat("port %s: a %d-byte control frame does not fit an mbuf", name(),
                                               frame.size()));
  }
  std::memcpy(d, frame.data(), frame.size());
  // Not a TX template any more (TX would take it for one otherwise: RX on
  // the built-in loopback leaves tags as they are, PortOptions::rx_is_own_tx).
  if (const int tag = TxTemplateTagOffset(); tag >= 0) *RTE_MBUF_DYNFIELD(m, tag, uint64_t*) = 0;
  const uint64_t until = rte_get_tsc_cycles() + rte_get_tsc_hz() / 10;
  while (rte_eth_tx_burst(id_, 0, &m, 1) == 0) {
    if (rte_get_tsc_cycles() > until) {
      rte_pktmbuf_free(m);
      return absl::UnavailableError(absl::StrFormat("port %s took no frame for 100 ms", name()));
    }
  }
  return absl::OkStatus();
}

size_t Port::ReceiveControlFrames(const std::function<void(std::span<const uint8_t>)>& take) {
  size_t total = 0;
  for (uint16_t q = 0; q < options_.rx_queues; ++q) {
    rte_mbuf* m[32];
    const uint16_t n = rte_eth_rx_burst(id_, q, m, 32);
    for (uint16_t i = 0; i < n; ++i) {
      take(std::span<const uint8_t>(rte_pktmbuf_mtod(m[i], const uint8_t*), m[i]->data_len));
      rte_pktmbuf_free(m[i]);
    }
    total += n;
  }
  return total;
}

}  // namespace fg::port
