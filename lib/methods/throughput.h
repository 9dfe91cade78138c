// methods/throughput.h: the throughput test (RFC 2544 26.1 and multi-goal).
//
// Runs a plan's `throughput` test on open ports: the test's streams are sent
// at a load (a fraction of each stream's TX port line rate at L1, shared
// evenly by the test's streams on a port) for a trial duration; a trial's
// loss ratio is (frames sent - unique frames received) / frames sent, counted
// at the fabric boundary by our own analyzer. lib/search chooses the loads.
// Every trial is kept, with whether it counts and why not.
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
#include "port/eal.h"
#include "port/port.h"
#include "search/search.h"
#include "stream/stream.h"

namespace fg::methods {

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

struct ThroughputResult {
  std::string name;
  // The matrix cell (message size x QP count x direction) this search ran; 0 / false: as planned.
  std::string cell;
  uint64_t message_size = 0;
  uint32_t qps = 0;
  bool bidirectional = false;
  std::string search;  // "binary" or "multi_goal"
  std::vector<std::string> streams;
  double line_l1_bps = 0;                                // sum of the line rates the load refers to
  std::vector<std::pair<std::string, double>> tx_ports;  // each TX port and its L1 line rate
  double mean_frame_size = 0;
  std::vector<GoalOutcome> goals;  // binary: one, named "throughput"
  std::vector<TrialRecord> trials;
  double trial_seconds = 0;  // counted trials only
  bool complete = true;      // false: interrupted or a trial failed
  std::string stopped_because;
};

absl::StatusOr<ThroughputResult> RunThroughput(const port::Eal& eal, const std::vector<port::Port*>& ports,
                                               const std::vector<stream::CompiledStream>& streams,
                                               const config::TestSpec& test, const MethodOptions& options);

}  // namespace fg::methods
