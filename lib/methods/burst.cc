#include "methods/burst.h"

#include "base/status.h"

namespace fg::methods {

absl::StatusOr<BurstResult> RunBurst(const port::Eal& eal, const std::vector<port::Port*>& ports,
                                     const std::vector<stream::CompiledStream>& streams, const config::TestSpec& test,
                                     const MethodOptions& options) {
  BurstResult out;
  out.name = test.name;
  out.repetitions = test.repetitions;
  FG_ASSIGN_OR_RETURN(const LoadRunner all, LoadRunner::Make(eal, ports, streams, test, /*bursts=*/true));
  out.streams = all.stream_names();
  const std::vector<int> ratios =
      test.incast.empty() ? std::vector<int>{static_cast<int>(test.streams.size())} : test.incast;
  for (int senders : ratios) {
    config::TestSpec sub = test;
    sub.streams.assign(test.streams.begin(), test.streams.begin() + senders);
    FG_ASSIGN_OR_RETURN(const LoadRunner runner, LoadRunner::Make(eal, ports, streams, sub, /*bursts=*/true));
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
      auto run = [&] { return runner.RunBursts(frames, reps, test.gap_ns, options); };
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
      if (!passes(test.min_frames, 1, false).ok()) return out;
    }
    // Binary search for the longest passing N: lo passes (or is below min), hi fails (or is above max).
    uint32_t lo = 0, hi = test.max_frames + 1;
    auto at_max = passes(test.max_frames, test.repetitions, true);
    if (!at_max.ok()) return out;
    if (*at_max) {
      lo = test.max_frames;
    } else {
      hi = test.max_frames;
      lo = test.min_frames - 1;
      while (hi - lo > 1) {
        const uint32_t mid = lo + (hi - lo) / 2;
        auto p = passes(mid, test.repetitions, true);
        if (!p.ok()) return out;
        (*p ? lo : hi) = mid;
      }
    }
    point.found = lo >= test.min_frames;
    point.absorbed_frames = point.found ? lo : 0;
    point.first_loss_frames = hi <= test.max_frames ? hi : 0;
    out.points.push_back(point);
  }
  return out;
}

}  // namespace fg::methods
