// methods/dcqcn_convergence.h: DCQCN convergence (the draft's category 3).
//
// M QPs share a bottleneck; M more start at T0 (2:1). Each QP is a DCQCN
// reaction point (frame.roce.dcqcn) whose rate follows the CNPs of the
// responder's notification point at the far port (ports[].respond). From the
// QPs' rate timelines, the test finds the time after T0 until all 2M are
// within `tolerance` of the fair share (bottleneck / 2M) and stay there for
// `hold`: the convergence time. One trial per (m, parameter set, repetition).
//
// The test's one stream is the template: its frame (RoCEv2 with dcqcn), ports
// and per-QP rate (its rate over its flows: each QP's maximum, the line it
// starts at). A trial sends it as two streams, NAME-a with m QPs from the
// start and NAME-b with m more QPs (the next m destination QPs and source
// ports) from T0, each QP paced on its own.
//
//   tests:
//     - dcqcn_convergence: {streams: [s], m: [4, 16], repetitions: 3, parameter_sets: [paper, connectx]}
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/frame_spec.h"
#include "methods/test_kind.h"

namespace fg::methods {

struct DcqcnConvergenceParams : config::TestParams {
  std::vector<uint32_t> m = {4};
  int repetitions = 1;
  // Each set's name ("paper", "connectx", "none", or "set N" for a map) and
  // parameters (none: no reaction point, the QPs stay at their set rates: the
  // open-loop contrast); empty in the plan: the stream's own dcqcn.
  std::vector<std::string> set_names;
  std::vector<std::optional<config::DcqcnSpec>> parameter_sets;
  int64_t trial_duration_ns = 200'000'000;
  int64_t t0_ns = 50'000'000;
  double tolerance = 0.10;
  int64_t hold_ns = 1'000'000;
  double bottleneck_bps = 0;  // L2 bit/s; 0: measured from the QPs' rates over the trial's last fifth
};

struct ConvergenceRun {
  int trial = 0;  // index into the result's trials
  bool converged = false;
  int64_t convergence_ns = 0;  // after T0
  double fair_share_bps = 0;
  bool fair_share_measured = false;
  // The largest deviation from the fair share of a QP's mean rate over the
  // last fifth of [t0, end] (|mean / fair - 1|): how far from fair it ended
  // (NaN, null in the report, for the `none` set).
  double final_deviation = 0;
  // The trial's two streams together: frames sent, lost (the wire's), CE
  // marks seen at the responder, CNPs it sent, suppressed (cnp_interval) and
  // that reached the requesters.
  uint64_t tx_packets = 0, ecn_ce_packets = 0, cnp_sent = 0, cnp_suppressed = 0, cnp_received = 0;
  int64_t lost_packets = 0;
};

struct ConvergencePoint {
  uint32_t m = 0;
  std::string parameter_set;
  std::vector<ConvergenceRun> runs;
  bool converged = false;          // every repetition converged
  int64_t convergence_ns = 0;      // the median of the repetitions that converged
  double fair_share_bps = 0;       // the first repetition's
  // The first repetition's QP rates every millisecond (at most 32 QPs: the
  // first 16 of each group), for the figure.
  std::vector<int64_t> sample_ns;
  std::vector<std::vector<double>> sample_bps;  // [qp][sample]
  std::vector<std::string> sample_qps;          // "a0", "b3": group and index
};

struct DcqcnConvergenceResult : TestResult {
  std::vector<ConvergencePoint> points;
};

// The convergence time of one trial's 2m QPs from their rate timelines
// (step functions; stream a's QPs then b's), judged on a 100 us grid from
// t0 to `end_ns`. Exposed for tests.
ConvergenceRun JudgeConvergence(const std::vector<std::vector<tx::RatePoint>>& timelines, int64_t t0_ns,
                                int64_t end_ns, double tolerance, int64_t hold_ns, double bottleneck_bps);

const TestKind& DcqcnConvergenceKind();

// A DCQCN parameter set's fields into the object being written (report.json
// of a run's DCQCN stream and of this test).
void WriteDcqcnParameters(report::JsonWriter& w, const config::DcqcnSpec& p);

}  // namespace fg::methods
