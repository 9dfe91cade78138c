// config/plan.h: the plan, a YAML file parsed into typed, validated structs.
//
// A plan names the ports, the streams sent on them and (later) the tests to
// run. Parsing never throws; any problem is one error that names the file,
// line, column and field and says what is allowed, e.g.
//   plans/x.yaml:14:7: streams[0].rtae: unknown field 'rtae' (did you mean 'rate'?); allowed here: ...
//
//   absl::StatusOr<fg::config::Plan> plan = fg::config::LoadPlan("configs/quickstart.yaml");
//   if (!plan.ok()) { std::cerr << plan.status().message() << "\n"; return 2; }
//   for (const auto& s : plan->streams) ...
//
// docs/plan-reference.md documents every field with its unit and default.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "base/net_addr.h"
#include "base/units.h"
#include "config/frame_spec.h"
#include "config/location.h"
#include "config/ranks.h"

namespace fg::config {

inline constexpr int kPlanVersion = 1;

// Device string that selects the built-in in-process loopback port.
inline constexpr char kLoopbackDevice[] = "loopback";

// `ports[].respond`: the port answers the RoCEv2 data it receives as each
// QP's RC responder (ACK, NAK) and notification point (CNP on CE).
struct RespondSpec {
  uint32_t ack_every = 16;         // an ACK at least every N packets accepted (and on each AckReq)
  int64_t cnp_interval_ns = 2000;  // at most one CNP per QP per interval (ConnectX min_time_between_cnps)
  uint8_t cnp_dscp = 48;           // ConnectX cnp_dscp
  uint8_t cnp_pcp = 6;             // ConnectX cnp_802p_prio: the CNP's 802.1Q priority when frames are tagged
};

// `ports[].answer`: what the port answers for its hosts (every address its
// streams send from: endpoint/host.h); all on by default.
struct AnswerSpec {
  bool arp = true;   // ARP requests for an IPv4 host
  bool nd = true;    // neighbour solicitations for an IPv6 host
  bool echo = true;  // ICMP and ICMPv6 echo requests to a host
};

// `ports[].pfc`: what the port does with the PFC and PAUSE frames it
// receives (endpoint/pfc.h counts them on every port, always).
struct PortPfcSpec {
  // Stop sending a paused priority for the frame's quanta (X-ON or expiry
  // resumes it): for ports whose MAC does not (af_packet, vdevs).
  bool honor = false;
  // Storm onset: the first time `storm_events_per_s` x `storm_window_ns`
  // pause events of one priority fell within one window.
  int64_t storm_window_ns = 10'000'000;
  double storm_events_per_s = 1000;
};

// `ports[].gateway`: the next hop whose MAC the port's streams send to
// (resolved by ARP or ND before traffic starts; a stream's dst_mac overrides).
// Which worker lcore owns each flow (`placement`; engine/placement.h).
enum class PlacementPolicy { kFlow, kStream, kPort };

using Gateway = IpAddr;

struct PortSpec {
  std::string name;
  // "loopback", a PCI address ("0000:03:00.0") or a DPDK vdev string
  // ("net_af_packet0,iface=veth0").
  std::string device = kLoopbackDevice;
  // 0xFFFF (`auto`, the default): one per worker lcore, within the device's maximum.
  uint16_t rx_queues = 0xFFFF;
  uint16_t tx_queues = 0xFFFF;
  uint16_t rx_desc = 1024;
  uint16_t tx_desc = 1024;
  uint32_t mtu = 1500;  // L3 MTU in bytes
  uint32_t mbufs = 0;   // 0 = sized automatically from queues and descriptors
  // The line rate loads and `%` rates refer to, in Mbit/s; 0 (`auto`): the
  // link speed the PMD reports. For virtual devices, whose speed is nominal
  // (net_null and net_ring say 10 Gbit/s), or a NIC behind a slower link.
  uint32_t link_speed_mbps = 0;
  // RX times: the NIC's per-packet stamps where drivers/ knows its clock
  // (auto), always the TSC (software), or the NIC's or fail (hardware).
  enum class Timestamps { kAuto, kSoftware, kHardware } timestamps = Timestamps::kAuto;
  // TX times: the TSC just before rte_eth_tx_burst (software), or each burst
  // sent at a NIC-clock time 100 us after it is due (scheduled: mlx5 tx_pp).
  bool tx_scheduled = false;
  std::optional<RespondSpec> respond = std::nullopt;  // `respond: true` or a map: this port answers as RC responder
  std::optional<Gateway> gateway = std::nullopt;
  // The gateway's MAC, resolved before traffic (session/gateway.cc), not a
  // plan key: the destination MAC of the frames the port sends (its streams'
  // data, unless a stream writes its own dst_mac, and the answers of a
  // responding port). Unset: each frame goes to its host's own MAC.
  std::optional<MacAddr> next_hop_mac = std::nullopt;
  AnswerSpec answer;
  PortPfcSpec pfc;
  int line = 0;  // where the port is declared, for later messages
  Location at;            // ... with its column
  WrittenValues written;  // its values as written ("mtu", "respond.ack_every"), for later messages
};

struct StreamSpec {
  std::string name;
  size_t port = 0;     // index into Plan::ports (TX)
  size_t rx_port = 0;  // index into Plan::ports (where it is expected back)
  FrameSpec frame;
  Rate rate;
  Location rate_at;  // where `rate` is written (`burst`, for a burst schedule)
  // Instead of a rate: `frames` frames back to back at line rate, then `gap`
  // idle, again and again (burst absorption, incast).
  struct Burst {
    uint32_t frames = 0;  // 0: no burst schedule, `rate` paces the stream
    int64_t gap_ns = 0;
  } burst;
  bool verify_payload = false;  // RX checks every payload byte (costs a pass over each frame)
  // Per-flow rates (`flows: {count, rates}`): flow i's share of `rate` (the
  // sum) is flow_weights[i] / rate.value. Empty: the flows share it evenly.
  std::vector<double> flow_weights;
  uint32_t flows = 1;           // QPs / PDCs / UDP ports: consecutive keys from the frame's
  uint64_t count = 0;           // 0 = unbounded (the stream's or plan's duration ends it)
  int64_t duration_ns = 0;      // 0 = the plan's duration
  // `start`: the stream's first frame this long after the run's start; it
  // still ends at its duration from the run's start (M more flows at T0).
  int64_t start_ns = 0;
  int line = 0;
  Location at;            // where the stream's map starts
  // Its values as written ("rate", "flows", "frame.roce.retransmit.timeout"):
  // a check after parsing names the place and quotes the text (location.h).
  WrittenValues written;
};

// What a test kind reads from its own section of a `tests:` item (the
// search bounds of a throughput test, the links of a load_balance test...).
// Each kind derives its own; config knows none of them (methods/ does).
struct TestParams {
  virtual ~TestParams() = default;
};

// One test of the plan's `tests:` list: what every kind has, and the kind's
// own parameters.
struct TestSpec {
  std::string kind;             // the kind's key in the plan: "throughput", "latency", ...
  std::string name;             // default: the kind's key
  std::vector<size_t> streams;  // indices into Plan::streams; all when the plan lists none
  int64_t warmup_ns = 1'000'000'000;  // traffic before the first trial (learning, ARP), not counted
  // A trial where the tester itself fell behind (engine tester limits) is
  // not counted and is run again, up to this many times; then the test stops
  // rather than judge the device by it.
  int tester_limit_retries = 5;
  int line = 0;
  Location at;            // where its section (the kind's map) starts
  WrittenValues written;  // the section's values as written, by their path in it ("m[0]", "bottleneck")
  std::shared_ptr<const TestParams> params;  // never null in a parsed plan

