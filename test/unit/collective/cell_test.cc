// A cell as its QPs carry it: the message cut (every byte once, no packet
// under the signature's 16 B), QP shares, segments and packet counts, and the
// barrier driven by arrivals in any order (an event-driven run of every rank:
// what each holds at the end is what the collective defines; a lost segment
// stops exactly the ranks that wait for it).
#include "collective/cell.h"

#include <map>
#include <queue>
#include <tuple>
#include <random>

#include "collective/barrier.h"
#include "gtest/gtest.h"
#include "holdings.h"

namespace fg::collective {
namespace {

using testing_holdings::Holdings;

TEST(CutMessages, EveryByteOnceNoPacketUnderTheSignature) {
  for (uint32_t pmtu : {256u, 1024u, 4096u}) {
    for (uint64_t message : {64ull, 1030ull, 4096ull, 65536ull, 65541ull}) {
      for (uint64_t bytes = 16; bytes < 20000; bytes += 7) {
        const std::vector<MessageRun> runs = CutMessages(bytes, message, pmtu);
        uint64_t sum = 0;
        for (const MessageRun& m : runs) {
          ASSERT_GE(m.length, kMinPayload);
          ASSERT_LE(m.length, message);
          const uint64_t last = m.length % pmtu;
          ASSERT_TRUE(last == 0 || last >= kMinPayload) << bytes << " " << message << " " << pmtu;
          sum += m.length * m.count;
        }
        ASSERT_EQ(sum, bytes) << message << " " << pmtu;
      }
    }
  }
  // Known cuts: 10,000 B in 4,096 B messages: two full, 1,808 B.
  EXPECT_EQ(CutMessages(10000, 4096, 1024), (std::vector<MessageRun>{{4096, 2}, {1808, 1}}));
  // 8,197 B: the tail of 5 B joins the last full message, 4,085 B and 16 B.
  EXPECT_EQ(CutMessages(8197, 4096, 1024), (std::vector<MessageRun>{{4096, 1}, {4085, 1}, {16, 1}}));
  // A 1,030 B message at pmtu 1,024 would end with a 6 B packet: 1,014 + 16.
  EXPECT_EQ(CutMessages(1030, 1030, 1024), (std::vector<MessageRun>{{1014, 1}, {16, 1}}));
  EXPECT_EQ(PacketsOf(CutMessages(10000, 4096, 1024), 1024), 10u);
}

TEST(Cell, RingQpsSegmentsAndPackets) {
  auto s = Schedule::Make(Op::kAllReduce, Algorithm::kRing, 4, 1 << 20);
  ASSERT_TRUE(s.ok());
  auto c = Cell::Make(*s, 2, 65536, 1024);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->qps().size(), 8u);  // 4 pairs (r, r+1) x 2
  const Qp& qp = c->qps()[*c->QpIndex(3, 0, 1)];
  EXPECT_EQ(qp.from, 3u);
  EXPECT_EQ(qp.to, 0u);
  EXPECT_EQ(qp.q, 1u);
  ASSERT_EQ(qp.segments.size(), 6u);
  // 1 MiB / 4 = 256 KiB a step, 128 KiB a QP: two 64 KiB messages of 64 packets.
  for (uint32_t k = 0; k < 6; ++k) {
    EXPECT_EQ(qp.segments[k].step, k);
    EXPECT_EQ(qp.segments[k].bytes, 131072u);
    EXPECT_EQ(qp.segments[k].packets, 128u);
    EXPECT_EQ(qp.segments[k].first_packet, 128u * k);
  }
  EXPECT_EQ(c->packets(), 8u * 6 * 128);
  EXPECT_EQ(c->ArrivalsDue(2, 0), 2u);
  EXPECT_FALSE(c->QpIndex(0, 2, 0).has_value());  // a ring sends only to the next rank
  EXPECT_EQ(c->message_lengths(), std::vector<uint64_t>{65536});
}

TEST(Cell, LocateFindsEveryPacketsMessageAndPlace) {
  // Uneven parts (1,000,003 B over 6 ranks, 3 QPs a pair) and a message whose
  // last packet is split (1,030 B at pmtu 1,024): several lengths per segment.
  for (auto [op, alg] : {std::pair{Op::kAllReduce, Algorithm::kRing}, std::pair{Op::kAllToAll, Algorithm::kPairwise}}) {
    auto s = Schedule::Make(op, alg, 6, 1000003);
    auto c = Cell::Make(*s, 3, 1030, 1024);
    ASSERT_TRUE(c.ok());
    for (uint32_t i : {0u, 4u, static_cast<uint32_t>(c->qps().size() - 1)}) {
      const Qp& qp = c->qps()[i];
      uint64_t packet = 0, message = 0;
      for (uint32_t g = 0; g < qp.segments.size(); ++g) {
        ASSERT_EQ(qp.segments[g].first_packet, packet);
        ASSERT_EQ(qp.segments[g].first_message, message);
        for (const MessageRun& m : CutMessages(qp.segments[g].bytes, 1030, 1024)) {
          for (uint64_t k = 0; k < m.count; ++k, ++message) {
            for (uint32_t pos = 0; pos < PacketsOf(m.length, 1024); ++pos, ++packet) {
              const PacketPlace at = c->Locate(i, packet);
              ASSERT_EQ(at.segment, g) << packet;
              ASSERT_EQ(at.message, message) << packet;
              ASSERT_EQ(at.message_length, m.length) << packet;
              ASSERT_EQ(at.pos, pos) << packet;
              ASSERT_EQ(at.message_packets, PacketsOf(m.length, 1024));
            }
          }
        }
      }
      EXPECT_EQ(packet, qp.packets);
      EXPECT_EQ(message, qp.messages);
    }
  }
}

TEST(Cell, RefusesAQpPartUnderTheSignature) {
  auto s = Schedule::Make(Op::kAllReduce, Algorithm::kRing, 1024, 65536);
  ASSERT_TRUE(s.ok());
  auto c = Cell::Make(*s, 8, 65536, 1024);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            "65536 B over 1024 ranks: the smallest transfer, 64 B, split over 8 QPs leaves 8 B on a QP; each QP's part "
            "needs at least 16 B (the test signature every packet carries): a larger size or fewer qps_per_pair");
  EXPECT_TRUE(Cell::Make(*s, 4, 65536, 1024).ok());
}

