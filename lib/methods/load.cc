#include "methods/load.h"

#include "endpoint/host.h"

#include <cmath>
#include <map>

#include "absl/strings/str_format.h"
#include "base/status.h"
#include "config/reader.h"

namespace fg::methods {

absl::StatusOr<LoadRunner> LoadRunner::Make(const port::Eal& eal, const std::vector<port::Port*>& ports,
                                            const std::vector<stream::CompiledStream>& streams,
                                            const config::TestSpec& test, Use use) {
  LoadRunner r;
  r.eal_ = &eal;
  r.ports_ = ports;
  for (size_t i : test.streams) {
    const stream::CompiledStream& s = streams.at(i);
    if (s.burst_frames != 0 && !use.bursts) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "test %s: stream %s has a burst schedule; this test paces its streams at a load", test.name, s.name));
    }
    // A READ runs as its two halves (stream.h); its load is its data's, at the port that sends the responses.
    const size_t first = r.base_.size();
    r.base_.push_back(s);
    if (s.read_request()) r.base_.push_back(streams.at(static_cast<size_t>(s.read_responses)));
    for (size_t k = first; k < r.base_.size(); ++k) {
      stream::CompiledStream& b = r.base_[k];
      b.index = static_cast<uint32_t>(k);  // the engine indexes results by it
      if (b.read_request()) b.read_responses = static_cast<int32_t>(k + 1);
      if (b.read_response()) b.read_requests = static_cast<int32_t>(k - 1);
      if (!b.read_request()) ++r.per_port_[b.tx_port];
      r.names_.push_back(b.name);
    }
  }
  if (r.base_.empty()) return absl::InvalidArgumentError(absl::StrFormat("test %s: no streams", test.name));
  for (const auto& [port_index, n] : r.per_port_) {
    const double line = ports.at(port_index)->capabilities().line_bps();
    if (line <= 0) {
      return absl::FailedPreconditionError(
          absl::StrFormat("test %s: port %s reports no link speed, so a load cannot be a share of its line rate",
                          test.name, ports[port_index]->name()));
    }
    r.line_l1_bps_ += line;
  }
  double sum = 0;
  int carriers = 0;
  for (const auto& s : r.base_) {
    if (s.read_request()) continue;  // a READ's frames are its responses
    sum += s.frame_size;
    ++carriers;
  }
  r.mean_frame_size_ = sum / std::max(1, carriers);
  return r;
}

engine::TrialOptions TrialOptionsOf(const config::Plan& plan) {
  engine::TrialOptions opt;
  opt.drain_ns = plan.drain_ns;
  opt.placement = plan.placement;
  opt.per_flow = plan.per_flow;
  opt.hosts = std::make_shared<const std::vector<endpoint::PortHosts>>(endpoint::HostsOfPlan(plan));
  for (const config::PortSpec& p : plan.ports) {
    opt.answer.push_back(p.answer);
    opt.pfc.push_back(p.pfc);
  }
  return opt;
}

engine::TrialOptions TrialOptionsFor(const MethodOptions& options) {
  engine::TrialOptions opt = options.trial;
  opt.interrupt = options.interrupt;
  opt.sample_interval_ns = 0;
  opt.on_live = options.on_live;
  return opt;
}

absl::StatusOr<engine::TrialResult> LoadRunner::Run(double load, double duration_s,
                                                    const MethodOptions& options) const {
  std::vector<stream::CompiledStream> ts = base_;
  for (stream::CompiledStream& s : ts) {
    if (s.read_request()) continue;  // after its responses
    const double line = ports_[s.tx_port]->capabilities().line_bps();
    s.pps = load * line / per_port_.at(s.tx_port) / ((s.frame_size + kEthL1Overhead) * 8);
  }
  for (stream::CompiledStream& s : ts) {
    // A READ's requests ask for its data at the load: one per read_packets responses.
    if (s.read_request()) s.pps = ts[static_cast<size_t>(s.read_responses)].pps / s.read_packets;
    s.count = 0;
    s.duration_ns = static_cast<int64_t>(duration_s * 1e9);
    if (s.start_ns >= s.duration_ns) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "stream %s starts %s into a trial of %s: it would send nothing; lower its start or lengthen the trial",
          s.name, FormatDuration(s.start_ns), FormatDuration(s.duration_ns)));
    }
  }
  FG_ASSIGN_OR_RETURN(engine::TrialResult r, engine::RunTrial(*eal_, ports_, ts, TrialOptionsFor(options)));
  if (r.interrupted) return absl::CancelledError("interrupted");
  return r;
}

