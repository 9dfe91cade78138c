#include "commands.h"

#include <rte_version.h>

#include <chrono>
#include <filesystem>
#include <iostream>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/units.h"
#include "config/plan.h"
#include "drivers/registry.h"
#include "engine/engine.h"
#include "methods/kinds.h"
#include "methods/throughput.h"
#include "metrics/hub.h"
#include "metrics/server.h"
#include "report/atomic_file.h"
#include "session/run_report.h"
#include "session/session.h"
#include "session/test_report.h"
#include "session/test_runner.h"
#include "stream/craft.h"

namespace fg::app {
port::DriverRegistry Drivers() {
  port::DriverRegistry r;
  drivers::RegisterAll(r);
  return r;
}

int ExitFor(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange: return kExitInput;
    default: return kExitRuntime;
  }
}

namespace {

int Fail(const absl::Status& s) {
  std::cerr << "fabricgen: " << s.message() << "\n";
  return ExitFor(s);
}

// A plan that cannot be read or validated is always invalid input.
int FailPlan(const absl::Status& s) {
  std::cerr << "fabricgen: " << s.message() << "\n";
  return kExitInput;
}

std::string DefaultOutDir(const config::Plan& plan) {
  std::string stem = std::filesystem::path(plan.file).stem().string();
  std::string t = session::UtcNow();  // YYYY-MM-DDThh:mm:ssZ -> YYYYMMDDThhmmssZ
  std::erase(t, '-');
  std::erase(t, ':');
  return "results/" + stem + "-" + t;
}

void PrintCapabilities(const std::string& label, const port::Capabilities& c) {
  std::cout << absl::StrFormat("%s: %s (driver %s, socket %d, mac %s)\n", label, c.device, c.driver, c.socket,
                               c.mac.empty() ? "-" : c.mac);
  std::cout << absl::StrFormat("  link: %s, %s; speeds: %s\n", c.link_up ? "up" : "down",
                               c.link_speed_mbps ? FormatBitRate(c.link_speed_mbps * 1e6) : "unknown speed",
                               c.speeds_mbps.empty() ? "-" : absl::StrJoin(c.speeds_mbps, ", ") + " Mbit/s");
  std::cout << absl::StrFormat("  queues: rx %d, tx %d (max); descriptors: rx %d, tx %d (max); MTU %d..%d B\n",
                               c.max_rx_queues, c.max_tx_queues, c.max_rx_desc, c.max_tx_desc, c.min_mtu, c.max_mtu);
  auto yn = [](bool b) { return b ? "yes" : "no"; };
  std::cout << absl::StrFormat(
      "  timestamps: rx hardware %s, tx send-on-timestamp %s, read_clock %s, ieee1588 %s; queue rate limit %s\n",
      yn(c.rx_hw_timestamp), yn(c.tx_send_on_timestamp), yn(c.read_clock), yn(c.timesync), yn(c.queue_rate_limit));
  std::cout << "  rx offloads: " << (c.rx_offloads.empty() ? "-" : absl::StrJoin(c.rx_offloads, " ")) << "\n";
  std::cout << "  tx offloads: " << (c.tx_offloads.empty() ? "-" : absl::StrJoin(c.tx_offloads, " ")) << "\n";
  for (const std::string& n : c.driver_notes) std::cout << "  " << n << "\n";
}

}  // namespace

int Version() {
  std::cout << "fabricgen " << FABRICGEN_VERSION << " (" << rte_version() << ")\n";
  return kExitOk;
}

