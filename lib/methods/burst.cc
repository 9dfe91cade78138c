#include "methods/burst.h"

#include "absl/strings/str_format.h"
#include "base/status.h"
#include "config/reader.h"

namespace fg::methods {

absl::StatusOr<BurstResult> RunBurst(const port::Eal& eal, const std::vector<port::Port*>& ports,
                                     const std::vector<stream::CompiledStream>& streams, const config::TestSpec& test,
                                     const MethodOptions& options) {
  const BurstParams& bp = test.As<BurstParams>();
  BurstResult out;
  out.name = test.name;
  out.repetitions = bp.repetitions;
  FG_ASSIGN_OR_RETURN(const LoadRunner all, LoadRunner::Make(eal, ports, streams, test, {.bursts = true}));
  out.streams = all.stream_names();
  const std::vector<int> ratios =
      bp.incast.empty() ? std::vector<int>{static_cast<int>(test.streams.size())} : bp.incast;
  for (int senders : ratios) {
    config::TestSpec sub = test;
    sub.streams.assign(test.streams.begin(), test.streams.begin() + senders);
    FG_ASSIGN_OR_RETURN(const LoadRunner runner, LoadRunner::Make(eal, ports, streams, sub, {.bursts = true}));
    BurstPoint point;
    point.senders = senders;
    point.virtual_senders = runner.virtual_senders();
    // One trial: true when no frame of any repetition was lost.
    auto record = [&](const engine::TrialResult& r, int index, bool counted, uint32_t frames) {
      TrialRecord t = runner.Record(r, 1.0, r.duration_ns / 1e9, counted ? "burst" : "warm-up", index);
      t.burst_frames = frames;
      t.senders = senders;
      return t;
    };
    auto passes = [&](uint32_t frames, int reps, bool counted) -> absl::StatusOr<bool> {
      auto run = [&] { return runner.RunBursts(frames, reps, bp.gap_ns, options); };
      // A warm-up is not judged; a counted trial the tester limited is run again.
      auto r = counted
                   ? runner.RunUnlimited(
                         run, [&](const engine::TrialResult& x, int index) { return record(x, index, true, frames); },
                         test.tester_limit_retries, options, out.trials)
                   : run();
      if (!r.ok()) {
        out.complete = false;
        out.stopped_because = std::string(r.status().message());
        return r.status();
      }
      TrialRecord t = record(*r, static_cast<int>(out.trials.size()), counted, frames);
      if (!counted) {
        t.included = false;
        t.excluded_because = "warm-up: fills address tables before the first counted burst";
      }
      out.trials.push_back(t);
      if (options.on_trial) options.on_trial(t);
      return t.tx_frames <= t.rx_frames;
    };
    if (test.warmup_ns > 0 && senders == ratios.front()) {
      if (!passes(bp.min_frames, 1, false).ok()) return out;
    }
    // Binary search for the longest passing N: lo passes (or is below min), hi fails (or is above max).
    uint32_t lo = 0, hi = bp.max_frames + 1;
    auto at_max = passes(bp.max_frames, bp.repetitions, true);
    if (!at_max.ok()) return out;
    if (*at_max) {
      lo = bp.max_frames;
    } else {
      hi = bp.max_frames;
      lo = bp.min_frames - 1;
      while (hi - lo > 1) {
        const uint32_t mid = lo + (hi - lo) / 2;
        auto p = passes(mid, bp.repetitions, true);
        if (!p.ok()) return out;
        (*p ? lo : hi) = mid;
      }
    }
    point.found = lo >= bp.min_frames;
    point.absorbed_frames = point.found ? lo : 0;
    point.first_loss_frames = hi <= bp.max_frames ? hi : 0;
    out.points.push_back(point);
  }
  return out;
}

namespace {

class Burst final : public TestKind {
 public:
  std::string_view key() const override { return "burst"; }
  std::vector<std::string_view> own_keys() const override {
    return {"min_frames", "max_frames", "repetitions", "gap", "incast"};
  }
  int64_t default_warmup_ns() const override { return 0; }

