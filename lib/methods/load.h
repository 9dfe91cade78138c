// methods/load.h: a test's streams sent at a share of line rate, one trial at
// a time; what every test method builds on.
//
// A load is a fraction of each stream's TX port line rate at L1 (frame + FCS
// + 20 B of preamble, SFD and inter-frame gap), shared evenly by the test's
// streams on one port. A trial's counts come from fabricgen's analyzer at the
// fabric boundary: frames sent by TX, unique frames received by RX.
//
//   auto runner = fg::methods::LoadRunner::Make(eal, ports, streams, test, {});
//   auto r = runner->Run(0.5, 10.0, options);       // 50 % of line for 10 s
//   TrialRecord t = runner->Record(*r, 0.5, 10.0, "final", 0);
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "config/plan.h"
#include "engine/engine.h"
#include "base/units.h"
#include "port/eal.h"
#include "port/port.h"
#include "stream/stream.h"

namespace fg::methods {

struct TrialRecord {
  int index = 0;
  std::string phase;          // "warm-up", "max", "binary", "min", "short", "final", "run"
  double load = 0;            // fraction of line rate (L1); bursts: 1 (line rate)
  uint32_t burst_frames = 0;  // burst tests: frames per burst and stream
  std::string label;          // what the trial ran when it is no load or bursts ("4 ranks, 1048576 B x 12 iterations")
  // A collective's trial: its (first job's) last completed iteration's time
  // and busbw (-1: none completed, or not a collective's trial).
  int64_t last_iteration_ns = -1;
  double last_busbw_bps = 0;
  int senders = 0;            // burst tests: streams bursting at once
  double duration_s = 0;
  int64_t start_unix_ns = 0;  // when its streams started (UNIX ns: engine::TrialResult::start_unix_ns)
  uint64_t tx_frames = 0, rx_frames = 0;  // rx: unique frames (duplicates not counted)
  uint64_t rx_other_frames = 0;  // received without a signature of the test: unknown, invalid, handled (ARP, PFC, ...)
  double loss_ratio = 0;
  // Measured: what TX sent over the trial's set duration (TX stops at its end), aggregate over the test's streams.
  double offered_l1_bps = 0, offered_l2_bps = 0, offered_fps = 0;
  double received_l1_bps = 0;
  // Set: what the load called for (load x line rate; bursts: line rate while bursting).
  double set_l1_bps = 0, set_fps = 0;
  // Measured offered L1 bit/s per TX port, in LoadRunner::tx_ports() order.
  std::vector<double> port_offered_l1_bps;
  bool included = true;
  std::string excluded_because;  // why a trial does not count (warm-up, tester-limited)
  // Where the tester fell behind in this trial (each stream's and port's,
  // named); non-empty: the trial is not counted and decides nothing.
  std::vector<engine::TesterLimit> tester_limits;
  // The ports' own view of the trial (a second observation point): the PMD's
  // packet and miss counters, and every non-zero xstat about pause/PFC
  // frames, drops, discards or errors. Keys "port.counter".
  std::vector<std::pair<std::string, uint64_t>> port_counters;
  // The trial's QPs set up by CM (frame.roce.connect: cm) before its data:
  // every such stream's together (empty: none connects).
  std::optional<engine::QpSetup> qp_setup;
  // What a reader of the trial's figures must know and that is not a tester
  // limit (engine::TrialResult::warnings: PAUSE that held TX back, frames
  // received in error, a drain that waited for a packet socket's TX ring).
  std::vector<std::string> warnings;
  int64_t drain_ns = 0;  // how long the drain took (`drain` past the last frame sent)
  // The worker lcores' hold-ups in the trial (LcoreStats::holdups): turns of
  // their loops over 1 ms after the one before, listed as a limit or not (a
  // hold-up caught up within 1 ms and a burst of slots skips none, but a
  // figure timed across it, such as a link's busy time, still carries it).
  uint64_t lcore_holdups = 0, lcore_holdup_ns = 0, lcore_holdup_max_ns = 0;
  uint64_t lcore_short_holdups = 0, lcore_short_holdup_ns = 0;  // turns 0.1-1 ms apart
};

// The options of every trial a plan runs (drain, placement, per-flow
// reports, each port's hosts and what they answer): built here only, from
// the plan, by run, the CLI and the tests alike.
engine::TrialOptions TrialOptionsOf(const config::Plan& plan);

struct MethodOptions {
  // What each trial starts from (TrialOptionsOf(plan)); a test sets its own
  // sampling, bounds and the callbacks below.
  engine::TrialOptions trial;
  const std::atomic<bool>* interrupt = nullptr;
  // Called after every trial (progress: test, trial, phase, load, result).
  std::function<void(const TrialRecord&)> on_trial;
  // Each trial's live run, while it runs (nullptr when it ends): live metrics.
  std::function<void(const engine::LiveRun*)> on_live;
};

// A trial's counts, rates, tester limits (a limited trial recorded as not
// counted, saying why), port counters and warnings as a record, for any
// test; LoadRunner::Record adds the set load. `port_l1_bits` (optional):
// the L1 bits each TX port sent.
TrialRecord RecordTrial(const engine::TrialResult& r, double duration_s, const std::string& phase, int index,
                        std::map<size_t, double>* port_l1_bits = nullptr);

// A trial's options under a test: options.trial with its interrupt and live
// view, not sampled.
engine::TrialOptions TrialOptionsFor(const MethodOptions& options);

class LoadRunner {
 public:
  // What the test does with its trials.
  struct Use {
    bool bursts = false;  // RunBursts: streams with a burst schedule are allowed
  };
  // Refuses ports without a link speed, and (unless use.bursts) streams with a burst schedule.
  static absl::StatusOr<LoadRunner> Make(const port::Eal& eal, const std::vector<port::Port*>& ports,
                                         const std::vector<stream::CompiledStream>& streams,
                                         const config::TestSpec& test, Use use);
  // One trial; Cancelled when interrupted.
  absl::StatusOr<engine::TrialResult> Run(double load, double duration_s, const MethodOptions& options) const;
  // One trial of `repetitions` bursts of `frames` back to back at line rate
  // from every stream at once, each followed by `gap_ns` of silence.
  absl::StatusOr<engine::TrialResult> RunBursts(uint32_t frames, int repetitions, int64_t gap_ns,
                                                const MethodOptions& options) const;
  // Streams that share a TX port with another of the test's streams.
  int virtual_senders() const;
  // The trial's counts and rates as a record; a tester-limited trial is
  // recorded as not counted, saying why.
  TrialRecord Record(const engine::TrialResult& r, double load, double duration_s, const std::string& phase,
                     int index) const;
  // Runs `trial` until the tester keeps up in it, at most 1 + `retries`
  // times (the test's tester_limit_retries). Each tester-limited attempt is
  // recorded (`record`: the attempt's record, its index given), appended to
  // `trials` as not counted and shown through on_trial; the first attempt
  // the tester kept up in is returned, not yet recorded. FailedPrecondition
  // when the tester was the limit in every attempt: nothing to judge by.
  absl::StatusOr<engine::TrialResult> RunUnlimited(
      const std::function<absl::StatusOr<engine::TrialResult>()>& trial,
      const std::function<TrialRecord(const engine::TrialResult&, int index)>& record, int retries,
      const MethodOptions& options, std::vector<TrialRecord>& trials) const;