int Ports(const std::string& plan_file, const std::vector<std::string>& eal) {
  config::Plan plan;
  if (!plan_file.empty()) {
    auto p = methods::LoadPlan(plan_file);
    if (!p.ok()) return FailPlan(p.status());
    plan = *std::move(p);
  } else {
    // No plan: the built-in loopback plus whatever the EAL arguments probe.
    plan.file = "(no plan)";
    config::PortSpec loop;
    loop.name = "loop0";
    plan.ports.push_back(loop);
  }
  const port::DriverRegistry registry = Drivers();
  auto s = session::Session::Open(plan, eal, registry, /*scan_pci=*/plan_file.empty());
  if (!s.ok()) return Fail(s.status());
  std::cout << "memory: " << (*s)->eal_decision().memory_note << "\n";
  for (port::Port* p : (*s)->ports()) {
    PrintCapabilities("port " + p->name(), p->capabilities());
    std::cout << "  rx times: " << p->rx_timestamp().observation_point() << "\n";
    std::cout << "  rx queues: " << p->rx_spread().description << "\n";
    for (const std::string& n : p->notes()) std::cout << "  " << n << "\n";
  }
  if (plan_file.empty()) {
    for (auto [id, name] : port::ListPorts()) {
      if (name == (*s)->ports()[0]->capabilities().device) continue;
      auto caps = port::ProbeCapabilities(id);
      if (caps.ok()) registry.Annotate(*caps);
      if (caps.ok()) PrintCapabilities(absl::StrFormat("dpdk port %d", id), *caps);
    }
  }
  return kExitOk;
}

int Craft(const std::string& plan_file, const std::string& pcap, uint64_t count, const std::atomic<bool>* interrupt) {
  auto plan = methods::LoadPlan(plan_file);
  if (!plan.ok()) return FailPlan(plan.status());
  // No ports are opened: a "% of line rate" is taken against the port's
  // link_speed when the plan gives one, else 100 Gbit/s; it only affects the
  // timestamps in the capture.
  constexpr double kNominalLineBps = 100e9;
  std::vector<double> lines;
  for (const config::PortSpec& p : plan->ports) {
    lines.push_back(p.link_speed_mbps != 0 ? p.link_speed_mbps * 1e6 : kNominalLineBps);
  }
  auto streams = stream::Compile(*plan, lines);
  if (!streams.ok()) return Fail(streams.status());
  auto summary = stream::CraftPcap(*streams, pcap, count, interrupt);
  if (!summary.ok()) return Fail(summary.status());
  for (size_t i = 0; i < streams->size(); ++i) {
    const stream::CompiledStream& s = (*streams)[i];
    std::cout << absl::StrFormat("%-16s %8s packets  %s\n", s.name, FormatCount(summary->packets[i]),
                                 s.program.description());
  }
  std::cout << absl::StrFormat("wrote %s packets to %s (timestamps: scheduled send times at each stream's rate)\n",
                               FormatCount(summary->total), pcap);
  return kExitOk;
}

