#include "methods/ecn_marking.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "base/status.h"
#include "base/units.h"
#include "config/reader.h"
#include "report/json.h"

namespace fg::methods {

std::vector<EcnBin> BinByDepth(const stats::LatencyHistogram& all, const stats::LatencyHistogram& marked,
                               double base_ns, double bps, uint64_t bin_bytes, uint64_t* beyond) {
  std::vector<EcnBin> bins;
  if (beyond != nullptr) *beyond = 0;
  auto add = [&](const stats::LatencyHistogram& h, bool ce) {
    for (size_t i = 0; i < h.counts().size(); ++i) {
      const uint64_t n = h.counts()[i];
      if (n == 0) continue;
      // The bucket's middle (its samples are within half its width of it).
      const double ns = static_cast<double>(stats::LatencyHistogram::BucketLow(i)) +
                        static_cast<double>(stats::LatencyHistogram::BucketWidth(i)) / 2;
      const double depth = std::max(0.0, (ns - base_ns) * bps / 8e9);
      const double at = depth / static_cast<double>(bin_bytes);
      if (at >= static_cast<double>(kMaxEcnBins)) {  // a latency no queue of this test explains
        if (beyond != nullptr && !ce) *beyond += n;
        continue;
      }
      const size_t b = static_cast<size_t>(at);
      if (b >= bins.size()) {
        const size_t from = bins.size();
        bins.resize(b + 1);
        for (size_t k = from; k <= b; ++k) bins[k].depth_bytes = k * bin_bytes;
      }
      (ce ? bins[b].marked : bins[b].frames) += n;
    }
  };
  add(all, false);
  add(marked, true);
  return bins;
}

EcnCurve FitCurve(const std::vector<EcnBin>& bins, uint64_t bin_bytes, uint64_t min_frames) {
  EcnCurve c;
  // Kmax: the first bin from which every counted bin is all marked.
  std::optional<size_t> kmax_bin;
  for (size_t b = bins.size(); b-- > 0;) {
    if (bins[b].frames < min_frames) continue;
    if (bins[b].probability() < 0.99) break;
    kmax_bin = b;
  }
  if (kmax_bin) c.kmax_bytes = static_cast<double>(bins[*kmax_bin].depth_bytes);
  // The ramp below it: a line through the counted bins with marks, each
  // weighted by its frames (a bin's probability is its frames' mean).
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  size_t used = 0;
  std::optional<size_t> first_marked;
  // (Not the bin just below Kmax's: it also takes frames within the depth
  // estimate's error of the step to all marked.)
  const size_t fit_end = kmax_bin ? (*kmax_bin > 0 ? *kmax_bin - 1 : 0) : bins.size();
  for (size_t b = 0; b < fit_end; ++b) {
    const EcnBin& e = bins[b];
    if (e.frames < min_frames || e.marked == 0) continue;
    if (!first_marked) first_marked = b;
    const double w = static_cast<double>(e.frames);
    const double x = static_cast<double>(e.depth_bytes) + static_cast<double>(bin_bytes) / 2;
    const double y = e.probability();
    sw += w, sx += w * x, sy += w * y, sxx += w * x * x, sxy += w * x * y;
    ++used;
  }
  const double den = sw * sxx - sx * sx;
  if (used >= 2 && den > 0) {
    const double slope = (sw * sxy - sx * sy) / den;
    const double at0 = (sy - slope * sx) / sw;
    if (slope > 0) {
      c.kmin_bytes = std::max(0.0, -at0 / slope);
      if (c.kmax_bytes) c.pmax = std::clamp(at0 + slope * *c.kmax_bytes, 0.0, 1.0);
    }
  }
  if (!c.kmin_bytes && first_marked) c.kmin_bytes = static_cast<double>(bins[*first_marked].depth_bytes);
  return c;
}

namespace {

std::string FormatBytes(uint64_t n) { return FormatCount(n) + " B"; }

absl::StatusOr<EcnMarkingResult> RunEcnMarking(const TestContext& c, const config::TestSpec& test) {
  const EcnMarkingParams& p = test.As<EcnMarkingParams>();
  EcnMarkingResult out;
  out.name = test.name;
  out.bottleneck_bps = p.bottleneck_bps;
  out.bin_bytes = p.bin_bytes;
  FG_ASSIGN_OR_RETURN(const LoadRunner runner, LoadRunner::Make(c.eal, c.ports, c.streams, test, {}));
  out.streams = runner.stream_names();
  // Unloaded: 1 % of the bottleneck unless the plan says; a base run that
  // itself fills the queue would make every depth wrong, so at most 10 %.
  const double base_load = p.base_load_given ? p.base_load : 0.01 * p.bottleneck_bps / runner.line_l1_bps();
  if (base_load * runner.line_l1_bps() > 0.1 * p.bottleneck_bps) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: base_load %.4g %% of line is %s, over 10 %% of the bottleneck's %s: the unloaded run would queue",
        test.name, base_load * 100, FormatBitRate(base_load * runner.line_l1_bps()), FormatBitRate(p.bottleneck_bps)));
  }
  auto stop = [&](const absl::Status& s) {
    out.complete = false;
    out.stopped_because = std::string(s.message());
    return out;
  };
  // 1. Unloaded: the base latency (the path's own, no queue).
  const double base_s = p.base_duration_ns / 1e9;
  if (absl::Status w = RunWarmup(runner, test, base_load, c.options, out.trials); !w.ok()) return stop(w);
  auto base = runner.RunUnlimited(
      [&] { return runner.Run(base_load, base_s, c.options); },
      [&](const engine::TrialResult& r, int index) { return runner.Record(r, base_load, base_s, "base", index); },
      test.tester_limit_retries, c.options, out.trials);
  if (!base.ok()) return stop(base.status());
  out.trials.push_back(runner.Record(*base, base_load, base_s, "base", static_cast<int>(out.trials.size())));
  if (c.options.on_trial) c.options.on_trial(out.trials.back());
  stats::LatencyHistogram unloaded;
  for (const engine::StreamResult& s : base->streams) unloaded.Merge(s.analysis.latency);
  if (unloaded.count() == 0) return stop(absl::FailedPreconditionError("the unloaded run received no frame"));
  out.base_latency_ns = unloaded.Percentile(50);
  // 2. The ramps: each burst sweeps the queue from empty.
  auto ramps =
      runner.RunUnlimited([&] { return runner.RunBursts(p.ramp_frames, p.ramp_repetitions, p.ramp_gap_ns, c.options); },
                          [&](const engine::TrialResult& r, int index) {
                            return runner.Record(r, 1.0, r.duration_ns / 1e9, "ramps", index);
                          },
                          test.tester_limit_retries, c.options, out.trials);
  if (!ramps.ok()) return stop(ramps.status());
  out.trials.push_back(
      runner.Record(*ramps, 1.0, ramps->duration_ns / 1e9, "ramps", static_cast<int>(out.trials.size())));
  if (c.options.on_trial) c.options.on_trial(out.trials.back());
  stats::LatencyHistogram all, marked;
  for (const engine::StreamResult& s : ramps->streams) {
    all.Merge(s.analysis.latency);
    marked.Merge(s.analysis.latency_ce);
  }
  out.frames = all.count();
  out.marked = marked.count();
  out.observation_point = ramps->timestamp_source;
  out.bins = BinByDepth(all, marked, out.base_latency_ns, p.bottleneck_bps, p.bin_bytes, &out.beyond);
  out.measured = FitCurve(out.bins, p.bin_bytes, p.min_frames);
  return out;
}