  double line_l1_bps() const { return line_l1_bps_; }  // sum over the TX ports the load refers to
  double mean_frame_size() const { return mean_frame_size_; }
  const std::vector<std::string>& stream_names() const { return names_; }
  // The TX ports the load refers to: name and L1 line rate.
  std::vector<std::pair<std::string, double>> tx_ports() const {
    std::vector<std::pair<std::string, double>> out;
    for (const auto& [index, n] : per_port_)
      out.emplace_back(ports_[index]->name(), ports_[index]->capabilities().line_bps());
    return out;
  }

 private:
  LoadRunner() = default;
  const port::Eal* eal_ = nullptr;
  std::vector<port::Port*> ports_;
  std::vector<stream::CompiledStream> base_;
  std::map<size_t, int> per_port_;  // TX port -> the test's streams on it
  std::vector<std::string> names_;
  double line_l1_bps_ = 0, mean_frame_size_ = 0;
};

// The section of a test run at one fixed load (latency, load_balance):
// `load` (percent of line), `runs` trials of `trial_duration`.
struct FixedLoadParams : config::TestParams {
  double load = 0.5;  // fraction of line rate (L1)
  int runs = 20;
  int64_t trial_duration_ns = 10'000'000'000;
};
inline constexpr std::string_view kFixedLoadKeys[] = {"load", "runs", "trial_duration"};
// The shortest trial a test takes (throughput, latency, load_balance): a
// trial shorter than the time its first frames spend in flight, the pacer's
// start and the drain's first poll measures the tester's start-up, not the
// device (and a 2 ns trial sends nothing at all).
inline constexpr int64_t kMinTrialNs = 1'000'000;  // 1 ms
// Reads those keys into `p` (its defaults stand for keys not given).
absl::Status ParseFixedLoad(const config::Node& n, FixedLoadParams& p);

// The test's warm-up, when it has one: traffic at `load` for warmup_ns,
// appended to `trials` as not counted (and shown through on_trial).
absl::Status RunWarmup(const LoadRunner& runner, const config::TestSpec& test, double load,
                       const MethodOptions& options, std::vector<TrialRecord>& trials);

}  // namespace fg::methods
