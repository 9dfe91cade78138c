// The counter declarations (engine/counters.h): well formed, served by the
// metrics hub, read by report.json, and documented in docs/metrics.md.
#include "engine/counters.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "metrics/exposition.h"
#include "metrics/hub.h"

namespace fg::engine {
namespace {

// Every declaration of every table, as (object, key, metric, kind, unit, help).
struct Decl {
  std::string object, key, metric, unit, help;
  MetricKind kind;
  bool has_read;
  double metric_scale = 1;
};
template <class R, class L>
void Collect(std::vector<Decl>& out, const char* object, std::span<const Counter<R, L>> table) {
  for (const Counter<R, L>& c : table) {
    out.push_back({object, std::string(c.key), std::string(c.metric), std::string(c.unit), std::string(c.help), c.kind,
                   c.read != nullptr, c.metric_scale});
    if (!c.rx_port_metric.empty()) {
      out.push_back(
          {"port", "", std::string(c.rx_port_metric), std::string(c.unit), std::string(c.help), c.kind, true});
    }
  }
}
std::vector<Decl> All() {
  std::vector<Decl> d;
  Collect(d, "stream", StreamCounters());
  Collect(d, "port", PortCounters());
  Collect(d, "flow", FlowCounters());
  Collect(d, "lcore", LcoreCounters());
  return d;
}

// A live reading: TX packets and bytes, RX packets and bytes, sequence
// gaps, duplicates, reordered, CE, TX slots skipped, the responder's.
LiveRun::StreamLive Live(uint64_t tx_packets, uint64_t tx_bytes, uint64_t rx_packets, uint64_t rx_bytes,
                         uint64_t gap, uint64_t duplicate, uint64_t reordered, uint64_t ce, uint64_t skipped,
                         endpoint::ResponderCounters responder = {}) {
  LiveRun::StreamLive l;
  l.tx.packets = tx_packets, l.tx.bytes = tx_bytes, l.tx.slots_skipped = skipped;
  l.rx = rx::StreamLiveView{rx_packets, rx_bytes, gap, duplicate, reordered, ce};
  l.responder = responder;
  return l;
}

TEST(Counters, EachIsDeclaredOnceWithAUnitHelpAndReader) {
  std::set<std::pair<std::string, std::string>> keys;
  std::set<std::string> metrics;
  const std::regex name("fabricgen_(stream|port|lcore)_[a-z0-9_]+");
  for (const Decl& d : All()) {
    EXPECT_FALSE(d.unit.empty()) << d.object << " " << d.key;
    EXPECT_FALSE(d.help.empty()) << d.object << " " << d.key;
    EXPECT_TRUE(d.has_read) << d.object << " " << d.key;
    if (!d.key.empty()) {
      EXPECT_TRUE(keys.insert({d.object, d.key}).second) << "key twice: " << d.object << " " << d.key;
    }
    if (d.metric.empty()) continue;
    EXPECT_TRUE(metrics.insert(d.metric).second) << "metric twice: " << d.metric;
    EXPECT_TRUE(std::regex_match(d.metric, name)) << d.metric;
    EXPECT_TRUE(d.metric.starts_with("fabricgen_" + d.object + "_")) << d.metric << " of a " << d.object;
    // Prometheus: counters and only counters end in _total.
    EXPECT_EQ(d.metric.ends_with("_total"), d.kind == MetricKind::kCounter) << d.metric;
  }
  // A served stream or port counter is counted live (else /metrics would serve zeros).
  for (const StreamCounter& c : StreamCounters()) EXPECT_TRUE(c.metric.empty() || c.read_live) << c.key;
  for (const PortCounter& c : PortCounters()) EXPECT_TRUE(c.metric.empty() || c.read_live) << c.key;
}

TEST(Counters, LostIsSentLessReceivedOnceEverywhere) {
  StreamResult s;
  s.tx.packets = 1000;
  s.rx.packets = 990;
  s.analysis.duplicate = 4;
  s.analysis.lost = 12;  // gaps net of late fills
  s.analysis.reordered = 3;
  const size_t lost = CounterIndex(StreamCounters(), "lost_packets");
  const size_t gap = CounterIndex(StreamCounters(), "sequence_gap_packets");
  ASSERT_LT(lost, StreamCounters().size());
  ASSERT_LT(gap, StreamCounters().size());
  EXPECT_EQ(Read(StreamCounters()[lost], s), 14);  // 1000 - (990 - 4)
  EXPECT_EQ(Read(StreamCounters()[gap], s), 15);   // every frame missing when its gap was seen
  LiveRun::StreamLive l = Live(1000, 0, 990, 0, 15, 4, 3, 0, 0);
  EXPECT_EQ(ReadLive(StreamCounters()[lost], l), 14);
  EXPECT_EQ(ReadLive(StreamCounters()[gap], l), 15);
  FlowReport f;
  f.tx_packets = 10;
  f.rx.rx_packets = 9;
  f.rx.duplicate = 1;
  EXPECT_EQ(Read(FlowCounters()[CounterIndex(FlowCounters(), "lost_packets")], f), 2);
  // A stream without RX figures has none of them, live or after the run.
  s.signed_frames = false;
  l.rx_counted = false;
  EXPECT_EQ(Read(StreamCounters()[lost], s), std::nullopt);
  EXPECT_EQ(ReadLive(StreamCounters()[lost], l), std::nullopt);
  EXPECT_EQ(Read(StreamCounters()[CounterIndex(StreamCounters(), "tx_packets")], s), 1000);
}

// A run folded into the hub: every declared metric is served, with the value
// its declaration reads, labelled by its object.
TEST(Counters, EveryDeclaredMetricIsServedWithItsValue) {
  auto plan =
      config::ParsePlan("fake.yaml", "ports: [{name: p0, device: loopback}]\nstreams: [{name: s, rate: 1 kpps}]\n");
  ASSERT_TRUE(plan.ok()) << plan.status();
  metrics::Hub hub;
  hub.SetPlan(*plan);
  metrics::RunCounts run;
  LiveRun::StreamLive live = Live(101, 102, 103, 104, 105, 106, 107, 108, 109,
                                  endpoint::ResponderCounters{110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120});
  live.answered = true;  // its RX port responds, and its requesters resend: every figure is served
  live.retransmits = true;
  live.retransmitted_packets = 121;
  live.tx.pfc_paused_ns = 122;
  run.streams.push_back({"s", 0, 0, live, {}});
  run.ports.push_back(LiveRun::PortLive{201, 202, 203, 204, 205});
  run.ports[0].pfc_pause_events[3] = 206;  // PFC on priority 3, and a link-level PAUSE
  run.ports[0].pfc_xon_frames[3] = 207;
  run.ports[0].pfc_paused_ns[3] = 208;
  run.ports[0].pfc_xon_frames[endpoint::kPfcLinkPause] = 209;
  LcoreStats lc;
  lc.lcore = 3;
  lc.polls = 301, lc.busy_polls = 302, lc.tx_packets = 303, lc.rx_packets = 304, lc.tx_cycles = 305;
  lc.rx_cycles = 306, lc.handoff_in = 307, lc.handoff_out = 308, lc.handoff_waits = 309;
  lc.guest_wait_ns = 310, lc.host_steal_ns = 311;
  run.lcores.push_back(lc);
  hub.Fold(run);
  hub.Fold(run);  // a second run adds to the first
  std::map<std::string, metrics::MetricFamily> served;
  for (metrics::MetricFamily& m : hub.Collect()) served[m.name] = m;
  auto value = [&](const std::string& metric) -> int64_t {
    const metrics::MetricFamily& m = served.at(metric);
    EXPECT_EQ(m.samples.size(), 1u) << metric;
    return static_cast<int64_t>(std::get<uint64_t>(m.samples.at(0).value));
  };
  for (const StreamCounter& c : StreamCounters()) {
    if (c.metric.empty()) continue;
    ASSERT_TRUE(served.count(std::string(c.metric))) << c.metric;
    if (c.metric_scale != 1) {  // ns served in seconds
      const metrics::MetricFamily& m = served.at(std::string(c.metric));
      EXPECT_DOUBLE_EQ(std::get<double>(m.samples.at(0).value),
                       2 * static_cast<double>(*ReadLive(c, run.streams[0].live)) * 1e-9)
          << c.metric;
      continue;
    }
    EXPECT_EQ(value(std::string(c.metric)), 2 * *ReadLive(c, run.streams[0].live)) << c.metric;
    EXPECT_EQ(served[std::string(c.metric)].samples[0].labels,
              (metrics::Labels{{"stream", "s"}, {"tx_port", "p0"}, {"rx_port", "p0"}}));
    if (!c.rx_port_metric.empty()) {
      EXPECT_EQ(value(std::string(c.rx_port_metric)), 2 * *ReadLive(c, run.streams[0].live)) << c.rx_port_metric;
    }
  }
  for (const PortCounter& c : PortCounters()) {
    if (c.metric.empty()) continue;
    EXPECT_EQ(value(std::string(c.metric)), 2 * *ReadLive(c, run.ports[0])) << c.metric;
    EXPECT_EQ(served[std::string(c.metric)].samples[0].labels, (metrics::Labels{{"port", "p0"}}));
  }
  for (const LcoreCounter& c : LcoreCounters()) {
    if (c.metric.empty()) continue;
    if (c.metric_scale != 1) {  // ns served in seconds: 2 x 310 ns is 6.2e-7 s
      const metrics::MetricFamily& m = served.at(std::string(c.metric));
      EXPECT_DOUBLE_EQ(std::get<double>(m.samples.at(0).value), 2 * static_cast<double>(*ReadLive(c, lc)) * 1e-9)
          << c.metric;
      continue;
    }
    EXPECT_EQ(value(std::string(c.metric)), 2 * *ReadLive(c, lc)) << c.metric;
    EXPECT_EQ(served[std::string(c.metric)].samples[0].labels, (metrics::Labels{{"lcore", "3"}}));
  }
  // The same, against figures written out by hand (a declaration that read
  // the wrong field would pass the checks above, not these).
  const std::map<std::string, int64_t> want = {
      {"fabricgen_stream_tx_packets_total", 202},       {"fabricgen_stream_tx_bytes_total", 204},
      {"fabricgen_stream_rx_packets_total", 206},       {"fabricgen_stream_rx_bytes_total", 208},
      {"fabricgen_stream_sequence_gap_packets_total", 210},
      {"fabricgen_stream_duplicate_packets_total", 212}, {"fabricgen_stream_out_of_order_packets_total", 214},
      {"fabricgen_stream_ecn_ce_packets_total", 216},   {"fabricgen_stream_tx_slots_skipped_total", 218},
      {"fabricgen_port_rx_duplicate_packets_total", 212}, {"fabricgen_port_rx_sequence_gap_packets_total", 210},
      {"fabricgen_port_tx_packets_total", 402},         {"fabricgen_port_tx_bytes_total", 404},
      {"fabricgen_port_rx_packets_total", 406},         {"fabricgen_port_rx_bytes_total", 408},
      {"fabricgen_port_rx_unknown_packets_total", 410}, {"fabricgen_lcore_polls_total", 602},
      {"fabricgen_lcore_busy_polls_total", 604},        {"fabricgen_lcore_tx_packets_total", 606},
      {"fabricgen_lcore_rx_packets_total", 608},        {"fabricgen_lcore_tx_cycles_total", 610},
      {"fabricgen_lcore_rx_cycles_total", 612},         {"fabricgen_lcore_handoff_in_records_total", 614},
      {"fabricgen_lcore_handoff_out_records_total", 616}, {"fabricgen_lcore_handoff_waits_total", 618},
  };
  EXPECT_DOUBLE_EQ(std::get<double>(served.at("fabricgen_stream_tx_pfc_paused_seconds_total").samples.at(0).value),
                   244e-9);
  // PFC received: a sample per port and priority that saw a frame (the PAUSE's labelled "pause").
  const metrics::MetricFamily& events = served.at("fabricgen_pfc_pause_events_total");
  ASSERT_EQ(events.samples.size(), 2u);
  EXPECT_EQ(events.samples[0].labels, (metrics::Labels{{"port", "p0"}, {"priority", "3"}}));
  EXPECT_EQ(std::get<uint64_t>(events.samples[0].value), 412u);
  EXPECT_EQ(events.samples[1].labels, (metrics::Labels{{"port", "p0"}, {"priority", "pause"}}));
  EXPECT_EQ(std::get<uint64_t>(events.samples[1].value), 0u);
  EXPECT_EQ(std::get<uint64_t>(served.at("fabricgen_pfc_xon_frames_total").samples[0].value), 414u);
  EXPECT_EQ(std::get<uint64_t>(served.at("fabricgen_pfc_xon_frames_total").samples[1].value), 418u);
  EXPECT_DOUBLE_EQ(std::get<double>(served.at("fabricgen_pfc_paused_seconds_total").samples[0].value), 416e-9);
  EXPECT_DOUBLE_EQ(std::get<double>(served.at("fabricgen_lcore_guest_wait_seconds_total").samples.at(0).value),
                   620e-9);
  EXPECT_DOUBLE_EQ(std::get<double>(served.at("fabricgen_lcore_host_steal_seconds_total").samples.at(0).value),
                   622e-9);
  for (const auto& [metric, v] : want) EXPECT_EQ(value(metric), v) << metric;
  // And in the text a scraper reads.
  const std::string text = metrics::ToText(hub.Collect());
  for (const Decl& d : All()) {
    if (d.metric.empty()) continue;
    const char* type = d.kind == MetricKind::kCounter ? "counter" : "gauge";
    EXPECT_NE(text.find("# TYPE " + d.metric + " " + type + "\n"), std::string::npos) << d.metric;
  }
}

// A scrape before any run, and after a run that left a plan stream out (a
// test over some of the plan's streams): every object is served, at 0.
TEST(Counters, ObjectsNoRunCountedAreServedAtZero) {
  auto plan = config::ParsePlan("fake.yaml",
                                "ports: [{name: p0, device: loopback}]\n"
                                "streams: [{name: s, rate: 1 kpps}, {name: t, rate: 1 kpps}]\n");
  ASSERT_TRUE(plan.ok()) << plan.status();
  metrics::Hub hub;
  hub.SetPlan(*plan);
  auto sample = [&](const std::string& metric, const std::string& stream) -> double {
    for (const metrics::MetricFamily& m : hub.Collect()) {
      if (m.name != metric) continue;
      for (const auto& smp : m.samples) {
        for (const auto& [k, v] : smp.labels) {
          if (k == "stream" && v == stream) {
            return std::holds_alternative<uint64_t>(smp.value) ? static_cast<double>(std::get<uint64_t>(smp.value))
                                                                : std::get<double>(smp.value);
          }
        }
      }
    }
    ADD_FAILURE() << metric << " of " << stream << " not served";
    return -1;
  };
  EXPECT_EQ(sample("fabricgen_stream_tx_packets_total", "t"), 0);
  EXPECT_EQ(sample("fabricgen_stream_tx_rate_pps", "t"), 0);
  metrics::RunCounts run;
  run.streams.push_back({"s", 0, 0, Live(5, 500, 5, 500, 0, 0, 0, 0, 0), {}});
  run.ports.push_back(LiveRun::PortLive{5, 500, 5, 500, 0});
  hub.Fold(run);
  EXPECT_EQ(sample("fabricgen_stream_tx_packets_total", "s"), 5);
  EXPECT_EQ(sample("fabricgen_stream_tx_packets_total", "t"), 0);
  EXPECT_EQ(sample("fabricgen_stream_rx_rate_pps", "t"), 0);
  // A figure the run did not have (s's RX port does not respond, its
  // requesters do not resend) has no sample, rather than a 0 read as a count.
  for (const metrics::MetricFamily& m : hub.Collect()) {
    if (m.name != "fabricgen_stream_ack_sent_total" && m.name != "fabricgen_stream_retransmitted_packets_total") {
      continue;
    }
    for (const auto& smp : m.samples) {
      EXPECT_NE(smp.labels.front(), (std::pair<std::string, std::string>{"stream", "s"})) << m.name;
    }
  }
}

// The CLI's `clear` shows counts since a base reading: every count less the
// base's, the responder's too, and what the stream is (answered, RX
// counted, resending) kept, so its figures keep their meaning.
TEST(Counters, LiveCountsSinceABaseKeepWhatTheStreamIs) {
  LiveRun::StreamLive now = Live(100, 1000, 90, 900, 3, 2, 1, 4, 5, endpoint::ResponderCounters{50, 6});
  now.tx.due = 100;
  now.answered = true;
  now.rx_counted = false;
  now.retransmits = true;
  now.retransmitted_packets = 12;
  LiveRun::StreamLive base = now;
  base.tx.packets = 40, base.rx.packets = 30, base.responder.acks_sent = 20, base.retransmitted_packets = 2;
  base.tx.due = 70, base.rx.ce = 1;
  const LiveRun::StreamLive d = now - base;
  EXPECT_EQ(d.tx.packets, 60u);
  EXPECT_EQ(d.rx.packets, 60u);
  EXPECT_EQ(d.tx.bytes, 0u);
  EXPECT_EQ(d.tx.slots_skipped, 0u);
  EXPECT_EQ(d.tx.due, 30u);  // (100 due in `now`)
  EXPECT_EQ(d.rx.ce, 3u);
  EXPECT_EQ(d.responder.acks_sent, 30u);
  EXPECT_EQ(d.responder.naks_sent, 0u);
  EXPECT_EQ(d.retransmitted_packets, 10u);
  EXPECT_TRUE(d.answered);
  EXPECT_FALSE(d.rx_counted);
  EXPECT_TRUE(d.retransmits);
}

// docs/metrics.md's table lists each declared metric with its type and unit,
// and no fabricgen_stream/port/lcore counter that is not declared.
TEST(Counters, DocsListEveryDeclaredMetricAndNoOther) {
  std::ifstream in(std::string(FG_SOURCE_ROOT) + "/docs/metrics.md");
  ASSERT_TRUE(in) << "docs/metrics.md";
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  // | `name` | type | labels | unit | meaning |
  const std::regex row(R"(\n\| `(fabricgen_[a-z0-9_]+)` \| ([a-z]+) \| [^|]* \| ([^|]*) \|)");
  std::map<std::string, std::pair<std::string, std::string>> documented;  // name -> (type, unit)
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), row); it != std::sregex_iterator(); ++it) {
    std::string unit = (*it)[3];
    unit = unit.substr(0, unit.find_last_not_of(' ') + 1);
    documented[(*it)[1]] = {(*it)[2], unit};
  }
  ASSERT_GT(documented.size(), 20u);
  std::set<std::string> declared;
  for (const Decl& d : All()) {
    if (d.metric.empty()) continue;
    declared.insert(d.metric);
    ASSERT_TRUE(documented.count(d.metric)) << d.metric << " is not in docs/metrics.md";
    EXPECT_EQ(documented[d.metric].first, d.kind == MetricKind::kCounter ? "counter" : "gauge") << d.metric;
    // Served in base units (Prometheus' naming): a figure kept in ns is served in seconds, under a _seconds name.
    if (d.metric_scale != 1) {
      EXPECT_EQ(d.unit, "ns") << d.metric;
      EXPECT_EQ(d.metric_scale, 1e-9) << d.metric;
      EXPECT_EQ(documented[d.metric].second, "seconds") << d.metric;
      EXPECT_TRUE(d.metric.ends_with("_seconds_total") || d.metric.ends_with("_seconds")) << d.metric;
    } else {
      EXPECT_EQ(documented[d.metric].second, d.unit) << d.metric;
      EXPECT_EQ(d.metric.find("_ns"), std::string::npos) << d.metric << ": Prometheus wants seconds";
    }
  }
  for (const auto& [name, tu] : documented) {
    if (tu.first == "counter" && std::regex_match(name, std::regex("fabricgen_(stream|port|lcore)_.*"))) {
      EXPECT_TRUE(declared.count(name)) << name << " is documented but not declared in engine/counters.cc";
    }
  }
}

}  // namespace
}  // namespace fg::engine
