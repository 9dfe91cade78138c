#include "methods/dcqcn_convergence.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/status.h"
#include "base/units.h"
#include "config/reader.h"
#include "methods/load_balance.h"

namespace fg::methods {

namespace {

constexpr int64_t kSampleNs = 1'000'000;  // the figure's samples
constexpr int64_t kMaxM = 4096;           // QPs per group
constexpr int64_t kMinTrialNs = 10'000'000;  // a trial shorter than this is all start-up
constexpr size_t kFigureQpsPerGroup = 16;

// A QP's rate at t from its timeline (a step function; 0 before its first point).
class Cursor {
 public:
  explicit Cursor(const std::vector<tx::RatePoint>& tl) : tl_(tl) {}
  double At(int64_t t) {
    while (i_ < tl_.size() && tl_[i_].t_ns <= t) rate_ = tl_[i_++].bps;
    return rate_;
  }
  // The mean rate over [a, b) (a >= every earlier call's end): the step
  // function's integral over the interval, over its length.
  double Mean(int64_t a, int64_t b) {
    double area = 0;
    double rate = At(a);
    int64_t t = a;
    while (i_ < tl_.size() && tl_[i_].t_ns < b) {
      area += rate * static_cast<double>(tl_[i_].t_ns - t);
      t = tl_[i_].t_ns;
      rate = At(t);
    }
    area += rate * static_cast<double>(b - t);
    return b > a ? area / static_cast<double>(b - a) : rate;
  }

 private:
  const std::vector<tx::RatePoint>& tl_;
  size_t i_ = 0;
  double rate_ = 0;
};

}  // namespace

int64_t DefaultWindowNs(const std::vector<std::optional<config::DcqcnSpec>>& sets) {
  double timer = 0;
  for (const auto& d : sets) {
    if (!d) continue;
    const double k = d->scale_to_bps > 0 ? d->scale_to_bps / d->preset_link_bps : 1.0;
    timer = std::max(timer, static_cast<double>(d->timer_ns) / k);
  }
  if (timer <= 0) return 100'000'000;
  return std::max<int64_t>(1'000'000, static_cast<int64_t>(20 * timer));
}

ConvergenceRun JudgeConvergence(const std::vector<std::vector<tx::RatePoint>>& timelines, int64_t t0_ns,
                                int64_t end_ns, int64_t window_ns, double tolerance, int64_t hold_ns,
                                double fair_share_bps) {
  ConvergenceRun out;
  const size_t n = timelines.size();
  out.fair_share_bps = fair_share_bps;
  if (n == 0 || end_ns <= t0_ns || window_ns <= 0) return out;
  // Windows aligned on t0: from the first that starts at or after 0 (for the
  // JFI over time) to the last that ends by end_ns.
  const int64_t first = t0_ns - (t0_ns / window_ns) * window_ns;
  std::vector<Cursor> at;
  std::vector<int64_t> started;  // a QP's first point: before it, it is not in a window's JFI
  for (const auto& tl : timelines) {
    at.emplace_back(tl);
    started.push_back(tl.empty() ? INT64_MAX : tl.front().t_ns);
  }
  const size_t need = static_cast<size_t>(std::max<int64_t>(1, (hold_ns + window_ns - 1) / window_ns));
  size_t run = 0;
  std::vector<double> rates(n);
  for (int64_t w = first; w + window_ns <= end_ns; w += window_ns) {
    std::vector<double> in_jfi;
    bool within = fair_share_bps > 0;
    for (size_t q = 0; q < n; ++q) {
      rates[q] = at[q].Mean(w, w + window_ns);
      if (started[q] <= w) in_jfi.push_back(rates[q]);
      if (std::abs(rates[q] / fair_share_bps - 1) > tolerance) within = false;
    }
    out.window_start_ns.push_back(w);
    out.jfi.push_back(JainFairnessIndex(in_jfi));
    if (w < t0_ns || out.converged) continue;
    run = within ? run + 1 : 0;
    if (run >= need) {
      out.converged = true;
      out.convergence_ns = w - window_ns * static_cast<int64_t>(run - 1) - t0_ns;
    }
  }
  if (fair_share_bps > 0) {
    // Each QP's mean over the last fifth of [t0, end], against the fair share.
    const int64_t from = end_ns - (end_ns - t0_ns) / 5;
    for (size_t q = 0; q < n; ++q) {
      Cursor c(timelines[q]);
      out.final_deviation = std::max(out.final_deviation, std::abs(c.Mean(from, end_ns) / fair_share_bps - 1));
    }
  }
  return out;
}

namespace {

// What the responder received from the trial's streams over [t0, end of TX],
// L2 bit/s with FCS: the samples' received frames (one per window, and one at
// the end of TX) at the streams' mean frame sizes. 0 when no sample lies at or
// after t0 before the last one.
double DeliveredBps(const engine::TrialResult& r, const std::vector<stream::CompiledStream>& streams, int64_t t0_ns) {
  const std::vector<engine::Sample>& smp = r.samples;
  size_t from = 0;
  while (from < smp.size() && smp[from].t_ns < t0_ns) ++from;
  if (smp.size() < 2 || from >= smp.size() - 1) return 0;
  const engine::Sample &a = smp[from], &b = smp.back();
  double bits = 0;
  for (size_t i = 0; i < streams.size() && i < a.rx_packets.size() && i < b.rx_packets.size(); ++i) {
    bits += static_cast<double>(b.rx_packets[i] - a.rx_packets[i]) * streams[i].frame_size * 8;
  }
  return b.t_ns > a.t_ns ? bits * 1e9 / static_cast<double>(b.t_ns - a.t_ns) : 0;
}

// `converged` and `convergence_ns` (null when it did not converge).
void WriteConvergence(report::JsonWriter& w, bool converged, int64_t ns) {
  w.Field("converged", converged);
  w.Key("convergence_ns");
  if (converged) {
    w.Int(ns);
  } else {
    w.Null();
  }
}

class DcqcnConvergence final : public TestKind {
 public:
  std::string_view key() const override { return "dcqcn_convergence"; }
  std::vector<std::string_view> own_keys() const override {
    return {"m", "repetitions", "parameter_sets", "trial_duration", "t0", "tolerance", "hold", "window", "bottleneck"};
  }

