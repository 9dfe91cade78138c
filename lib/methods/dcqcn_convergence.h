// methods/dcqcn_convergence.h: DCQCN convergence (the draft's category 3).
//
// M QPs share a bottleneck; M more start at T0 (2:1). Each QP is a DCQCN
// reaction point (frame.roce.dcqcn) whose rate follows the CNPs of the
// responder's notification point at the far port (ports[].respond). The fair
// share is what the bottleneck delivered (what the responder received over
// [T0, end]) over 2M; each QP's rate, from its timeline, is averaged over
// `window`s from T0; the convergence time is the first window from which all
// 2M are within `tolerance` of the fair share and stay so for `hold`. A set
// whose senders overload the bottleneck never converges: they send more
// than it delivers. One trial per (m, parameter set, repetition).
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
  // `window`: each QP's rate is averaged over windows of this length (from
  // t0 on) before it is judged; 0 in the plan: DefaultWindowNs.
  int64_t window_ns = 0;
  // `bottleneck` (optional): the bottleneck's capacity, for the report's
  // utilisation only (the fair share is what the responder received); L2
  // bit/s, or L1 when `bottleneck_l1` (converted with the stream's frame size).
  double bottleneck_bps = 0;
  bool bottleneck_l1 = false;
  std::string bottleneck_where;  // "file:line:col: tests[i]...bottleneck" for errors found at run time
};

// The default window: 20 rate-increase timers (T, after scale_to) of the
// slowest parameter set, at least 1 ms (100 ms when no set has a reaction
// point). A cut is undone by fast recovery over F = 5 timers; 20 timers hold
// four such cycles, so a window's mean is the QP's rate, not a phase of its
// sawtooth.
int64_t DefaultWindowNs(const std::vector<std::optional<config::DcqcnSpec>>& sets);

struct ConvergenceRun {
  int trial = 0;  // index into the result's trials
  bool converged = false;
  int64_t convergence_ns = 0;  // after T0: the start of the first window of the `hold`
  // The fair share: what the responder received from both groups over
  // [t0, end of TX] (L2 bit/s, FCS included), over 2m.
  double fair_share_bps = 0;
  double delivered_bps = 0;  // that rate, all QPs together
  // The largest deviation from the fair share of a QP's mean rate over the
  // last fifth of [t0, end] (|mean / fair - 1|): how far from fair it ended.
  double final_deviation = 0;
  // Jain's fairness index of the QPs' window rates, per window (windows
  // aligned on t0, from the first that starts at or after 0; only QPs that
  // had started by a window's start count in it).
  std::vector<int64_t> window_start_ns;
  std::vector<double> jfi;
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
  // first 16 of each group), for the figure; its JFI per window is in runs[0].
  std::vector<int64_t> sample_ns;
  std::vector<std::vector<double>> sample_bps;  // [qp][sample]
  std::vector<std::string> sample_qps;          // "a0", "b3": group and index
};

struct DcqcnConvergenceResult : TestResult {
  std::vector<ConvergencePoint> points;
  int64_t window_ns = 0;  // the window the rates were judged over
};

// The judgement of one trial's 2m QPs from their rate timelines (step
// functions; stream a's QPs then b's): each QP's mean rate per window
// [t0 + k w, t0 + (k+1) w) up to `end_ns`; converged at the first window from
// which every QP is within `tolerance` of `fair_share_bps` in ceil(hold / w)
// windows in a row. Exposed for tests.
ConvergenceRun JudgeConvergence(const std::vector<std::vector<tx::RatePoint>>& timelines, int64_t t0_ns,
                                int64_t end_ns, int64_t window_ns, double tolerance, int64_t hold_ns,
                                double fair_share_bps);

const TestKind& DcqcnConvergenceKind();

// A DCQCN parameter set's fields into the object being written (report.json
// of a run's DCQCN stream and of this test).
void WriteDcqcnParameters(report::JsonWriter& w, const config::DcqcnSpec& p);

}  // namespace fg::methods