void Optional(report::JsonWriter& w, const char* key, const std::optional<double>& v) {
  w.Key(key);
  if (v) {
    w.Double(*v);
  } else {
    w.Null();
  }
}

class EcnMarking final : public TestKind {
 public:
  std::string_view key() const override { return "ecn_marking"; }
  // The unloaded run comes first and is short: no warm-up unless the plan asks.
  int64_t default_warmup_ns() const override { return 0; }
  std::vector<std::string_view> own_keys() const override {
    return {"bottleneck", "bin", "ramp", "base_load", "base_duration", "min_frames", "configured"};
  }

  absl::StatusOr<std::shared_ptr<const config::TestParams>> Parse(const config::Plan&, const config::Node& n,
                                                                  const config::TestSpec&) const override {
    using config::IntIn;
    using config::Opt;
    auto t = std::make_shared<EcnMarkingParams>();
    FG_ASSIGN_OR_RETURN(config::Node b, n.Required("bottleneck"));
    FG_ASSIGN_OR_RETURN(Rate r, b.RateValue());
    if (r.kind != Rate::Kind::kBpsL2) {
      return b.Error(
          "bottleneck is the rate its queue drains at, in the bits of the bytes it counts (e.g. 20 Mbps; "
          "not L1 or a packet rate)");
    }
    t->bottleneck_bps = r.value;
    if (auto v = n.Optional("bin")) {
      FG_ASSIGN_OR_RETURN(t->bin_bytes, v->Bytes(64, 1ull << 30));
    }
    if (auto v = n.Optional("ramp")) {
      FG_RETURN_IF_ERROR(v->ExpectMap());
      FG_RETURN_IF_ERROR(v->CheckKeys({"frames", "gap", "repetitions"}));
      FG_RETURN_IF_ERROR(Opt(*v, "frames", t->ramp_frames, IntIn(1, 1 << 24)));
      FG_RETURN_IF_ERROR(Opt(*v, "gap", t->ramp_gap_ns, config::DurationIn()));
      FG_RETURN_IF_ERROR(Opt(*v, "repetitions", t->ramp_repetitions, IntIn(1, 1'000'000)));
      if (t->ramp_gap_ns <= 0) return v->At("gap").Error("the gap lets the queue drain: give it a duration");
    }
    if (auto v = n.Optional("base_load")) {
      FG_ASSIGN_OR_RETURN(t->base_load, v->Percent(1e-4, 100));
      t->base_load_given = true;
    }
    FG_RETURN_IF_ERROR(Opt(n, "base_duration", t->base_duration_ns, config::DurationIn()));
    if (t->base_duration_ns < kMinTrialNs) return n.At("base_duration").Error("base_duration is at least 1 ms");
    FG_RETURN_IF_ERROR(Opt(n, "min_frames", t->min_frames, IntIn(1, 1 << 30)));
    if (auto v = n.Optional("configured")) {
      FG_RETURN_IF_ERROR(v->ExpectMap());
      FG_RETURN_IF_ERROR(v->CheckKeys({"kmin", "kmax", "pmax"}));
      EcnMarkingParams::Configured k;
      FG_ASSIGN_OR_RETURN(config::Node kmin, v->Required("kmin"));
      FG_ASSIGN_OR_RETURN(k.kmin, kmin.Bytes(0, 1ull << 40));
      FG_ASSIGN_OR_RETURN(config::Node kmax, v->Required("kmax"));
      FG_ASSIGN_OR_RETURN(k.kmax, kmax.Bytes(1, 1ull << 40));
      FG_ASSIGN_OR_RETURN(config::Node pmax, v->Required("pmax"));
      FG_ASSIGN_OR_RETURN(k.pmax, pmax.Percent(0, 100));
      if (k.kmin >= k.kmax) return kmax.Error("kmax must be above kmin");
      t->configured = k;
    }
    return t;
  }

