#include "methods/latency.h"

#include <cmath>

#include "base/status.h"

namespace fg::methods {

void CompareLatency(LatencyResult& loaded, const LatencyResult& base) {
  loaded.compared_to = base.name;
  const double b50 = base.pooled.Percentile(50), b99 = base.pooled.Percentile(99);
  loaded.increase_p50 = b50 > 0 ? loaded.pooled.Percentile(50) / b50 : 0;
  loaded.increase_p99 = b99 > 0 ? loaded.pooled.Percentile(99) / b99 : 0;
}

absl::StatusOr<LatencyResult> RunLatency(const port::Eal& eal, const std::vector<port::Port*>& ports,
                                         const std::vector<stream::CompiledStream>& streams,
                                         const config::TestSpec& test, const MethodOptions& options) {
  LatencyResult out;
  out.name = test.name;
  out.load = test.load;
  FG_ASSIGN_OR_RETURN(const LoadRunner runner, LoadRunner::Make(eal, ports, streams, test));
  out.streams = runner.stream_names();
  out.line_l1_bps = runner.line_l1_bps();
  // A run the tester kept up in (limited attempts are recorded, not counted, and run again).
  auto trial = [&](double secs) -> absl::StatusOr<engine::TrialResult> {
    auto r = runner.RunUnlimited(
        [&] { return runner.Run(test.load, secs, options); },
        [&](const engine::TrialResult& x, int index) { return runner.Record(x, test.load, secs, "run", index); },
        test.tester_limit_retries, options, out.trials);
    if (!r.ok()) {
      out.complete = false;
      out.stopped_because = std::string(r.status().message());
    }
    return r;
  };
  if (absl::Status w = RunWarmup(runner, test, test.load, options, out.trials); !w.ok()) {
    out.complete = false;
    out.stopped_because = std::string(w.message());
    return out;
  }
  const double secs = test.trial_duration_ns / 1e9;
  for (int i = 0; i < test.runs; ++i) {
    auto r = trial(secs);
    if (!r.ok()) return out;
    LatencyRun run;
    run.trial = runner.Record(*r, test.load, secs, "run", static_cast<int>(out.trials.size()));
    stats::LatencyHistogram h;
    for (const engine::StreamResult& s : r->streams) h.Merge(s.analysis.latency);
    run.samples = h.count();
    run.min_ns = h.min();
    run.max_ns = h.max();
    run.mean_ns = h.mean();
    run.p50_ns = h.Percentile(50);
    run.p99_ns = h.Percentile(99);
    out.pooled.Merge(h);
    out.observation_point = r->timestamp_source;
    out.trials.push_back(run.trial);
    out.runs.push_back(run);
    if (options.on_trial) options.on_trial(run.trial);
  }
  double mean = 0, sq = 0;
  for (const LatencyRun& r : out.runs) mean += r.p50_ns / static_cast<double>(out.runs.size());
  for (const LatencyRun& r : out.runs) sq += (r.p50_ns - mean) * (r.p50_ns - mean);
  if (out.runs.size() > 1 && mean > 0) out.cv_p50 = std::sqrt(sq / static_cast<double>(out.runs.size() - 1)) / mean;
  return out;
}

}  // namespace fg::methods
