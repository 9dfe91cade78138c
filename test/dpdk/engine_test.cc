#include "engine/engine.h"

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <thread>

#include "config/plan.h"
#include "dpdk_test_env.h"
#include "stream/stream.h"

namespace fg::engine {
namespace {

using fg::testing::NewVdev;
using fg::testing::TestEal;

struct Bench {
  config::Plan plan;
  std::vector<std::unique_ptr<port::Port>> ports;
  std::vector<stream::CompiledStream> streams;

  std::vector<port::Port*> raw() {
    std::vector<port::Port*> v;
    for (auto& p : ports) v.push_back(p.get());
    return v;
  }
};

// Parses `yaml`, opens each plan port on a fresh vdev of `driver`, compiles.
Bench Make(const std::string& yaml, const std::string& driver = "net_ring", const std::string& devargs = "") {
  Bench b;
  auto plan = config::ParsePlan("test.yaml", yaml);
  EXPECT_TRUE(plan.ok()) << plan.status();
  b.plan = *plan;
  std::vector<double> line;
  for (const auto& ps : b.plan.ports) {
    auto p = port::Port::Open(port::PortOptions{.name = ps.name,
                                                .dpdk_name = NewVdev(driver, devargs),
                                                .rx_queues = ps.rx_queues,
                                                .tx_queues = ps.tx_queues,
                                                .mtu = ps.mtu,
                                                .lcores = 2});
    EXPECT_TRUE(p.ok()) << p.status();
    EXPECT_TRUE((*p)->Start().ok());
    line.push_back((*p)->capabilities().line_bps());
    b.ports.push_back(std::move(*p));
  }
  auto s = stream::Compile(b.plan, line);
  EXPECT_TRUE(s.ok()) << s.status();
  b.streams = *s;
  return b;
}

TrialOptions Drain(int64_t ns, const std::atomic<bool>* interrupt = nullptr) {
  TrialOptions o;
  o.drain_ns = ns;
  o.interrupt = interrupt;
  return o;
}

TEST(Engine, CountBoundedStreamsArriveExactlyOnTheLoopback) {
  Bench b = Make(R"(
duration: 10 s
streams:
  - {name: a, rate: 2 Mpps, count: 200000, frame: {size: 64}}
  - {name: b, rate: 300 kpps, count: 54321, frame: {size: 1518}}
  - {name: c, rate: 10 kpps, count: 7, frame: {size: 128, vlan: {id: 7, pcp: 3}}}
)");
  auto r = RunTrial(TestEal(), b.raw(), b.streams, Drain(50'000'000));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->timed_out);
  const uint64_t want[] = {200000, 54321, 7};
  const uint64_t size[] = {64, 1518, 128};
  uint64_t total = 0, bytes = 0;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(r->streams[i].tx.packets, want[i]) << r->streams[i].name;
    EXPECT_EQ(r->streams[i].rx.packets, want[i]) << r->streams[i].name;
    EXPECT_EQ(r->streams[i].tx.bytes, want[i] * size[i]);
    EXPECT_EQ(r->streams[i].rx.bytes, want[i] * size[i]);
    total += want[i];
    bytes += want[i] * size[i];
  }
  ASSERT_EQ(r->ports.size(), 1u);
  EXPECT_EQ(r->ports[0].tx_packets, total);
  EXPECT_EQ(r->ports[0].rx_packets, total);
  EXPECT_EQ(r->ports[0].rx_bytes, bytes);
  EXPECT_EQ(r->ports[0].rx_unknown_packets, 0u);
  // The PMD's own counters agree with ours.
  EXPECT_EQ(r->ports[0].hw.tx_packets, total);
  EXPECT_EQ(r->ports[0].hw.rx_packets, total);
}

TEST(Engine, StreamsSpreadOverQueuesStillCountExactly) {
  Bench b = Make(R"(
duration: 10 s
ports: [{name: p, rx_queues: 2, tx_queues: 2}]
streams:
  - {name: a, rate: 1 Mpps, count: 100000}
  - {name: b, rate: 1 Mpps, count: 100001}
  - {name: c, rate: 1 Mpps, count: 99999}
)");
  auto r = RunTrial(TestEal(), b.raw(), b.streams, Drain(50'000'000));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->streams[0].rx.packets, 100000u);
  EXPECT_EQ(r->streams[1].rx.packets, 100001u);
  EXPECT_EQ(r->streams[2].rx.packets, 99999u);
  EXPECT_EQ(r->ports[0].rx_unknown_packets, 0u);
}

