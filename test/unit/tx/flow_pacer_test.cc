// FlowPacer (per-flow send times) and SpscRing (the owner handoff), without DPDK.
#include "tx/flow_pacer.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "base/spsc_ring.h"

namespace fg::tx {
namespace {

constexpr uint64_t kHz = 2'000'000'000;  // a 2 GHz TSC
constexpr uint64_t Fp(uint64_t ticks) { return ticks << FlowPacer::kFpShift; }

// Polls the pacer every `step` ticks up to `end` ticks, `burst` frames a
// poll at most, and counts each flow's frames.
std::vector<uint64_t> Drive(FlowPacer& p, uint64_t from, uint64_t end, uint64_t step, unsigned burst,
                            uint64_t* skipped = nullptr, bool drain = true) {
  std::vector<uint64_t> sent(p.flows(), 0);
  uint32_t out[64];
  uint64_t sk = 0, st = 0;
  for (uint64_t t = from; t < end; t += step) {
    for (;;) {
      const unsigned n = p.Next(Fp(t), burst, out, &sk, &st);
      for (unsigned i = 0; i < n; ++i) ++sent[out[i]];
      if (n < burst || !drain) break;
    }
  }
  if (skipped != nullptr) *skipped = sk;
  return sent;
}

TEST(FlowPacer, EveryFlowSendsExactlyWhatItsRateCallsFor) {
  // 64 flows at 64 different rates, 1 s polled every 1 us.
  std::vector<double> pps;
  for (int i = 0; i < 64; ++i) pps.push_back(1000.0 * (i + 1) + 37 * i);
  FlowPacer p(pps, kHz);
  const uint64_t end = kHz;  // 1 s
  const std::vector<uint64_t> sent = Drive(p, 0, end, 2000, 32);
  std::vector<uint64_t> due;
  const uint64_t total = p.Due(Fp(end), &due);
  uint64_t sum = 0;
  for (int f = 0; f < 64; ++f) {
    // What was sent is what was due at the last poll (one frame at most left for the final microsecond).
    EXPECT_NEAR(static_cast<double>(sent[f]), pps[f], 1.0) << "flow " << f;
    EXPECT_LE(sent[f], due[f]);
    EXPECT_GE(sent[f] + 1, due[f]);
    sum += sent[f];
  }
  EXPECT_LE(sum, total);
  EXPECT_GE(sum + 64, total);
}

TEST(FlowPacer, FlowsAllBehindShareEvenly) {
  // 4096 flows whose rates sum far above what one burst of 32 a poll sends.
  std::vector<double> pps(4096, 1e6);
  FlowPacer p(pps, kHz);
  // From the first poll after every flow's staggered first slot: 10 ms, 5000 polls x 32.
  const std::vector<uint64_t> sent = Drive(p, 4000, kHz / 100 + 4000, 4000, 32, nullptr, false);
  uint64_t lo = UINT64_MAX, hi = 0, sum = 0;
  for (uint64_t s : sent) {
    lo = std::min(lo, s);
    hi = std::max(hi, s);
    sum += s;
  }
  EXPECT_EQ(sum, 5000u * 32);
  // Round robin of catch-up runs: each flow within one run of the others.
  EXPECT_LE(hi - lo, FlowPacer::kMaxRun);
  EXPECT_GE(lo, 5000u * 32 / 4096 - FlowPacer::kMaxRun);
}

TEST(FlowPacer, AFlowBehindCatchesUpInRunsAndAFlowOnTimeSendsOneFrameATurn) {
  // Flow 0 at 1 Mpps (one slot every 2,000 ticks), flow 1 at 1 kpps.
  FlowPacer p({1e6, 1e3}, kHz);
  uint32_t out[64];
  uint64_t sk = 0, st = 0;
  // 25 slots of flow 0 have passed at 50,000 ticks (its first at 0), flow 1's first (staggered half its
  // interval) not yet: runs of 8, 8, 8 and 2 in one poll of 32.
  unsigned n = p.Next(Fp(50'000), 32, out, &sk, &st);
  ASSERT_EQ(n, 26u);
  for (unsigned i = 0; i < n; ++i) EXPECT_EQ(out[i], 0u) << i;
  EXPECT_EQ(p.Next(Fp(50'000), 32, out, &sk, &st), 0u);
  // A poll that leaves room for 3 cuts the run at 3; the rest follows on the next poll.
  n = p.Next(Fp(60'000), 3, out, &sk, &st);  // slots 26..30 due
  EXPECT_EQ(n, 3u);
  EXPECT_EQ(p.Next(Fp(60'000), 32, out, &sk, &st), 2u);
  // Polled every slot, a flow on time sends one frame a poll.
  for (uint64_t t = 62'000; t < 62'000 + 100 * 2'000; t += 2'000) {
    ASSERT_EQ(p.Next(Fp(t), 32, out, &sk, &st), 1u) << t;
    EXPECT_EQ(out[0], 0u);
  }
  EXPECT_EQ(sk, 0u);
  std::vector<uint64_t> due;
  EXPECT_EQ(p.Due(Fp(62'000 + 99 * 2'000) + 1, &due), 26u + 5u + 100u);
}

TEST(FlowPacer, ARateChangeTakesEffectAtOnceAndKeepsTheDueCount) {
  FlowPacer p({100.0, 1000.0}, kHz);  // flow 0: one frame per 10 ms
  const uint64_t half = kHz / 2;
  std::vector<uint64_t> a = Drive(p, 0, half, 2000, 32);
  EXPECT_NEAR(static_cast<double>(a[0]), 50, 1);
  // At 0.5 s flow 0 goes to 100 kpps: its next frame is due now, not up to 10 ms later.
  p.SetRate(0, 100'000, Fp(half));
  uint32_t out[32];
  uint64_t sk = 0, st = 0;
  const unsigned n = p.Next(Fp(half), 32, out, &sk, &st);
  ASSERT_GE(n, 1u);
  EXPECT_EQ(out[0], 0u);
  std::vector<uint64_t> b = Drive(p, half + 2000, kHz, 2000, 32);
  std::vector<uint64_t> due;
  p.Due(Fp(kHz), &due);
  EXPECT_NEAR(static_cast<double>(a[0] + 1 + b[0]), 50 + 50'000, 2);
  EXPECT_NEAR(static_cast<double>(due[0]), 50 + 50'000, 2);
  EXPECT_NEAR(static_cast<double>(a[1] + b[1] + (n > 1 ? 1 : 0)), 1000, 2);
}

// DCQCN changes a QP's rate every few tens of us: a change that keeps the
// flow's phase adds no frame, where SetRate's frame-at-once adds one per
// change. 4,000 changes between 1 and 2 kpps over 1 s, one every 250 us
// (each rate for 2 ms at a time): the flow sends what the rates called for,
// and its due count agrees.
TEST(FlowPacer, RetimeKeepsTheFlowsPhaseSoFrequentChangesAddNoFrames) {
  const uint64_t step = kHz / 4000;
  auto run = [&](bool retime, uint64_t* due) {
    FlowPacer p({1000.0}, kHz);
    uint32_t out[32];
    uint64_t sk = 0, st = 0, sent = 0;
    for (uint64_t k = 0; k < 4000; ++k) {
      const double pps = (k / 8) % 2 == 0 ? 1000.0 : 2000.0;
      if (retime) {
        p.Retime(0, pps, Fp(k * step));
      } else {
        p.SetRate(0, pps, Fp(k * step));
      }
      for (uint64_t t = k * step; t < (k + 1) * step; t += 2000) sent += p.Next(Fp(t), 32, out, &sk, &st);
    }
    EXPECT_EQ(sk, 0u);
    *due = p.Due(Fp(4000 * step));
    return sent;
  };
  uint64_t due = 0;
  const uint64_t sent = run(true, &due);
  EXPECT_NEAR(static_cast<double>(sent), 1500, 3);
  EXPECT_NEAR(static_cast<double>(due), static_cast<double>(sent), 2);
  EXPECT_GE(run(false, &due), 4000u);  // a frame at each of the 4,000 changes (all the frames it sent)
}

// The runs Next reports are its frames, turn by turn: expanded in order they
// are `out`, each at most kMaxRun long, and they sum to what it returned.
TEST(FlowPacer, TheRunsAreTheFramesTurnByTurn) {
  std::vector<double> pps;
  for (int f = 0; f < 300; ++f) pps.push_back(1000.0 + 997.0 * f);  // 1 kpps .. ~300 kpps
  FlowPacer p(pps, kHz);
  uint32_t out[32];
  FlowPacer::Run runs[32];
  uint64_t sk = 0, st = 0, frames = 0, multi = 0;
  for (uint64_t t = 0, step = 1000; t < kHz / 10; t += step, step = step * 7 % 90001 + 1000) {  // uneven polls
    unsigned nr = 99;
    const unsigned n = p.Next(Fp(t), 32, out, &sk, &st, runs, &nr);
    ASSERT_LE(nr, n);
    unsigned k = 0;
    for (unsigned r = 0; r < nr; ++r) {
      ASSERT_GE(runs[r].count, 1u);
      ASSERT_LE(runs[r].count, FlowPacer::kMaxRun);
      multi += runs[r].count > 1;
      for (uint32_t i = 0; i < runs[r].count; ++i, ++k) ASSERT_EQ(out[k], runs[r].flow) << "poll at " << t;
    }
    ASSERT_EQ(k, n);
    frames += n;
  }
  EXPECT_GT(frames, 100000u);
  EXPECT_GT(multi, 1000u);  // catch-up runs were among them
}

TEST(FlowPacer, APauseOwesNothingAndAHoldUpSkipsWhatItMissed) {
  FlowPacer p({1000.0}, kHz);
  std::vector<uint64_t> a = Drive(p, 0, kHz / 10, 2000, 32);  // 100 ms: 100 frames
  p.Pause(Fp(kHz / 10));
  std::vector<uint64_t> b = Drive(p, kHz / 10, kHz / 5, 2000, 32);  // paused 100 ms: nothing
  EXPECT_EQ(b[0], 0u);
  p.Resume(Fp(kHz / 5));
  // Then the lcore is away 50 ms: of the 49 slots missed, the last run's worth (kMaxRun, the one
  // due now included) goes at once and the rest are skipped, not sent back to back.
  uint64_t skipped = 0;
  uint32_t out[32];
  uint64_t sk0 = 0, st0 = 0;
  const uint64_t back = kHz / 5 + kHz / 20;
  EXPECT_EQ(p.longest_stall_fp(), 0u);  // on time so far (the pause is no hold-up)
  EXPECT_EQ(p.Next(Fp(back), 32, out, &sk0, &st0), FlowPacer::kMaxRun);
  EXPECT_EQ(st0, 1u);
  // How long it was away: the flow's first missed slot (within one 1 ms interval after the resume) to now.
  EXPECT_GE(p.longest_stall_fp(), Fp(kHz / 20 - kHz / 1000));
  EXPECT_LE(p.longest_stall_fp(), Fp(kHz / 20));
  std::vector<uint64_t> c = Drive(p, back + 2000, kHz / 5 + kHz / 10, 2000, 32, &skipped);
  c[0] += FlowPacer::kMaxRun;
  skipped += sk0;
  EXPECT_NEAR(static_cast<double>(a[0]), 100, 1);
  static_assert(FlowPacer::kMaxRun < 49);
  EXPECT_GE(skipped, 49u - FlowPacer::kMaxRun);
  EXPECT_LE(skipped, 51u - FlowPacer::kMaxRun);
  EXPECT_EQ(p.skipped(0), skipped);  // the one flow's own count of them
  std::vector<uint64_t> due;
  const uint64_t total = p.Due(Fp(kHz / 5 + kHz / 10), &due);
  EXPECT_NEAR(static_cast<double>(total), 100 + 100, 2);  // the pause owes nothing
  EXPECT_NEAR(static_cast<double>(a[0] + c[0] + skipped), static_cast<double>(total), 1);
}

TEST(FlowPacer, PauseAndResumeOrAStreamRateChangeWithFlowsWaitingInTheFifo) {
  // 4,096 flows at 100 kpps each: far more due than a poll sends, so most wait in the FIFO.
  std::vector<double> pps(4096, 100'000.0);
  FlowPacer p(pps, kHz);
  uint64_t skipped = 0;
  Drive(p, 4000, 4000 + 40'000, 2000, 32, &skipped, false);  // 20 us: the FIFO fills
  p.Pause(Fp(44'000));
  p.Resume(Fp(50'000));
  uint32_t out[32];
  uint64_t sk = 0, st = 0;
  // Right after the resume only the flows whose staggered start has come send, and nothing counts as skipped.
  const unsigned n = p.Next(Fp(50'000), 32, out, &sk, &st);
  EXPECT_LE(n, 1u);
  EXPECT_EQ(sk, 0u);
  // A stream-wide change (x2) restarts the flows staggered: no burst of all 4,096 at once.
  p.Scale(2.0, Fp(60'000));
  EXPECT_LE(p.Next(Fp(60'000), 32, out, &sk, &st), 1u);
  EXPECT_EQ(sk, 0u);
  EXPECT_DOUBLE_EQ(p.rate(7), 200'000.0);
  // Over the next 10 ms every flow sends its new rate's share (200 kpps x 10 ms = 2,000 frames each).
  uint64_t skipped_after = 0;
  const std::vector<uint64_t> sent = Drive(p, 60'000, 60'000 + kHz / 100, 2000, 32, &skipped_after);
  uint64_t sum = 0;
  for (uint64_t x : sent) sum += x;
  EXPECT_EQ(skipped_after, 0u);
  EXPECT_NEAR(static_cast<double>(sum), 4096 * 2000.0, 4096);
}

// A flow that gave up slots goes back to the FIFO's tail at once, not through
// the wheel (its time may not have come yet): however the FIFO drains, it is
// never sent before its slot, a Retime keeps its phase there, and once the
// lcore keeps up again every flow sends its rate.
TEST(FlowPacer, AFlowPutBackInTheFifoAfterGivingUpSlotsIsNeverSentEarly) {
  std::vector<double> pps;
  for (int f = 0; f < 256; ++f) pps.push_back(1e6 + 1000.0 * f);  // ~one slot per 2,000 ticks each
  FlowPacer p(pps, kHz);
  std::vector<uint64_t> sent(pps.size(), 0), due;
  uint32_t out[64];
  uint64_t sk = 0, st = 0;
  auto poll = [&](uint64_t t, unsigned burst) {
    const unsigned n = p.Next(Fp(t), burst, out, &sk, &st);
    for (unsigned i = 0; i < n; ++i) ++sent[out[i]];
    p.Due(Fp(t) + 1, &due);  // every slot at or before t, those given up included
    for (size_t f = 0; f < sent.size(); ++f) {
      EXPECT_LE(sent[f] + p.skipped(f), due[f]) << "flow " << f << " at " << t;
    }
    return n;
  };
  // 32 frames a poll every 10,000 ticks: a round of 256 runs takes 1.28 ms, so every flow gives up slots.
  uint64_t t = 4000;
  for (int i = 0; i < 1000; ++i, t += 10'000) ASSERT_EQ(poll(t, 32), 32u);
  EXPECT_GT(st, 500u);
  EXPECT_GT(sk, 0u);
  // The last poll's runs went back to the FIFO (a run cut short by the poll's end still due, a whole one
  // with its next slot ahead): a Retime keeps the phase of one whose slot is ahead.
  uint32_t last = UINT32_MAX;
  for (unsigned i = 0; i < 32; ++i) {
    if (p.next_fp(out[i]) > Fp(t - 10'000)) last = out[i];
  }
  t -= 10'000;  // the last poll's time
  ASSERT_NE(last, UINT32_MAX);
  const uint64_t before = sent[last];
  p.Retime(last, pps[last] / 2, Fp(t));
  // The whole FIFO drained at once: the flows whose time has not come (the last runs') go to the wheel.
  while (poll(t, 64) == 64) {
  }
  EXPECT_EQ(sent[last], before) << "sent at once by the Retime, or before its slot";
  // From here the lcore keeps up: 2 ms polled every 1,000 ticks, every flow within a frame of its due count.
  for (uint64_t u = t + 1000; u < t + kHz / 500; u += 1000) {
    while (poll(u, 64) == 64) {
    }
  }
  const uint64_t end = t + kHz / 500 - 1000;
  p.Due(Fp(end) + 1, &due);
  for (size_t f = 0; f < sent.size(); ++f) {
    EXPECT_LE(sent[f] + p.skipped(f), due[f]) << f;
    EXPECT_GE(sent[f] + p.skipped(f) + 1, due[f]) << f;
  }
}

TEST(SpscRing, EveryRecordArrivesOnceInOrderAcrossThreads) {
  SpscRing<uint64_t> ring(1024);
  constexpr uint64_t kN = 2'000'000;
  std::thread producer([&] {
    uint64_t next = 0, buf[37];
    while (next < kN) {
      size_t n = 0;
      while (n < 37 && next + n < kN) buf[n] = next + n, ++n;
      next += ring.Push(buf, n);
    }
  });
  uint64_t expect = 0, buf[64];
  while (expect < kN) {
    const size_t n = ring.Pop(buf, 64);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(buf[i], expect++);
  }
  producer.join();
  EXPECT_EQ(ring.Size(), 0u);
}

TEST(SpscRing, AFullRingTakesWhatFits) {
  SpscRing<uint32_t> ring(8);
  uint32_t v[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  EXPECT_EQ(ring.Push(v, 10), 8u);
  EXPECT_EQ(ring.Push(v, 1), 0u);
  uint32_t out[4];
  EXPECT_EQ(ring.Pop(out, 4), 4u);
  EXPECT_EQ(out[3], 3u);
  EXPECT_EQ(ring.Push(v + 8, 2), 2u);
  EXPECT_EQ(ring.Size(), 6u);
}

}  // namespace
}  // namespace fg::tx
