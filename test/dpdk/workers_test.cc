// The engine with two worker lcores (this binary's EAL: --lcores 0@0,1@1,2@0):
// flows spread over both, two queues per port, frames and feedback received
// on a queue whose lcore does not own their flow handed to the owner.
#include <gtest/gtest.h>
#include <rte_eth_ring.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

#include "config/plan.h"
#include "dpdk_test_env.h"
#include "engine/engine.h"
#include "port/port.h"
#include "proto/signature.h"
#include "stream/stream.h"
#include "collective/cell.h"
#include "stream/cell_streams.h"

namespace fg::testing {
namespace {

using engine::RunTrial;
using engine::StreamResult;
using engine::TrialOptions;

std::vector<stream::CompiledStream> CompileYaml(const std::string& yaml, const std::vector<double>& line) {
  auto plan = config::ParsePlan("test.yaml", yaml);
  EXPECT_TRUE(plan.ok()) << plan.status();
  auto s = stream::Compile(*plan, line);
  EXPECT_TRUE(s.ok()) << s.status();
  return *s;
}

std::unique_ptr<port::Port> OpenPort(const std::string& dpdk_name, uint16_t queues) {
  auto p = port::Port::Open(port::PortOptions{
      .name = dpdk_name, .dpdk_name = dpdk_name, .rx_queues = queues, .tx_queues = queues, .lcores = 3});
  EXPECT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE((*p)->Start().ok());
  return std::move(*p);
}

void ExpectExact(const engine::TrialResult& r, uint64_t packets) {
  const StreamResult& s = r.streams[0];
  EXPECT_EQ(s.tx.packets, packets);
  EXPECT_EQ(s.rx.packets, packets);
  EXPECT_EQ(s.lost(), 0);
  EXPECT_EQ(s.analysis.lost, 0);
  EXPECT_EQ(s.analysis.duplicate, 0u);
  EXPECT_EQ(s.analysis.reordered, 0u);
  EXPECT_EQ(s.analysis.late, 0u);
  // Every frame a latency sample but those that waited through an RX stall
  // (the tester's own delay: left out, counted), each left out once by its
  // owner (handed over or not) of those the RX tasks marked, and none without a stall.
  EXPECT_EQ(s.analysis.latency.count() + s.analysis.latency_excluded, packets);
  uint64_t stalls = 0, marked = 0;
  for (const engine::PortResult& p : r.ports) {
    stalls += p.rx_stalls;
    marked += p.rx_stall_frames;
  }
  EXPECT_EQ(s.analysis.latency_excluded, marked);
  if (stalls == 0) {
    EXPECT_EQ(marked, 0u);
  }
}

TEST(Workers, TwoWorkersTwoQueuesHundredMillionPacketsAllAccounted) {
  ASSERT_EQ(TestEal().worker_lcores().size(), 2u);
  auto p = OpenPort(NewVdev("net_ring"), 2);
  const auto streams = CompileYaml(R"(
duration: 120 s
streams:
  - {name: many, rate: max, flows: 1000, count: 100000000, frame: {size: 64}}
)",
                                   {p->capabilities().line_bps()});
  TrialOptions opt;
  opt.drain_ns = 200'000'000;
  auto r = RunTrial(TestEal(), {p.get()}, streams, opt);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->timed_out);
  ExpectExact(*r, 100'000'000);
  EXPECT_EQ(r->streams[0].analysis.flows_seen, 1000u);
  EXPECT_EQ(r->ports[0].hw.rx_packets, 100'000'000u);
  // Both workers sent and received their own flows (net_ring: TX queue q comes back on RX queue q).
  ASSERT_EQ(r->lcores.size(), 2u);
  for (const engine::LcoreStats& l : r->lcores) {
    EXPECT_EQ(l.flows, 500u);
    EXPECT_EQ(l.tx_packets, 50'000'000u);
    EXPECT_EQ(l.rx_packets, 50'000'000u);
    EXPECT_GT(l.tx_cycles_per_packet(), 0);
  }
}