namespace {

// A signal before traffic began (EAL, the ports or the streams were being
// set up): the report of a run that sent nothing, marked incomplete.
int ReportInterruptedSetup(session::Session& session, const std::string& out_dir, const std::string& started,
                           const std::string& when) {
  const std::string what = "interrupted " + when + ": no traffic was sent";
  std::string json;
  if (session.plan().tests.empty()) {
    engine::TrialResult none;
    none.interrupted = true;
    none.warnings.push_back(what);
    json = session::RunReportJson(session, none, started);
  } else {
    json = session::TestsReportJson(session, {}, started, /*interrupted=*/true);
  }
  const std::string path = out_dir + "/report.json";
  if (auto w = report::WriteFileAtomically(path, json); !w.ok()) return Fail(w);
  std::cout << what << "\n";
  std::cout << "report: " << path << " (interrupted: marked incomplete)\n";
  return kExitRuntime;
}

// The plan's tests, in order; each trial is shown as it ends. Ctrl-C stops
// the current trial and writes the report so far, marked incomplete.
int RunTests(session::Session& session, const std::vector<stream::CompiledStream>& streams, const RunArgs& args,
             const std::string& out_dir, const std::string& started, const std::atomic<bool>* interrupt,
             metrics::Hub& hub, const std::function<void(const engine::LiveRun*)>& on_live) {
  const config::Plan& plan = session.plan();
  std::vector<session::TestOutcome> results;
  const auto t0 = std::chrono::steady_clock::now();
  double planned = 0;  // estimated seconds of every test, for "~s left"
  for (const config::TestSpec& t : plan.tests) planned += session::EstimateTestSeconds(t, plan.drain_ns);
  double before_test = 0;  // estimate of the tests already done
  bool interrupted = false;
  hub.SetState("test");
  for (size_t i = 0; i < plan.tests.size() && !interrupted; ++i) {
    const config::TestSpec& test = plan.tests[i];
    if (!args.quiet) std::cout << session::TestHeadline(plan, i) << "\n";
    hub.SetTest(test.name, test.kind);
    methods::MethodOptions opt;
    opt.trial = methods::TrialOptionsOf(plan);
    opt.interrupt = interrupt;
    opt.on_live = on_live;
    const double test_started = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    opt.on_trial = [&](const methods::TrialRecord& t) {
      hub.SetTrial(t.index + 1, t.load, t.last_iteration_ns, t.last_busbw_bps);
      if (!args.quiet && std::cout) {  // (stdout gone, a closed pipe: no more progress lines)
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        // What is left of this test's estimate, plus the tests after it.
        const double this_test = session::EstimateTestSeconds(test, plan.drain_ns);
        const double left =
            std::max(0.0, planned - before_test - this_test) + std::max(0.0, this_test - (elapsed - test_started));
        std::cout << session::TrialLine(test.name, t, elapsed, left, args.verbose) << std::flush;
      }
    };
    auto r = session::RunPlanTest(session, streams, i, opt, results, args.quiet ? nullptr : &std::cout);
    if (!r.ok()) return Fail(r.status());
    for (session::TestOutcome& o : *r) results.push_back(std::move(o));
    hub.TestDone();
    interrupted = interrupt != nullptr && interrupt->load();
    before_test += session::EstimateTestSeconds(test, plan.drain_ns);
  }
  const std::string json = session::TestsReportJson(session, results, started, interrupted);
  const std::string path = out_dir + "/report.json";
  if (auto w = report::WriteFileAtomically(path, json); !w.ok()) return Fail(w);
  std::cout << session::TestsSummary(results);
  std::cout << "report: " << path << (interrupted ? " (interrupted: marked incomplete)" : "") << "\n";
  bool complete = !interrupted;
  for (const auto& r : results) complete = complete && r.result->complete;
  return complete ? kExitOk : kExitRuntime;
}

}  // namespace

