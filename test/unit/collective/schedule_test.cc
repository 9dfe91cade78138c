// The collective schedules: every chunk followed from rank to rank (what each
// rank holds after the last step is what the collective defines), exact
// bytes on the wire, receives matching sends, and known step-by-step vectors.
#include "collective/schedule.h"

#include <algorithm>
#include <string>
#include <tuple>

#include "gtest/gtest.h"
#include "holdings.h"

namespace fg::collective {
namespace {

using testing_holdings::Holdings;

// Runs the schedule step by step (every rank's sends of step k read the
// holdings as step k starts: the barrier) and returns the final holdings.
Holdings Simulate(const Schedule& s) {
  Holdings h = Holdings::Initial(s);
  std::vector<Transfer> sends;
  for (uint32_t k = 0; k < s.steps(); ++k) {
    Holdings next = h;
    for (uint32_t r = 0; r < s.ranks(); ++r) {
      sends.clear();
      s.Sends(r, k, sends);
      for (const Transfer& t : sends) {
        EXPECT_EQ(t.from, r);
        EXPECT_NE(t.to, r);
        next.Receive(s, t, h);
      }
    }
    h = std::move(next);
  }
  return h;
}

using Case = std::tuple<Op, Algorithm, uint32_t, uint64_t>;
class ScheduleCases : public testing::TestWithParam<Case> {};

TEST_P(ScheduleCases, EveryRankEndsWithWhatTheCollectiveDefines) {
  const auto [op, alg, n, size] = GetParam();
  auto s = Schedule::Make(op, alg, n, size);
  ASSERT_TRUE(s.ok()) << s.status();
  Simulate(*s).ExpectFinal(*s);
}

TEST_P(ScheduleCases, ReceivesAreTheSendsAndTheWireCarriesTheFormulasBytes) {
  const auto [op, alg, n, size] = GetParam();
  auto s = Schedule::Make(op, alg, n, size);
  ASSERT_TRUE(s.ok()) << s.status();
  uint64_t wire = 0;
  std::vector<uint64_t> sent_by(n, 0);
  for (uint32_t k = 0; k < s->steps(); ++k) {
    std::vector<Transfer> sends, receives;
    for (uint32_t r = 0; r < n; ++r) {
      s->Sends(r, k, sends);
      std::vector<Transfer> in;
      s->Receives(r, k, in);
      for (const Transfer& t : in) EXPECT_EQ(t.to, r);
      receives.insert(receives.end(), in.begin(), in.end());
    }
    for (const Transfer& t : sends) {
      wire += t.bytes;
      sent_by[t.from] += t.bytes;
    }
    auto key = [](const Transfer& a, const Transfer& b) {
      return std::tie(a.from, a.to, a.first, a.m) < std::tie(b.from, b.to, b.first, b.m);
    };
    std::sort(sends.begin(), sends.end(), key);
    std::sort(receives.begin(), receives.end(), key);
    EXPECT_EQ(sends, receives) << "step " << k;
  }
  EXPECT_EQ(wire, s->wire_bytes());
  EXPECT_EQ(wire, (op == Op::kAllReduce ? 2 : 1) * uint64_t{n - 1} * size);
  // Each rank sends all of S but one chunk, once per phase (ring and
  // AllToAll; halving-doubling's all-gather sends nested halves).
  if (alg == Algorithm::kHalvingDoubling) return;
  for (uint32_t r = 0; r < n; ++r) {
    const uint32_t next = (r + 1) % n;
    const uint64_t kept = op == Op::kAllReduce     ? s->chunk(r) + s->chunk(next)  // reduce-scatter keeps r, all-gather r+1
                          : op == Op::kAllGather   ? s->chunk(next)
                                                   : s->chunk(r);
    EXPECT_EQ(sent_by[r], (op == Op::kAllReduce ? 2 : 1) * size - kept) << "rank " << r;
  }
}

std::vector<Case> Cases() {
  std::vector<Case> c;
  for (uint32_t n : {2u, 3u, 4u, 5u, 7u, 8u, 16u, 33u, 64u}) {
    for (uint64_t size : {uint64_t{n}, uint64_t{1000003}, uint64_t{64} << 20}) {
      for (Op op : {Op::kAllReduce, Op::kAllGather, Op::kReduceScatter}) c.emplace_back(op, Algorithm::kRing, n, size);
      c.emplace_back(Op::kAllToAll, Algorithm::kParallel, n, size);
      c.emplace_back(Op::kAllToAll, Algorithm::kPairwise, n, size);
      if ((n & (n - 1)) == 0) c.emplace_back(Op::kAllReduce, Algorithm::kHalvingDoubling, n, size);
    }
  }
  return c;
}
INSTANTIATE_TEST_SUITE_P(All, ScheduleCases, testing::ValuesIn(Cases()), [](const testing::TestParamInfo<Case>& i) {
  return std::string(OpName(std::get<0>(i.param))) + "_" + std::string(AlgorithmName(std::get<1>(i.param))) + "_n" +
         std::to_string(std::get<2>(i.param)) + "_" + std::to_string(std::get<3>(i.param)) + "B";
});

// Rank r's sends of every step, in step order.
std::vector<Transfer> SendsOfEveryStep(const Schedule& s, uint32_t r) {
  std::vector<Transfer> out;
  for (uint32_t k = 0; k < s.steps(); ++k) s.Sends(r, k, out);
  return out;
}

TEST(Schedule, RingAllReduceStepByStepWithUnevenChunks) {
  // 4,002 B over 4 ranks: chunks 1,001, 1,001, 1,000, 1,000.
  auto s = Schedule::Make(Op::kAllReduce, Algorithm::kRing, 4, 4002);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->steps(), 6u);
  const std::vector<Transfer> out = SendsOfEveryStep(*s, 0);
  // Reduce-scatter: chunks 3, 2, 1 (its own parts, then partial sums); all-gather: 0, 3, 2.
  const std::vector<uint32_t> chunks = {3, 2, 1, 0, 3, 2};
  const std::vector<uint64_t> bytes = {1000, 1000, 1001, 1001, 1000, 1000};
  ASSERT_EQ(out.size(), 6u);
  for (size_t k = 0; k < 6; ++k) {
    EXPECT_EQ(out[k].to, 1u);
    EXPECT_EQ(out[k].first, chunks[k]) << k;
    EXPECT_EQ(out[k].bytes, bytes[k]) << k;
  }
  EXPECT_DOUBLE_EQ(s->bus_factor(), 1.5);
  EXPECT_EQ(s->Peers(3), std::vector<uint32_t>{0});
}

TEST(Schedule, HalvingDoublingHalvesThenDoubles) {
  auto s = Schedule::Make(Op::kAllReduce, Algorithm::kHalvingDoubling, 8, 8 << 20);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->steps(), 6u);
  const std::vector<Transfer> out = SendsOfEveryStep(*s, 5);
  ASSERT_EQ(out.size(), 6u);
  const std::vector<uint32_t> to = {4, 7, 1, 1, 7, 4};
  const std::vector<uint64_t> mib = {4, 2, 1, 1, 2, 4};
  for (size_t k = 0; k < 6; ++k) {
    EXPECT_EQ(out[k].to, to[k]) << k;
    EXPECT_EQ(out[k].bytes, mib[k] << 20) << k;
  }
  EXPECT_EQ(s->Peers(5), (std::vector<uint32_t>{1, 4, 7}));
}