TEST(Engine, DurationBoundSendsRateTimesDuration) {
  // 100 kpps for 300 ms: 30,000 packet slots. Every slot is either sent or,
  // if the lcore was descheduled, counted as skipped; a burst may straddle
  // the end.
  Bench b = Make("streams: [{name: a, rate: 100 kpps, duration: 300 ms}]\n");
  auto r = RunTrial(TestEal(), b.raw(), b.streams, Drain(50'000'000));
  ASSERT_TRUE(r.ok()) << r.status();
  const uint64_t slots = r->streams[0].tx.packets + r->streams[0].tx.slots_skipped;
  EXPECT_NEAR(static_cast<double>(slots), 30000.0, 32.0);
  EXPECT_EQ(r->streams[0].rx.packets, r->streams[0].tx.packets);
  EXPECT_NEAR(static_cast<double>(r->duration_ns), 300e6, 20e6);
}

TEST(Engine, AStreamWithAStartSendsFromThenToItsEndAndOwesOnlyThat) {
  // b starts 200 ms into a 400 ms run: 20,000 slots of 100 kpps, its first
  // frame no earlier than 200 ms after a's.
  Bench b = Make("duration: 400 ms\n"
                 "streams: [{name: a, rate: 100 kpps}, {name: b, rate: 100 kpps, start: 200 ms}]\n");
  auto r = RunTrial(TestEal(), b.raw(), b.streams, Drain(50'000'000));
  ASSERT_TRUE(r.ok()) << r.status();
  const StreamResult& a = r->streams[0];
  const StreamResult& s = r->streams[1];
  EXPECT_NEAR(static_cast<double>(a.tx.due), 40000.0, 32.0);
  EXPECT_NEAR(static_cast<double>(s.tx.due), 20000.0, 32.0);
  EXPECT_EQ(s.rx.packets, s.tx.packets);
  // a's first frame is the run's start unless the host held the lcore up
  // then (a's pacer then fell behind: a stall), as it did once by 1.24 ms.
  const int64_t slack = a.tx.stalls == 0 ? 1'000'000 : 20'000'000;
  EXPECT_GE(s.tx.first_ns, a.tx.first_ns + 200'000'000 - slack) << "a's stalls " << a.tx.stalls;
  EXPECT_NEAR(static_cast<double>(s.tx.last_ns), static_cast<double>(a.tx.last_ns), 1e6);
}

TEST(Engine, FramesWithoutSignatureAreCountedApart) {
  // net_null drops what we send and answers every RX poll with synthetic
  // frames. copy=1 makes it copy them from a zeroed buffer; without it, it
  // hands out recycled mbufs whose old bytes still hold our signatures.
  Bench b = Make("streams: [{name: a, rate: 100 kpps, count: 1000}]\n", "net_null", "copy=1");
  auto r = RunTrial(TestEal(), b.raw(), b.streams, Drain(20'000'000));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->streams[0].tx.packets, 1000u);
  EXPECT_EQ(r->streams[0].rx.packets, 0u);
  EXPECT_GT(r->ports[0].rx_unknown_packets, 0u);
  EXPECT_EQ(r->ports[0].rx_packets, r->ports[0].rx_unknown_packets);
  EXPECT_EQ(r->ports[0].hw.rx_packets, r->ports[0].rx_packets);
}

TEST(Engine, JumboFramesAtMtu9000) {
  Bench b = Make(R"(
ports: [{name: j, mtu: 9000}]
streams: [{name: big, rate: 50 kpps, count: 5000, frame: {size: 9018 B}}]
)");
  auto r = RunTrial(TestEal(), b.raw(), b.streams, Drain(20'000'000));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->streams[0].tx.packets, 5000u);
  EXPECT_EQ(r->streams[0].rx.packets, 5000u);
  EXPECT_EQ(r->streams[0].rx.bytes, 5000u * 9018);
}