  absl::StatusOr<std::shared_ptr<const config::TestParams>> Parse(const config::Plan& plan, const config::Node& n,
                                                                  const config::TestSpec& test) const override {
    auto t = std::make_shared<DcqcnConvergenceParams>();
    if (test.streams.size() != 1) {
      return n.Error("a dcqcn_convergence test takes one stream (streams: [NAME]): the template of its QPs");
    }
    const config::StreamSpec& s = plan.streams[test.streams[0]];
    if (s.frame.kind != config::FrameKind::kRoce || !s.frame.roce.dcqcn) {
      return n.Error(absl::StrFormat("stream %s: a dcqcn_convergence stream is RoCEv2 with frame.roce.dcqcn", s.name));
    }
    if (!plan.ports[s.rx_port].respond) {
      return n.Error(absl::StrFormat("stream %s: its rx_port %s must respond (ports[].respond) so that CE marks "
                                     "come back as CNPs",
                                     s.name, plan.ports[s.rx_port].name));
    }
    if (s.flow_weights.size() != s.flows ||
        std::any_of(s.flow_weights.begin(), s.flow_weights.end(), [](double w) { return w != 1.0; })) {
      return n.Error(absl::StrFormat("stream %s: give it one rate shared by its flows (each QP's maximum is rate / "
                                     "flows), not flows: {count, rates}",
                                     s.name));
    }
    if (auto m = n.Optional("m")) {
      t->m.clear();
      FG_ASSIGN_OR_RETURN(std::vector<config::Node> items, m->Items());
      if (items.empty()) return m->Error("m: give at least one QP count");
      for (const config::Node& i : items) {
        // Each QP keeps a rate timeline and is a flow of its own on both ends:
        // 2 x 4,096 QPs is far beyond what a convergence figure can show.
        FG_ASSIGN_OR_RETURN(int64_t v, i.Int(1, kMaxM));
        t->m.push_back(static_cast<uint32_t>(v));
      }
    }
    FG_RETURN_IF_ERROR(config::Opt(n, "repetitions", t->repetitions, config::IntIn(1, 1000)));
    if (auto sets = n.Optional("parameter_sets")) {
      FG_ASSIGN_OR_RETURN(std::vector<config::Node> items, sets->Items());
      for (const config::Node& i : items) {
        auto word = i.String();
        if (word.ok() && *word == "none") {  // no reaction point: the open-loop contrast
          t->set_names.push_back("none");
          t->parameter_sets.push_back(std::nullopt);
          continue;
        }
        FG_ASSIGN_OR_RETURN(config::DcqcnSpec d, config::ParseDcqcn(i));
        t->set_names.push_back(word.ok() ? *word : absl::StrFormat("set %d", t->parameter_sets.size()));
        t->parameter_sets.push_back(d);
      }
    }
    if (t->parameter_sets.empty()) {
      t->parameter_sets.push_back(*s.frame.roce.dcqcn);
      t->set_names.push_back("stream (" + s.frame.roce.dcqcn->preset + ")");
    }
    FG_RETURN_IF_ERROR(config::Opt(n, "trial_duration", t->trial_duration_ns, config::DurationIn()));
    FG_RETURN_IF_ERROR(config::Opt(n, "t0", t->t0_ns, config::DurationIn()));
    if (t->trial_duration_ns < kMinTrialNs) {
      return n.At("trial_duration").Error(absl::StrFormat("trial_duration (%s) must be at least %s",
                                                          FormatDuration(t->trial_duration_ns),
                                                          FormatDuration(kMinTrialNs)));
    }
    if (t->t0_ns >= t->trial_duration_ns) {
      return n.At("t0").Error(absl::StrFormat("t0 (%s) must come before the trial's end (trial_duration %s)",
                                              FormatDuration(t->t0_ns), FormatDuration(t->trial_duration_ns)));
    }
    FG_RETURN_IF_ERROR(config::Opt(n, "tolerance", t->tolerance, config::PercentIn(0.1, 100)));
    FG_RETURN_IF_ERROR(config::Opt(n, "hold", t->hold_ns, config::DurationIn()));
    FG_RETURN_IF_ERROR(config::Opt(n, "window", t->window_ns, config::DurationIn()));
    const bool window_given = t->window_ns > 0;
    if (n.Optional("window") && !window_given) return n.At("window").Error("window must be greater than zero");
    if (!window_given) t->window_ns = DefaultWindowNs(t->parameter_sets);
    // Both groups run for trial_duration - t0: a window, and the hold's
    // windows, must fit in it, else no QP could ever be judged converged.
    const int64_t after_t0 = t->trial_duration_ns - t->t0_ns;
    const int64_t hold_windows = std::max<int64_t>(1, (t->hold_ns + t->window_ns - 1) / t->window_ns);
    if (hold_windows * t->window_ns > after_t0) {
      const config::Node at = n.Optional("hold") ? n.At("hold") : n.At(window_given ? "window" : "trial_duration");
      return at.Error(absl::StrFormat(
          "hold %s in windows of %s%s (%d window(s), %s) does not fit in the %s after t0 (trial_duration %s - t0 "
          "%s): no QP could be judged converged",
          FormatDuration(t->hold_ns), FormatDuration(t->window_ns), window_given ? "" : " (the default window)",
          hold_windows, FormatDuration(hold_windows * t->window_ns), FormatDuration(after_t0),
          FormatDuration(t->trial_duration_ns), FormatDuration(t->t0_ns)));
    }
    if (auto b = n.Optional("bottleneck")) {
      auto word = b->String();
      if (!word.ok() || *word != "measured") {
        FG_ASSIGN_OR_RETURN(Rate r, b->RateValue());
        if (r.kind != Rate::Kind::kBpsL1 && r.kind != Rate::Kind::kBpsL2) {
          return b->Error("bottleneck is a bit rate (L2, frames with FCS, or with L1: preamble and gap too) or "
                          "measured");
        }
        t->bottleneck_bps = r.value;
        t->bottleneck_l1 = r.kind == Rate::Kind::kBpsL1;
        t->bottleneck_where = std::string(b->Error("").message());
      }
    }
    return t;
  }