int Run(const RunArgs& args, const std::atomic<bool>* interrupt) {
  auto plan = methods::LoadPlan(args.plan);
  if (!plan.ok()) return FailPlan(plan.status());
  const std::string out_dir = args.out_dir.has_value() ? *args.out_dir : DefaultOutDir(*plan);
  const std::string started = session::UtcNow();
  // Before EAL and traffic: results that cannot be written are found now. A
  // run that fails before its report leaves no empty directory it made.
  std::error_code ec;
  const bool out_existed = std::filesystem::exists(out_dir, ec);
  if (auto d = report::PrepareOutputDirectory(out_dir); !d.ok()) {
    std::cerr << "fabricgen: --out " << d.message() << "\n";
    return kExitInput;
  }
  absl::Cleanup tidy = [&] {
    if (!out_existed) std::filesystem::remove(out_dir, ec);  // only when still empty
  };

  const port::DriverRegistry registry = Drivers();
  auto s = session::Session::Open(*plan, args.eal, registry);
  if (!s.ok()) return Fail(s.status());
  session::Session& session = **s;
  // A signal during the set-up (which can take seconds: EAL, the ports,
  // millions of flows) ends the run before traffic, with its report.
  auto interrupted = [interrupt] { return interrupt != nullptr && interrupt->load(); };
  if (interrupted()) return ReportInterruptedSetup(session, out_dir, started, "while EAL and the ports started");
  auto streams = session.CompileStreams();
  if (!streams.ok()) return Fail(streams.status());
  if (interrupted()) return ReportInterruptedSetup(session, out_dir, started, "while the streams were compiled");

  if (!args.quiet) {
    std::cout << absl::StrFormat("fabricgen %s: plan %s (%s)\n", FABRICGEN_VERSION,
                                 plan->name.empty() ? "-" : plan->name, plan->file);
    std::cout << "memory: " << session.eal_decision().memory_note << "\n";
    for (port::Port* p : session.ports()) {
      const port::Capabilities& c = p->capabilities();
      std::cout << absl::StrFormat("port %s: %s (%s), link %s\n", p->name(), c.device, c.driver,
                                   c.link_speed_mbps ? FormatBitRate(c.link_speed_mbps * 1e6) : "speed unknown");
      for (const std::string& n : p->notes()) std::cout << "  note: " << n << "\n";
    }
    for (size_t i = 0; i < session.gateways().size(); ++i) {
      if (const auto& g = session.gateways()[i]) {
        std::cout << absl::StrFormat("port %s: gateway %s is %s (%s, %d request%s, %.1f ms)\n", plan->ports[i].name,
                                     g->address, FormatMac(g->mac), g->nd ? "ND" : "ARP", g->requests,
                                     g->requests == 1 ? "" : "s", g->elapsed_ns / 1e6);
      }
    }
  }

  // Prometheus metrics while the plan runs (the endpoint closes when it ends).
  metrics::Hub hub;
  std::unique_ptr<metrics::Server> server;
  std::function<void(const engine::LiveRun*)> on_live;
  if (!args.metrics.empty()) {
    hub.SetPlan(*plan);
    auto m = metrics::Server::Start(args.metrics, [&hub] { return hub.Collect(); });
    if (!m.ok()) return Fail(m.status());
    server = std::move(*m);
    std::cout << "metrics: " << server->url() << "\n" << std::flush;
    on_live = [&hub](const engine::LiveRun* r) { hub.OnLive(r); };
  }
  if (interrupted()) return ReportInterruptedSetup(session, out_dir, started, "while the run was set up");

  if (!plan->tests.empty()) return RunTests(session, *streams, args, out_dir, started, interrupt, hub, on_live);

  engine::TrialOptions opt = methods::TrialOptionsOf(*plan);
  opt.interrupt = interrupt;
  opt.on_live = on_live;
  hub.SetState("running");
  if (!args.quiet) {
    opt.on_progress = [](const engine::Progress& p) {
      if (!std::cerr) return;  // stderr is gone (a closed pipe): the run goes on without progress lines
      const double left = static_cast<double>(std::max<int64_t>(0, p.expected_ns - p.elapsed_ns)) / 1e9;
      std::cerr << absl::StrFormat("  %7.1f s elapsed, ~%.1f s left: tx %s (%s), rx %s (%s)\n", p.elapsed_ns / 1e9,
                                   left, FormatCount(p.tx_packets), FormatPacketRate(p.tx_pps),
                                   FormatCount(p.rx_packets), FormatPacketRate(p.rx_pps));
    };
  }
  if (!args.quiet) {
    opt.on_placement = [](const std::vector<std::string>& placement) {
      for (const std::string& p : placement) std::cout << p << "\n";
      std::cout << std::flush;
    };
  }
  auto result = engine::RunTrial(session.eal(), session.ports(), *streams, opt);
  if (!result.ok()) return Fail(result.status());

  const std::string json = session::RunReportJson(session, *result, started);
  const std::string path = out_dir + "/report.json";
  if (auto w = report::WriteFileAtomically(path, json); !w.ok()) return Fail(w);
  std::cout << session::RunSummary(*result, args.verbose);
  std::cout << "report: " << path << "\n";
  return (result->interrupted || result->timed_out) ? kExitRuntime : kExitOk;
}

}  // namespace fg::app