  std::string Describe(const config::TestSpec& test) const override {
    const EcnMarkingParams& t = test.As<EcnMarkingParams>();
    return absl::StrFormat("ecn_marking, %d ramps of %d frames through %s, depth bins of %s", t.ramp_repetitions,
                           t.ramp_frames, FormatBitRate(t.bottleneck_bps), FormatBytes(t.bin_bytes));
  }

  double EstimateSeconds(const config::TestSpec& test, int64_t drain_ns) const override {
    const EcnMarkingParams& t = test.As<EcnMarkingParams>();
    return test.warmup_ns / 1e9 + (t.base_duration_ns + drain_ns) / 1e9 + t.ramp_repetitions * (t.ramp_gap_ns / 1e9) +
           drain_ns / 1e9;
  }

  absl::StatusOr<std::vector<std::shared_ptr<const TestResult>>> Run(const TestContext& c,
                                                                     const config::TestSpec& test) const override {
    FG_ASSIGN_OR_RETURN(EcnMarkingResult r, RunEcnMarking(c, test));
    return std::vector<std::shared_ptr<const TestResult>>{std::make_shared<EcnMarkingResult>(std::move(r))};
  }

  void WriteParameters(report::JsonWriter& w, const config::TestSpec& test, const TestResult&) const override {
    const EcnMarkingParams& t = test.As<EcnMarkingParams>();
    w.Field("bottleneck_bps", t.bottleneck_bps);
    w.Field("bin_bytes", t.bin_bytes);
    w.Field("ramp_frames", t.ramp_frames);
    w.Field("ramp_gap_ns", t.ramp_gap_ns);
    w.Field("ramp_repetitions", t.ramp_repetitions);
    w.Key("base_load_fraction_of_line");  // null: 1 % of the bottleneck (the base trial's record has the load)
    if (t.base_load_given) {
      w.Double(t.base_load);
    } else {
      w.Null();
    }
    w.Field("base_duration_ns", t.base_duration_ns);
    w.Field("min_frames", t.min_frames);
    w.Key("configured");
    if (t.configured) {
      w.BeginObject();
      w.Field("kmin_bytes", t.configured->kmin);
      w.Field("kmax_bytes", t.configured->kmax);
      w.Field("pmax", t.configured->pmax);
      w.EndObject();
    } else {
      w.Null();
    }
  }

