#include "methods/load_balance.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/status.h"
#include "base/units.h"
#include "config/reader.h"

namespace fg::methods {

double MaxMeanRatio(const std::vector<double>& loads) {
  double sum = 0, max = 0;
  for (double l : loads) {
    sum += l;
    max = std::max(max, l);
  }
  return sum > 0 ? max / (sum / static_cast<double>(loads.size())) : 0;
}

double JainFairnessIndex(const std::vector<double>& loads) {
  double sum = 0, sq = 0;
  for (double l : loads) {
    sum += l;
    sq += l * l;
  }
  return sq > 0 ? sum * sum / (static_cast<double>(loads.size()) * sq) : 0;
}

namespace {

void Score(const std::vector<LinkLoad>& links, double& mmr, double& jfi) {
  std::vector<double> bytes;
  for (const LinkLoad& l : links) bytes.push_back(static_cast<double>(l.tx_bytes));
  mmr = MaxMeanRatio(bytes);
  jfi = JainFairnessIndex(bytes);
}

// The listed links' counters, or an error naming the ones the DUT lacks.
absl::StatusOr<std::vector<LinkCounters>> Read(const LinkCounterReader& read, const std::vector<std::string>& links) {
  FG_ASSIGN_OR_RETURN(const auto all, read());
  std::vector<LinkCounters> out;
  std::vector<std::string> missing;
  for (const std::string& l : links) {
    auto it = all.find(l);
    if (it == all.end()) {
      missing.push_back(l);
      continue;
    }
    out.push_back(it->second);
  }
  if (!missing.empty()) {
    std::vector<std::string> names;
    for (const auto& [name, c] : all) names.push_back(name);
    return absl::NotFoundError(absl::StrFormat("the DUT's counters have no link %s (it has: %s)",
                                               absl::StrJoin(missing, ", "), absl::StrJoin(names, ", ")));
  }
  return out;
}

}  // namespace

absl::StatusOr<LoadBalanceResult> RunLoadBalance(const port::Eal& eal, const std::vector<port::Port*>& ports,
                                                 const std::vector<stream::CompiledStream>& streams,
                                                 const config::TestSpec& test, const MethodOptions& options,
                                                 const LinkCounterReader& read_counters) {
  const LoadBalanceParams& lp = test.As<LoadBalanceParams>();
  LoadBalanceResult out;
  out.name = test.name;
  out.load = lp.load;
  FG_ASSIGN_OR_RETURN(const LoadRunner runner, LoadRunner::Make(eal, ports, streams, test, {}));
  out.streams = runner.stream_names();
  out.line_l1_bps = runner.line_l1_bps();
  for (const stream::CompiledStream& s : streams) {
    if (s.read_response()) continue;  // a READ's QPs are its requests'
    if (std::find(out.streams.begin(), out.streams.end(), s.name) != out.streams.end()) out.flows += s.flows;
  }
  for (const std::string& l : lp.links) out.links.push_back(LinkLoad{l, 0, 0});
  // Before any traffic: the links must exist.
  FG_RETURN_IF_ERROR(Read(read_counters, lp.links).status());
  auto stop = [&](const absl::Status& s) {
    out.complete = false;
    out.stopped_because = std::string(s.message());
  };
  if (absl::Status w = RunWarmup(runner, test, lp.load, options, out.trials); !w.ok()) {
    stop(w);
    return out;
  }
  const double secs = lp.trial_duration_ns / 1e9;
  for (int i = 0; i < lp.runs; ++i) {
    // The DUT's counters around each attempt (after the drain: every frame
    // of the trial has left the DUT); an attempt the tester limited is
    // recorded, not counted, and run again.
    std::vector<LinkCounters> before, after;
    auto attempt = [&]() -> absl::StatusOr<engine::TrialResult> {
      FG_ASSIGN_OR_RETURN(before, Read(read_counters, lp.links));
      FG_ASSIGN_OR_RETURN(engine::TrialResult r, runner.Run(lp.load, secs, options));
      FG_ASSIGN_OR_RETURN(after, Read(read_counters, lp.links));
      return r;
    };
    auto r = runner.RunUnlimited(
        attempt,
        [&](const engine::TrialResult& x, int index) { return runner.Record(x, lp.load, secs, "run", index); },
        test.tester_limit_retries, options, out.trials);
    if (!r.ok()) {
      stop(r.status());
      return out;
    }
    LoadBalanceRun run;
    run.trial = runner.Record(*r, lp.load, secs, "run", static_cast<int>(out.trials.size()));
    for (size_t k = 0; k < lp.links.size(); ++k) {
      LinkLoad l{lp.links[k], after[k].tx_packets - before[k].tx_packets, after[k].tx_bytes - before[k].tx_bytes};
      out.links[k].tx_packets += l.tx_packets;
      out.links[k].tx_bytes += l.tx_bytes;
      out.link_packets += l.tx_packets;
      run.links.push_back(l);
    }
    Score(run.links, run.mmr, run.jfi);
    out.rx_frames += run.trial.rx_frames;
    out.trials.push_back(run.trial);
    out.runs.push_back(std::move(run));
    if (options.on_trial) options.on_trial(out.runs.back().trial);
  }
  Score(out.links, out.mmr, out.jfi);
  return out;
}

namespace {

void WriteLinks(report::JsonWriter& w, const std::vector<LinkLoad>& links) {
  w.Key("links");
  w.BeginArray();
  for (const LinkLoad& l : links) {
    w.BeginObject();
    w.Field("name", l.name);
    w.Field("tx_packets", l.tx_packets);
    w.Field("tx_bytes", l.tx_bytes);
    w.EndObject();
  }
  w.EndArray();
}

class LoadBalance final : public TestKind {
 public:
  std::string_view key() const override { return "load_balance"; }
  std::vector<std::string_view> own_keys() const override {
    std::vector<std::string_view> keys = {"links"};
    keys.insert(keys.end(), std::begin(kFixedLoadKeys), std::end(kFixedLoadKeys));
    return keys;
  }