// Issue 4's acceptance run: >= 100,000,000 packets over >= 10,000 flows on the
// loopback, every one accounted for.
TEST(Engine, HundredMillionPacketsOverTenThousandFlowsAllArrive) {
  Bench b = Make(R"(
duration: 120 s
streams:
  - {name: many, rate: max, flows: 10000, count: 100000000, frame: {size: 64}}
)");
  auto r = RunTrial(TestEal(), b.raw(), b.streams, Drain(200'000'000));
  ASSERT_TRUE(r.ok()) << r.status();
  const StreamResult& s = r->streams[0];
  EXPECT_FALSE(r->timed_out);
  EXPECT_EQ(s.tx.packets, 100'000'000u);
  EXPECT_EQ(s.rx.packets, 100'000'000u);
  EXPECT_EQ(s.lost(), 0);
  EXPECT_EQ(s.analysis.lost, 0);
  EXPECT_EQ(s.analysis.duplicate, 0u);
  EXPECT_EQ(s.analysis.reordered, 0u);
  EXPECT_EQ(s.analysis.late, 0u);
  EXPECT_EQ(s.analysis.flows_seen, 10000u);
  // Every frame a latency sample but those that waited through an RX stall
  // (the tester's own delay: left out, counted), as many as RX marked, none without a stall.
  EXPECT_EQ(s.analysis.latency.count() + s.analysis.latency_excluded, 100'000'000u);
  EXPECT_EQ(s.analysis.latency_excluded, r->ports[0].rx_stall_frames);
  if (r->ports[0].rx_stalls == 0) {
    EXPECT_EQ(r->ports[0].rx_stall_frames, 0u);
  }
  EXPECT_EQ(r->ports[0].rx_unknown_packets, 0u);
  EXPECT_EQ(r->ports[0].hw.rx_packets, 100'000'000u);  // the PMD agrees
}

TEST(Engine, OneMillionFlowsEachTrackedOnItsOwn) {
  Bench b = Make(R"(
duration: 120 s
streams:
  - {name: wide, rate: max, flows: 1000000, count: 10000000, frame: {roce: {op: SEND, message: 16, dest_qp: 1}}}
)");
  auto r = RunTrial(TestEal(), b.raw(), b.streams, Drain(200'000'000));
  ASSERT_TRUE(r.ok()) << r.status();
  const StreamResult& s = r->streams[0];
  EXPECT_EQ(s.rx.packets, 10'000'000u);
  EXPECT_EQ(s.analysis.flows_seen, 1'000'000u);
  EXPECT_EQ(s.lost(), 0);
  EXPECT_EQ(s.analysis.reordered, 0u);
  EXPECT_EQ(s.analysis.duplicate, 0u);
}

// CNPs, RoCE NAKs and UET NACKs carry no signature: they are attributed to
// the flow whose QP / PDC they address, and counted per port when they match
// none.
TEST(Engine, FeedbackFramesAreCountedForTheFlowTheyAddress) {
  Bench b = Make(R"(
duration: 10 s
ports: [{name: p, mtu: 9000}]
streams:
  - {name: data, rate: 100 kpps, count: 1000, flows: 4, frame: {roce: {op: WRITE, message: 1024, dest_qp: 0x100}}}
  - {name: cnp, rate: 10 kpps, count: 10, frame: {roce: {op: CNP, dest_qp: 0x102}}}
  - {name: nak, rate: 10 kpps, count: 5, frame: {roce: {op: NAK, dest_qp: 0x101}}}
  - {name: uet, rate: 10 kpps, count: 100, flows: 2, frame: {uet: {service: RUD, spdcid: 10, dpdcid: 1, message: 1024, max_payload: 1024}}}
  - {name: nack, rate: 10 kpps, count: 7, frame: {uet: {packet: nack, spdcid: 99, dpdcid: 11}}}
  - {name: stray-cnp, rate: 10 kpps, count: 3, frame: {roce: {op: CNP, dest_qp: 0x999}}}
)");
  auto r = RunTrial(TestEal(), b.raw(), b.streams, Drain(50'000'000));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->streams[0].rx.packets, 1000u);
  EXPECT_EQ(r->streams[0].analysis.cnp, 10u);
  EXPECT_EQ(r->streams[0].analysis.nack, 5u);
  EXPECT_EQ(r->streams[3].analysis.nack, 7u);
  EXPECT_EQ(r->ports[0].rx_cnp, 13u);
  EXPECT_EQ(r->ports[0].rx_roce_nak, 5u);
  EXPECT_EQ(r->ports[0].rx_uet_nack, 7u);
  EXPECT_EQ(r->ports[0].rx_feedback_unmatched, 3u);
  EXPECT_EQ(r->ports[0].rx_unknown_packets, 10u + 5 + 7 + 3);
}

