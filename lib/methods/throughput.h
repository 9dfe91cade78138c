// methods/throughput.h: the throughput test (RFC 2544 26.1 and multi-goal).
//
// Runs a plan's `throughput` test on open ports: the test's streams are sent
// at a load (a fraction of each stream's TX port line rate at L1, shared
// evenly by the test's streams on a port) for a trial duration; a trial's
// loss ratio is (frames sent - unique frames received) / frames sent, counted
// at the fabric boundary by our own analyzer. lib/search chooses the loads.
// Every trial is kept, with whether it counts and why not.
//
// The kind (ThroughputKind) runs one search per cell of the test's matrix
// (methods/matrix.h).
//
//   auto r = fg::methods::RunThroughput(eal, ports, compiled_streams, plan.tests[0], opt);
//   for (const auto& g : r->goals) printf("%s %.3f %% of line\n", g.name.c_str(), g.lower_bound * 100);
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "config/plan.h"
#include "engine/engine.h"
#include "methods/load.h"
#include "methods/test_kind.h"
#include "port/eal.h"
#include "port/port.h"
#include "search/search.h"
#include "stream/stream.h"

namespace fg::methods {

// A loss-ratio goal of a multi-goal search (MLRsearch terms).
struct GoalSpec {
  std::string name;
  double loss_ratio = 0;          // a trial exceeds the goal above this (0.005 = 0.5 %)
  int64_t final_duration_ns = 0;  // 0: the test's trial_duration
  double width = 0.005;           // relative width at which the goal is done
  double exceed_ratio = 0;        // share of duration_sum that exceeding trials may take at a lower bound
  int64_t duration_sum_ns = 0;    // 0: final_duration
};

// A `throughput` test's section. Loads are fractions of each stream's TX
// port line rate (L1); a port's load is shared evenly by the test's streams
// on it.
struct ThroughputParams : config::TestParams {
  enum class Search { kBinary, kMultiGoal } search = Search::kBinary;
  double min_load = 0.01;
  double max_load = 1.0;
  double precision = 0.005;   // binary: stop when the interval is this narrow (fraction of line rate)
  double loss_tolerance = 0;  // binary: a trial passes at or below this loss ratio
  int64_t trial_duration_ns = 60'000'000'000;
  int64_t initial_duration_ns = 1'000'000'000;  // multi-goal: the short trials
  std::vector<GoalSpec> goals;                  // multi-goal; default NDR 0 %, PDR 0.5 %
  int search_repetitions = 1;                   // searches whose results are averaged (CV reported)
  // A matrix of searches, one per message size x QP count x direction
  // (empty: the streams as planned, one direction).
  std::vector<uint64_t> message_sizes;  // RoCE/UET message bytes, or UDP frame size
  std::vector<uint32_t> qps;            // flows per stream (QPs, PDCs)
  std::vector<bool> bidirectional;      // false: as planned; true: each stream also runs back from its rx_port
  // Where each matrix entry is written, for errors about the cells it makes.
  std::vector<config::Location> message_sizes_at, qps_at, directions_at;
};

struct GoalOutcome {
  std::string name;
  double loss_ratio = 0;
  bool found = false;
  double lower_bound = 0;  // load, fraction of line rate
  double upper_bound = 0;
  double conditional_throughput = 0;  // load x (1 - loss ratio at the lower bound)
  // The throughput: what TX measured it offered in the deciding trials (the
  // counted trials at the lower bound; multi-goal: its final trials), time-
  // weighted, aggregate over the test's streams. 0 when no trial decided.
  double lower_bound_l1_bps = 0;
  double lower_bound_l2_bps = 0;  // ... without preamble and inter-frame gap
  double lower_bound_pps = 0;
  std::vector<double> port_l1_bps;  // ... per TX port, in ThroughputResult::tx_ports order
  double deciding_trial_seconds = 0;
  // The same load as set: lower_bound x line rate.
  double set_l1_bps = 0, set_l2_bps = 0, set_pps = 0;
  // With repetitions: each search's lower bound (the fields above hold their mean) and their
  // coefficient of variation.
  std::vector<double> repetition_lower_bounds;
  double cv = 0;
};

struct ThroughputResult : TestResult {
  // The matrix cell (message size x QP count x direction) this search ran; 0 / false: as planned.
  std::string cell;
  uint64_t message_size = 0;
  uint32_t qps = 0;
  bool bidirectional = false;
  std::string search;  // "binary" or "multi_goal"
  double line_l1_bps = 0;                                // sum of the line rates the load refers to
  std::vector<std::pair<std::string, double>> tx_ports;  // each TX port and its L1 line rate
  double mean_frame_size = 0;
  std::vector<GoalOutcome> goals;  // binary: one, named "throughput"
  double trial_seconds = 0;        // counted trials only
};

absl::StatusOr<ThroughputResult> RunThroughput(const port::Eal& eal, const std::vector<port::Port*>& ports,
                                               const std::vector<stream::CompiledStream>& streams,
                                               const config::TestSpec& test, const MethodOptions& options);

const TestKind& ThroughputKind();

}  // namespace fg::methods