  void WriteResults(report::JsonWriter& w, const config::TestSpec& test, const TestResult& result) const override {
    const EcnMarkingParams& t = test.As<EcnMarkingParams>();
    const auto& r = static_cast<const EcnMarkingResult&>(result);
    w.Field("base_latency_ns", r.base_latency_ns);
    w.Field("observation_point", r.observation_point);
    w.Field("frames", r.frames);
    w.Field("marked", r.marked);
    w.Field("beyond_bins_frames", r.beyond);
    Optional(w, "kmin_bytes", r.measured.kmin_bytes);
    Optional(w, "kmax_bytes", r.measured.kmax_bytes);
    Optional(w, "pmax", r.measured.pmax);
    w.Key("deviation");  // measured - configured (null: nothing configured, or not measured)
    if (t.configured) {
      w.BeginObject();
      auto dev = [](const std::optional<double>& m, double conf) {
        return m ? std::optional<double>(*m - conf) : std::nullopt;
      };
      Optional(w, "kmin_bytes", dev(r.measured.kmin_bytes, static_cast<double>(t.configured->kmin)));
      Optional(w, "kmax_bytes", dev(r.measured.kmax_bytes, static_cast<double>(t.configured->kmax)));
      Optional(w, "pmax", dev(r.measured.pmax, t.configured->pmax));
      w.EndObject();
    } else {
      w.Null();
    }
    w.Key("bins");
    w.BeginArray();
    for (const EcnBin& b : r.bins) {
      if (b.frames == 0) continue;
      w.BeginObject();
      w.Field("depth_bytes", b.depth_bytes);
      w.Field("frames", b.frames);
      w.Field("marked", b.marked);
      w.Field("probability", b.probability());
      w.EndObject();
    }
    w.EndArray();
  }

  std::string Summary(const TestResult& result) const override {
    const auto& r = static_cast<const EcnMarkingResult&>(result);
    auto bytes = [](const std::optional<double>& v) {
      return v ? FormatBytes(static_cast<uint64_t>(std::llround(*v))) : std::string("not seen");
    };
    std::string out = absl::StrFormat(
        "test %s (ecn_marking through %s, %s frames in %zu bins of %s, base latency %s)%s\n"
        "  measured Kmin %s, Kmax %s, Pmax %s; %s of %s frames marked\n",
        r.name, FormatBitRate(r.bottleneck_bps), FormatCount(r.frames), r.bins.size(), FormatBytes(r.bin_bytes),
        FormatDuration(static_cast<int64_t>(r.base_latency_ns)), r.complete ? "" : ", INCOMPLETE: " + r.stopped_because,
        bytes(r.measured.kmin_bytes), bytes(r.measured.kmax_bytes),
        r.measured.pmax ? absl::StrFormat("%.1f %%", *r.measured.pmax * 100) : std::string("not seen"),
        FormatCount(r.marked), FormatCount(r.frames));
    out += "  depth      frames    marked  probability\n";
    for (const EcnBin& b : r.bins) {
      if (b.frames == 0) continue;
      out += absl::StrFormat("  %-9s %8s %9s  %10.4f\n", FormatBytes(b.depth_bytes), FormatCount(b.frames),
                             FormatCount(b.marked), b.probability());
    }
    return out + "  observation point: " + r.observation_point + "\n";
  }
};

}  // namespace

const TestKind& EcnMarkingKind() {
  static const EcnMarking kind;
  return kind;
}

}  // namespace fg::methods
