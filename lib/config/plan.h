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
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/net_addr.h"
#include "base/units.h"
#include "config/frame_spec.h"

namespace fg::config {

inline constexpr int kPlanVersion = 1;

// Where a value is written in the plan file (1-based; 0: not from the file).
struct Location {
  int line = 0;
  int column = 0;
};
// "plan.yaml:12:7" (or "plan.yaml" without a location).
std::string FormatLocation(const std::string& file, const Location& at);
// Device string that selects the built-in in-process loopback port.
inline constexpr char kLoopbackDevice[] = "loopback";

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
  // RX times: the NIC's per-packet stamps where drivers/ knows its clock
  // (auto), always the TSC (software), or the NIC's or fail (hardware).
  enum class Timestamps { kAuto, kSoftware, kHardware } timestamps = Timestamps::kAuto;
  // TX times: the TSC just before rte_eth_tx_burst (software), or each burst
  // sent at a NIC-clock time 100 us after it is due (scheduled: mlx5 tx_pp).
  bool tx_scheduled = false;
  int line = 0;  // where the port is declared, for later messages
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
  int line = 0;
};

// A loss-ratio goal of a multi-goal search (MLRsearch terms).
struct GoalSpec {
  std::string name;
  double loss_ratio = 0;          // a trial exceeds the goal above this (0.005 = 0.5 %)
  int64_t final_duration_ns = 0;  // 0: the test's trial_duration
  double width = 0.005;           // relative width at which the goal is done
  double exceed_ratio = 0;        // share of duration_sum that exceeding trials may take at a lower bound
  int64_t duration_sum_ns = 0;    // 0: final_duration
};

// One test of the plan's `tests:` list.
struct TestSpec {
  enum class Kind { kThroughput, kLatency, kBurst, kLoadBalance } kind = Kind::kThroughput;
  std::string name;
  std::vector<size_t> streams;  // indices into Plan::streams; all when the plan lists none
  enum class Search { kBinary, kMultiGoal } search = Search::kBinary;
  // Loads are fractions of each stream's TX port line rate (L1); a port's
  // load is shared evenly by the test's streams on it.
  double min_load = 0.01;
  double max_load = 1.0;
  double precision = 0.005;   // binary: stop when the interval is this narrow (fraction of line rate)
  double loss_tolerance = 0;  // binary: a trial passes at or below this loss ratio
  int64_t trial_duration_ns = 60'000'000'000;
  int64_t initial_duration_ns = 1'000'000'000;  // multi-goal: the short trials
  std::vector<GoalSpec> goals;                  // multi-goal; default NDR 0 %, PDR 0.5 %
  int search_repetitions = 1;                   // throughput: searches whose results are averaged (CV reported)
  int64_t warmup_ns = 1'000'000'000;            // traffic before the first trial (learning, ARP), not counted
  // throughput: a matrix of searches, one per message size x QP count x
  // direction (empty: the streams as planned, one direction).
  std::vector<uint64_t> message_sizes;  // RoCE/UET message bytes, or UDP frame size
  std::vector<uint32_t> qps;            // flows per stream (QPs, PDCs)
  std::vector<bool> bidirectional;      // false: as planned; true: each stream also runs back from its rx_port
  // Where each matrix entry is written, for errors about the cells it makes.
  std::vector<Location> message_sizes_at, qps_at, directions_at;
  // latency: `runs` trials of trial_duration at `load`; percentiles from the pooled samples.
  double load = 0.5;
  int runs = 20;
  std::string compare_to;  // latency: an earlier (e.g. unloaded, single-QP) latency test: the increase factor
  std::string load_from;   // latency: run at the throughput an earlier throughput test found (its first goal)
  // burst: back-to-back bursts at line rate from every stream at once (incast
  // when several), searched for the longest one no repetition loses a frame of.
  uint32_t min_frames = 1, max_frames = 10'000;
  int repetitions = 50;
  int64_t gap_ns = 100'000'000;  // after each burst, for the DUT's buffer to drain
  std::vector<int> incast;       // burst: sender counts to sweep (the test's first N streams); empty: all at once
  // load_balance: `runs` trials at `load`; the DUT's counters of these
  // parallel links (Plan::dut_counters) give each link's share: MMR and JFI.
  std::vector<std::string> links;
  // Every kind: a trial where the tester itself fell behind (engine tester
  // limits) is not counted and is run again, up to this many times; then
  // the test stops rather than judge the device by it.
  int tester_limit_retries = 5;
  int line = 0;
};

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
  std::string placement = "flow";
  // report: {per_flow: all | N}: flows listed one by one per stream (every
  // flow up to N, else the N worst by loss then latency); all: UINT32_MAX.
  uint32_t per_flow = 1024;
  std::vector<PortSpec> ports;
  std::vector<StreamSpec> streams;
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

// Reads and validates a plan file.
absl::StatusOr<Plan> LoadPlan(const std::string& file);
// Same, from text; `file` is only used in messages.
absl::StatusOr<Plan> ParsePlan(const std::string& file, const std::string& text);

}  // namespace fg::config