  absl::StatusOr<std::shared_ptr<const config::TestParams>> Parse(const config::Plan& plan, const config::Node& n,
                                                                  const config::TestSpec&) const override {
    if (plan.dut_counters.empty()) {
      return n.Error("a load_balance test reads the DUT's link counters: give the plan `dut_counters` (a command)");
    }
    auto t = std::make_shared<LoadBalanceParams>();
    FG_ASSIGN_OR_RETURN(config::Node links, n.Required("links"));
    FG_ASSIGN_OR_RETURN(std::vector<config::Node> items, links.Items());
    if (items.size() < 2) return links.Error("links: name at least two parallel links (the DUT's counter names)");
    std::set<std::string> seen;
    for (const config::Node& i : items) {
      FG_ASSIGN_OR_RETURN(std::string link, i.String());
      if (!seen.insert(link).second) return i.Error(absl::StrFormat("link '%s' is listed twice", link));
      t->links.push_back(link);
    }
    t->runs = 1;
    t->trial_duration_ns = 10'000'000'000;
    FG_RETURN_IF_ERROR(ParseFixedLoad(n, *t));
    return t;
  }

  std::string Describe(const config::TestSpec& test) const override {
    const LoadBalanceParams& t = test.As<LoadBalanceParams>();
    return absl::StrFormat("load balance over %d links, %d run(s) of %s at %.3f %% of line", t.links.size(), t.runs,
                           FormatDuration(t.trial_duration_ns), t.load * 100);
  }

  double EstimateSeconds(const config::TestSpec& test, int64_t drain_ns) const override {
    const LoadBalanceParams& t = test.As<LoadBalanceParams>();
    return test.warmup_ns / 1e9 + t.runs * ((t.trial_duration_ns + drain_ns) / 1e9);
  }

  absl::StatusOr<std::vector<std::shared_ptr<const TestResult>>> Run(const TestContext& c,
                                                                     const config::TestSpec& test) const override {
    FG_ASSIGN_OR_RETURN(LoadBalanceResult r,
                        RunLoadBalance(c.eal, c.ports, c.streams, test, c.options, c.read_dut_counters));
    return std::vector<std::shared_ptr<const TestResult>>{std::make_shared<LoadBalanceResult>(std::move(r))};
  }

  void WriteParameters(report::JsonWriter& w, const config::TestSpec& test, const TestResult&) const override {
    const LoadBalanceParams& t = test.As<LoadBalanceParams>();
    w.Field("load_fraction_of_line", t.load);
    w.Field("runs", t.runs);
    w.Field("trial_duration_s", t.trial_duration_ns / 1e9);
    w.Field("warmup_s", test.warmup_ns / 1e9);
    w.Key("links");
    w.BeginArray();
    for (const std::string& l : t.links) w.String(l);
    w.EndArray();
  }

  void WriteResults(report::JsonWriter& w, const config::TestSpec&, const TestResult& result) const override {
    const auto& r = static_cast<const LoadBalanceResult&>(result);
    w.Field("line_rate_bps_l1", r.line_l1_bps);
    w.Field("flows", r.flows);
    w.Field("observation_point",
            "the DUT's own per-link transmit counters (plan dut_counters), read before and after each run; "
            "L_i = bytes sent on link i");
    w.Field("mmr", r.mmr);
    w.Field("jfi", r.jfi);
    w.Field("link_packets", r.link_packets);
    w.Field("rx_frames_unique", r.rx_frames);
    WriteLinks(w, r.links);
    w.Key("runs");
    w.BeginArray();
    for (const LoadBalanceRun& run : r.runs) {
      w.BeginObject();
      w.Field("trial_index", run.trial.index);
      w.Field("mmr", run.mmr);
      w.Field("jfi", run.jfi);
      WriteLinks(w, run.links);
      w.EndObject();
    }
    w.EndArray();
  }

  std::string Summary(const TestResult& result) const override {
    const auto& r = static_cast<const LoadBalanceResult&>(result);
    std::string out =
        absl::StrFormat("test %s (load balance at %.3f %% of line, %d flows over %d links)%s\n", r.name, r.load * 100,
                        r.flows, r.links.size(), r.complete ? "" : ", INCOMPLETE: " + r.stopped_because);
    for (const LinkLoad& l : r.links) {
      out += absl::StrFormat("  %-20s %s frames, %s bytes\n", l.name, FormatCount(l.tx_packets),
                             FormatCount(l.tx_bytes));
    }
    out += absl::StrFormat("  MMR %.4f, JFI %.4f (of bytes); the links carried %s frames, the analyzer received %s\n",
                           r.mmr, r.jfi, FormatCount(r.link_packets), FormatCount(r.rx_frames));
    return out;
  }
};

}  // namespace

const TestKind& LoadBalanceKind() {
  static const LoadBalance kind;
  return kind;
}

}  // namespace fg::methods
