// Frame library benchmarks (docs/benchmarks.md has the numbers and the command).
//
// - ICRC of a RoCEv2 frame of 64 B, 1 KiB and 4 KiB: the full computation
//   through rte_net_crc (scalar, SSE4.2/PCLMULQDQ and AVX512 folding) against
//   the incremental update the TX path uses.
// - Program::Stamp on a 4 KiB frame: every per-packet field (signature
//   sequence and timestamp, PSN, entropy) plus the ICRC, as TX runs it.
// - Program::Emit on a 4 KiB frame: the template copy + Stamp.
#include <benchmark/benchmark.h>
#include <rte_net_crc.h>
extern "C" {
#include <rte_vect.h>
}

#include "absl/strings/str_format.h"
#include "config/plan.h"
#include "proto/icrc.h"
#include "stream/program.h"

namespace {

// A RoCEv2 RC WRITE_ONLY frame of `frame_size` bytes on the wire (FCS
// included), with round-robin entropy.
fg::stream::Program MakeProgram(uint32_t frame_size) {
  // Headers: Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + RETH 16 + ICRC 4 + FCS 4 = 78.
  const uint32_t message = frame_size > 78 ? frame_size - 78 : 4;
  const std::string yaml = absl::StrFormat(
      "ports: [{name: p, mtu: 9000}]\nstreams:\n  - name: s\n    rate: 1 Mpps\n    frame: {entropy: {mode: "
      "round_robin, values: 16}, roce: {op: WRITE, message: %d, pmtu: 4096}}\n",
      message);
  auto plan = fg::config::ParsePlan("bench.yaml", yaml);
  auto p = fg::stream::Program::Compile(plan->streams[0].frame, 1);
  return *std::move(p);
}

void BM_IcrcFull(benchmark::State& state, rte_net_crc_alg alg) {
  if (rte_vect_get_max_simd_bitwidth() < RTE_VECT_SIMD_512) rte_vect_set_max_simd_bitwidth(RTE_VECT_SIMD_512);
  const fg::stream::Program p = MakeProgram(static_cast<uint32_t>(state.range(0)));
  const fg::stream::PacketKind& k = p.kinds()[0];
  std::vector<uint8_t> f = k.t.bytes;
  const fg::proto::IcrcLayout layout{k.t.l3_offset, k.t.ipv6, static_cast<uint32_t>(k.t.icrc_offset)};
  fg::proto::IcrcFull(f.data(), layout);  // selects the default path once...
  rte_net_crc_set_alg(alg);               // ...then pin the one measured here
  uint32_t psn = 0;
  for (auto _ : state) {
    f[k.psn_off + 2] = static_cast<uint8_t>(++psn);
    benchmark::DoNotOptimize(fg::proto::IcrcFull(f.data(), layout));
  }
  rte_net_crc_set_alg(RTE_NET_CRC_AVX512);
  state.SetLabel(absl::StrFormat("%d B frame", k.t.frame_size()));
}
BENCHMARK_CAPTURE(BM_IcrcFull, scalar, RTE_NET_CRC_SCALAR)->Arg(64)->Arg(1024)->Arg(4096);
BENCHMARK_CAPTURE(BM_IcrcFull, sse42_pclmulqdq, RTE_NET_CRC_SSE42)->Arg(64)->Arg(1024)->Arg(4096);
BENCHMARK_CAPTURE(BM_IcrcFull, avx512, RTE_NET_CRC_AVX512)->Arg(64)->Arg(1024)->Arg(4096);

void BM_IcrcIncremental(benchmark::State& state) {
  const fg::stream::Program p = MakeProgram(static_cast<uint32_t>(state.range(0)));
  const fg::stream::PacketKind& k = p.kinds()[0];
  std::vector<uint8_t> f = k.t.bytes;
  uint32_t psn = 0;
  for (auto _ : state) {
    f[k.psn_off + 2] = static_cast<uint8_t>(++psn);
    benchmark::DoNotOptimize(k.icrc.Compute(f.data()));
  }
  state.SetLabel(absl::StrFormat("%d B frame, %d positions", k.t.frame_size(), k.icrc.num_positions()));
}
BENCHMARK(BM_IcrcIncremental)->Arg(64)->Arg(1024)->Arg(4096);

void BM_StampFields(benchmark::State& state) {
  const fg::stream::Program p = MakeProgram(static_cast<uint32_t>(state.range(0)));
  fg::stream::Cursor c = p.Start();
  const fg::stream::PacketKind& k = p.KindAt(c);
  std::vector<uint8_t> f = k.t.bytes;
  // As the TX lcore does: the TX time (and its ICRC share) once per burst of 32.
  uint64_t ts = 0, n = 0;
  fg::stream::StampTime t = p.Time(ts);
  const fg::stream::FlowVars v = p.Flow(0, 0);
  for (auto _ : state) {
    if ((++n & 31) == 0) t = p.Time(++ts);
    p.Stamp(f.data(), k, c, t, v);
    benchmark::ClobberMemory();
  }
  state.SetLabel(absl::StrFormat("%d B frame", k.t.frame_size()));
}
BENCHMARK(BM_StampFields)->Arg(64)->Arg(4096);

void BM_Emit(benchmark::State& state) {
  const fg::stream::Program p = MakeProgram(static_cast<uint32_t>(state.range(0)));
  fg::stream::Cursor c = p.Start();
  std::vector<uint8_t> f(p.buffer_len());
  uint64_t ts = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(p.Emit(f.data(), c, ++ts));
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * p.max_frame_len());
}
BENCHMARK(BM_Emit)->Arg(64)->Arg(4096);

}  // namespace

BENCHMARK_MAIN();