TEST(Engine, BurstScheduleSendsWholeBurstsEveryPeriod) {
  // 64 frames back to back, then 2 ms idle: 10 bursts for a count of 640.
  Bench b = Make("streams: [{name: b, burst: {frames: 64, gap: 2 ms}, count: 640, frame: {size: 512}}]\n");
  ASSERT_EQ(b.streams[0].burst_frames, 64u);
  // 64 x (512 + 20) B at 10 Gbit/s = 27.2 us of burst, + 2 ms of gap.
  EXPECT_EQ(b.streams[0].burst_period_ns, 27238 + 2'000'000);
  auto r = RunTrial(TestEal(), b.raw(), b.streams, Drain(20'000'000));
  ASSERT_TRUE(r.ok()) << r.status();
  const StreamResult& s = r->streams[0];
  EXPECT_EQ(s.tx.packets, 640u);
  EXPECT_EQ(s.rx.packets, 640u);
  EXPECT_EQ(s.lost(), 0);
  // First to last burst: 9 periods (+ the last burst's own sending time),
  // give or take a burst released late by a hold-up of the lcore (its lateness
  // recorded: tx_stall_max_ns; the bursts keep their schedule).
  EXPECT_NEAR(static_cast<double>(s.tx_duration_ns), 9 * 2'027'238.0, 1'000'000.0 + s.tx.stall_max_ns);
}

// Each net_ring port loops back to itself, so a stream from a to b comes
// back on a: b received none of it, and a's copies are not the stream's
// (a is only where its feedback would return).
TEST(Engine, AStreamIsCountedOnlyOnItsRxPort) {
  Bench b = Make(R"(
ports: [{name: a}, {name: b}]
streams: [{name: s, port: a, rx_port: b, rate: 100 kpps, count: 1000}]
)");
  auto r = RunTrial(TestEal(), b.raw(), b.streams, Drain(20'000'000));
  ASSERT_TRUE(r.ok()) << r.status();
  const StreamResult& s = r->streams[0];
  EXPECT_EQ(s.tx.packets, 1000u);
  EXPECT_EQ(s.rx.packets, 0u);
  EXPECT_EQ(s.lost(), 1000);
  EXPECT_EQ(r->ports[0].rx_unknown_packets, 1000u);
  EXPECT_EQ(r->ports[1].rx_packets, 0u);
}