absl::StatusOr<engine::TrialResult> LoadRunner::RunBursts(uint32_t frames, int repetitions, int64_t gap_ns,
                                                          const MethodOptions& options) const {
  std::vector<stream::CompiledStream> ts = base_;
  int64_t longest = 0;
  for (stream::CompiledStream& s : ts) {
    if (s.read_request() || s.read_response()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "stream %s is a READ, whose data the responder sends as requests come: it has no bursts to send",
          s.name));
    }
    const double line = ports_[s.tx_port]->capabilities().line_bps();
    s.burst_frame_ns = (s.frame_size + kEthL1Overhead) * 8 / line * 1e9;
    s.burst_frames = frames;
    s.burst_period_ns = static_cast<int64_t>(std::llround(frames * s.burst_frame_ns)) + gap_ns;
    s.pps = frames * 1e9 / static_cast<double>(s.burst_period_ns);
    s.count = uint64_t{frames} * static_cast<uint64_t>(repetitions);
    s.duration_ns = s.burst_period_ns * repetitions + 1'000'000'000;  // the count ends it first
    longest = std::max(longest, s.duration_ns);
  }
  engine::TrialOptions opt = TrialOptionsFor(options);
  opt.max_duration_ns = longest + 1'000'000'000;
  FG_ASSIGN_OR_RETURN(engine::TrialResult r, engine::RunTrial(*eal_, ports_, ts, opt));
  if (r.interrupted) return absl::CancelledError("interrupted");
  return r;
}

int LoadRunner::virtual_senders() const {
  int n = 0;
  for (const auto& [port, count] : per_port_) n += count > 1 ? count : 0;
  return n;
}

TrialRecord LoadRunner::Record(const engine::TrialResult& r, double load, double duration_s, const std::string& phase,
                               int index) const {
  std::map<size_t, double> port_bits;
  TrialRecord t = RecordTrial(r, duration_s, phase, index, &port_bits);
  t.load = load;
  t.set_l1_bps = load * line_l1_bps_;
  const double secs = duration_s > 0 ? duration_s : r.duration_ns / 1e9;
  for (const auto& [port, n] : per_port_) t.port_offered_l1_bps.push_back(port_bits[port] / secs);
  return t;
}

