#include "methods/load_balance.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/status.h"

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
  LoadBalanceResult out;
  out.name = test.name;
  out.load = test.load;
  FG_ASSIGN_OR_RETURN(const LoadRunner runner, LoadRunner::Make(eal, ports, streams, test));
  out.streams = runner.stream_names();
  out.line_l1_bps = runner.line_l1_bps();
  for (const stream::CompiledStream& s : streams) {
    if (std::find(out.streams.begin(), out.streams.end(), s.name) != out.streams.end()) out.flows += s.flows;
  }
  for (const std::string& l : test.links) out.links.push_back(LinkLoad{l, 0, 0});
  // Before any traffic: the links must exist.
  FG_RETURN_IF_ERROR(Read(read_counters, test.links).status());
  auto stop = [&](const absl::Status& s) {
    out.complete = false;
    out.stopped_because = std::string(s.message());
  };
  if (absl::Status w = RunWarmup(runner, test, test.load, options, out.trials); !w.ok()) {
    stop(w);
    return out;
  }
  const double secs = test.trial_duration_ns / 1e9;
  for (int i = 0; i < test.runs; ++i) {
    // The DUT's counters around each attempt (after the drain: every frame
    // of the trial has left the DUT); an attempt the tester limited is
    // recorded, not counted, and run again.
    std::vector<LinkCounters> before, after;
    auto attempt = [&]() -> absl::StatusOr<engine::TrialResult> {
      FG_ASSIGN_OR_RETURN(before, Read(read_counters, test.links));
      FG_ASSIGN_OR_RETURN(engine::TrialResult r, runner.Run(test.load, secs, options));
      FG_ASSIGN_OR_RETURN(after, Read(read_counters, test.links));
      return r;
    };
    auto r = runner.RunUnlimited(
        attempt,
        [&](const engine::TrialResult& x, int index) { return runner.Record(x, test.load, secs, "run", index); },
        test.tester_limit_retries, options, out.trials);
    if (!r.ok()) {
      stop(r.status());
      return out;
    }
    LoadBalanceRun run;
    run.trial = runner.Record(*r, test.load, secs, "run", static_cast<int>(out.trials.size()));
    for (size_t k = 0; k < test.links.size(); ++k) {
      LinkLoad l{test.links[k], after[k].tx_packets - before[k].tx_packets, after[k].tx_bytes - before[k].tx_bytes};
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

}  // namespace fg::methods