// Every rank of a cell run by events: a rank sends a step's segments when its
// barrier releases the step; each segment arrives after a random delay, in
// order on its QP; arrivals drive the receivers' barriers. `lose`: a segment
// (QP index, segment index) that never arrives.
struct CellRun {
  std::vector<bool> done;
  Holdings held;
  uint64_t arrivals = 0;
};
CellRun RunCell(const Cell& c, uint32_t seed, std::optional<std::pair<uint32_t, uint32_t>> lose = std::nullopt) {
  const Schedule& s = c.schedule();
  const uint32_t n = s.ranks();
  std::vector<Barrier> barriers;
  for (uint32_t r = 0; r < n; ++r) barriers.emplace_back(c, r);
  CellRun run{std::vector<bool>(n, false), Holdings::Initial(s), 0};
  struct Arrival {
    uint64_t at;
    uint32_t qp, seg;
    Transfer t;
    std::shared_ptr<const Holdings> sent;  // the sender's holdings when it sent
    bool operator>(const Arrival& o) const { return at != o.at ? at > o.at : qp > o.qp; }
  };
  std::priority_queue<Arrival, std::vector<Arrival>, std::greater<>> events;
  std::vector<uint64_t> qp_last(c.qps().size(), 0);
  std::vector<uint32_t> next_seg(c.qps().size(), 0);
  std::mt19937 rng(seed);
  std::vector<Transfer> sends;
  // The run's own count of arrivals per (rank, step), beside the barriers'.
  std::vector<std::vector<uint32_t>> got(n, std::vector<uint32_t>(s.steps(), 0));
  auto send_step = [&](uint32_t r, uint32_t k, uint64_t now) {
    for (uint32_t j = 0; j < k; ++j) {
      ASSERT_EQ(got[r][j], c.ArrivalsDue(r, j)) << "rank " << r << " sends step " << k << " before step " << j
                                                << " has all its data";
    }
    sends.clear();
    s.Sends(r, k, sends);
    auto snapshot = std::make_shared<const Holdings>(run.held);
    for (const Transfer& t : sends) {
      for (uint32_t q = 0; q < c.qps_per_pair(); ++q) {
        const uint32_t i = *c.QpIndex(r, t.to, q);
        const uint32_t seg = next_seg[i]++;
        ASSERT_EQ(c.qps()[i].segments[seg].step, k);
        const uint64_t at = std::max(qp_last[i], now + c.qps()[i].segments[seg].packets + rng() % 500);
        qp_last[i] = at;
        if (lose && lose->first == i && lose->second == seg) continue;
        events.push(Arrival{at, i, seg, t, snapshot});
      }
    }
  };
  for (uint32_t r = 0; r < n; ++r) {
    barriers[r].Start();
    send_step(r, 0, 0);
  }
  // A transfer's chunks are the receiver's once all Q of its parts are in.
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, uint32_t> parts;  // (from, to, step) -> parts arrived
  while (!events.empty()) {
    const Arrival a = events.top();
    events.pop();
    ++run.arrivals;
    const uint32_t to = a.t.to;
    const uint32_t step = c.qps()[a.qp].segments[a.seg].step;
    ++got[to][step];
    if (++parts[{a.t.from, to, step}] == c.qps_per_pair()) run.held.Receive(s, a.t, *a.sent);
    const uint32_t before = barriers[to].step();
    if (auto released = barriers[to].Arrived(step)) {
      for (uint32_t k = before + 1; k <= *released && k < s.steps(); ++k) send_step(to, k, a.at);
      if (*released == s.steps()) run.done[to] = true;
    }
  }
  for (uint32_t r = 0; r < n; ++r) EXPECT_EQ(barriers[r].excess(), 0u);
  return run;
}

