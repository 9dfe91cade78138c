#include "session/run_report.h"

#include <algorithm>
#include <ctime>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/units.h"
#include "endpoint/frame_handler.h"
#include "endpoint/pfc.h"
#include "engine/counters.h"
#include "methods/dcqcn_convergence.h"
#include "report/json.h"

namespace fg::session {

void WriteTesterLimits(report::JsonWriter& w, const std::vector<engine::TesterLimit>& limits) {
  w.Key("tester_limits");
  w.BeginArray();
  for (const engine::TesterLimit& l : limits) {
    w.BeginObject();
    w.Field("kind", l.kind);
    w.Field("count", l.count);
    w.Field("detail", l.detail);
    const bool stall = l.kind == engine::kRxStall || l.kind == engine::kPacingStall;
    if (stall) w.Field("longest_ns", l.longest_ns);
    if (stall || l.kind == engine::kTxShortfall) {
      // Where the time went, as the kernel counts it (null: unreadable).
      for (auto [key, ns] : {std::pair{"cpu_wait_ns", l.cpu_wait_ns}, std::pair{"steal_ns", l.steal_ns}}) {
        w.Key(key);
        if (ns >= 0) {
          w.Int(ns);
        } else {
          w.Null();
        }
      }
    }
    w.EndObject();
  }
  w.EndArray();
}

namespace {

// Each frame handler kind's counts (endpoint/frame_handler.h) as the object
// ports[].<kind>; the neighbour handler's with the gateway's MAC.
void WriteHandled(report::JsonWriter& w, const engine::PortResult& p, const std::string& gateway_mac) {
  const std::span<const endpoint::HandlerKind> kinds = endpoint::HandlerKinds();
  for (size_t k = 0; k < kinds.size(); ++k) {
    if (kinds[k].reported_apart) continue;
    w.Key(std::string(kinds[k].name));
    w.BeginObject();
    for (size_t c = 0; c < kinds[k].counts.size(); ++c) {
      w.Field(std::string(kinds[k].counts[c].key), k < p.handled.size() ? p.handled[k][c] : uint64_t{0});
    }
    if (kinds[k].name == "neighbors") {
      w.Key("gateway_mac");
      if (gateway_mac.empty()) {
        w.Null();
      } else {
        w.String(gateway_mac);
      }
    }
    w.EndObject();
  }
}

// A port's PFC rows (endpoint/pfc.h): each priority (and link-level PAUSE)
// that received a PFC or PAUSE frame, with where it was counted.
std::vector<endpoint::PfcFigures> PfcRows(const engine::PortResult& p, const engine::TrialResult& r) {
  const std::span<const endpoint::HandlerKind> kinds = endpoint::HandlerKinds();
  for (size_t k = 0; k < kinds.size() && k < p.handled.size(); ++k) {
    if (kinds[k].name != endpoint::PfcKind().name) continue;
    return endpoint::PfcFiguresOf(p.handled[k], static_cast<uint64_t>(r.start_unix_ns - r.unix_minus_host_ns),
                                  static_cast<uint64_t>(std::max<int64_t>(r.duration_ns, 0)), endpoint::kWhole,
                                  "fabricgen RX: frames the " + p.driver + " PMD passed up to software");
  }
  return {};
}

// ports[].pfc
void WritePfc(report::JsonWriter& w, const engine::PortResult& p, const engine::TrialResult& r) {
  w.Key("pfc");
  w.BeginArray();
  for (const endpoint::PfcFigures& f : PfcRows(p, r)) {
    w.BeginObject();
    w.Key("priority");  // null: link-level PAUSE (802.3x), every priority
    if (f.priority >= 0) {
      w.Int(f.priority);
    } else {
      w.Null();
    }
    w.Field("pause_events", f.pause_events);
    w.Field("xon_frames", f.xon_frames);
    w.Field("paused_ns", f.paused_ns);
    w.Field("events_per_s", f.events_per_s);
    w.Key("storm_onset_ns");
    if (f.storm_onset_ns >= 0) {
      w.Int(f.storm_onset_ns);
    } else {
      w.Null();
    }
    w.Field("observation_point", f.observation_point);
    w.EndObject();
  }
  w.EndArray();
}

// Every counter engine/counters.h declares for the object, under its key
// (null where the object has no such figure).
template <class Result, class Live>
void WriteCounters(report::JsonWriter& w, std::span<const engine::Counter<Result, Live>> table, const Result& x) {
  for (const engine::Counter<Result, Live>& c : table) {
    w.Key(c.key);
    if (const engine::CounterValue v = engine::Read(c, x)) {
      w.Int(*v);
    } else {
      w.Null();
    }
  }
}

double PerSecond(uint64_t n, int64_t ns) { return ns > 0 ? static_cast<double>(n) * 1e9 / static_cast<double>(ns) : 0; }

// Achieved TX rate: n packets evenly paced span n-1 intervals from the first
// to the last TX burst.
double TxPps(const engine::StreamResult& s) {
  if (s.tx.packets < 2 || s.tx_duration_ns <= 0) return 0;
  return PerSecond(s.tx.packets - 1, s.tx_duration_ns);
}

}  // namespace

std::string UtcNow() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void WriteReportHeader(report::JsonWriter& w, Session& session, const std::string& started_utc) {
  w.Key("tool");
  w.BeginObject();
  w.Field("name", "fabricgen");
  w.Field("version", FABRICGEN_VERSION);
  w.EndObject();
  w.Key("plan");
  w.BeginObject();
  w.Field("file", session.plan().file);
  w.Field("name", session.plan().name);
  w.EndObject();
  w.Field("started_utc", started_utc);
}

void WriteEalFields(report::JsonWriter& w, Session& session) {
  w.Key("eal_args");
  w.BeginArray();
  for (const std::string& a : session.eal_decision().argv) w.String(a);
  w.EndArray();
  w.Field("memory", session.eal_decision().memory_note);
  w.Field("tsc_hz", session.eal().tsc_hz());
}

void WritePerFlow(report::JsonWriter& w, const engine::StreamResult& s) {
  // Flow by flow: every flow, or (per_flow_all false) the worst ones.
  w.Field("per_flow_all", s.per_flow_all);
  w.Key("per_flow");
  w.BeginArray();
  for (const engine::FlowReport& f : s.per_flow) {
    w.BeginObject();
    w.Field("flow", f.index);
    w.Field("key", f.key);
    w.Field("owner_lcore", f.owner_lcore);
    WriteCounters(w, engine::FlowCounters(), f);
    w.Field("rx_rate_pps", f.rx_rate_pps());
    w.Key("latency");
    w.BeginObject();
    if (f.rx.latency_distribution) {
      w.Field("p50_ns", f.rx.latency_p50_ns);
      w.Field("p99_ns", f.rx.latency_p99_ns);
      w.Field("max_ns", f.rx.latency_max_ns);
    } else {
      // Distributions are kept per flow up to rx::kPerFlowLatencyFlows flows an lcore owns.
      w.Key("p50_ns"), w.Null();
      w.Key("p99_ns"), w.Null();
      w.Key("max_ns"), w.Null();
    }
    w.Field("last_ns", f.rx.latency_last_ns);
    w.Field("jitter_ns", f.rx.jitter_ns);
    w.EndObject();
    if (s.dcqcn) {
      // [t_ns, bps]: from t_ns (since the run's start) on, the QP's rate (L2, frames with FCS).
      w.Key("rate_timeline");
      w.BeginArray();
      for (const tx::RatePoint& p : f.rate_timeline) {
        w.BeginArray();
        w.Int(p.t_ns);
        w.Double(p.bps);
        w.EndArray();
      }
      w.EndArray();
    }
    w.EndObject();
  }
  w.EndArray();
}

// A DCQCN stream's reaction points: their parameters and what they did.
void WriteDcqcn(report::JsonWriter& w, const engine::StreamResult& s) {
  w.Key("dcqcn");
  w.BeginObject();
  w.Key("parameters");
  w.BeginObject();
  methods::WriteDcqcnParameters(w, s.dcqcn_params);
  w.EndObject();
  w.Field("cnp_handled", s.rp.cnps);
  w.Field("rate_cuts", s.rp.cuts);
  w.Field("cnps_within_rate_reduce_period", s.rp.ignored);
  // From a CNP's arrival at the requester's port to its cut in the QP's pacer.
  w.Key("reaction_ns");
  w.BeginObject();
  w.Field("samples", s.rp.reaction.count());
  w.Field("p50_ns", s.rp.reaction.Percentile(50));
  w.Field("p99_ns", s.rp.reaction.Percentile(99));
  w.Field("max_ns", s.rp.reaction.max());
  w.EndObject();
  w.Field("rate_timeline_resolution_ns", tx::kRateTimelineNs);
  w.Field("rate_timeline_truncated", s.rp.timeline_truncated);
  w.EndObject();
}

// READ (engine::StreamResult::read_*): on the requests, what the responder
// executed; on the responses, what the requests asked for and what arrived.
void WriteRead(report::JsonWriter& w, const engine::TrialResult& r, const engine::StreamResult& s) {
  if (s.read_responses < 0 && s.read_requests < 0) return;
  w.Key("read");
  w.BeginObject();
  w.Field("packets_per_request", s.read_packets);
  if (s.read_responses >= 0) {
    w.Field("responses", r.streams[s.read_responses].name);
    w.Field("requests_executed", s.responder.delivered_packets);
    w.Field("requests_skipped", s.responder.out_of_sequence);
    w.Field("requests_late", s.responder.read_late);
    w.Field("duplicate_requests", s.responder.duplicates);
    w.Field("data_bytes", s.responder.delivered_bytes);
  } else {
    const engine::StreamResult& q = r.streams[s.read_requests];
    w.Field("requests", q.name);
    w.Field("asked_packets", s.tx.due);
    // The READ data that reached the requester: each response packet once,
    // at the message's mean payload per packet (exact over whole messages).
    const uint64_t unique = s.rx.packets - std::min(s.rx.packets, s.analysis.duplicate);
    const double message = q.responder.delivered_packets == 0 ? 0
                           : static_cast<double>(q.responder.delivered_bytes) /
                                 static_cast<double>(q.responder.delivered_packets);
    const double per_packet = s.read_packets == 0 ? 0 : message / s.read_packets;
    w.Field("goodput_bps", s.tx_duration_ns > 0 ? static_cast<double>(unique) * per_packet * 8e9 /
                                                      static_cast<double>(s.tx_duration_ns)
                                                : 0.0);
  }
  w.EndObject();
}

// QP set-up by CM MADs (a connect: cm stream's, or a trial's): the draft's
// connection initiation latency, per QP from its first REQ to its RTU, on
// one clock; null without connect: cm.
void WriteQpSetup(report::JsonWriter& w, const std::optional<engine::QpSetup>& setup) {
  w.Key("qp_setup");
  if (!setup) {
    w.Null();
    return;
  }
  const engine::QpSetup& q = *setup;
  w.BeginObject();
  w.Field("method", "cm");
  w.Field("count", q.setup.count());
  w.Field("p50_ns", q.setup.Percentile(50));
  w.Field("p99_ns", q.setup.Percentile(99));
  w.Field("max_ns", q.setup.max());
  w.Field("elapsed_ns", q.elapsed_ns);
  w.Field("setup_rate_per_s", q.elapsed_ns > 0 ? static_cast<double>(q.qps) * 1e9 / q.elapsed_ns : 0.0);
  w.Field("mads_resent", q.resent);
  w.Field("other_frames", q.other_frames);
  w.EndObject();
}

void WriteLcores(report::JsonWriter& w, const engine::TrialResult& r) {
  // Per worker lcore (VPP's show runtime): cycles are TSC cycles.
  w.Key("lcores");
  w.BeginArray();
  for (const engine::LcoreStats& l : r.lcores) {
    w.BeginObject();
    w.Field("lcore", l.lcore);
    w.Field("flows", l.flows);
    if (l.cpu >= 0) {
      w.Field("cpu", l.cpu);
    } else {
      w.Key("cpu");
      w.Null();
    }
    WriteCounters(w, engine::LcoreCounters(), l);
    w.Field("tx_cycles_per_packet", l.tx_cycles_per_packet());
    w.Field("rx_cycles_per_packet", l.rx_cycles_per_packet());
    w.Field("handoff_max_polls", l.handoff_max_polls);
    w.Field("handoff_max_ns", l.handoff_max_ns);
    w.Field("holdup_max_ns", l.holdup_max_ns);
    w.Field("short_holdups", l.short_holdups);
    w.Field("short_holdup_ns", l.short_holdup_ns);
    w.EndObject();
  }
  w.EndArray();
}

std::string RunReportJson(Session& session, const engine::TrialResult& r, const std::string& started_utc) {
  const config::Plan& plan = session.plan();
  report::JsonWriter w;
  w.BeginObject();
  w.Field("schema_version", kRunReportSchemaVersion);
  WriteReportHeader(w, session, started_utc);
  w.Field("complete", !r.interrupted && !r.timed_out);
  w.Field("interrupted", r.interrupted);
  w.Field("timed_out", r.timed_out);
  w.Field("duration_ns", r.duration_ns);
  w.Field("drain_ns", r.drain_ns);  // `drain` past the last frame sent (longer when the drain sent frames)
  // The tester fell behind somewhere: the streams' tester_limits say where.
  w.Field("tester_limited", r.tester_limited());
  w.Key("warnings");
  w.BeginArray();
  for (const std::string& x : r.warnings) w.String(x);
  w.EndArray();
  w.Key("environment");
  w.BeginObject();
  WriteEalFields(w, session);
  w.Field("timestamp_source", r.timestamp_source);
  w.Key("placement");
  w.BeginArray();
  for (const std::string& p : r.placement) w.String(p);
  w.EndArray();
  w.Field("flow_placement", r.placement_policy);
  w.EndObject();

  std::vector<port::Port*> ports = session.ports();
  w.Key("ports");
  w.BeginArray();
  for (size_t i = 0; i < r.ports.size(); ++i) {
    const engine::PortResult& p = r.ports[i];
    const port::Capabilities& c = ports[i]->capabilities();
    w.BeginObject();
    w.Field("name", p.name);
    w.Field("device", plan.ports[i].device);
    w.Field("dpdk_name", c.device);
    w.Field("driver", c.driver);
    w.Field("mac", c.mac);  // the port's own MAC (its hosts' for the destinations it receives)
    w.Field("link_speed_bps", static_cast<uint64_t>(c.link_speed_mbps) * 1'000'000);
    w.Field("rx_distribution", ports[i]->rx_spread().description);
    w.Key("rx_icrc_checked");  // a responding port: RoCEv2 ICRCs checked on RX (not on the built-in loopback)
    if (p.rx_icrc_checked) {
      w.Bool(*p.rx_icrc_checked);
    } else {
      w.Null();
    }
    WriteCounters(w, engine::PortCounters(), p);
    const bool gateway = i < session.gateways().size() && session.gateways()[i].has_value();
    WriteHandled(w, p, gateway ? FormatMac(session.gateways()[i]->mac) : "");
    WritePfc(w, p, r);
    w.Field("duration_ns", r.duration_ns);
    WriteTesterLimits(w, p.tester_limits);
    w.Key("kernel_interface");  // the kernel's counters of the interface behind the PMD (af_packet)
    if (p.kernel.valid) {
      w.BeginObject();
      w.Field("name", p.kernel_iface);
      w.Field("rx_packets", p.kernel.rx_packets);
      w.Field("tx_packets", p.kernel.tx_packets);
      w.Field("rx_dropped", p.kernel.rx_dropped);
      w.Field("tx_dropped", p.kernel.tx_dropped);
      w.EndObject();
    } else {
      w.Null();
    }
    w.Key("pmd_stats");  // the driver's counters (bytes as the PMD counts them, usually without FCS)
    w.BeginObject();
    w.Field("tx_packets", p.hw.tx_packets);
    w.Field("rx_packets", p.hw.rx_packets);
    w.Field("tx_bytes", p.hw.tx_bytes);
    w.Field("rx_bytes", p.hw.rx_bytes);
    w.Field("rx_missed_packets", p.hw.rx_missed);
    w.Field("rx_error_packets", p.hw.rx_errors);
    w.Field("tx_error_packets", p.hw.tx_errors);
    w.Field("rx_nombuf", p.hw.rx_nombuf);
    w.EndObject();
    w.Key("xstats");
    w.BeginObject();
    for (const port::Xstat& x : p.xstats) w.Field(x.name, x.value);
    w.EndObject();
    w.EndObject();
  }
  w.EndArray();

  w.Key("streams");
  w.BeginArray();
  for (const engine::StreamResult& s : r.streams) {
    w.BeginObject();
    w.Field("name", s.name);
    w.Field("tx_port", r.ports[s.tx_port].name);
    w.Field("rx_port", r.ports[s.rx_port].name);
    w.Field("mean_frame_size_bytes", s.frame_size);
    w.Field("set_rate_pps", s.set_pps);
    w.Field("flows", s.flows);
    WriteTesterLimits(w, s.tester_limits);
    w.Field("signed_frames", s.signed_frames);
    // RX figures are null for frames without a signature (the ports'
    // rx_unknown_packets count them) and on a TX-only port.
    w.Field("received", s.received);
    WriteCounters(w, engine::StreamCounters(), s);
    if (s.signed_frames && s.received) {
      const stats::StreamStats& a = s.analysis;
      w.Field("loss_ratio", s.tx.packets ? static_cast<double>(s.lost()) / static_cast<double>(s.tx.packets) : 0.0);
      w.Field("reorder_extent_max_packets", a.max_extent);
      w.Field("loss_duration_max_ns", a.loss_ns_max);
      w.Key("latency");
      if (s.read_responses >= 0) {
        w.Null();  // READ requests carry no TX stamp: their responses' latency is the READ's
      } else {
      w.BeginObject();
      w.Field("observation_point", r.timestamp_source);
      w.Field("samples", a.latency.count());
      w.Field("min_ns", a.latency.min());
      w.Field("mean_ns", a.latency.mean());
      for (auto [name, p] : {std::pair{"p50_ns", 50.0}, std::pair{"p95_ns", 95.0}, std::pair{"p99_ns", 99.0},
                             std::pair{"p99_9_ns", 99.9}, std::pair{"p99_99_ns", 99.99}}) {
        w.Field(name, a.latency.Percentile(p));
      }
      w.Field("max_ns", a.latency.max());
      w.Field("jitter_mean_ns", a.jitter_ns_mean);
      w.Field("jitter_max_ns", a.jitter_ns_max);
      w.EndObject();
      }
    }
    w.Field("duration_ns", s.tx_duration_ns);
    const double pps = TxPps(s);
    w.Field("tx_rate_pps", pps);
    w.Field("tx_rate_bps_l2", pps * 8.0 * s.frame_size);
    w.Field("tx_rate_bps_l1", pps * 8.0 * (s.frame_size + kEthL1Overhead));
    if (s.dcqcn) WriteDcqcn(w, s);
    WriteQpSetup(w, s.qp_setup);
    if (s.delivers) {
      // Unique payload bytes the responder took in order, over the stream's sending time.
      w.Field("goodput_bps", s.tx_duration_ns > 0 ? static_cast<double>(s.responder.delivered_bytes) * 8e9 /
                                                        static_cast<double>(s.tx_duration_ns)
                                                  : 0.0);
    }
    WriteRead(w, r, s);
    if (s.retransmits) {
      w.Field("retransmit_rate_pps", s.tx_duration_ns > 0 ? static_cast<double>(s.retx.retransmitted_packets) * 1e9 /
                                                                static_cast<double>(s.tx_duration_ns)
                                                          : 0.0);
    }
    WritePerFlow(w, s);
    w.EndObject();
  }
  w.EndArray();
  WriteLcores(w, r);

  // Per-stream packet counters over time (TSC-timed samples).
  w.Key("timeseries");
  w.BeginObject();
  w.Field("interval_note", "one sample per second from the synchronized start, and one when TX ended");
  w.Key("xstat_names");
  w.BeginArray();
  for (const auto& names : r.xstat_names) {
    w.BeginArray();
    for (const std::string& n : names) w.String(n);
    w.EndArray();
  }
  w.EndArray();
  w.Key("samples");
  w.BeginArray();
  for (const engine::Sample& smp : r.samples) {
    w.BeginObject();
    w.Field("t_ns", smp.t_ns);
    w.Key("tx_packets");
    w.BeginArray();
    for (uint64_t v : smp.tx_packets) w.Uint(v);
    w.EndArray();
    w.Key("rx_packets");
    w.BeginArray();
    for (uint64_t v : smp.rx_packets) w.Uint(v);
    w.EndArray();
    w.Key("xstats");  // per port, values in xstat_names order
    w.BeginArray();
    for (const auto& values : smp.xstats) {
      w.BeginArray();
      for (uint64_t v : values) w.Uint(v);
      w.EndArray();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();

  w.Key("loss_events");
  w.BeginObject();
  w.Field("logged", static_cast<uint64_t>(r.loss_events.size()));
  w.Field("not_logged", r.loss_events_not_logged);
  w.Key("events");
  w.BeginArray();
  for (const stats::LossEvent& e : r.loss_events) {
    w.BeginObject();
    w.Field("flow", e.flow);
    w.Field("first_seq", e.first_seq);
    w.Field("packets", e.packets);
    w.Field("start_ns", e.start_ns);
    w.Field("end_ns", e.end_ns);
    w.Field("duration_ns", e.end_ns - e.start_ns);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();

  w.Key("notes");
  w.BeginArray();
  for (port::Port* p : ports) {
    for (const std::string& n : p->notes()) w.String(n);
  }
  w.EndArray();
  w.EndObject();
  return w.Take();
}

namespace {

// What a limit's count counts, for the one-line console form.
const char* LimitUnit(const engine::TesterLimit& l) {
  if (l.kind == engine::kPacingStall) return "slots";
  if (l.kind == engine::kAnswerDrop) return "answers";
  if (l.detail.find("(times)") != std::string::npos) return "times";
  return "frames";
}

}  // namespace

std::string BriefLimits(const std::vector<engine::TesterLimit>& limits, size_t width) {
  uint64_t longest = 0;
  for (const engine::TesterLimit& l : limits) longest = std::max(longest, l.longest_ns);
  const std::string tail = longest > 0 ? "; longest hold-up " + FormatDuration(static_cast<int64_t>(longest)) : "";
  std::string out;
  for (size_t i = 0; i < limits.size(); ++i) {
    const std::string item = absl::StrCat(i == 0 ? "" : ", ", limits[i].kind, " ", FormatCount(limits[i].count), " ",
                                          LimitUnit(limits[i]));
    const std::string more = absl::StrFormat(", +%d more", limits.size() - i);
    // Room for this item and, if more follow, the "+N more" that would end the line.
    const size_t need = out.size() + item.size() + tail.size() + (i + 1 < limits.size() ? more.size() : 0);
    if (need > width && i > 0) {
      out += more;
      break;
    }
    out += item;
  }
  return out + tail;
}

std::string TesterLimitLines(const engine::TrialResult& r, bool verbose) {
  if (!r.tester_limited()) return "";
  // Brief by default: one line per stream (kinds, counts, the longest
  // hold-up), at most kConsoleWidth characters; each limit's detail (what was
  // seen, at each observation point) is in report.json and with --verbose.
  constexpr size_t kConsoleWidth = 160;
  std::string out =
      "warning: tester-limited: the tester fell behind; the figures below include its own shortfall, not the "
      "device's (detail: --verbose, report.json)\n";
  for (const engine::StreamResult& s : r.streams) {
    if (s.tester_limits.empty()) continue;
    if (verbose) {
      out += "  stream " + s.name + ": " + engine::DescribeLimits(s.tester_limits) + "\n";
      continue;
    }
    const std::string head = "  stream " + s.name + ": ";
    out += head + BriefLimits(s.tester_limits, kConsoleWidth > head.size() + 40 ? kConsoleWidth - head.size() : 40) +
           "\n";
  }
  return out;
}

std::string RunSummary(const engine::TrialResult& r, bool verbose) {
  // The counters with a console heading (engine/counters.h), between the
  // stream's frame size and its throughput and latency.
  const std::span<const engine::StreamCounter> counters = engine::StreamCounters();
  std::string out = absl::StrFormat("%-14s %9s", "stream", "frame");
  for (const engine::StreamCounter& c : counters) {
    if (!c.column.empty()) out += absl::StrFormat(" %12s", c.column);
  }
  out += absl::StrFormat(" %15s %10s %10s %10s %10s\n", "rx throughput", "lat p50", "lat p99", "lat p99.9", "lat max");
  for (const engine::StreamResult& s : r.streams) {
    out += absl::StrFormat("%-14s %7.1f B", s.name, s.frame_size);
    for (const engine::StreamCounter& c : counters) {
      if (!c.column.empty()) out += absl::StrFormat(" %12s", engine::FormatCounterValue(engine::Read(c, s)));
    }
    auto bps = [&](uint64_t bytes) {
      return s.tx_duration_ns > 0 ? static_cast<double>(bytes) * 8e9 / static_cast<double>(s.tx_duration_ns) : 0;
    };
    if (s.read_responses >= 0 && s.received) {
      // READ requests: counted by QP and PSN, no TX stamp (their responses carry the latency).
      out += absl::StrFormat(" %15s %10s %10s %10s %10s\n", FormatBitRate(bps(s.rx.bytes)), "-", "-", "-", "-");
      continue;
    }
    if (!s.signed_frames || !s.received) {
      // No RX figures: what TX sent, and why.
      out += absl::StrFormat(" %15s %s\n", FormatBitRate(bps(s.tx.bytes)) + " tx",
                             s.received ? "(frames without signature: counted per port)" : "(TX only)");
      continue;
    }
    const stats::StreamStats& a = s.analysis;
    auto lat = [&](double p) { return FormatDuration(static_cast<int64_t>(a.latency.Percentile(p))); };
    out += absl::StrFormat(" %15s %10s %10s %10s %10s\n", FormatBitRate(bps(s.rx.bytes)), lat(50), lat(99), lat(99.9),
                           FormatDuration(static_cast<int64_t>(a.latency.max())));
  }
  // Both ends of each answered stream's QPs (ports[].respond).
  for (const engine::StreamResult& s : r.streams) {
    if (!s.answered) continue;
    std::string figures;
    for (std::string_view key : {"ack_sent", "nak_sent", "responder_out_of_sequence_packets", "ce_seen", "cnp_sent",
                                 "cnp_suppressed", "answers_dropped", "ack_received", "nack_received",
                                 "cnp_received"}) {
      for (const engine::StreamCounter& c : counters) {
        if (c.key != key) continue;
        figures += absl::StrFormat("%s%s %s", figures.empty() ? "" : ", ", c.key,
                                   engine::FormatCounterValue(engine::Read(c, s)));
      }
    }
    out += absl::StrFormat("responder of stream %s on port %s: %s\n", s.name, r.ports[s.rx_port].name, figures);
    if (s.read_responses >= 0) {
      const engine::StreamResult& d = r.streams[s.read_responses];
      out += absl::StrFormat(
          "read of stream %s: %s requests executed (%s skipped over, %s of them came late; %s duplicates), %s B of "
          "data asked for in %s responses of stream %s (%d per request), %s sent, %s received\n",
          s.name, FormatCount(s.responder.delivered_packets), FormatCount(s.responder.out_of_sequence),
          FormatCount(s.responder.read_late), FormatCount(s.responder.duplicates), FormatCount(s.responder.delivered_bytes), FormatCount(d.tx.due),
          d.name, s.read_packets, FormatCount(d.tx.packets), FormatCount(d.rx.packets));
    }
  }
  for (const engine::StreamResult& s : r.streams) {
    if (!s.dcqcn) continue;
    out += absl::StrFormat(
        "dcqcn (%s) of stream %s: %s CNPs handled, %s rate cuts (%s within rate_reduce_period), reaction p50 %s, max "
        "%s%s\n",
        s.dcqcn_params.preset, s.name, FormatCount(s.rp.cnps), FormatCount(s.rp.cuts), FormatCount(s.rp.ignored),
        FormatDuration(static_cast<int64_t>(s.rp.reaction.Percentile(50))),
        FormatDuration(static_cast<int64_t>(s.rp.reaction.max())),
        s.rp.timeline_truncated ? "; rate timelines truncated (more points than kept)" : "");
  }
  for (const engine::StreamResult& s : r.streams) {
    if (!s.qp_setup) continue;
    const engine::QpSetup& q = *s.qp_setup;
    out += absl::StrFormat(
        "qp set-up of stream %s: %s QPs by CM (REQ, REP, RTU) in %s (%.0f QPs/s), each p50 %s, p99 %s, max %s; %s "
        "MADs sent again\n",
        s.name, FormatCount(q.setup.count()), FormatDuration(q.elapsed_ns),
        q.elapsed_ns > 0 ? static_cast<double>(q.qps) * 1e9 / q.elapsed_ns : 0.0,
        FormatDuration(static_cast<int64_t>(q.setup.Percentile(50))),
        FormatDuration(static_cast<int64_t>(q.setup.Percentile(99))), FormatDuration(static_cast<int64_t>(q.setup.max())),
        FormatCount(q.resent));
  }
  out += "latency: " + r.timestamp_source + "\n";
  for (const std::string& x : r.warnings) out += "warning: " + x + "\n";
  out += TesterLimitLines(r, verbose);
  for (const engine::PortResult& p : r.ports) {
    std::string figures;
    for (const engine::PortCounter& c : engine::PortCounters()) {
      if (c.column.empty()) continue;
      figures += absl::StrFormat("%s%s %s", figures.empty() ? "" : ", ", c.column,
                                 engine::FormatCounterValue(engine::Read(c, p)));
    }
    out += absl::StrFormat("port %s: %s\n", p.name, figures);
    for (const endpoint::PfcFigures& f : PfcRows(p, r)) {
      out += absl::StrFormat("port %s %s: %s pause events (%.1f/s), %s X-ON, paused %s%s (%s)\n", p.name,
                             f.priority >= 0 ? absl::StrFormat("PFC priority %d", f.priority) : std::string("PAUSE"),
                             FormatCount(f.pause_events), f.events_per_s, FormatCount(f.xon_frames),
                             FormatDuration(static_cast<int64_t>(f.paused_ns)),
                             f.storm_onset_ns >= 0 ? ", storm from " + FormatDuration(f.storm_onset_ns) : std::string(),
                             f.observation_point);
    }
  }
  out += absl::StrFormat("duration %s%s\n", FormatDuration(r.duration_ns),
                         r.interrupted ? " (interrupted: report marked incomplete)"
                         : r.timed_out ? " (TX phase hit its time bound: report marked incomplete)"
                                       : "");
  return out;
}

}  // namespace fg::session