  // The kind's parameters; `P` must be the type its kind parsed.
  template <typename P>
  const P& As() const {
    const P* p = dynamic_cast<const P*>(params.get());
    if (p == nullptr) std::abort();  // a kind reading another kind's test: a bug, not a plan error
    return *p;
  }
};

class Node;
struct Plan;

// What the plan parser needs of a test kind: its key and how to read its
// section. The kinds themselves (methods/test_kind.h) add how to run one
// and report it; the parser is given their table.
class TestKindParser {
 public:
  virtual ~TestKindParser() = default;
  virtual std::string_view key() const = 0;
  // The kind's own keys in its section (the parser adds name, streams,
  // warmup and tester_limit_retries, which every kind has).
  virtual std::vector<std::string_view> own_keys() const = 0;
  virtual int64_t default_warmup_ns() const { return 1'000'000'000; }
  // Whether the kind sends the plan's streams (every kind but those that
  // move the ranks' data): such a test in a plan without streams is refused.
  virtual bool needs_streams() const { return true; }
  // Reads the kind's own keys; `test` holds the common ones, already read.
  // `plan` has the ports, streams and the tests before this one.
  virtual absl::StatusOr<std::shared_ptr<const TestParams>> Parse(const Plan& plan, const Node& section,
                                                                  const TestSpec& test) const = 0;
};
using TestKindParsers = std::vector<const TestKindParser*>;

struct Plan {
  std::string file;
  std::string name;
  // For the report (the draft's sections 1, 2 and 5): free-form "key: value"
  // pairs describing the DUT and the tester host, and the topology in words.
  std::vector<std::pair<std::string, std::string>> dut, host;
  std::string topology;
  // A command (argv; the first word found on PATH) that prints the DUT's
  // per-link counters as JSON: {"LINK": {"tx_packets": N, "tx_bytes": N}, ...}.
  // load_balance tests read it before and after every trial.
  std::vector<std::string> dut_counters;
  std::vector<std::string> eal;         // extra EAL arguments
  std::vector<Location> eal_at;         // where each is written
  int64_t duration_ns = 1'000'000'000;  // upper bound of one run
  int64_t drain_ns = 100'000'000;       // wait for in-flight frames after TX stops
  // Which worker lcore owns each flow: flow (spread flow by flow), stream or port.
  PlacementPolicy placement = PlacementPolicy::kFlow;
  // report: {per_flow: all | N}: flows listed one by one per stream (every
  // flow up to N, else the N worst by loss then latency); all: UINT32_MAX.
  uint32_t per_flow = 1024;
  std::vector<PortSpec> ports;
  std::vector<StreamSpec> streams;  // may be empty when the plan has ranks
  // `ranks:` emulated accelerators behind the ports (config/ranks.h), for
  // the collective tests; a plan with ranks needs no streams.
  std::optional<RanksSpec> ranks;
  std::vector<TestSpec> tests;  // empty: `run` runs the streams once
};

// What the parser checks of a stream's frame once it is read, for a frame
// changed since (a test matrix's message size, a stream reversed onto another
// port): headers and the test signature fit the frame, the message is one the
// protocol allows, and the largest frame fits `port_mtu`. The error (no
// location) starts with the key it is about ("size: ...", "roce: ...").
absl::Status CheckFrame(const FrameSpec& frame, uint32_t port_mtu, const std::string& port_name);

// Sets a frame's message size the way a test matrix does: RoCE and UET
// message bytes, or the size of a plain UDP frame.
void SetMessageSize(FrameSpec& frame, uint64_t bytes);

// Reads and validates a plan file; `kinds` read the tests' sections
// (methods::LoadPlan passes every kind fabricgen has; without kinds, a plan
// with `tests:` is refused).
absl::StatusOr<Plan> LoadPlan(const std::string& file, const TestKindParsers& kinds = {});
// Same, from text; `file` is only used in messages.
absl::StatusOr<Plan> ParsePlan(const std::string& file, const std::string& text, const TestKindParsers& kinds = {});

// For a kind's parser: the test named at `n`, which must be an earlier test
// of kind `kind` (latency's at_throughput_of); its name into `out`.
// `frame.roce.dcqcn` and the parameter sets of a test: `paper`, `connectx`
// or a map {preset, PARAMETER: value, ...} (docs/plan-reference.md).
absl::StatusOr<DcqcnSpec> ParseDcqcn(const Node& n);

absl::Status EarlierTest(const Plan& plan, const Node& n, std::string_view kind, std::string& out);

}  // namespace fg::config