TEST(Schedule, PairwiseRoundKPairsRWithRPlusK) {
  auto s = Schedule::Make(Op::kAllToAll, Algorithm::kPairwise, 5, 5000);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->steps(), 4u);
  for (uint32_t k = 0; k < 4; ++k) {
    std::vector<Transfer> out, in;
    s->Sends(2, k, out);
    s->Receives(2, k, in);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].to, (2 + k + 1) % 5);
    EXPECT_EQ(out[0].bytes, 1000u);
    ASSERT_EQ(in.size(), 1u);
    EXPECT_EQ(in[0].from, (2 + 5 - (k + 1)) % 5);
  }
  auto p = Schedule::Make(Op::kAllToAll, Algorithm::kParallel, 5, 5000);
  EXPECT_EQ(p->steps(), 1u);
  EXPECT_DOUBLE_EQ(p->bus_factor(), 0.8);
}

TEST(Schedule, AThousandRanksRingAllReduceWireBytesExact) {
  auto s = Schedule::Make(Op::kAllReduce, Algorithm::kRing, 1024, uint64_t{64} << 20);
  ASSERT_TRUE(s.ok());
  uint64_t wire = 0;
  std::vector<Transfer> out;
  for (uint32_t k = 0; k < s->steps(); ++k) {
    for (uint32_t r = 0; r < 1024; ++r) {
      out.clear();
      s->Sends(r, k, out);
      wire += out[0].bytes;
    }
  }
  EXPECT_EQ(wire, 2ull * 1023 * (64ull << 20));
  EXPECT_EQ(s->smallest_transfer(), 65536u);
}

TEST(Schedule, RefusesWhatCannotRun) {
  auto e = [](Op op, Algorithm a, uint32_t n, uint64_t size) {
    auto s = Schedule::Make(op, a, n, size);
    return s.ok() ? std::string("ok") : std::string(s.status().message());
  };
  EXPECT_EQ(e(Op::kAllReduce, Algorithm::kRing, 1, 1024), "a collective needs 2 ranks or more, not 1");
  EXPECT_EQ(e(Op::kAllReduce, Algorithm::kHalvingDoubling, 6, 1024),
            "halving_doubling needs a power of two of ranks (its partners are r xor 2^k), not 6");
  EXPECT_EQ(e(Op::kAllToAll, Algorithm::kRing, 4, 1024), "alltoall has no algorithm 'ring'; it has parallel, pairwise");
  EXPECT_EQ(e(Op::kAllGather, Algorithm::kPairwise, 4, 1024), "allgather has no algorithm 'pairwise'; it has ring");
  EXPECT_EQ(e(Op::kAllReduce, Algorithm::kRing, 8, 7),
            "7 B over 8 ranks leaves a chunk with no byte; the size is at least the number of ranks");
  EXPECT_EQ(QpShare(10, 0, 4) + QpShare(10, 1, 4) + QpShare(10, 2, 4) + QpShare(10, 3, 4), 10u);
  EXPECT_EQ(QpShare(10, 1, 4), 3u);
  EXPECT_EQ(QpShare(10, 2, 4), 2u);
}

}  // namespace
}  // namespace fg::collective