// 64 flows at 64 different rates: each flow's received rate (report.json
// per_flow rx_rate_pps) within 1 % of its own. All on the worker with a CPU
// of its own (placement stream puts stream 0 on the first worker, lcore 1 on
// CPU 1): this EAL's second worker shares CPU 0 with the main lcore and with
// the kernel work tools/isolate_cpus.sh moves there, which held it up for
// over 1 ms every run on the 2-vCPU hosts (docs/lab.md "The host"): its flows
// then skip the slots they missed, and the run says so (tx_slots_skipped),
// but their received rate is the host's. Flows over two workers are the
// exactness tests' and the feedback test's.
TEST(Workers, SixtyFourFlowsAtSixtyFourRatesEachWithinOnePercent) {
  ASSERT_EQ(TestEal().worker_lcores().size(), 2u);
  auto p = OpenPort(NewVdev("net_ring"), 2);
  std::string rates;
  for (int i = 0; i < 64; ++i) rates += (i ? ", " : "") + std::to_string(1000 + 500 * i) + " pps";
  const auto streams = CompileYaml(R"(
duration: 2 s
streams:
  - {name: rated, frame: {roce: {op: WRITE, dest_qp: 0x200}}, flows: {count: 64, rates: [)" + rates + "]}}\n",
                                   {p->capabilities().line_bps()});
  TrialOptions opt;
  opt.drain_ns = 50'000'000;
  opt.placement = engine::PlacementPolicy::kStream;  // (the plan's `placement: stream`, which the session passes here)
  // A run the host held a worker up in skips the slots it missed (its flows
  // then fall short, and the run says so: tx_slots_skipped per flow and per
  // stream, pacing_stall): run again, as a test would, up to 10 times while
  // more than 0.1 % of the slots were skipped, and judge the run that skipped
  // fewest (2-vCPU VMs hold a busy CPU up for over 1 ms about once a second,
  // some hours several times a second: docs/lab.md "The host"; in one CI
  // hour every one of 10 runs skipped 1-33 %).
  const double slots = 2.0 * (64 * 1000 + 500 * 2016);  // 2 s of the 64 rates' sum
  auto r = RunTrial(TestEal(), {p.get()}, streams, opt);
  auto say = [](int run, const engine::TrialResult& t) {
    std::printf("  run %d: %lu slots skipped in %lu stalls (longest %.3f ms)%s\n", run,
                static_cast<unsigned long>(t.streams[0].tx.slots_skipped),
                static_cast<unsigned long>(t.streams[0].tx.stalls), t.streams[0].tx.stall_max_ns / 1e6,
                t.streams[0].tx.slots_skipped != 0 ? " (the host held a worker up)" : "");
  };
  for (int attempt = 1; attempt < 10 && r.ok() && r->streams[0].tx.slots_skipped > slots * 0.001; ++attempt) {
    if (attempt == 1) say(1, *r);
    auto again = RunTrial(TestEal(), {p.get()}, streams, opt);
    if (again.ok()) say(attempt + 1, *again);
    if (again.ok() && again->streams[0].tx.slots_skipped < r->streams[0].tx.slots_skipped) r = std::move(again);
  }
  ASSERT_TRUE(r.ok()) << r.status();
  const StreamResult& s = r->streams[0];
  ASSERT_EQ(s.per_flow.size(), 64u);
  EXPECT_EQ(s.lost(), 0);
  // Each flow's rate is its own less the slots its lcore says that flow gave
  // up (per_flow tx_slots_skipped; 0 in a run the host left alone): the
  // pacer's accuracy, with the tester's own shortfall named flow by flow.
  uint64_t skipped = 0;
  double worst = 0;
  for (uint32_t f = 0; f < 64; ++f) {
    const engine::FlowReport& fr = s.per_flow[f];
    ASSERT_GE(fr.tx_slots_skipped, 0) << "per-flow rates count each flow's skipped slots";
    skipped += static_cast<uint64_t>(fr.tx_slots_skipped);
    const double secs = static_cast<double>(fr.rx.last_rx_ns - fr.rx.first_rx_ns) / 1e9;
    const double want = 1000 + 500.0 * f - static_cast<double>(fr.tx_slots_skipped) / secs;
    const double err = fr.rx_rate_pps() / want - 1;
    worst = std::max(worst, std::abs(err));
    EXPECT_NEAR(fr.rx_rate_pps(), want, want * 0.01)
        << "flow " << f << " (it skipped " << fr.tx_slots_skipped << " slots; the run " << s.tx.slots_skipped << ")";
    EXPECT_EQ(fr.tx_packets, fr.rx.rx_packets);
    EXPECT_EQ(fr.owner_lcore, TestEal().worker_lcores()[0]);
  }
  EXPECT_EQ(skipped, s.tx.slots_skipped);  // the flows' skipped slots are the stream's, each counted once
  std::printf("  64 flows at 64 rates: worst received rate %.3f %% off its own (less its skipped slots: %lu in all, "
              "%.3f %% of the slots)\n",
              worst * 100, static_cast<unsigned long>(skipped), 100.0 * static_cast<double>(skipped) / slots);
}

