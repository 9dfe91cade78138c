// FlowPacer's own cost per frame it schedules (no DPDK): flows all behind
// their rates (the unpaced sum of issue 13's target), polled 32 frames at a
// time as TxTask does, in runs (flow, count) as TxTask takes them. Figures:
// docs/benchmarks.md ("Issue 13, stage 1" and later).
//   build/test/bench/pacer_bench
#include <benchmark/benchmark.h>

#include <vector>

#include "tx/flow_pacer.h"

namespace {

void BM_FlowPacerAllBehind(benchmark::State& state) {
  const uint32_t flows = static_cast<uint32_t>(state.range(0));
  constexpr uint64_t kHz = 2'000'000'000;
  std::vector<double> pps(flows);
  for (uint32_t f = 0; f < flows; ++f) pps[f] = 1e6 + 1000.0 * (f % 401);  // far above what is polled
  fg::tx::FlowPacer p(pps, kHz);
  fg::tx::FlowPacer::Run runs[32];
  unsigned nruns = 0;
  uint64_t skipped = 0, stalls = 0, t = 4000, frames = 0;
  for (auto _ : state) {
    t += 400;  // a poll every 200 ns of TSC time
    const unsigned n = p.Next(t << fg::tx::FlowPacer::kFpShift, 32, nullptr, &skipped, &stalls, runs, &nruns);
    benchmark::DoNotOptimize(runs[0]);
    frames += n;
  }
  state.SetItemsProcessed(static_cast<int64_t>(frames));
  state.counters["frames_per_poll"] = static_cast<double>(frames) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_FlowPacerAllBehind)->Arg(1)->Arg(64)->Arg(4096)->Arg(65536);

// Paced below what is polled: most polls find a few flows due in the wheel.
void BM_FlowPacerPaced(benchmark::State& state) {
  const uint32_t flows = static_cast<uint32_t>(state.range(0));
  constexpr uint64_t kHz = 2'000'000'000;
  std::vector<double> pps(flows, 12e6 / flows);  // 12 Mpps in all
  fg::tx::FlowPacer p(pps, kHz);
  fg::tx::FlowPacer::Run runs[32];
  unsigned nruns = 0;
  uint64_t skipped = 0, stalls = 0, t = 0, frames = 0;
  for (auto _ : state) {
    t += 2000;  // a poll every 1 us
    const unsigned n = p.Next(t << fg::tx::FlowPacer::kFpShift, 32, nullptr, &skipped, &stalls, runs, &nruns);
    benchmark::DoNotOptimize(runs[0]);
    frames += n;
  }
  state.SetItemsProcessed(static_cast<int64_t>(frames));
  state.counters["frames_per_poll"] = static_cast<double>(frames) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_FlowPacerPaced)->Arg(64)->Arg(4096);

}  // namespace

BENCHMARK_MAIN();