// Two unpaced streams on one queue: the PMD's ring is the limit, and they
// take turns at it.
TEST(Engine, MaxStreamsSharingAPortShareItEvenly) {
  Bench b = Make(R"(
streams:
  - {name: x, rate: max, duration: 300 ms}
  - {name: y, rate: max, duration: 300 ms}
)");
  auto r = RunTrial(TestEal(), b.raw(), b.streams, Drain(20'000'000));
  ASSERT_TRUE(r.ok()) << r.status();
  const double x = static_cast<double>(r->streams[0].tx.packets), y = static_cast<double>(r->streams[1].tx.packets);
  ASSERT_GT(x + y, 10'000);
  EXPECT_NEAR(x / (x + y), 0.5, 0.05) << x << " vs " << y;
  EXPECT_FALSE(r->streams[0].tx.paced);  // no set rate to fall short of
  for (const TesterLimit& l : r->streams[0].tester_limits) EXPECT_NE(l.kind, kTxShortfall);
}

// A top-flows request over more flows than one poll scans: every flow is
// seen (the lcore answers after several polls), none twice.
TEST(LiveRun, TopFlowsOverManyFlowsSeesEveryFlowOnce) {
  Bench b = Make("streams: [{name: a, rate: 500 kpps, duration: 5 s, flows: 5000}]\n");
  auto run = LiveRun::Start(TestEal(), b.raw(), b.streams, Drain(10'000'000));
  ASSERT_TRUE(run.ok()) << run.status();
  // Every flow has started once 5,000 frames have come back (flows take turns).
  while ((*run)->Streams()[0].rx.packets < 5000) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  auto top = (*run)->TopFlows(5000);
  ASSERT_TRUE(top.ok()) << top.status();
  ASSERT_EQ(top->size(), 5000u);
  std::set<uint32_t> seen;
  for (const rx::FlowView& f : *top) seen.insert(f.flow);
  EXPECT_EQ(seen.size(), 5000u);
  (*run)->Finish();
}

TEST(Engine, InterruptEndsTheRunEarlyAndSaysSo) {
  Bench b = Make("streams: [{name: a, rate: 10 kpps, duration: 60 s}]\n");
  std::atomic<bool> stop{true};
  auto r = RunTrial(TestEal(), b.raw(), b.streams, Drain(10'000'000, &stop));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->interrupted);
  EXPECT_LT(r->duration_ns, 1'000'000'000);
  EXPECT_EQ(r->streams[0].rx.packets, r->streams[0].tx.packets);
}

// A live run under control: a rate change, a pause, a stop of one stream;
// counters read meanwhile only grow; top flows and a capture come back from
// the RX lcore; at the end every frame sent has arrived.
TEST(LiveRun, RatePauseStopAndReadsWhileRunning) {
  Bench b = Make(R"(
streams:
  - {name: a, rate: 10 kpps, duration: 60 s, flows: 4, frame: {size: 100}}
  - {name: b, rate: 5 kpps, duration: 60 s, frame: {size: 64}}
)");
  auto run = LiveRun::Start(TestEal(), b.raw(), b.streams, Drain(20'000'000));
  ASSERT_TRUE(run.ok()) << run.status();
  LiveRun& r = **run;
  auto wait_ms = [](int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); };
  auto tx = [&](size_t s) { return r.Streams()[s].tx.packets; };
  // The stream's slots since a reading: the frames it sent plus those it
  // skipped while its lcore was held up (a shared host takes a vCPU for up
  // to ~10 ms: the pacer gives those slots up and counts them, it never
  // sends them late), over the time the test thread measured between the
  // two readings (its own sleeps stretch too).
  struct Reading {
    uint64_t slots;
    std::chrono::steady_clock::time_point at;
  };
  auto read = [&](size_t s) {
    const auto v = r.Streams()[s];
    return Reading{v.tx.packets + v.tx.slots_skipped, std::chrono::steady_clock::now()};
  };
  auto seconds = [](const Reading& a, const Reading& b) { return std::chrono::duration<double>(b.at - a.at).count(); };
  wait_ms(300);
  const uint64_t a0 = tx(0);
  EXPECT_GT(a0, 1000u);
  // 10 kpps -> 40 kpps: over the next 500 ms stream a has ~20,000 slots, not ~5,000.
  ASSERT_TRUE(r.SetRate(0, 40'000).ok());
  wait_ms(20);
  const Reading a1 = read(0);
  wait_ms(500);
  const Reading a2 = read(0);
  EXPECT_NEAR(static_cast<double>(a2.slots - a1.slots), 40'000 * seconds(a1, a2), 2'000);
  EXPECT_DOUBLE_EQ(r.state(0).pps, 40'000);
  // Paused: b sends nothing; resumed: it goes on at its rate, without a catch-up burst.
  ASSERT_TRUE(r.SetPaused(1, true).ok());
  wait_ms(20);
  const Reading b0 = read(1);
  wait_ms(200);
  EXPECT_EQ(read(1).slots, b0.slots);
  EXPECT_TRUE(r.state(1).paused);
  ASSERT_TRUE(r.SetPaused(1, false).ok());
  const Reading resumed = read(1);
  wait_ms(200);
  const Reading b1 = read(1);
  EXPECT_NEAR(static_cast<double>(b1.slots - b0.slots), 5'000 * seconds(resumed, b1), 300);
  // Live reads while traffic flows.
  const auto live = r.Streams();
  EXPECT_GE(live[0].rx.packets, a2.slots - live[0].tx.slots_skipped);
  EXPECT_EQ(live[0].rx.gap_packets, 0u);
  // Lost so far: RX is read before TX, so only frames in flight (a few bursts
  // at 40 kpps on a ring), never fewer than none.
  EXPECT_GE(live[0].lost(), 0);
  EXPECT_LT(live[0].lost(), 2'000);
  EXPECT_GT(r.Latency(0).count(), 0u);
  auto top = r.TopFlows(3);
  ASSERT_TRUE(top.ok()) << top.status();
  ASSERT_EQ(top->size(), 3u);
  EXPECT_GT((*top)[0].received, 0u);
  auto frames = r.Capture(0, 5, 1'000'000'000);
  ASSERT_TRUE(frames.ok()) << frames.status();
  ASSERT_EQ(frames->size(), 5u);
  EXPECT_TRUE((*frames)[0].bytes.size() == 96 || (*frames)[0].bytes.size() == 60);  // without FCS
  EXPECT_LE((*frames)[0].rx_ns, (*frames)[4].rx_ns);
  // Stop a, then everything.
  ASSERT_TRUE(r.StopStream(0).ok());
  wait_ms(50);
  EXPECT_TRUE(r.state(0).done);
  const uint64_t a3 = tx(0);
  wait_ms(100);
  EXPECT_EQ(tx(0), a3);
  EXPECT_FALSE(r.tx_done());
  const TrialResult res = r.Finish();
  EXPECT_TRUE(r.tx_done());
  EXPECT_EQ(res.streams[0].tx.packets, a3);
  for (const StreamResult& s : res.streams) {
    EXPECT_EQ(s.rx.packets, s.tx.packets) << s.name;
    EXPECT_EQ(s.lost(), 0);
  }
}

}  // namespace
}  // namespace fg::engine