// Two ring ports joined by a mover that sends every frame to the RX queue
// of the lcore that does NOT own its flow, and every 2^20 frames swaps the
// two queues, once all moved so far were counted (so one flow's frames
// arrive on both queues, and the path itself never reorders them).
TEST(Workers, FramesOfOneFlowOnBothQueuesHundredMillionPacketsHandedToTheOwnerAllAccounted) {
  ASSERT_EQ(TestEal().worker_lcores().size(), 2u);
  static int id = 0;
  const std::string tag = "wk" + std::to_string(id++);
  rte_ring* in[2];
  rte_ring* out[2];
  rte_ring* sink[2];
  for (int q = 0; q < 2; ++q) {
    in[q] = rte_ring_create((tag + "_in" + std::to_string(q)).c_str(), 4096, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
    out[q] = rte_ring_create((tag + "_out" + std::to_string(q)).c_str(), 4096, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
    sink[q] = rte_ring_create((tag + "_sink" + std::to_string(q)).c_str(), 64, SOCKET_ID_ANY, 0);
    ASSERT_TRUE(in[q] && out[q] && sink[q]);
  }
  ASSERT_GE(rte_eth_from_rings((tag + "_tx").c_str(), sink, 2, in, 2, SOCKET_ID_ANY), 0);
  ASSERT_GE(rte_eth_from_rings((tag + "_rx").c_str(), out, 2, sink, 2, SOCKET_ID_ANY), 0);
  auto tx = OpenPort("net_ring_" + tag + "_tx", 2);
  auto rx = OpenPort("net_ring_" + tag + "_rx", 2);
  constexpr uint64_t kPackets = 100'000'000;
  const auto streams = CompileYaml(R"(
ports: [{name: a}, {name: b}]
duration: 120 s
streams:
  - {name: crossed, port: a, rx_port: b, rate: max, flows: 64, count: 100000000, frame: {size: 64}}
)",
                                   {tx->capabilities().line_bps(), rx->capabilities().line_bps()});
  std::atomic<const engine::LiveRun*> live{nullptr};
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> swaps{0};
  std::thread mover([&] {
    rte_mbuf* burst[32];
    uint64_t moved = 0, next_swap = 1 << 20;
    int cross = 1;  // frames of TX queue q (worker q's flows) go to RX queue q ^ cross
    while (!stop.load()) {
      for (int q = 0; q < 2; ++q) {
        const unsigned n = rte_ring_dequeue_burst(in[q], reinterpret_cast<void**>(burst), 32, nullptr);
        unsigned done = 0;
        while (done < n) done += rte_ring_enqueue_burst(out[q ^ cross], reinterpret_cast<void**>(burst + done), n - done, nullptr);
        moved += n;
      }
      if (moved >= next_swap) {
        // Swap only once every frame moved so far has been counted by its owner.
        const engine::LiveRun* run = live.load();
        while (run != nullptr && run->Streams()[0].rx.packets < moved && !stop.load()) std::this_thread::yield();
        cross ^= 1;
        swaps.fetch_add(1);
        next_swap = moved + (1 << 20);
      }
    }
  });
  TrialOptions opt;
  opt.drain_ns = 200'000'000;
  opt.on_live = [&](const engine::LiveRun* r) { live.store(r); };
  auto r = RunTrial(TestEal(), {tx.get(), rx.get()}, streams, opt);
  stop.store(true);
  mover.join();
  tx.reset();
  rx.reset();
  for (int q = 0; q < 2; ++q) {
    rte_ring_free(in[q]);
    rte_ring_free(out[q]);
    rte_ring_free(sink[q]);
  }
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectExact(*r, kPackets);
  EXPECT_GE(swaps.load(), 50u);
  // Half the run went to the non-owner's queue: handed over, each record once.
  uint64_t in_total = 0, out_total = 0;
  for (const engine::LcoreStats& l : r->lcores) {
    in_total += l.handoff_in;
    out_total += l.handoff_out;
  }
  EXPECT_EQ(in_total, out_total);
  EXPECT_GE(in_total, kPackets / 3);
  EXPECT_LT(in_total, kPackets);
}

// A PMD that takes part of a burst: per-flow rates behind (the pacer's
// catch-up runs, several flows' in a burst), into a TX ring of 128 that a
// slow reader empties, so tx_burst leaves part of a run pending again and
// again. Every flow's tx_packets and tx_bytes are what the ring carried of it.
TEST(Workers, PerFlowTxCountsStayExactWhenThePmdTakesPartOfARun) {
  static int id = 0;
  const std::string tag = "pr" + std::to_string(id++);
  rte_ring* rxr = rte_ring_create((tag + "_r").c_str(), 1024, SOCKET_ID_ANY, 0);
  rte_ring* txr = rte_ring_create((tag + "_t").c_str(), 128, SOCKET_ID_ANY, 0);
  ASSERT_NE(rxr, nullptr);
  ASSERT_NE(txr, nullptr);
  ASSERT_GE(rte_eth_from_rings(tag.c_str(), &rxr, 1, &txr, 1, SOCKET_ID_ANY), 0);
  auto p = OpenPort("net_ring_" + tag, 1);
  // 4 flows of 80 kpps (320 kpps) against a reader that takes 1..24 frames
  // every ~30 us (~0.4 Mpps): while the ring is full each flow falls 2-3
  // slots behind, so a burst holds runs of 2-3 frames of each flow, and the
  // PMD takes part of it, cutting a run anywhere.
  const auto streams = CompileYaml(R"(
duration: 10 s
streams:
  - {name: s, count: 100000, flows: {count: 4, rates: [80 kpps]}, frame: {size: 64}}
)",
                                   {p->capabilities().line_bps()});
  constexpr uint32_t kFlows = 4;
  const uint32_t first = streams[0].flow_id;
  std::vector<uint64_t> got(kFlows), got_bytes(kFlows);
  uint64_t other = 0;
  auto take = [&](unsigned max) {
    rte_mbuf* m[8];
    const unsigned n = rte_ring_dequeue_burst(txr, reinterpret_cast<void**>(m), std::min(max, 8u), nullptr);
    for (unsigned i = 0; i < n; ++i) {
      const uint8_t* d = rte_pktmbuf_mtod(m[i], const uint8_t*);
      const int off = proto::FindSignatureOffset(d, m[i]->data_len);
      const uint32_t f = off >= 0 ? proto::Load24(d + off + 3) - first : UINT32_MAX;
      if (f < kFlows) {
        ++got[f];
        got_bytes[f] += m[i]->data_len + 4u;  // + FCS, as TX counts
      } else {
        ++other;
      }
      rte_pktmbuf_free(m[i]);
    }
    return n;
  };
  std::atomic<bool> stop{false};
  std::thread reader([&] {
    uint32_t x = 12345;
    while (!stop.load()) {  // 1..24 frames at a time, so the PMD's cuts fall anywhere in a burst
      x = x * 1103515245u + 12345u;
      for (unsigned left = 1 + (x >> 16) % 24, k; left != 0 && (k = take(left)) != 0; left -= k) {
      }
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(30);
      while (std::chrono::steady_clock::now() < until) rte_pause();
    }
  });
  TrialOptions opt;
  opt.drain_ns = 10'000'000;
  auto r = RunTrial(TestEal(), {p.get()}, streams, opt);
  stop.store(true);
  reader.join();
  while (take(8) != 0) {
  }
  p.reset();
  rte_ring_free(rxr);
  rte_ring_free(txr);
  ASSERT_TRUE(r.ok()) << r.status();
  const StreamResult& s = r->streams[0];
  EXPECT_EQ(s.tx.packets, 100000u);
  EXPECT_GT(s.tx.retries, 100u);  // the PMD left frames pending that often
  EXPECT_EQ(other, 0u);
  ASSERT_EQ(s.per_flow.size(), kFlows);
  uint64_t sum = 0;
  for (uint32_t f = 0; f < kFlows; ++f) {
    EXPECT_EQ(s.per_flow[f].tx_packets, got[f]) << "flow " << f;
    EXPECT_EQ(s.per_flow[f].tx_bytes, got_bytes[f]) << "flow " << f;
    EXPECT_EQ(got_bytes[f], got[f] * 64) << "flow " << f;
    sum += got[f];
  }
  EXPECT_EQ(sum, 100000u);
  std::printf("  %lu tx_burst calls left frames pending; flows got %lu..%lu frames\n",
              static_cast<unsigned long>(s.tx.retries),
              static_cast<unsigned long>(*std::min_element(got.begin(), got.end())),
              static_cast<unsigned long>(*std::max_element(got.begin(), got.end())));
}