TrialRecord RecordTrial(const engine::TrialResult& r, double duration_s, const std::string& phase, int index,
                        std::map<size_t, double>* port_l1_bits) {
  TrialRecord t;
  t.index = index;
  t.phase = phase;
  t.start_unix_ns = r.start_unix_ns;
  for (const engine::StreamResult& s : r.streams) {
    if (!s.qp_setup) continue;
    if (!t.qp_setup) t.qp_setup.emplace();
    t.qp_setup->setup.Merge(s.qp_setup->setup);
    t.qp_setup->qps += s.qp_setup->qps;
    t.qp_setup->resent += s.qp_setup->resent;
    t.qp_setup->other_frames = s.qp_setup->other_frames;  // the one exchange's
    // The trial's span: its first REQ to its last RTU over every stream.
    if (t.qp_setup->first_ns == 0 || s.qp_setup->first_ns < t.qp_setup->first_ns) {
      t.qp_setup->first_ns = s.qp_setup->first_ns;
    }
    t.qp_setup->last_ns = std::max(t.qp_setup->last_ns, s.qp_setup->last_ns);
    t.qp_setup->elapsed_ns = static_cast<int64_t>(t.qp_setup->last_ns - t.qp_setup->first_ns);
  }
  t.duration_s = duration_s;
  double tx_l1_bits = 0, tx_l2_bits = 0, rx_l1_bits = 0;
  std::map<size_t, double> own_bits;
  std::map<size_t, double>& port_bits = port_l1_bits != nullptr ? *port_l1_bits : own_bits;
  for (const engine::StreamResult& s : r.streams) {
    // A READ counts as its data: the response packets its requests asked
    // for (a request lost on the way loses them all) against the unique
    // ones that reached the requester; its requests are not counted apart.
    if (s.read_responses >= 0) continue;
    // Frames that count as received: once per frame sent, i.e. unique ones;
    // for a resending stream (go-back-N) every arrival (its resends are the
    // duplicates), so the trial's loss is the wire's (stats::LostPackets).
    const uint64_t unique =
        s.retransmits ? s.rx.packets : s.rx.packets - std::min(s.rx.packets, s.analysis.duplicate);
    const uint64_t sent =
        s.read_requests >= 0 ? r.streams[s.read_requests].tx.packets * s.read_packets : s.tx.packets;
    const uint64_t sent_bytes =
        s.read_requests >= 0 ? static_cast<uint64_t>(std::llround(static_cast<double>(sent) * s.frame_size)) : s.tx.bytes;
    t.tx_frames += sent;
    t.rx_frames += unique;
    const double l1 = static_cast<double>(sent_bytes + sent * static_cast<uint64_t>(kEthL1Overhead)) * 8;
    tx_l1_bits += l1;
    port_bits[s.tx_port] += l1;
    tx_l2_bits += static_cast<double>(sent_bytes) * 8;
    rx_l1_bits += static_cast<double>(unique) * (s.frame_size + kEthL1Overhead) * 8;
    t.set_fps += s.set_pps;
  }
  // Over the trial's set duration: TX stops at its end (the engine's own
  // TX phase also holds the millisecond it takes to notice).
  const double secs = duration_s > 0 ? duration_s : r.duration_ns / 1e9;
  t.offered_l1_bps = tx_l1_bits / secs;
  t.offered_l2_bps = tx_l2_bits / secs;
  t.offered_fps = static_cast<double>(t.tx_frames) / secs;
  t.received_l1_bps = rx_l1_bits / secs;
  // The limits that bear on this test's figures: its streams' (their TX,
  // their ports). An RX lcore's stall bears on none: counts stay exact, and
  // the frames that waited through it are left out of the latency figures
  // (latency_excluded_packets), whose samples are then all the device's.
  for (const engine::StreamResult& s : r.streams) {
    for (const engine::TesterLimit& l : s.tester_limits) {
      if (l.kind == engine::kRxStall) continue;
      engine::TesterLimit c = l;
      c.detail = "stream " + s.name + ": " + l.detail;
      t.tester_limits.push_back(std::move(c));
    }
  }
  if (!t.tester_limits.empty()) {
    t.included = false;
    t.excluded_because = "tester-limited: " + engine::DescribeLimits(t.tester_limits);
  }
  for (const engine::PortResult& p : r.ports) {
    // Everything else the port received: unknown, invalid (an earlier
    // trial's late frames among them) and taken by a frame handler (ARP, ND,
    // the lab's MLD reports, PFC): with the test's frames, what its PMD counted.
    t.rx_other_frames += p.rx_unknown_packets + p.rx_invalid_packets + p.rx_handled_packets;
    for (const auto& [key, v] :
         {std::pair{"hw_tx_packets", p.hw.tx_packets}, std::pair{"hw_rx_packets", p.hw.rx_packets},
          std::pair{"hw_rx_missed", p.hw.rx_missed}, std::pair{"hw_rx_errors", p.hw.rx_errors},
          std::pair{"hw_tx_errors", p.hw.tx_errors}}) {
      t.port_counters.emplace_back(p.name + "." + key, v);
    }
    for (const port::Xstat& x : p.xstats) {
      if (x.value == 0) continue;
      for (const char* word : {"pause", "pfc", "prio", "xon", "xoff", "drop", "discard", "error", "nombuf"}) {
        if (x.name.find(word) != std::string::npos) {
          t.port_counters.emplace_back(p.name + "." + x.name, x.value);
          break;
        }
      }
    }
  }
  t.warnings = r.warnings;
  t.drain_ns = r.drain_ns;
  for (const engine::LcoreStats& l : r.lcores) {
    t.lcore_holdups += l.holdups;
    t.lcore_holdup_ns += l.holdup_ns;
    t.lcore_holdup_max_ns = std::max(t.lcore_holdup_max_ns, l.holdup_max_ns);
    t.lcore_short_holdups += l.short_holdups;
    t.lcore_short_holdup_ns += l.short_holdup_ns;
  }
  t.loss_ratio = t.tx_frames == 0 ? 0
                                  : static_cast<double>(t.tx_frames - std::min(t.tx_frames, t.rx_frames)) /
                                        static_cast<double>(t.tx_frames);
  return t;
}

