// Pacing accuracy: streams at 10 kpps, 100 kpps, 1 Mpps and unpaced ("max")
// on a net_null port (TX only), each for SECONDS seconds; every 1 s window's
// rate (packets over TSC-timed samples) against the set rate. For "max" the
// windows are compared with their own mean. docs/benchmarks.md has results.
//
//   build/test/bench/rate_bench [SECONDS] [-- EAL arguments]
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "config/plan.h"
#include "engine/engine.h"
#include "port/eal.h"
#include "port/eal_args.h"
#include "port/port.h"
#include "stream/stream.h"

int main(int argc, char** argv) {
  const int seconds = argc > 1 ? std::atoi(argv[1]) : 10;
  fg::port::EalRequest req;
  req.vdevs = {"net_null_rate0,copy=1"};
  req.no_pci = true;
  req.pid = static_cast<int>(getpid());
  req.pool_bytes = 64 << 20;
  for (int i = 2; i < argc; ++i) {
    if (std::string(argv[i]) != "--") req.user_args.push_back(argv[i]);
  }
  const fg::port::EalDecision d = fg::port::DecideEalArgs(req, fg::port::ProbeHost());
  auto eal = fg::port::Eal::Start(d.argv, d.private_prefix);
  if (!eal.ok()) {
    std::fprintf(stderr, "%s\n", std::string(eal.status().message()).c_str());
    return 1;
  }
  auto port = fg::port::Port::Open(
      fg::port::PortOptions{.name = "p0", .dpdk_name = "net_null_rate0", .rx_queues = 0, .lcores = 2});
  if (!port.ok() || !(*port)->Start().ok()) {
    std::fprintf(stderr, "port: %s\n", std::string(port.status().message()).c_str());
    return 1;
  }
  std::printf("%-10s %12s %14s %14s %14s %10s %14s\n", "set rate", "windows", "mean", "min window", "max window",
              "worst dev", "skipped slots");
  // "100 %": line rate as the port reports it (net_null: 10 Gbit/s, 14.88 Mpps of 64 B frames).
  for (const char* rate : {"10 kpps", "100 kpps", "1 Mpps", "100 %", "max"}) {
    const std::string yaml = absl::StrFormat(
        "duration: %d s\nports: [{name: p0, device: net_null_rate0, rx_queues: 0}]\nstreams: [{name: s, rate: %s, "
        "frame: {size: "
        "64}}]\n",
        seconds, rate);
    auto plan = fg::config::ParsePlan("rate.yaml", yaml);
    if (!plan.ok()) {
      std::fprintf(stderr, "%s\n", std::string(plan.status().message()).c_str());
      return 1;
    }
    auto streams = fg::stream::Compile(*plan, {(*port)->capabilities().line_bps()});
    if (!streams.ok()) {
      std::fprintf(stderr, "%s\n", std::string(streams.status().message()).c_str());
      return 1;
    }
    fg::engine::TrialOptions opt;
    opt.drain_ns = 10'000'000;
    auto r = fg::engine::RunTrial(**eal, {port->get()}, *streams, opt);
    if (!r.ok()) return 1;
    std::vector<double> rates;
    const auto& smp = r->samples;
    // Whole 1 s windows inside the stream's duration (a window that reaches
    // past the end of TX would count idle time).
    const int64_t end_ns = (*streams)[0].duration_ns;
    for (size_t i = 1; i < smp.size() && smp[i].t_ns <= end_ns; ++i) {
      const double dt = static_cast<double>(smp[i].t_ns - smp[i - 1].t_ns) / 1e9;
      rates.push_back(static_cast<double>(smp[i].tx_packets[0] - smp[i - 1].tx_packets[0]) / dt);
    }
    if (rates.empty()) continue;
    double mean = 0;
    for (double x : rates) mean += x / rates.size();
    const double target = std::isfinite((*streams)[0].pps) ? (*streams)[0].pps : mean;
    double worst = 0;
    for (double x : rates) worst = std::max(worst, std::fabs(x / target - 1));
    // Slots skipped because the lcore was held up > 1 ms (a host stall) are
    // shown: they explain a short window.
    std::printf("%-10s %12zu %14s %14s %14s %9.4f%% %14lu\n", rate, rates.size(),
                absl::StrFormat("%.1f pps", mean).c_str(),
                absl::StrFormat("%.1f pps", *std::min_element(rates.begin(), rates.end())).c_str(),
                absl::StrFormat("%.1f pps", *std::max_element(rates.begin(), rates.end())).c_str(), worst * 100,
                r->streams[0].tx.slots_skipped);
    if (std::getenv("RATE_BENCH_VERBOSE") != nullptr) {
      for (double x : rates) std::printf("    window %.1f pps\n", x);
      std::printf("    skipped slots %lu, retries %lu\n", r->streams[0].tx.slots_skipped, r->streams[0].tx.retries);
    }
    std::fflush(stdout);
  }
  port->reset();
  return 0;
}