  absl::StatusOr<std::shared_ptr<const config::TestParams>> Parse(const config::Plan&, const config::Node& n,
                                                                  const config::TestSpec& test) const override {
    using config::IntIn;
    using config::Opt;
    auto t = std::make_shared<BurstParams>();
    FG_RETURN_IF_ERROR(Opt(n, "min_frames", t->min_frames, IntIn(1, 1 << 24)));
    FG_RETURN_IF_ERROR(Opt(n, "max_frames", t->max_frames, IntIn(1, 1 << 24)));
    if (t->min_frames > t->max_frames) return n.At("min_frames").Error("min_frames must not be above max_frames");
    FG_RETURN_IF_ERROR(Opt(n, "repetitions", t->repetitions, IntIn(1, 100000)));
    FG_RETURN_IF_ERROR(Opt(n, "gap", t->gap_ns, config::DurationIn()));
    if (auto list = n.Optional("incast")) {
      FG_ASSIGN_OR_RETURN(std::vector<config::Node> items, list->Items());
      for (const config::Node& i : items) {
        FG_ASSIGN_OR_RETURN(int64_t k, i.Int(1, static_cast<int64_t>(test.streams.size())));
        t->incast.push_back(static_cast<int>(k));
      }
    }
    return t;
  }

  std::string Describe(const config::TestSpec& test) const override {
    const BurstParams& t = test.As<BurstParams>();
    return absl::StrFormat("burst, %d..%d frames, %d repetitions per length", t.min_frames, t.max_frames,
                           t.repetitions);
  }

  double EstimateSeconds(const config::TestSpec& test, int64_t drain_ns) const override {
    const BurstParams& t = test.As<BurstParams>();
    const double per_trial = t.repetitions * (t.gap_ns / 1e9) + drain_ns / 1e9;
    const double ratios = t.incast.empty() ? 1 : static_cast<double>(t.incast.size());
    return test.warmup_ns / 1e9 + ratios * (1 + Halvings(t.max_frames - t.min_frames + 1)) * per_trial;
  }

  absl::StatusOr<std::vector<std::shared_ptr<const TestResult>>> Run(const TestContext& c,
                                                                     const config::TestSpec& test) const override {
    FG_ASSIGN_OR_RETURN(BurstResult r, RunBurst(c.eal, c.ports, c.streams, test, c.options));
    return std::vector<std::shared_ptr<const TestResult>>{std::make_shared<BurstResult>(std::move(r))};
  }

  void WriteParameters(report::JsonWriter& w, const config::TestSpec& test, const TestResult&) const override {
    const BurstParams& t = test.As<BurstParams>();
    w.Field("min_frames", t.min_frames);
    w.Field("max_frames", t.max_frames);
    w.Field("repetitions", t.repetitions);
    w.Field("gap_s", t.gap_ns / 1e9);
    w.Key("incast");
    w.BeginArray();
    for (int n : t.incast) w.Int(n);
    w.EndArray();
  }

  void WriteResults(report::JsonWriter& w, const config::TestSpec&, const TestResult& result) const override {
    const auto& r = static_cast<const BurstResult&>(result);
    w.Field("observation_point",
            "fabricgen analyzer at the fabric boundary: a burst length passes when every frame "
            "of every repetition arrives");
    w.Key("incast");
    w.BeginArray();
    for (const BurstPoint& p : r.points) {
      w.BeginObject();
      w.Field("incast_ratio", absl::StrFormat("%d:1", p.senders));
      w.Field("senders", p.senders);
      w.Field("virtual_senders_sharing_a_port", p.virtual_senders);
      w.Field("found", p.found);
      w.Field("absorbed_burst_frames_per_sender", p.absorbed_frames);
      w.Field("first_loss_burst_frames_per_sender", p.first_loss_frames);
      w.EndObject();
    }
    w.EndArray();
  }

  std::string Summary(const TestResult& result) const override {
    const auto& r = static_cast<const BurstResult&>(result);
    std::string out = absl::StrFormat("test %s (burst, %d repetitions per length)%s\n", r.name, r.repetitions,
                                      r.complete ? "" : ", INCOMPLETE: " + r.stopped_because);
    for (const BurstPoint& p : r.points) {
      out += absl::StrFormat(
          "  incast %d:1%s: %s\n", p.senders,
          p.virtual_senders ? absl::StrFormat(" (%d virtual senders)", p.virtual_senders) : "",
          p.found ? absl::StrFormat("absorbs %d frames per sender; %s", p.absorbed_frames,
                                    p.first_loss_frames ? absl::StrFormat("first loss at %d", p.first_loss_frames)
                                                        : "no loss up to the maximum")
                  : "loses frames even at the shortest burst");
    }
    return out;
  }
};

}  // namespace

const TestKind& BurstKind() {
  static const Burst kind;
  return kind;
}

}  // namespace fg::methods