// Feedback naming chosen QPs, put on the RX queue of the lcore that does not
// own them: each counted on its owning flow, once, within one of the owner's
// polls. Returns the most owner polls a record waited (the counts are
// asserted here, in every run).
uint64_t RunFeedbackOnANonOwnersQueue() {
  static int id = 0;
  const std::string tag = "fb" + std::to_string(id++);
  rte_ring* rxr[2];
  rte_ring* txr[2];
  for (int q = 0; q < 2; ++q) {
    rxr[q] = rte_ring_create((tag + "_r" + std::to_string(q)).c_str(), 4096, SOCKET_ID_ANY, 0);
    txr[q] = rte_ring_create((tag + "_t" + std::to_string(q)).c_str(), 8192, SOCKET_ID_ANY, 0);
  }
  const int made = rte_eth_from_rings(tag.c_str(), rxr, 2, txr, 2, SOCKET_ID_ANY);
  EXPECT_GE(made, 0);
  if (made < 0) return UINT64_MAX;
  auto p = OpenPort("net_ring_" + tag, 2);
  const double line = p->capabilities().line_bps();
  // 8 QPs (0x100..0x107) of data; flow f is owned by worker f % 2.
  const auto streams = CompileYaml(R"(
duration: 1 s
streams:
  - {name: qps, rate: 4 kpps, flows: 8, frame: {roce: {op: WRITE, dest_qp: 0x100}}}
)",
                                   {line});
  // The feedback frames: CNPs and NAKs addressed to those QPs, as a peer sends them.
  const auto fb = CompileYaml(R"(
streams:
  - {name: cnp, rate: 1 kpps, flows: 8, frame: {roce: {op: CNP, dest_qp: 0x100}}}
  - {name: nak, rate: 1 kpps, flows: 8, frame: {roce: {op: NAK, dest_qp: 0x100}}}
)",
                              {line});
  // Queue 0 (worker 0) gets feedback for the odd QPs (worker 1's), queue 1 for the even ones.
  const uint32_t cnps[8] = {0, 3, 0, 5, 0, 7, 0, 11};
  const uint32_t naks[8] = {2, 0, 4, 0, 6, 0, 8, 0};
  std::atomic<const engine::LiveRun*> live{nullptr};
  std::thread injector([&] {
    while (live.load() == nullptr) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    for (int kind = 0; kind < 2; ++kind) {
      const stream::CompiledStream& s = fb[kind];
      for (uint32_t f = 0; f < 8; ++f) {
        const uint32_t n = kind == 0 ? cnps[f] : naks[f];
        const stream::FlowVars v = s.program.Flow(s.flow_id, f);
        for (uint32_t k = 0; k < n; ++k) {
          rte_mbuf* m = rte_pktmbuf_alloc(p->pool());
          stream::Cursor c = s.program.Start();
          const uint32_t len = s.program.Emit(rte_pktmbuf_mtod(m, uint8_t*), c, 0, v);
          m->data_len = static_cast<uint16_t>(len);
          m->pkt_len = len;
          const int q = (f % 2 == 1) ? 0 : 1;  // the queue of the lcore that does not own flow f
          while (rte_ring_enqueue(rxr[q], m) != 0) std::this_thread::yield();
        }
      }
    }
  });
  TrialOptions opt;
  opt.drain_ns = 100'000'000;
  opt.on_live = [&](const engine::LiveRun* r) {
    if (r != nullptr) live.store(r);
  };
  auto r = RunTrial(TestEal(), {p.get()}, streams, opt);
  injector.join();
  p.reset();
  for (int q = 0; q < 2; ++q) {
    rte_ring_free(rxr[q]);
    rte_ring_free(txr[q]);
  }
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return UINT64_MAX;
  const StreamResult& s = r->streams[0];
  EXPECT_EQ(s.per_flow.size(), 8u);
  if (s.per_flow.size() != 8u) return UINT64_MAX;
  uint64_t all = 0;
  for (uint32_t f = 0; f < 8; ++f) {
    EXPECT_EQ(s.per_flow[f].rx.cnp, cnps[f]) << "QP 0x" << std::hex << (0x100 + f);
    EXPECT_EQ(s.per_flow[f].rx.nack, naks[f]) << "QP 0x" << std::hex << (0x100 + f);
    EXPECT_EQ(s.per_flow[f].owner_lcore, TestEal().worker_lcores()[f % 2]);
    all += cnps[f] + naks[f];
  }
  EXPECT_EQ(s.analysis.cnp + s.analysis.nack, all);
  EXPECT_EQ(r->ports[0].rx_feedback_unmatched, 0u);
  uint64_t handed = 0, max_polls = 0;
  for (const engine::LcoreStats& l : r->lcores) {
    handed += l.handoff_in;
    max_polls = std::max(max_polls, l.handoff_max_polls);
    std::printf("  lcore %u: %lu handed in, at most %lu of its polls and %lu ns on the way\n", l.lcore,
                static_cast<unsigned long>(l.handoff_in), static_cast<unsigned long>(l.handoff_max_polls),
                static_cast<unsigned long>(l.handoff_max_ns));
  }
  EXPECT_EQ(handed, all);  // every one of them crossed to its owner
  return max_polls;
}

