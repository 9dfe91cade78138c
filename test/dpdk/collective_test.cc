// A collective cell run by the engine on a ring pair (issue 28): ranks on
// both ports, each QP from one to the other (round_robin placement: a ring's
// neighbours sit on different ports), the a -> b direction through a mover
// that can drop chosen frames. Every iteration completes, the bytes on the
// wire are exactly the schedule's, and a dropped frame is recovered by
// go-back-N (it and what the responder discarded behind it resent, counted
// apart) while the unique bytes stay the schedule's.
#include <gtest/gtest.h>

#include <pthread.h>
#include <rte_lcore.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>

#include "absl/strings/str_format.h"
#include "collective/cell.h"
#include "config/plan.h"
#include "dpdk_test_env.h"
#include "engine/engine.h"
#include "ring_path.h"
#include "stream/cell_streams.h"

namespace fg::engine {
namespace {

using fg::testing::Impairments;
using fg::testing::RingPath;

// `%s`: more keys of `ranks` (connect, dcqcn).
constexpr char kPlan[] = R"(
ports: [{name: a}, {name: b}]
ranks: {count: 4, placement: round_robin, qps_per_pair: 2, message: 16 KiB, pmtu: 1024%s}
streams: [{name: unused, port: a, rx_port: b, rate: 1 kpps}]
)";

struct Cell {
  config::Plan plan;
  std::shared_ptr<const stream::CellStreams> cs;
  std::vector<stream::CompiledStream> streams;
};

Cell MakeCell(collective::Op op, collective::Algorithm alg, uint32_t n, uint64_t bytes,
              const stream::CellPlay& play_in = {}, const std::string& ranks_more = "") {
  Cell c;
  auto plan = config::ParsePlan("c.yaml", absl::StrFormat(kPlan, ranks_more));
  EXPECT_TRUE(plan.ok()) << plan.status();
  c.plan = *plan;
  auto s = collective::Schedule::Make(op, alg, n, bytes);
  EXPECT_TRUE(s.ok()) << s.status();
  auto cell = collective::Cell::Make(*s, c.plan.ranks->qps_per_pair, c.plan.ranks->message, c.plan.ranks->pmtu);
  EXPECT_TRUE(cell.ok()) << cell.status();
  stream::CellPlay play = play_in;
  if (play.iterations == 1) play.iterations = 5;
  auto cs = stream::CellStreams::Make(*c.plan.ranks, config::PlaceRanks(*c.plan.ranks), std::move(*cell), 0, play);
  EXPECT_TRUE(cs.ok()) << cs.status();
  c.cs = *cs;
  auto streams = stream::CellStreams::Streams(c.cs, 0, "cell", 20'000'000'000);
  EXPECT_TRUE(streams.ok()) << streams.status();
  c.streams = *streams;
  return c;
}

// Frame bytes (FCS included) of one iteration of every QP from ranks on
// `port`: each message's packets from its own Program.
uint64_t IterationBytes(const stream::CellStreams& cs, size_t port) {
  uint64_t bytes = 0, sized = 0;
  for (uint32_t qp = 0; qp < cs.cell.qps().size(); ++qp) {
    if (cs.frames.rank(cs.cell.qps()[qp].from).port != port) continue;
    cs.frames.ForEachFrame(qp, [&](std::span<const uint8_t> f) { bytes += f.size() + 4; });
    sized += cs.frames.IterationBytes(qp);
  }
  EXPECT_EQ(sized, bytes);  // CellFrames::IterationBytes, what the scale tests count with, is the frames'
  return bytes;
}

TEST(Collective, RingAllReduceIterationsCompleteWithTheSchedulesBytes) {
  RingPath path("coll");
  ASSERT_TRUE(path.ok()) << path.error();
  Cell c = MakeCell(collective::Op::kAllReduce, collective::Algorithm::kRing, 4, 1 << 20);
  ASSERT_EQ(c.streams.size(), 2u);  // a -> b and b -> a: every ring neighbour on the other port
  auto res = path.Run(c.streams, Impairments{});
  ASSERT_TRUE(res.ok()) << res.status();
  ASSERT_EQ(res->cells.size(), 1u);
  const CellResult& cr = res->cells[0];
  ASSERT_EQ(cr.iterations.size(), 5u);
  for (const CellIteration& it : cr.iterations) {
    EXPECT_TRUE(it.completed);
    EXPECT_GT(it.time_ns(), 0);
  }
  uint64_t payload = 0;
  for (size_t i = 0; i < res->streams.size(); ++i) {
    const StreamResult& s = res->streams[i];
    const uint64_t bytes = 5 * IterationBytes(*c.cs, s.tx_port);
    EXPECT_EQ(s.tx.bytes, bytes) << s.name;
    EXPECT_EQ(s.retx.retransmitted_packets, 0u) << s.name;
    EXPECT_EQ(s.retx.unique_bytes, bytes) << s.name;
    EXPECT_EQ(s.rx.packets, s.tx.packets) << s.name;
    EXPECT_EQ(s.lost(), 0) << s.name;
    payload += s.responder.delivered_packets;
  }
  // Every packet of the 5 iterations delivered in order once.
  EXPECT_EQ(payload, 5 * c.cs->cell.packets());
}

TEST(Collective, ADroppedFrameIsResentByGoBackNAndTheUniqueBytesStayTheSchedules) {
  RingPath path("colld");
  ASSERT_TRUE(path.ok()) << path.error();
  Cell c = MakeCell(collective::Op::kAllReduce, collective::Algorithm::kRing, 4, 1 << 20);
  // QP 0 (rank 0 on a -> rank 1 on b): the middle packet of its third iteration (6 segments of 128 packets each).
  const uint32_t qp = *c.cs->cell.QpIndex(0, 1, 0);
  const uint64_t per_iteration = c.cs->cell.qps()[qp].packets;
  Impairments imp;
  imp.drop_first = {static_cast<uint32_t>(2 * per_iteration + per_iteration / 2), static_cast<uint32_t>(3 * per_iteration + 5 * per_iteration / 6)};
  imp.drop_first_flow = c.cs->frames.flow_id(qp);
  auto res = path.Run(c.streams, imp);
  ASSERT_TRUE(res.ok()) << res.status();
  const CellResult& cr = res->cells[0];
  ASSERT_EQ(cr.iterations.size(), 5u);
  for (const CellIteration& it : cr.iterations) EXPECT_TRUE(it.completed);
  uint64_t resent_frames = 0, resent_bytes = 0;
  for (const StreamResult& s : res->streams) {
    const uint64_t bytes = 5 * IterationBytes(*c.cs, s.tx_port);
    EXPECT_EQ(s.retx.unique_bytes, bytes) << s.name;  // S_fabric: the schedule's bytes, resends apart
    resent_frames += s.retx.retransmitted_packets;
    resent_bytes += s.retx.retransmitted_bytes;
  }
  EXPECT_GE(resent_frames, 1u);
  EXPECT_GT(resent_bytes, 0u);
  for (const CellIteration& it : cr.iterations) EXPECT_GT(it.time_ns(), 0);
  // The iteration the drop hit waited for the resend (a NAK's round trip at least).
  // Go-back-N: what went out again is the dropped frame and every frame the
  // responder discarded behind its gap (out of sequence), nothing else.
  const StreamResult& ab = res->streams[0];
  ASSERT_EQ(ab.tx_port, 0u);
  EXPECT_EQ(ab.retx.retransmitted_packets, 2 + ab.responder.out_of_sequence);
  EXPECT_EQ(ab.responder.naks_sent, 2u);
  EXPECT_EQ(ab.retx.timeouts, 0u);  // each gap NAKed and gone back to at once
  EXPECT_EQ(ab.tx.packets - ab.rx.packets, 2u);  // the wire lost the two frames
  EXPECT_EQ(ab.responder.delivered_packets, ab.retx.unique_packets);
  EXPECT_EQ(res->streams[1].retx.retransmitted_packets, 0u);
}

// A straggler: rank 1's sends of every step start D = 5 ms after its
// barrier released them. In a ring AllReduce of 4 ranks (6 steps) an
// iteration ends with the longest chain of waits: a step's data waits for
// the sender's previous step, one rank back per step, so the chain over 6
// steps passes 6 consecutive ranks and rank 1 at most twice: 2 D and the
// data's own time (tens of us for 16 KiB segments), never 3 D.
TEST(Collective, AStragglersDelayStretchesItsStepsChains) {
  RingPath path("collstrag");
  ASSERT_TRUE(path.ok()) << path.error();
  stream::CellPlay play;
  play.iterations = 4;
  play.straggler_rank = 1;
  play.straggler_delay_ns = 5'000'000;
  Cell c = MakeCell(collective::Op::kAllReduce, collective::Algorithm::kRing, 4, 64 << 10, play);
  auto res = path.Run(c.streams, Impairments{});
  ASSERT_TRUE(res.ok()) << res.status();
  const CellResult& cr = res->cells[0];
  ASSERT_EQ(cr.iterations.size(), 4u);
  for (const CellIteration& it : cr.iterations) {
    EXPECT_TRUE(it.completed);
    EXPECT_GE(it.time_ns(), 2 * 5'000'000);
    EXPECT_LT(it.time_ns(), 3 * 5'000'000);
  }
}

// ranks.connect: cm: every QP of the cell set up by CM MADs between its
// own two ranks before the first iteration (a -> b through the mover, the
// REPs back), then the iterations as without it.
TEST(Collective, ConnectCmSetsUpEveryQpBetweenItsRanksBeforeTheData) {
  RingPath path("collcm");
  ASSERT_TRUE(path.ok()) << path.error();
  Cell c = MakeCell(collective::Op::kAllReduce, collective::Algorithm::kRing, 4, 1 << 20, {}, ", connect: cm");
  for (const auto& s : c.streams) ASSERT_TRUE(s.connect_cm) << s.name;
  auto res = path.Run(c.streams, Impairments{});
  ASSERT_TRUE(res.ok()) << res.status();
  uint64_t qps = 0, delivered = 0;
  for (const StreamResult& s : res->streams) {
    ASSERT_TRUE(s.qp_setup.has_value()) << s.name;
    EXPECT_EQ(s.qp_setup->setup.count(), s.qp_setup->qps) << s.name;  // each QP's set-up time, once
    EXPECT_EQ(s.qp_setup->resent, 0u) << s.name;
    EXPECT_GT(s.qp_setup->elapsed_ns, 0) << s.name;
    qps += s.qp_setup->qps;
    delivered += s.responder.delivered_packets;
  }
  EXPECT_EQ(qps, c.cs->cell.qps().size());
  ASSERT_EQ(res->cells.size(), 1u);
  for (const CellIteration& it : res->cells[0].iterations) EXPECT_TRUE(it.completed);
  EXPECT_EQ(delivered, 5 * c.cs->cell.packets());
}

// ranks.dcqcn: every 50th frame a -> b marked CE by the mover; each mark is
// seen by b's responder and answered by a CNP or suppressed in the QP's CNP
// interval, each CNP reaches its QP's reaction point on a, which cuts its
// rate (the QP then paced below its port's line), and the collective still
// completes every iteration with every byte delivered once.
TEST(Collective, DcqcnCutsMarkedQpsAndEveryCeMarkIsAccounted) {
  RingPath path("colldc");
  ASSERT_TRUE(path.ok()) << path.error();
  Cell c = MakeCell(collective::Op::kAllReduce, collective::Algorithm::kRing, 4, 1 << 20, {}, ", dcqcn: paper");
  for (auto& s : c.streams) {
    ASSERT_TRUE(s.dcqcn.has_value()) << s.name;
    s.cell_qp_max_bps = 10e9;  // the ring path's ports: 10 G
  }
  Impairments imp;
  imp.ce_every = 50;
  auto res = path.Run(c.streams, imp);
  ASSERT_TRUE(res.ok()) << res.status();
  ASSERT_EQ(res->cells.size(), 1u);
  for (const CellIteration& it : res->cells[0].iterations) EXPECT_TRUE(it.completed);
  const uint64_t marks = path.marked_every();
  ASSERT_GT(marks, 0u);
  const StreamResult& ab = res->streams[0];
  const StreamResult& ba = res->streams[1];
  ASSERT_EQ(ab.tx_port, 0u);
  EXPECT_EQ(ab.responder.ce_seen, marks);  // every mark seen, on a -> b only
  EXPECT_EQ(ba.responder.ce_seen, 0u);
  EXPECT_EQ(ab.responder.cnp_sent + ab.responder.cnp_suppressed, marks);
  EXPECT_EQ(ab.responder.cnp_dropped, 0u);
  EXPECT_TRUE(ab.dcqcn);
  // Every CNP reached its QP: handed to its reaction point, or after the
  // cell's TX had ended (a mark in the last frames).
  EXPECT_EQ(ab.rp.cnps + ab.rp.late, ab.responder.cnp_sent);
  EXPECT_GT(ab.rp.cuts, 0u);
  EXPECT_EQ(ba.rp.cnps, 0u);
  // The cut QPs were paced: turns they let pass, their rate not allowing
  // one yet (the iterations took 4.3-5.9 ms against 1.6-1.8 ms unmarked,
  // the QPs' rates 1-5 Gbit/s after the cuts); the unmarked direction never.
  EXPECT_GT(ab.rp.held_turns, 0u);
  EXPECT_EQ(ba.rp.held_turns, 0u);
  uint64_t delivered = 0;
  for (const StreamResult& s : res->streams) delivered += s.responder.delivered_packets;
  EXPECT_EQ(delivered, 5 * c.cs->cell.packets());
}

// The tester held up: a thread of the test's at real-time priority on the
// worker lcore's CPU takes it for 6 ms in the middle of 30 iterations (the
// way a kernel thread or another process takes it on a busy host). The
// iterations that span that time carry the hold-up (tester_held, and ns of
// it adding up to about the 6 ms): their times are the tester's, not the
// ring path's, and the figures leave them out (methods::StatsOf).
TEST(Collective, IterationsTheTesterWasHeldUpWithinAreFlagged) {
  RingPath path("collhold");
  ASSERT_TRUE(path.ok()) << path.error();
  stream::CellPlay play;
  play.iterations = 30;
  Cell c = MakeCell(collective::Op::kAllReduce, collective::Algorithm::kRing, 4, 1 << 20, play);
  const int cpu = static_cast<int>(rte_lcore_to_cpu_id(static_cast<int>(rte_get_next_lcore(-1, 1, 0))));
  const TscClock clock(rte_get_tsc_hz());
  std::atomic<uint64_t> hog_from{0}, hog_to{0};
  std::atomic<bool> realtime{true};
  std::thread hog([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_param sp{};
    sp.sched_priority = 1;
    if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0 ||
        pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) != 0) {
      realtime = false;
      return;
    }
    const uint64_t from = rte_rdtsc();
    while (rte_rdtsc() - from < clock.FromNs(6'000'000)) {
    }
    hog_from = clock.ToNs(from);
    hog_to = clock.ToNs(rte_rdtsc());
    sp.sched_priority = 0;
    pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp);
  });
  auto res = path.Run(c.streams, Impairments{});
  hog.join();
  if (!realtime) GTEST_SKIP() << "no SCHED_FIFO here (needs root): the hold-up cannot be made";
  ASSERT_TRUE(res.ok()) << res.status();
  const std::vector<CellIteration>& its = res->cells[0].iterations;
  ASSERT_EQ(its.size(), 30u);
  ASSERT_GT(hog_from.load(), its.front().first_tx_ns) << "the hold-up came before the iterations";
  ASSERT_LT(hog_to.load(), its.back().last_rx_ns) << "the hold-up came after the iterations";
  uint64_t held_ns = 0, spanning = 0;
  for (const CellIteration& it : its) {
    EXPECT_TRUE(it.completed);
    if (it.tester_holdup_ns == 0) {
      EXPECT_FALSE(it.tester_held);
    }
    if (it.tester_holdup_ns * 100 > it.last_rx_ns - it.first_tx_ns) {  // > 1 % of it
      EXPECT_TRUE(it.tester_held);
    }
    if (it.first_tx_ns < hog_to && it.last_rx_ns > hog_from) {
      ++spanning;
      EXPECT_TRUE(it.tester_held) << "an iteration over the hold-up, not flagged";
      held_ns += it.tester_holdup_ns;
    }
  }
  EXPECT_GE(spanning, 1u);
  // The lcore's loop gap covers the hog's 6 ms (from its last turn before
  // to its first after), within the iterations that span it.
  EXPECT_GE(held_ns, 5'000'000u);
}

}  // namespace
}  // namespace fg::engine