absl::StatusOr<engine::TrialResult> LoadRunner::RunUnlimited(
    const std::function<absl::StatusOr<engine::TrialResult>()>& trial,
    const std::function<TrialRecord(const engine::TrialResult&, int index)>& record, int retries,
    const MethodOptions& options, std::vector<TrialRecord>& trials) const {
  const int attempts = 1 + std::max(0, retries);
  std::string last;
  for (int a = 0; a < attempts; ++a) {
    FG_ASSIGN_OR_RETURN(engine::TrialResult r, trial());
    // An interrupted trial did not run: it is neither a result nor an attempt
    // (the test stops incomplete; a trial started after the interrupt stops at once).
    if (r.interrupted) return absl::CancelledError("interrupted");
    TrialRecord t = record(r, static_cast<int>(trials.size()));
    if (t.tester_limits.empty()) return r;
    t.included = false;
    last = t.excluded_because;
    trials.push_back(t);
    if (options.on_trial) options.on_trial(trials.back());
  }
  return absl::FailedPreconditionError(
      absl::StrFormat("the tester itself was the limit in %d attempts of the same trial (last: %s); the test stops "
                      "rather than judge the device by them (tests[].tester_limit_retries: %d)",
                      attempts, last, retries));
}

absl::Status ParseFixedLoad(const config::Node& n, FixedLoadParams& p) {
  FG_RETURN_IF_ERROR(config::Opt(n, "load", p.load, config::PercentIn(0.0001, 100)));
  FG_RETURN_IF_ERROR(config::Opt(n, "runs", p.runs, config::IntIn(1, 10000)));
  FG_RETURN_IF_ERROR(config::Opt(n, "trial_duration", p.trial_duration_ns, config::DurationIn()));
  if (p.trial_duration_ns < kMinTrialNs) {
    return n.At("trial_duration")
        .Error(absl::StrFormat("trial_duration '%s' is shorter than the minimum of %s",
                               n.At("trial_duration").text(), FormatDuration(kMinTrialNs)));
  }
  return absl::OkStatus();
}

absl::Status RunWarmup(const LoadRunner& runner, const config::TestSpec& test, double load,
                       const MethodOptions& options, std::vector<TrialRecord>& trials) {
  if (test.warmup_ns <= 0) return absl::OkStatus();
  const double secs = test.warmup_ns / 1e9;
  auto w = runner.Run(load, secs, options);
  if (!w.ok()) return w.status();
  TrialRecord t = runner.Record(*w, load, secs, "warm-up", static_cast<int>(trials.size()));
  t.included = false;
  t.excluded_because = "warm-up: fills address tables and queues before the first counted run";
  trials.push_back(t);
  if (options.on_trial) options.on_trial(t);
  return absl::OkStatus();
}

}  // namespace fg::methods
