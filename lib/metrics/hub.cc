#include "metrics/hub.h"

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

void Hub::SetPlan(const config::Plan& plan) {
  std::lock_guard<std::mutex> lock(mu_);
  port_names_.clear();
  for (const config::PortSpec& p : plan.ports) {
    port_names_.push_back(p.name);
    ports_[p.name];
  }
  for (const config::StreamSpec& s : plan.streams) {
    StreamTotals& t = streams_[s.name];
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

void Hub::SetTrial(int index, double load) {
  std::lock_guard<std::mutex> lock(mu_);
  trial_ = index;
  trial_load_ = load;
}

void Hub::TestDone() {
  std::lock_guard<std::mutex> lock(mu_);
  ++tests_done_;
  test_.clear();
  test_kind_.clear();
  trial_ = -1;
}

void Hub::Current(std::map<std::string, StreamTotals>& streams, std::map<std::string, PortTotals>& ports) const {
  streams = streams_;
  ports = ports_;
  if (run_ == nullptr) return;
  const std::vector<stream::CompiledStream>& cs = run_->streams();
  const std::vector<engine::LiveRun::StreamLive> live = run_->Streams();
  for (size_t i = 0; i < cs.size(); ++i) {
    StreamTotals& t = streams[cs[i].name];
    if (cs[i].tx_port < port_names_.size()) t.tx_port = port_names_[cs[i].tx_port];
    if (cs[i].rx_port < port_names_.size()) t.rx_port = port_names_[cs[i].rx_port];
    t.tx_packets += live[i].tx_packets;
    t.tx_bytes += live[i].tx_bytes;
    t.rx_packets += live[i].rx_packets;
    t.rx_bytes += live[i].rx_bytes;
    t.lost += live[i].gap_packets;
    t.duplicate += live[i].duplicate;
    t.reordered += live[i].reordered;
    t.ce += live[i].ce;
    t.tx_slots_skipped += live[i].tx_slots_skipped;
    t.latency.Merge(run_->Latency(i));
  }
  const std::vector<engine::LiveRun::PortLive> lp = run_->Ports();
  for (size_t p = 0; p < lp.size() && p < port_names_.size(); ++p) {
    PortTotals& t = ports[port_names_[p]];
    t.tx_packets += lp[p].tx_packets;
    t.tx_bytes += lp[p].tx_bytes;
    t.rx_packets += lp[p].rx_packets;
    t.rx_bytes += lp[p].rx_bytes;
    t.rx_unknown += lp[p].rx_unknown_packets;
  }
}

void Hub::OnLive(const engine::LiveRun* run) {
  std::lock_guard<std::mutex> lock(mu_);
  if (run == nullptr && run_ != nullptr) {
    // Fold the ending run in: its counters are final (its lcores have stopped).
    Current(streams_, ports_);
    ++runs_;
  }
  run_ = run;
}

std::vector<MetricFamily> Hub::Collect() {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, StreamTotals> streams;
  std::map<std::string, PortTotals> ports;
  Current(streams, ports);
  std::vector<MetricFamily> f;
  auto family = [&](const char* name, Type type, const char* help) -> MetricFamily& {
    f.push_back(MetricFamily{name, help, type, {}});
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
  struct PortCounter {
    const char* name;
    const char* help;
    uint64_t PortTotals::*field;
  };
  for (const PortCounter& c :
       {PortCounter{"fabricgen_port_tx_packets_total", "Frames the port sent.", &PortTotals::tx_packets},
        PortCounter{"fabricgen_port_tx_bytes_total", "Bytes the port sent (frames with FCS).", &PortTotals::tx_bytes},
        PortCounter{"fabricgen_port_rx_packets_total", "Frames the port received, with or without a test signature.",
                    &PortTotals::rx_packets},
        PortCounter{"fabricgen_port_rx_bytes_total", "Bytes the port received (frames with FCS).",
                    &PortTotals::rx_bytes},
        PortCounter{"fabricgen_port_rx_unknown_packets_total",
                    "Frames the port received without a signature of the run (ARP, LLDP, feedback...).",
                    &PortTotals::rx_unknown}}) {
    MetricFamily& m = family(c.name, Type::kCounter, c.help);
    for (const auto& [name, t] : ports) m.samples.push_back({{{"port", name}}, t.*c.field});
  }
  struct StreamCounter {
    const char* name;
    const char* help;
    uint64_t StreamTotals::*field;
  };
  for (const StreamCounter& c : {
           StreamCounter{"fabricgen_stream_tx_packets_total", "Frames the stream sent.", &StreamTotals::tx_packets},
           StreamCounter{"fabricgen_stream_tx_bytes_total", "Bytes the stream sent (frames with FCS).",
                         &StreamTotals::tx_bytes},
           StreamCounter{"fabricgen_stream_rx_packets_total", "Frames of the stream received (duplicates included).",
                         &StreamTotals::rx_packets},
           StreamCounter{"fabricgen_stream_rx_bytes_total", "Bytes of the stream received (frames with FCS).",
                         &StreamTotals::rx_bytes},
           StreamCounter{"fabricgen_stream_lost_packets_total",
                         "Frames missing at sequence gaps when the gap was seen (those arriving later are also in "
                         "out_of_order; net loss = lost - out_of_order).",
                         &StreamTotals::lost},
           StreamCounter{"fabricgen_stream_duplicate_packets_total", "Frames received more than once.",
                         &StreamTotals::duplicate},
           StreamCounter{"fabricgen_stream_out_of_order_packets_total",
                         "Frames that arrived after a frame with a higher sequence number.", &StreamTotals::reordered},
           StreamCounter{"fabricgen_stream_ecn_ce_packets_total", "Frames received with ECN CE.", &StreamTotals::ce},
           StreamCounter{"fabricgen_stream_tx_slots_skipped_total",
                         "TX slots skipped because the TX lcore fell more than 1 ms behind the set rate (the "
                         "tester's own limit, unless the device was sending PAUSE/PFC frames).",
                         &StreamTotals::tx_slots_skipped},
       }) {
    MetricFamily& m = family(c.name, Type::kCounter, c.help);
    for (const auto& [name, t] : streams) {
      m.samples.push_back({{{"stream", name}, {"tx_port", t.tx_port}, {"rx_port", t.rx_port}}, t.*c.field});
    }
  }
  // The sequence figures of the streams a port receives.
  struct PortSequence {
    const char* name;
    const char* help;
    uint64_t StreamTotals::*field;
  };
  for (const PortSequence& c :
       {PortSequence{"fabricgen_port_rx_lost_packets_total",
                     "Frames missing at sequence gaps, over the streams the port receives.", &StreamTotals::lost},
        PortSequence{"fabricgen_port_rx_duplicate_packets_total",
                     "Frames received more than once, over the streams the port receives.", &StreamTotals::duplicate},
        PortSequence{"fabricgen_port_rx_out_of_order_packets_total",
                     "Frames received out of order, over the streams the port receives.", &StreamTotals::reordered}}) {
    std::map<std::string, uint64_t> by_port;
    for (const auto& [name, t] : ports) by_port[name] = 0;
    for (const auto& [name, t] : streams) by_port[t.rx_port] += t.*c.field;
    MetricFamily& m = family(c.name, Type::kCounter, c.help);
    for (const auto& [name, v] : by_port) m.samples.push_back({{{"port", name}}, v});
  }
  // Rates over the time since the previous scrape (at least 200 ms apart).
  const auto now = std::chrono::steady_clock::now();
  auto rate = [&](const std::string& key, uint64_t tx, uint64_t rx) -> const Rate& {
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
  MetricFamily& port_tx_rate = family("fabricgen_port_tx_rate_pps", Type::kGauge,
                                      "Frames per second the port sent, over the time since the previous scrape.");
  MetricFamily& port_rx_rate = family("fabricgen_port_rx_rate_pps", Type::kGauge,
                                      "Frames per second the port received, over the time since the previous scrape.");
  for (const auto& [name, t] : ports) {
    const Rate& r = rate("port " + name, t.tx_packets, t.rx_packets);
    port_tx_rate.samples.push_back({{{"port", name}}, r.tx_pps});
    port_rx_rate.samples.push_back({{{"port", name}}, r.rx_pps});
  }
  MetricFamily& tx_rate = family("fabricgen_stream_tx_rate_pps", Type::kGauge,
                                 "Frames per second the stream sent, over the time since the previous scrape.");
  MetricFamily& rx_rate = family("fabricgen_stream_rx_rate_pps", Type::kGauge,
                                 "Frames per second of the stream received, over the time since the previous scrape.");
  for (const auto& [name, t] : streams) {
    const Rate& r = rate("stream " + name, t.tx_packets, t.rx_packets);
    const Labels l{{"stream", name}, {"tx_port", t.tx_port}, {"rx_port", t.rx_port}};
    tx_rate.samples.push_back({l, r.tx_pps});
    rx_rate.samples.push_back({l, r.rx_pps});
  }
  MetricFamily& lat = family("fabricgen_stream_latency_seconds", Type::kHistogram,
                             "One-way latency of the stream's frames (RX time - TX time), seconds.");
  const std::vector<double> bounds = LatencyBoundsSeconds();
  for (const auto& [name, t] : streams) {
    lat.samples.push_back(
        {{{"stream", name}, {"tx_port", t.tx_port}, {"rx_port", t.rx_port}}, ToPrometheus(t.latency, bounds)});
  }
  return f;
}

}  // namespace fg::metrics