TEST(Workers, FeedbackOnANonOwnersQueueCountsOnTheOwningFlowOnce) {
  ASSERT_EQ(TestEal().worker_lcores().size(), 2u);
  // The owner takes all its rings hold every poll: a record waits only while
  // it crosses between cores (a few of the owner's idle polls, ~0.1-0.5 us).
  // The wait is counted from the producer's stamp, just before it publishes;
  // a producer held up between the two (the test EAL's second worker shares
  // CPU 0 with the main lcore and this test's injector; a VM host takes
  // vCPUs for microseconds to milliseconds) adds the owner's polls meanwhile.
  // So the bound must hold in one of up to 3 runs; the counts in every run.
  constexpr uint64_t kBound = 16;
  uint64_t best = UINT64_MAX;
  for (int run = 0; run < 3 && best > kBound && !HasFailure(); ++run) {
    best = std::min(best, RunFeedbackOnANonOwnersQueue());
    if (best > kBound) std::printf("  run %d: a record waited over %lu polls (the host held a lcore up?)\n", run,
                                   static_cast<unsigned long>(kBound));
  }
  EXPECT_LE(best, kBound);
}

// A collective over both workers (issue 28): rank r's QPs and barrier on
// worker r % 2, so every ring neighbour's "your data has arrived" crosses
// between the workers' mailboxes. Ring AllReduce and AllToAll of 8 ranks on a
// two-queue loopback: every iteration completes, every frame of the schedule
// once, nothing sent again.
TEST(Workers, ACollectivesRanksOnBothWorkersMeetAtTheirBarriers) {
  ASSERT_EQ(TestEal().worker_lcores().size(), 2u);
  auto p = OpenPort(NewVdev("net_ring"), 2);
  auto plan = config::ParsePlan("c.yaml", "ranks: {count: 8, qps_per_pair: 2}\nstreams: [{name: s, rate: 1 kpps}]\n");
  ASSERT_TRUE(plan.ok()) << plan.status();
  for (const auto& [op, alg] : {std::pair{collective::Op::kAllReduce, collective::Algorithm::kRing},
                                std::pair{collective::Op::kAllToAll, collective::Algorithm::kParallel}}) {
    auto sched = collective::Schedule::Make(op, alg, 8, 1 << 20);
    ASSERT_TRUE(sched.ok()) << sched.status();
    auto cell = collective::Cell::Make(*sched, 2, plan->ranks->message, plan->ranks->pmtu);
    ASSERT_TRUE(cell.ok()) << cell.status();
    stream::CellPlay play;
    play.iterations = 5;
    auto cs = stream::CellStreams::Make(*plan->ranks, config::PlaceRanks(*plan->ranks), std::move(*cell), 0, play);
    ASSERT_TRUE(cs.ok()) << cs.status();
    auto streams = stream::CellStreams::Streams(*cs, 0, "cell", 20'000'000'000);
    ASSERT_TRUE(streams.ok()) << streams.status();
    TrialOptions opt;
    opt.drain_ns = 100'000'000;
    auto r = RunTrial(TestEal(), {p.get()}, *streams, opt);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->cells.size(), 1u);
    ASSERT_EQ(r->cells[0].iterations.size(), 5u);
    for (const engine::CellIteration& it : r->cells[0].iterations) EXPECT_TRUE(it.completed);
    uint64_t expected = 0;
    for (uint32_t qp = 0; qp < (*cs)->cell.qps().size(); ++qp) expected += 5 * (*cs)->frames.IterationBytes(qp);
    uint64_t unique = 0, resent = 0;
    for (const StreamResult& s : r->streams) {
      unique += s.retx.unique_bytes;
      resent += s.retx.retransmitted_packets;
    }
    EXPECT_EQ(unique, expected);
    EXPECT_EQ(resent, 0u);
    ASSERT_EQ(r->lcores.size(), 2u);
    for (const engine::LcoreStats& l : r->lcores) EXPECT_EQ(l.flows, (*cs)->cell.qps().size() / 2);  // 4 ranks' QPs each
  }
}

}  // namespace
}  // namespace fg::testing