TEST(Barrier, EveryCollectiveCompletesWithArrivalsInAnyOrder) {
  struct Case {
    Op op;
    Algorithm a;
    uint32_t n;
  };
  for (const Case& x : {Case{Op::kAllReduce, Algorithm::kRing, 7}, Case{Op::kAllGather, Algorithm::kRing, 6},
                        Case{Op::kReduceScatter, Algorithm::kRing, 5}, Case{Op::kAllToAll, Algorithm::kParallel, 6},
                        Case{Op::kAllToAll, Algorithm::kPairwise, 7},
                        Case{Op::kAllReduce, Algorithm::kHalvingDoubling, 16}}) {
    auto s = Schedule::Make(x.op, x.a, x.n, 1000003);
    ASSERT_TRUE(s.ok());
    auto c = Cell::Make(*s, 3, 4096, 1024);
    ASSERT_TRUE(c.ok());
    for (uint32_t seed = 1; seed <= 5; ++seed) {
      SCOPED_TRACE(std::string(OpName(x.op)) + " " + std::string(AlgorithmName(x.a)) + " seed " + std::to_string(seed));
      const CellRun run = RunCell(*c, seed);
      for (uint32_t r = 0; r < x.n; ++r) EXPECT_TRUE(run.done[r]) << "rank " << r;
      uint64_t segments = 0;
      for (const Qp& qp : c->qps()) segments += qp.segments.size();
      EXPECT_EQ(run.arrivals, segments);
      run.held.ExpectFinal(*s);
    }
  }
}

TEST(Barrier, ALostSegmentStopsTheRanksThatWaitForIt) {
  // Ring AllReduce over 5 ranks: rank 1's QP to rank 2 loses its step-3
  // segment. Rank 2 never completes step 3, so it never sends step 4, and
  // every rank after it waits in turn: nobody finishes.
  auto s = Schedule::Make(Op::kAllReduce, Algorithm::kRing, 5, 50000);
  auto c = Cell::Make(*s, 1, 4096, 1024);
  ASSERT_TRUE(c.ok());
  const uint32_t qp = *c->QpIndex(1, 2, 0);
  const CellRun run = RunCell(*c, 7, std::make_pair(qp, 3u));
  for (uint32_t r = 0; r < 5; ++r) EXPECT_FALSE(run.done[r]) << r;
  // With the last step's segment lost instead, only its receiver misses the end.
  const CellRun last = RunCell(*c, 7, std::make_pair(qp, 7u));
  for (uint32_t r = 0; r < 5; ++r) EXPECT_EQ(last.done[r], r != 2) << r;
}

TEST(Barrier, EarlyArrivalsWaitTheirTurnAndDuplicatesAreCounted) {
  auto s = Schedule::Make(Op::kAllGather, Algorithm::kRing, 4, 4000);
  auto c = Cell::Make(*s, 1, 4096, 1024);
  Barrier b(*c, 0);
  b.Start();
  EXPECT_EQ(b.Arrived(2), std::nullopt);  // step 2's data, early
  EXPECT_EQ(b.Arrived(1), std::nullopt);
  EXPECT_EQ(b.step(), 0u);
  EXPECT_EQ(b.Arrived(0), std::optional<uint32_t>(3));  // steps 1 and 2 released, and done (3 = steps())
  EXPECT_TRUE(b.done());
  EXPECT_EQ(b.Arrived(0), std::nullopt);
  EXPECT_EQ(b.excess(), 1u);
}

}  // namespace
}  // namespace fg::collective