  std::string Describe(const config::TestSpec& test) const override {
    const auto& t = test.As<DcqcnConvergenceParams>();
    std::vector<std::string> m;
    for (uint32_t x : t.m) m.push_back(std::to_string(x));
    return absl::StrFormat("DCQCN convergence, m %s then m more at %s, %d parameter set(s), %d repetition(s) of %s",
                           absl::StrJoin(m, "/"), FormatDuration(t.t0_ns), t.parameter_sets.size(), t.repetitions,
                           FormatDuration(t.trial_duration_ns));
  }

  double EstimateSeconds(const config::TestSpec& test, int64_t drain_ns) const override {
    const auto& t = test.As<DcqcnConvergenceParams>();
    return static_cast<double>(t.m.size() * t.parameter_sets.size() * t.repetitions) *
           ((t.trial_duration_ns + drain_ns) / 1e9);
  }

  absl::StatusOr<std::vector<std::shared_ptr<const TestResult>>> Run(const TestContext& c,
                                                                     const config::TestSpec& test) const override {
    const auto& t = test.As<DcqcnConvergenceParams>();
    auto out = std::make_shared<DcqcnConvergenceResult>();
    out->name = test.name;
    out->window_ns = t.window_ns;
    const config::StreamSpec& tmpl = c.plan.streams[test.streams[0]];
    out->streams = {tmpl.name + "-a", tmpl.name + "-b"};
    std::vector<double> line;
    for (const port::Port* p : c.ports) line.push_back(p->capabilities().line_bps());
    for (uint32_t m : t.m) {
      for (size_t k = 0; k < t.parameter_sets.size(); ++k) {
        ConvergencePoint point;
        point.m = m;
        point.parameter_set = t.set_names[k];
        // The trial's plan: the template as two streams of m QPs each.
        config::Plan plan = c.plan;
        plan.tests.clear();
        plan.duration_ns = t.trial_duration_ns;
        config::StreamSpec a = tmpl;
        a.name = out->streams[0];
        a.flows = m;
        a.flow_weights.assign(m, 1.0);
        a.rate.value = tmpl.rate.value / tmpl.flows * m;
        a.count = 0;
        a.duration_ns = t.trial_duration_ns;
        a.start_ns = 0;
        a.frame.roce.dcqcn = t.parameter_sets[k];
        config::StreamSpec b = a;
        b.name = out->streams[1];
        b.start_ns = t.t0_ns;
        b.frame.roce.dest_qp = (a.frame.roce.dest_qp + m) & 0xFFFFFF;
        b.frame.encap.udp_src = static_cast<uint16_t>(std::min<uint32_t>(65535, a.frame.encap.udp_src + m));
        plan.streams = {a, b};
        auto streams = stream::Compile(plan, line);
        if (!streams.ok()) {
          return absl::InvalidArgumentError(absl::StrFormat("test %s, m %d: %s", test.name, m,
                                                            streams.status().message()));
        }
        const double two_groups_l1 = 2 * (*streams)[0].pps * 8 * ((*streams)[0].frame_size + kEthL1Overhead);
        if (AboveLineRate(two_groups_l1, line[tmpl.port])) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "test %s, m %d: 2 x %d QPs at their maximum (%s each) need %s at L1, above port %s's line rate %s; "
              "lower the stream's rate",
              test.name, m, m, FormatRate(Rate{tmpl.rate.kind, tmpl.rate.value / tmpl.flows}),
              FormatBitRate(two_groups_l1), c.ports[tmpl.port]->name(), FormatBitRate(line[tmpl.port])));
        }
        // `bottleneck` is the capacity the utilisation is reported against: L2,
        // or L1 less each frame's preamble and gap; never above the RX port's line.
        const double frame = (*streams)[0].frame_size;
        const double bottleneck_l2 =
            t.bottleneck_l1 ? t.bottleneck_bps * frame / (frame + kEthL1Overhead) : t.bottleneck_bps;
        if (AboveLineRate(bottleneck_l2 * (frame + kEthL1Overhead) / frame, line[tmpl.rx_port])) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "%sbottleneck %s (L2) is above port %s's line rate %s (L1: %s L2 at frames of %.0f B)",
              t.bottleneck_where, FormatBitRate(bottleneck_l2), c.ports[tmpl.rx_port]->name(),
              FormatBitRate(line[tmpl.rx_port]),
              FormatBitRate(line[tmpl.rx_port] * frame / (frame + kEthL1Overhead)), frame));
        }
        config::TestSpec spec = test;
        spec.streams = {0, 1};
        FG_ASSIGN_OR_RETURN(const LoadRunner runner, LoadRunner::Make(c.eal, c.ports, *streams, spec, {}));
        const double load = runner.line_l1_bps() > 0 ? two_groups_l1 / runner.line_l1_bps() : 0;
        for (int rep = 0; rep < t.repetitions; ++rep) {
          engine::TrialOptions opt = TrialOptionsFor(c.options);
          opt.per_flow = m;  // every QP, with its timeline
          // The responder's received counts every window: the bottleneck's delivered rate.
          opt.sample_interval_ns = t.window_ns;
          auto trial = [&]() { return engine::RunTrial(c.eal, c.ports, *streams, opt); };
          const double secs = t.trial_duration_ns / 1e9;
          auto record = [&](const engine::TrialResult& r, int index) {
            return runner.Record(r, load, secs, "run", index);
          };
          auto r = runner.RunUnlimited(trial, record, test.tester_limit_retries, c.options, out->trials);
          if (!r.ok()) {
            out->complete = false;
            out->stopped_because = std::string(r.status().message());
            if (!point.runs.empty()) out->points.push_back(std::move(point));
            return std::vector<std::shared_ptr<const TestResult>>{out};
          }
          TrialRecord rec = record(*r, static_cast<int>(out->trials.size()));
          std::vector<std::vector<tx::RatePoint>> tl;
          std::vector<std::string> names;
          for (size_t g = 0; g < 2; ++g) {
            const stream::CompiledStream& cs = (*streams)[g];
            for (const engine::FlowReport& f : r->streams[g].per_flow) {
              if (t.parameter_sets[k]) {
                tl.push_back(f.rate_timeline);
              } else {  // no reaction point: each QP at its set rate from its start
                tl.push_back({tx::RatePoint{cs.start_ns, cs.pps / m * 8 * cs.frame_size}});
              }
              names.push_back(absl::StrFormat("%c%d", g == 0 ? 'a' : 'b', f.index));
            }
          }
          const double delivered = DeliveredBps(*r, *streams, t.t0_ns);
          ConvergenceRun run = JudgeConvergence(tl, t.t0_ns, t.trial_duration_ns, t.window_ns, t.tolerance,
                                                t.hold_ns, delivered / static_cast<double>(tl.size()));
          run.delivered_bps = delivered;
          run.trial = rec.index;
          for (const engine::StreamResult& sr : r->streams) {
            run.tx_packets += sr.tx.packets;
            run.lost_packets += sr.lost();
            run.ecn_ce_packets += sr.responder.ce_seen;
            run.cnp_sent += sr.responder.cnp_sent;
            run.cnp_suppressed += sr.responder.cnp_suppressed;
            run.cnp_received += sr.analysis.cnp;
          }
          if (rep == 0) {
            point.fair_share_bps = run.fair_share_bps;
            for (int64_t s = 0; s <= t.trial_duration_ns; s += kSampleNs) point.sample_ns.push_back(s);
            for (size_t q = 0; q < tl.size(); ++q) {
              if (q % m >= kFigureQpsPerGroup) continue;
              Cursor at(tl[q]);
              std::vector<double> v;
              for (int64_t s : point.sample_ns) v.push_back(at.At(s));
              point.sample_bps.push_back(std::move(v));
              point.sample_qps.push_back(names[q]);
            }
          }
          out->trials.push_back(rec);
          if (c.options.on_trial) c.options.on_trial(out->trials.back());
          point.runs.push_back(run);
        }
        std::vector<int64_t> times;
        point.converged = true;
        for (const ConvergenceRun& run : point.runs) {
          point.converged &= run.converged;
          if (run.converged) times.push_back(run.convergence_ns);
        }
        if (!times.empty()) {
          std::sort(times.begin(), times.end());
          point.convergence_ns = times[times.size() / 2];
        }
        out->points.push_back(std::move(point));
      }
    }
    return std::vector<std::shared_ptr<const TestResult>>{out};
  }

  void WriteParameters(report::JsonWriter& w, const config::TestSpec& test, const TestResult&) const override {
    const auto& t = test.As<DcqcnConvergenceParams>();
    w.Key("m");
    w.BeginArray();
    for (uint32_t m : t.m) w.Uint(m);
    w.EndArray();
    w.Field("repetitions", t.repetitions);
    w.Field("trial_duration_ns", t.trial_duration_ns);
    w.Field("t0_ns", t.t0_ns);
    w.Field("tolerance", t.tolerance);
    w.Field("hold_ns", t.hold_ns);
    w.Field("window_ns", t.window_ns);
    w.Key("bottleneck_bps");  // as given (L1 when bottleneck_l1), for the utilisation only; null: not given
    if (t.bottleneck_bps > 0) {
      w.Double(t.bottleneck_bps);
    } else {
      w.Null();
    }
    w.Field("bottleneck_l1", t.bottleneck_l1);
    w.Key("parameter_sets");
    w.BeginArray();
    for (size_t k = 0; k < t.parameter_sets.size(); ++k) {
      w.BeginObject();
      w.Field("name", t.set_names[k]);
      if (t.parameter_sets[k]) {
        WriteDcqcnParameters(w, *t.parameter_sets[k]);
      } else {
        w.Field("preset", "none");  // no reaction point: the QPs stay at their set rates
      }
      w.EndObject();
    }
    w.EndArray();
  }

  void WriteResults(report::JsonWriter& w, const config::TestSpec&, const TestResult& result) const override {
    const auto& r = static_cast<const DcqcnConvergenceResult&>(result);
    w.Field("observation_point",
            "each QP's rate (its reaction point's rate timeline; `none`: its set rate) averaged per window from t0, "
            "against the fair share: what the responder received over [t0, end of TX] over 2m");
    w.Field("window_ns", r.window_ns);
    w.Key("points");
    w.BeginArray();
    for (const ConvergencePoint& p : r.points) {
      w.BeginObject();
      w.Field("m", p.m);
      w.Field("parameter_set", p.parameter_set);
      WriteConvergence(w, p.converged, p.convergence_ns);
      w.Field("fair_share_bps", p.fair_share_bps);
      w.Key("runs");
      w.BeginArray();
      for (const ConvergenceRun& run : p.runs) {
        w.BeginObject();
        w.Field("trial", run.trial);
        WriteConvergence(w, run.converged, run.convergence_ns);
        w.Field("fair_share_bps", run.fair_share_bps);
        w.Field("delivered_bps", run.delivered_bps);
        w.Field("final_deviation", run.final_deviation);
        w.Field("tx_packets", run.tx_packets);
        w.Field("lost_packets", run.lost_packets);
        w.Field("ecn_ce_packets", run.ecn_ce_packets);
        w.Field("cnp_sent", run.cnp_sent);
        w.Field("cnp_suppressed", run.cnp_suppressed);
        w.Field("cnp_received", run.cnp_received);
        w.EndObject();
      }
      w.EndArray();
      w.Key("rates");
      w.BeginObject();
      w.Key("t_ns");
      w.BeginArray();
      for (int64_t s : p.sample_ns) w.Int(s);
      w.EndArray();
      w.Key("qps");
      w.BeginArray();
      for (size_t q = 0; q < p.sample_qps.size(); ++q) {
        w.BeginObject();
        w.Field("qp", p.sample_qps[q]);
        w.Key("bps");
        w.BeginArray();
        for (double v : p.sample_bps[q]) w.Double(v);
        w.EndArray();
        w.EndObject();
      }
      w.EndArray();
      w.EndObject();
      // Jain's fairness index of the QPs' window rates, window by window (the first repetition's).
      w.Key("jfi");
      w.BeginObject();
      w.Key("t_ns");
      w.BeginArray();
      if (!p.runs.empty()) {
        for (int64_t x : p.runs.front().window_start_ns) w.Int(x);
      }
      w.EndArray();
      w.Key("values");
      w.BeginArray();
      if (!p.runs.empty()) {
        for (double x : p.runs.front().jfi) w.Double(x);
      }
      w.EndArray();
      w.EndObject();
      w.EndObject();
    }
    w.EndArray();
  }

  std::string Summary(const TestResult& result) const override {
    const auto& r = static_cast<const DcqcnConvergenceResult&>(result);
    std::string out = absl::StrFormat("test %s (dcqcn_convergence, rates averaged over %s windows)%s\n", r.name,
                                      FormatDuration(r.window_ns),
                                      r.complete ? "" : ": incomplete: " + r.stopped_because);
    for (const ConvergencePoint& p : r.points) {
      out += absl::StrFormat("  m %d + %d, %s: %s, fair share %s (delivered / 2m)", p.m, p.m, p.parameter_set,
                             p.converged ? "converged in " + FormatDuration(p.convergence_ns) + " after t0"
                                         : std::string("not converged"),
                             FormatBitRate(p.fair_share_bps));
      if (!p.runs.empty()) {
        const ConvergenceRun& run = p.runs.front();
        out += absl::StrFormat(
            "; ended within %.1f %% of it; JFI %.3f in the last window; lost %s of %s frames, %s CE marks, %s CNPs "
            "sent (first repetition)",
            run.final_deviation * 100, run.jfi.empty() ? 1.0 : run.jfi.back(),
            FormatCount(static_cast<uint64_t>(std::max<int64_t>(run.lost_packets, 0))), FormatCount(run.tx_packets),
            FormatCount(run.ecn_ce_packets), FormatCount(run.cnp_sent));
      }
      out += "\n";
    }
    return out;
  }
};

}  // namespace

