#include "metrics/hub.h"

#include <algorithm>
#include <span>

#include "absl/strings/str_cat.h"
#include "engine/counters.h"

namespace fg::metrics {

std::vector<double> LatencyBoundsSeconds() {
  std::vector<double> b;
  for (double decade = 1e-6; decade < 10; decade *= 10) {
    for (double m : {1.0, 2.0, 5.0}) b.push_back(m * decade);
  }
  b.push_back(10);
  return b;
}

HistogramValue ToPrometheus(const stats::LatencyHistogram& h, const std::vector<double>& bounds_s) {
  HistogramValue v;
  std::vector<uint64_t> at(bounds_s.size(), 0);
  uint64_t total = 0;
  for (size_t i = 0; i < h.counts().size(); ++i) {
    const uint64_t n = h.counts()[i];
    if (n == 0) continue;
    total += n;
    const double mid_s = (static_cast<double>(stats::LatencyHistogram::BucketLow(i)) +
                          static_cast<double>(stats::LatencyHistogram::BucketWidth(i)) / 2) /
                         1e9;
    for (size_t b = 0; b < bounds_s.size(); ++b) {
      if (mid_s <= bounds_s[b]) {
        at[b] += n;
        break;
      }
    }
  }
  uint64_t cum = 0;
  for (size_t b = 0; b < bounds_s.size(); ++b) {
    cum += at[b];
    v.buckets.emplace_back(bounds_s[b], cum);
  }
  v.count = total;
  v.sum = h.mean() * static_cast<double>(h.count()) / 1e9;
  return v;
}

namespace {

// A counter no run has had for the object (a responder's figure of a stream
// whose RX port never responded): its sample is left out, not served as 0.
constexpr int64_t kAbsent = INT64_MIN;
int64_t ValueOr0(const std::vector<int64_t>& values, size_t i) {
  return i < values.size() && values[i] != kAbsent ? values[i] : 0;
}

// Adds what `table` reads of `x` so far to `to` (sized to the table).
template <class Result, class Live>
void AddValues(std::vector<int64_t>& to, std::span<const engine::Counter<Result, Live>> table, const Live& x) {
  to.resize(table.size(), kAbsent);
  for (size_t i = 0; i < table.size(); ++i) {
    if (const engine::CounterValue v = engine::ReadLive(table[i], x)) to[i] = (to[i] == kAbsent ? 0 : to[i]) + *v;
  }
}

// One family per served counter of `table`, a sample per object of `objects`
// (key -> values in table order), labelled by `labels(key)`.
template <class Result, class Live, class Map, class LabelsOf>
void AddFamilies(std::vector<MetricFamily>& f, std::span<const engine::Counter<Result, Live>> table, const Map& objects,
                 LabelsOf labels) {
  for (size_t i = 0; i < table.size(); ++i) {
    const engine::Counter<Result, Live>& c = table[i];
    if (c.metric.empty()) continue;
    const bool counter = c.kind == engine::MetricKind::kCounter;
    MetricFamily& m = f.emplace_back(
        MetricFamily{std::string(c.metric), std::string(c.help), counter ? Type::kCounter : Type::kGauge, {}});
    for (const auto& [key, values] : objects) {
      // An object no run has counted yet (a scrape before `start`) has no values: 0.
      if (i < values.size() && values[i] == kAbsent) continue;
      const int64_t v = ValueOr0(values, i);
      if (c.metric_scale != 1) {  // served in base units (seconds): a double, never below 0 for a counter
        const double scaled = static_cast<double>(v) * c.metric_scale;
        m.samples.push_back({labels(key), counter ? std::max(scaled, 0.0) : scaled});
      } else if (counter) {
        m.samples.push_back({labels(key), static_cast<uint64_t>(std::max<int64_t>(v, 0))});
      } else {
        m.samples.push_back({labels(key), static_cast<double>(v)});
      }
    }
  }
}

}  // namespace

RunCounts RunCounts::Of(const engine::LiveRun& run) {
  RunCounts r;
  const std::vector<stream::CompiledStream>& cs = run.streams();
  const std::vector<engine::LiveRun::StreamLive> live = run.Streams();
  for (size_t i = 0; i < cs.size(); ++i)
    r.streams.push_back({cs[i].name, cs[i].tx_port, cs[i].rx_port, live[i], run.Latency(i)});
  r.ports = run.Ports();
  r.lcores = run.Runtime();
  return r;
}

void Hub::SetPlan(const config::Plan& plan) {
  std::lock_guard<std::mutex> lock(mu_);
  port_names_.clear();
  for (const config::PortSpec& p : plan.ports) {
    port_names_.push_back(p.name);
    totals_.ports[p.name];
  }
  for (const config::StreamSpec& s : plan.streams) {
    StreamTotals& t = totals_.streams[s.name];
    t.tx_port = plan.ports[s.port].name;
    t.rx_port = plan.ports[s.rx_port].name;
  }
}

void Hub::SetState(const std::string& state) {
  std::lock_guard<std::mutex> lock(mu_);
  state_ = state;
}

void Hub::SetTest(const std::string& name, const std::string& kind) {
  std::lock_guard<std::mutex> lock(mu_);
  test_ = name;
  test_kind_ = kind;
  trial_ = -1;
}

void Hub::SetTrial(int index, double load, int64_t last_iteration_ns, double last_busbw_bps) {
  std::lock_guard<std::mutex> lock(mu_);
  trial_ = index;
  trial_load_ = load;
  if (last_iteration_ns >= 0) collectives_[test_] = LastIteration{last_iteration_ns / 1e9, last_busbw_bps};
}

void Hub::TestDone() {
  std::lock_guard<std::mutex> lock(mu_);
  ++tests_done_;
  test_.clear();
  test_kind_.clear();
  trial_ = -1;
}

void Hub::Add(Totals& t, const RunCounts& run) const {
  for (const RunCounts::Stream& rs : run.streams) {
    StreamTotals& st = t.streams[rs.name];
    if (rs.tx_port < port_names_.size()) st.tx_port = port_names_[rs.tx_port];
    if (rs.rx_port < port_names_.size()) st.rx_port = port_names_[rs.rx_port];
    AddValues(st.values, engine::StreamCounters(), rs.live);
    st.latency.Merge(rs.latency);
  }
  for (size_t p = 0; p < run.ports.size() && p < port_names_.size(); ++p) {
    AddValues(t.ports[port_names_[p]], engine::PortCounters(), run.ports[p]);
    Totals::Pfc& pfc = t.pfc[port_names_[p]];
    for (size_t slot = 0; slot < endpoint::kPfcSlots; ++slot) {
      pfc.events[slot] += run.ports[p].pfc_pause_events[slot];
      pfc.xon[slot] += run.ports[p].pfc_xon_frames[slot];
      pfc.paused_ns[slot] += run.ports[p].pfc_paused_ns[slot];
    }
  }
  for (const engine::LcoreStats& l : run.lcores) AddValues(t.lcores[l.lcore], engine::LcoreCounters(), l);
}

Hub::Totals Hub::Current() const {
  Totals t = totals_;
  if (run_ != nullptr) Add(t, RunCounts::Of(*run_));
  return t;
}

void Hub::OnLive(const engine::LiveRun* run) {
  std::lock_guard<std::mutex> lock(mu_);
  if (run == nullptr && run_ != nullptr) {
    // Fold the ending run in: its counters are final (its lcores have stopped).
    totals_ = Current();
    ++runs_;
  }
  run_ = run;
}

void Hub::Fold(const RunCounts& run) {
  std::lock_guard<std::mutex> lock(mu_);
  Add(totals_, run);
  ++runs_;
}

std::vector<MetricFamily> Hub::Collect() {
  std::lock_guard<std::mutex> lock(mu_);
  const Totals cur = Current();
  std::vector<MetricFamily> f;
  // A reference to the family just added: fill it before adding another.
  auto family = [&](std::string name, Type type, std::string help) -> MetricFamily& {
    f.push_back(MetricFamily{std::move(name), std::move(help), type, {}});
    return f.back();
  };
  {
    MetricFamily& m = family("fabricgen_run_state", Type::kGauge,
                             "1 for the state fabricgen is in: idle, running (traffic started by hand) or test.");
    for (const char* s : {"idle", "running", "test"}) m.samples.push_back({{{"state", s}}, state_ == s ? 1.0 : 0.0});
  }
  family("fabricgen_runs_total", Type::kCounter, "Runs (trials) that have ended.").samples.push_back({{}, runs_});
  family("fabricgen_tests_completed_total", Type::kCounter, "Plan tests that have ended.")
      .samples.push_back({{}, tests_done_});
  {
    MetricFamily& m = family("fabricgen_test_info", Type::kGauge, "The test being run (1), with its name and kind.");
    if (!test_.empty()) m.samples.push_back({{{"test", test_}, {"kind", test_kind_}}, 1.0});
    family("fabricgen_trial_index", Type::kGauge, "The current trial of the test (-1: none).")
        .samples.push_back({{}, static_cast<double>(trial_)});
    family("fabricgen_trial_load_ratio", Type::kGauge, "The current trial's load, a fraction of line rate (L1).")
        .samples.push_back({{}, trial_load_});
  }
  {
    MetricFamily& t = family("fabricgen_collective_last_iteration_seconds", Type::kGauge,
                             "A collective test's last iteration: first frame sent to the last arrival, seconds.");
    for (const auto& [test, v] : collectives_) t.samples.push_back({{{"test", test}}, v.seconds});
    MetricFamily& b = family("fabricgen_collective_last_busbw_bits_per_second", Type::kGauge,
                             "A collective test's last iteration's bus bandwidth (8 S / t x the bus factor), bit/s.");
    for (const auto& [test, v] : collectives_) b.samples.push_back({{{"test", test}}, v.busbw_bps});
  }
  // Every served counter of engine/counters.h, per port, stream and lcore.
  auto port_labels = [](const std::string& port) { return Labels{{"port", port}}; };
  auto stream_labels = [&](const std::string& name) {
    const StreamTotals& t = cur.streams.at(name);
    return Labels{{"stream", name}, {"tx_port", t.tx_port}, {"rx_port", t.rx_port}};
  };
  std::map<std::string, Values> stream_values;
  for (const auto& [name, t] : cur.streams) stream_values[name] = t.values;
  AddFamilies(f, engine::PortCounters(), cur.ports, port_labels);
  AddFamilies(f, engine::StreamCounters(), stream_values, stream_labels);
  AddFamilies(f, engine::LcoreCounters(), cur.lcores, [](unsigned lcore) {
    return Labels{{"lcore", std::to_string(lcore)}};
  });
  // PFC and PAUSE received, per port and priority (priority="pause": 802.3x),
  // for the priorities that received any; counted where frames reach
  // fabricgen's RX (report.json ports[].pfc names the observation point).
  {
    MetricFamily& ev = family("fabricgen_pfc_pause_events_total", Type::kCounter,
                              "PFC pause events received (frames with non-zero quanta for the priority), counted by "
                              "fabricgen's RX where the PMD passes MAC control frames up.");
    std::vector<Sample> xs, ps;
    for (const auto& [port, pfc] : cur.pfc) {
      for (size_t slot = 0; slot < endpoint::kPfcSlots; ++slot) {
        if (pfc.events[slot] == 0 && pfc.xon[slot] == 0) continue;
        const Labels l{{"port", port}, {"priority", slot == endpoint::kPfcLinkPause ? "pause" : std::to_string(slot)}};
        ev.samples.push_back({l, pfc.events[slot]});
        xs.push_back({l, pfc.xon[slot]});
        ps.push_back({l, static_cast<double>(pfc.paused_ns[slot]) / 1e9});
      }
    }
    // (`ev` is not used past here: each family is filled before the next is added.)
    family("fabricgen_pfc_xon_frames_total", Type::kCounter,
           "PFC X-ON frames received (zero quanta on an enabled priority; not pause events).")
        .samples = std::move(xs);
    family("fabricgen_pfc_paused_seconds_total", Type::kCounter,
           "Time the priority was paused by the frames received: each event's quanta x 512 bit times at the port's "
           "line rate, cut short by the next frame.")
        .samples = std::move(ps);
  }
  // Stream counters also served per port: summed over the streams it receives.
  const std::span<const engine::StreamCounter> sc = engine::StreamCounters();
  for (size_t i = 0; i < sc.size(); ++i) {
    if (sc[i].rx_port_metric.empty()) continue;
    std::map<std::string, int64_t> by_port;
    for (const auto& [name, t] : cur.ports) by_port[name] = 0;
    for (const auto& [name, t] : cur.streams) by_port[t.rx_port] += ValueOr0(t.values, i);
    MetricFamily& m = family(std::string(sc[i].rx_port_metric), Type::kCounter,
                             std::string(sc[i].help) + " Summed over the streams the port receives.");
    for (const auto& [name, v] : by_port) m.samples.push_back({port_labels(name), static_cast<uint64_t>(v)});
  }
  // Rates over the time since the previous scrape (at least 200 ms apart).
  const auto now = std::chrono::steady_clock::now();
  auto rate = [&](const std::string& key, int64_t tx, int64_t rx) -> const Rate& {
    Rate& r = rates_[key];
    const double dt = std::chrono::duration<double>(now - r.at).count();
    const bool first = r.at.time_since_epoch().count() == 0;
    if (!first && dt >= 0.2) {
      r.tx_pps = static_cast<double>(tx - r.tx) / dt;
      r.rx_pps = static_cast<double>(rx - r.rx) / dt;
    }
    if (first || dt >= 0.2) {
      r.at = now;
      r.tx = tx;
      r.rx = rx;
    }
    return r;
  };
  // The rates of the tx/rx packet counters, per object: (tx family, rx family).
  auto rates = [&](const char* what, const auto& objects, auto table, auto labels, const char* tx_help,
                   const char* rx_help) {
    const size_t tx = engine::CounterIndex(table, "tx_packets"), rx = engine::CounterIndex(table, "rx_packets");
    MetricFamily tx_f{absl::StrCat("fabricgen_", what, "_tx_rate_pps"), tx_help, Type::kGauge, {}};
    MetricFamily rx_f{absl::StrCat("fabricgen_", what, "_rx_rate_pps"), rx_help, Type::kGauge, {}};
    for (const auto& [name, values] : objects) {
      // An object no run has counted yet (a scrape before `start`, a stream no test used) has no values: 0.
      auto at = [&values](size_t i) { return ValueOr0(values, i); };
      const Rate& r = rate(absl::StrCat(what, " ", name), at(tx), at(rx));
      tx_f.samples.push_back({labels(name), r.tx_pps});
      rx_f.samples.push_back({labels(name), r.rx_pps});
    }
    f.push_back(std::move(tx_f));
    f.push_back(std::move(rx_f));
  };
  rates("port", cur.ports, engine::PortCounters(), port_labels,
        "Frames per second the port sent, over the time since the previous scrape.",
        "Frames per second the port received, over the time since the previous scrape.");
  rates("stream", stream_values, engine::StreamCounters(), stream_labels,
        "Frames per second the stream sent, over the time since the previous scrape.",
        "Frames per second of the stream received, over the time since the previous scrape.");
  MetricFamily& lat = family("fabricgen_stream_latency_seconds", Type::kHistogram,
                             "One-way latency of the stream's frames (RX time - TX time), seconds.");
  const std::vector<double> bounds = LatencyBoundsSeconds();
  for (const auto& [name, t] : cur.streams)
    lat.samples.push_back({stream_labels(name), ToPrometheus(t.latency, bounds)});
  return f;
}

}  // namespace fg::metrics
