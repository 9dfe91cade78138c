// metrics/hub.h: what /metrics shows, gathered from the runs as they go.
//
// The control thread tells the hub about the plan, the state (idle, a live
// run, a test and its trial) and each live run as it starts and ends
// (OnLive); the HTTP thread calls Collect(). Collect reads the live run's
// per-lcore counters and latency histograms with relaxed loads: it never
// locks or slows an lcore. The hub's own mutex is between those two
// threads only. Counters are monotone over the whole process: each run's
// final figures are folded into totals when it ends.
//
//   fg::metrics::Hub hub;
//   hub.SetPlan(plan);
//   opt.on_live = [&](const fg::engine::LiveRun* r) { hub.OnLive(r); };
//   server = fg::metrics::Server::Start("9464", [&] { return hub.Collect(); });
#pragma once

#include <array>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "config/plan.h"
#include "engine/engine.h"
#include "metrics/exposition.h"
#include "stats/histogram.h"

namespace fg::metrics {

// Latency buckets (seconds): 1-2-5 steps from 1 us to 10 s.
std::vector<double> LatencyBoundsSeconds();
// Cumulative counts of `h` (ns) at the bounds; a fine bucket counts below a
// bound when its middle is (within the histogram's 0.8 %).
HistogramValue ToPrometheus(const stats::LatencyHistogram& h, const std::vector<double>& bounds_s);

// What a run has counted, as the hub reads it: the live views of a LiveRun
// (relaxed loads), or a run's views as they ended.
struct RunCounts {
  struct Stream {
    std::string name;
    size_t tx_port = 0, rx_port = 0;  // plan port indices
    engine::LiveRun::StreamLive live;
    stats::LatencyHistogram latency;
  };
  std::vector<Stream> streams;
  std::vector<engine::LiveRun::PortLive> ports;  // by plan port index
  std::vector<engine::LcoreStats> lcores;
  static RunCounts Of(const engine::LiveRun& run);
};

class Hub {
 public:
  void SetPlan(const config::Plan& plan);
  // "idle", "running" (CLI traffic) or "test".
  void SetState(const std::string& state);
  // The test being run (empty: none) and its trial.
  void SetTest(const std::string& name, const std::string& kind);
  // A collective trial also gives its last iteration's time and busbw
  // (last_iteration_ns >= 0): kept per test until the process ends.
  void SetTrial(int index, double load, int64_t last_iteration_ns = -1, double last_busbw_bps = 0);
  void TestDone();
  // A run started (run) or is about to be destroyed (nullptr: the one
  // attached is folded into the totals).
  void OnLive(const engine::LiveRun* run);
  // Adds an ended run's counts to the totals (what OnLive(nullptr) does with
  // the attached run's).
  void Fold(const RunCounts& run);
  std::vector<MetricFamily> Collect();

 private:
  // The counters of one object, in its engine/counters.h table's order.
  using Values = std::vector<int64_t>;
  struct StreamTotals {
    std::string tx_port, rx_port;
    Values values;  // engine::StreamCounters()
    stats::LatencyHistogram latency;
  };
  struct Totals {
    std::map<std::string, StreamTotals> streams;
    std::map<std::string, Values> ports;  // engine::PortCounters(), by port name
    std::map<unsigned, Values> lcores;    // engine::LcoreCounters(), by lcore id
    // PFC and PAUSE received (endpoint/pfc.h), by port name: per slot
    // (priorities 0-7, link-level PAUSE) pause events, X-ON frames, paused ns.
    struct Pfc {
      std::array<uint64_t, endpoint::kPfcSlots> events{}, xon{}, paused_ns{};
    };
    std::map<std::string, Pfc> pfc;
  };
  struct Rate {
    std::chrono::steady_clock::time_point at;
    int64_t tx = 0, rx = 0;
    double tx_pps = 0, rx_pps = 0;
  };
  void Add(Totals& t, const RunCounts& run) const;
  // Totals plus what `run_` counted so far.
  Totals Current() const;

  std::mutex mu_;
  std::vector<std::string> port_names_;
  Totals totals_;
  const engine::LiveRun* run_ = nullptr;
  std::string state_ = "idle", test_, test_kind_;
  int trial_ = -1;
  double trial_load_ = 0;
  uint64_t runs_ = 0, tests_done_ = 0;
  std::map<std::string, Rate> rates_;  // by "port NAME" and "stream NAME"
  struct LastIteration {
    double seconds = 0, busbw_bps = 0;
  };
  std::map<std::string, LastIteration> collectives_;  // by test name
};

}  // namespace fg::metrics