void WriteDcqcnParameters(report::JsonWriter& w, const config::DcqcnSpec& p) {
  w.Field("preset", p.preset);
  w.Field("g", p.g);
  w.Field("initial_alpha", p.initial_alpha);
  w.Field("alpha_period_ns", p.alpha_period_ns);
  w.Field("timer_ns", p.timer_ns);
  w.Field("byte_counter_bytes", p.byte_counter);
  w.Field("threshold", static_cast<uint64_t>(p.threshold));
  w.Field("rate_ai_bps", p.rate_ai_bps);
  w.Field("rate_hai_bps", p.rate_hai_bps);
  w.Field("min_rate_bps", p.min_rate_bps);
  w.Field("rate_reduce_period_ns", p.rate_reduce_period_ns);
  w.Field("min_dec_factor", p.min_dec_factor);
  w.Field("alpha_update", p.alpha_per_period ? "per_period" : "per_cnp");  // when alpha moves (DcqcnSpec::alpha_per_period)
  w.Key("scale_to_bps");  // the preset slowed to this link (its rates x k, times / k), or null
  if (p.scale_to_bps > 0) {
    w.Double(p.scale_to_bps);
  } else {
    w.Null();
  }
}

const TestKind& DcqcnConvergenceKind() {
  static const DcqcnConvergence kind;
  return kind;
}

}  // namespace fg::methods
