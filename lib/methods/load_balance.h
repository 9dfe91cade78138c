// methods/load_balance.h: how evenly the DUT spreads the test's traffic over
// parallel links (the draft's category 4: ECMP polarization, packet spray).
//
// The test's streams run at a fixed load for `runs` trials; before and after
// each trial the DUT's own per-link counters are read (the tester cannot see
// which link a frame took), and L_i, the bytes transmitted on link i during
// the trial, give
//
//   MMR (max-mean ratio) = max_i L_i / mean_i L_i      1 = perfectly even
//   JFI (Jain's fairness) = (sum L_i)^2 / (N sum L_i^2)  from 1/N (all on one) to 1
//
// The frames the links carried are set beside the frames the analyzer
// received, so traffic that did not take the listed links (or counters that
// count something else) shows.
//
//   auto r = fg::methods::RunLoadBalance(eal, ports, streams, test, opt, read_counters);
//   printf("MMR %.3f JFI %.3f\n", r->mmr, r->jfi);
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "methods/load.h"
#include "methods/test_kind.h"

namespace fg::methods {

// A `load_balance` test's section: `runs` trials (default 1) of
// `trial_duration` (default 10 s) at `load`, over the DUT's `links`.
struct LoadBalanceParams : FixedLoadParams {
  std::vector<std::string> links;  // names in the DUT's counters (Plan::dut_counters)
};

// Of per-link loads; 0 when every load is 0.
double MaxMeanRatio(const std::vector<double>& loads);
double JainFairnessIndex(const std::vector<double>& loads);

struct LinkLoad {
  std::string name;
  uint64_t tx_packets = 0, tx_bytes = 0;  // during the trial(s)
};

struct LoadBalanceRun {
  TrialRecord trial;
  std::vector<LinkLoad> links;
  double mmr = 0, jfi = 0;  // of the links' bytes
};

struct LoadBalanceResult : TestResult {
  double load = 0;  // fraction of line rate (L1)
  double line_l1_bps = 0;
  uint64_t flows = 0;  // the test's flows (each with its own entropy unless the streams vary it per packet)
  std::vector<LoadBalanceRun> runs;
  std::vector<LinkLoad> links;  // summed over the counted runs
  double mmr = 0, jfi = 0;          // of the summed bytes
  uint64_t link_packets = 0;        // frames the listed links carried in the counted runs
  uint64_t rx_frames = 0;           // unique frames the analyzer received in them
};

absl::StatusOr<LoadBalanceResult> RunLoadBalance(const port::Eal& eal, const std::vector<port::Port*>& ports,
                                                 const std::vector<stream::CompiledStream>& streams,
                                                 const config::TestSpec& test, const MethodOptions& options,
                                                 const LinkCounterReader& read_counters);

const TestKind& LoadBalanceKind();

}  // namespace fg::methods
