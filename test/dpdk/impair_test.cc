// A test port that drops, duplicates and reorders chosen packets: two ring
// ports (TX writes into ring `in`, RX reads ring `out`) and a mover thread in
// between that applies the impairments by sequence number. The analyzer must
// report exactly what the mover did.
#include <gtest/gtest.h>
#include <rte_eth_ring.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>
#include <rte_ring.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "config/plan.h"
#include "dpdk_test_env.h"
#include "engine/engine.h"
#include "port/driver_registry.h"
#include "proto/signature.h"
#include "ring_path.h"
#include "stream/stream.h"

namespace fg::engine {
namespace {

using fg::testing::Impairments;
using fg::testing::Mover;
using fg::testing::RingPath;
using fg::testing::TestEal;

TEST(Impairment, AnalyzerReportsExactlyWhatThePathDid) {
  RingPath path("imp");
  ASSERT_TRUE(path.ok()) << path.error();
  auto plan = config::ParsePlan("imp.yaml", R"(
duration: 10 s
ports: [{name: a}, {name: b}]
streams: [{name: s, port: a, rx_port: b, rate: 200 kpps, count: 10000, verify_payload: true, frame: {size: 128}}]
)");
  ASSERT_TRUE(plan.ok()) << plan.status();
  auto streams = stream::Compile(*plan, {10e9, 10e9});
  ASSERT_TRUE(streams.ok());

  Impairments imp;
  for (uint32_t s = 100; s < 150; ++s) imp.drop.insert(s);  // a 50-packet outage
  imp.drop.insert({500, 501, 7000});
  imp.dup = {300, 301, 302};
  imp.hold_until = {{800, 805}, {900, 901}};  // 800 after 805 (extent 5), 900 after 901 (extent 1)
  imp.corrupt = {42, 4242, 9999};
  auto res = path.Run(*streams, imp);
  ASSERT_TRUE(res.ok()) << res.status();
  const TrialResult& r = *res;
  const StreamResult& s = r.streams[0];
  EXPECT_EQ(s.tx.packets, 10000u);
  EXPECT_EQ(s.rx.packets, 10000u - 53 + 3);
  EXPECT_EQ(s.lost(), 53);
  EXPECT_EQ(s.analysis.lost, 53);
  EXPECT_EQ(s.analysis.duplicate, 3u);
  EXPECT_EQ(s.analysis.reordered, 2u);
  EXPECT_EQ(s.analysis.max_extent, 5u);
  EXPECT_EQ(s.analysis.late, 0u);
  EXPECT_EQ(s.analysis.payload_errors, 3u);
  // Gap events as seen on arrival: the three losses and the two holes the
  // reordered packets filled later.
  EXPECT_EQ(s.analysis.loss_events, 5u);
  ASSERT_EQ(r.loss_events.size(), 5u);
  const stats::LossEvent& outage = r.loss_events[0];
  EXPECT_EQ(outage.first_seq, 100u);
  EXPECT_EQ(outage.packets, 50u);
  // 51 packet intervals of 5 us pass between seq 99 and seq 150 on the wire.
  // Measured with one software RX timestamp per burst, behind a mover thread
  // that forwards in batches on a shared machine: it can come out longer or
  // shorter, so the bound is the one issue 6 sets for measured loss
  // durations, one inter-packet gap + 1 ms. (Exact durations from injected
  // times: test/cli PcapReplayTest.)
  EXPECT_NEAR(static_cast<double>(outage.end_ns - outage.start_ns), 51 * 5000.0, 5000.0 + 1'000'000.0);
  EXPECT_EQ(r.ports[1].rx_unknown_packets, 0u);
}

// Free mbufs of a pool, counted in its ring and every lcore's cache:
// unlike rte_mempool_avail_count, not capped at the pool's size, so an mbuf
// put back twice shows (as long as the ring has room for it: its size is
// the pool's rounded up to a power of two).
unsigned FreeMbufs(const rte_mempool* mp) {
  unsigned n = rte_mempool_ops_get_count(mp);
  if (mp->cache_size != 0) {
    for (unsigned l = 0; l < RTE_MAX_LCORE; ++l) n += mp->local_cache[l].len;
  }
  return n;
}

// RX puts a burst back into its pool in one call only when every mbuf in it
// is direct, unshared, one segment and from that pool. The path here hands on
// duplicates that are none of those: the same mbuf twice (refcnt 2) and
// indirect clones, and a run of 100 frames as copies from a pool of the
// test's own. Held back and released together (at 200 kpps RX would
// otherwise see a frame a burst), they arrive in full bursts: frames 2000-2009
// behind 2010 and its shared and cloned copies, 5036-5098 behind 5099 (bursts
// of only foreign mbufs, and bursts mixing both pools where the run ends).
// Counted exactly, and afterwards every mbuf of both pools is free again,
// once: a burst put back as it is would leak the clones' buffers, put mbufs
// into the wrong pool, or free a shared mbuf still to be received.
TEST(Impairment, SharedClonedAndForeignMbufsAreCountedAndFreedAsDpdkRequires) {
  RingPath path("mbf");
  ASSERT_TRUE(path.ok()) << path.error();
  // 1,000 mbufs in a ring of 1,024: room for a double free to show.
  rte_mempool* foreign = rte_pktmbuf_pool_create("mbf_foreign", 1000, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
  ASSERT_NE(foreign, nullptr);
  Impairments imp;
  imp.foreign_pool = foreign;
  imp.dup_shared = {10, 11, 2010};
  imp.dup_clone = {20, 3001, 2010};
  for (uint32_t q = 2000; q < 2010; ++q) imp.hold_until[q] = 2010;
  for (uint32_t q = 5000; q < 5100; ++q) imp.foreign.insert(q);
  for (uint32_t q = 5036; q < 5099; ++q) imp.hold_until[q] = 5099;  // 63: within the analyzer's 64-frame window
  rte_mempool* pool = path.tx()->pool();
  auto res = path.RunPlan(R"(
duration: 10 s
ports: [{name: a}, {name: b}]
streams: [{name: s, port: a, rx_port: b, rate: 200 kpps, count: 10000, verify_payload: true, frame: {size: 128}}]
)",
                          imp);
  ASSERT_TRUE(res.ok()) << res.status();
  const StreamResult& s = res->streams[0];
  EXPECT_EQ(s.tx.packets, 10000u);
  EXPECT_EQ(s.rx.packets, 10000u + 3 + 3);
  EXPECT_EQ(s.analysis.duplicate, 3u + 3);
  EXPECT_EQ(s.analysis.reordered, 10u + 63);
  EXPECT_EQ(s.analysis.lost, 0);
  EXPECT_EQ(s.analysis.payload_errors, 0u);
  EXPECT_EQ(res->ports[1].rx_unknown_packets, 0u);
  EXPECT_EQ(FreeMbufs(pool), pool->size);
  EXPECT_EQ(FreeMbufs(foreign), foreign->size);
  rte_mempool_free(foreign);
}

// TX rewrites only the per-packet fields of an mbuf that comes back to it
// still holding the same template (net_null and real NICs free mbufs intact).
// A checker thread on the far side of a ring compares every frame byte for
// byte with what the stream's Program writes for that packet, then frees it
// back to the pool for TX to reuse: multi-packet messages (three templates),
// several flows, sprayed entropy.
TEST(Recycling, ReusedMbufsCarryExactlyTheFramesTheProgramWrites) {
  static int id = 0;
  const std::string tag = std::to_string(id++);
  rte_ring* in = rte_ring_create(("rcy_in" + tag).c_str(), 1024, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
  rte_ring* none = rte_ring_create(("rcy_none" + tag).c_str(), 64, SOCKET_ID_ANY, 0);
  ASSERT_TRUE(in && none);
  ASSERT_GE(rte_eth_from_rings(("rcy" + tag).c_str(), &none, 1, &in, 1, SOCKET_ID_ANY), 0);
  auto plan = config::ParsePlan("rcy.yaml", R"(
duration: 10 s
ports: [{name: a, rx_queues: 0}]
streams:
  - name: s
    rate: 400 kpps
    count: 30000
    flows: 5
    frame: {roce: {op: WRITE, message: 3000, pmtu: 1024}, entropy: {mode: round_robin, values: 7}}
)");
  ASSERT_TRUE(plan.ok()) << plan.status();
  auto p =
      port::Port::Open(port::PortOptions{.name = "a", .dpdk_name = "net_ring_rcy" + tag, .rx_queues = 0, .lcores = 2});
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE((*p)->Start().ok());
  auto streams = stream::Compile(*plan, {10e9});
  ASSERT_TRUE(streams.ok());
  const stream::CompiledStream& cs = (*streams)[0];
  ASSERT_EQ(cs.program.packets_per_message(), 3u);

  std::atomic<bool> stop{false};
  uint64_t checked = 0, mismatched = 0;
  std::thread checker([&] {
    std::vector<stream::Cursor> cursors(cs.flows, cs.program.Start());
    std::vector<uint8_t> want(cs.program.buffer_len());
    rte_mbuf* burst[32];
    while (!stop.load() || rte_ring_count(in) != 0) {
      const unsigned n = rte_ring_dequeue_burst(in, reinterpret_cast<void**>(burst), 32, nullptr);
      for (unsigned i = 0; i < n; ++i) {
        const uint8_t* d = rte_pktmbuf_mtod(burst[i], const uint8_t*);
        const uint32_t f = static_cast<uint32_t>(checked % cs.flows);  // flows take turns
        const int off = proto::FindSignatureOffset(d, burst[i]->data_len);
        const uint64_t ts = off >= 0 ? proto::Load48(d + off + 10) : 0;
        const uint32_t len = cs.program.Emit(want.data(), cursors[f], ts, cs.program.Flow(cs.flow_id, f));
        if (len != burst[i]->data_len || std::memcmp(want.data(), d, len) != 0) ++mismatched;
        ++checked;
      }
      rte_pktmbuf_free_bulk(burst, n);  // back to the pool, template tag intact
    }
  });
  TrialOptions opt;
  opt.drain_ns = 50'000'000;
  auto r = RunTrial(TestEal(), {p->get()}, *streams, opt);
  stop.store(true);
  checker.join();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->streams[0].tx.packets, 30000u);
  EXPECT_EQ(checked, 30000u);
  EXPECT_EQ(mismatched, 0u);
  p->reset();
  rte_ring_free(in);
  rte_ring_free(none);
}

// Hardware RX timestamps end to end, with the NIC simulated: a driver for
// net_ring describes a tick clock (1.5625 GHz nominal, +50 ppm, drifting a
// further 1 ppm per second, as a warming oscillator may) and the mover
// stamps each frame as a NIC would, at TX time + an injected latency of
// 10..16 us (by sequence number). The port fits the clock to the TSC, the
// engine re-fits it during the run, and the analyzer must recover the
// injected latencies. A line that were not re-fitted would be ~3 us off by
// the end of the run.
class HardwareTimestamps : public ::testing::Test {
 protected:
  void SetUp() override {
    t0_ = tsc_.ToNs(ReadTsc());
    drivers_.AddTimestamps("net_ring", [this](const port::Capabilities&) {
      port::TimestampDriver d;
      d.clock = "test clock (ticks, 1.5625 GHz nominal)";
      d.nominal_units_per_ns = 1.5625;
      d.stamps_without_offload = true;
      d.read = [this](uint16_t, uint64_t* now) {
        *now = NicAt(tsc_.ToNs(ReadTsc()));
        return 0;
      };
      return std::optional<port::TimestampDriver>(d);
    });
    rx_options_.rx_timestamps = port::RxTimestamps::kHardware;
    rx_options_.drivers = &drivers_;
    path_ = std::make_unique<RingPath>("hwts", rx_options_);
  }

  // The simulated NIC clock at TSC time `tsc_ns`. Integer arithmetic, a few
  // ns: the readings' brackets stay tight, as a real NIC register read should.
  uint64_t NicAt(uint64_t tsc_ns) const {
    const __int128 dt = static_cast<int64_t>(tsc_ns - t0_);
    const __int128 ticks = dt * 25 / 16;                       // 1.5625 ticks/ns
    const __int128 drift = ticks / 20'000;                     // +50 ppm
    const __int128 warm = ticks * dt / 2'000'000'000'000'000;  // +1 ppm/s: 0.5 * 1e-6 * dt / 1e9
    return static_cast<uint64_t>(5'000'000'000'000 + ticks + drift + warm);
  }

  // `count` frames at 100 kpps; the mover stamps each as the NIC would,
  // at its TX time + injected(seq) ns.
  // `observe`, if set, sees each frame and its full TX time before it is stamped.
  absl::StatusOr<TrialResult> Run(uint64_t count, std::function<int64_t(uint32_t)> injected, int flows = 10,
                                  std::function<void(const rte_mbuf*, uint64_t)> observe = nullptr) {
    if (!path_->ok()) return absl::InternalError(path_->error());
    auto plan = config::ParsePlan("hwts.yaml", absl::StrFormat(R"(
duration: 10 s
ports: [{name: a}, {name: b}]
streams: [{name: s, port: a, rx_port: b, rate: 100 kpps, count: %d, flows: %d, frame: {roce: {op: SEND, message: 64}}}]
)",
                                                               count, flows));
    if (!plan.ok()) return plan.status();
    auto streams = stream::Compile(*plan, {10e9, 10e9});
    if (!streams.ok()) return streams.status();
    const port::RxTimestamp& rts = path_->rx()->rx_timestamp();
    auto stamp = [&](rte_mbuf* m) {
      const uint8_t* d = rte_pktmbuf_mtod(m, const uint8_t*);
      const int off = proto::FindSignatureOffset(d, m->data_len);
      if (off < 0) return;
      const uint32_t seq = proto::Load32(d + off + 6);
      const uint64_t now = tsc_.ToNs(ReadTsc());
      // The TX time may lie ahead (scheduled sends): unwrap it around now either way.
      const uint64_t tx =
          now + static_cast<uint64_t>(
                    static_cast<int64_t>(((proto::Load48(d + off + 10) - now) & proto::kTimestampMask) << 16) >> 16);
      if (observe) observe(m, tx);
      *RTE_MBUF_DYNFIELD(m, rts.offset, uint64_t*) = NicAt(tx + static_cast<uint64_t>(injected(seq)));
      m->ol_flags |= rts.flag;
      stamped_.fetch_add(1, std::memory_order_relaxed);
    };
    return path_->Run(*streams, Impairments{}, stamp);
  }

  TscClock tsc_{TestEal().tsc_hz()};
  uint64_t t0_ = 0;
  port::DriverRegistry drivers_;
  port::PortOptions rx_options_;
  std::unique_ptr<RingPath> path_;
  std::atomic<uint64_t> stamped_{0};
};

TEST_F(HardwareTimestamps, NicStampsFittedToTheTscGiveTheInjectedLatencies) {
  ASSERT_TRUE(path_->ok()) << path_->error();
  const port::RxTimestamp& rts = path_->rx()->rx_timestamp();
  ASSERT_EQ(rts.unit, port::RxTimestamp::Unit::kNicClock);
  ASSERT_NE(path_->rx()->nic_clock(), nullptr);
  auto res = Run(250000, [](uint32_t seq) { return 10'000 + (seq % 7) * 1'000; });
  ASSERT_TRUE(res.ok()) << res.status();
  const TrialResult& r = *res;
  const StreamResult& s = r.streams[0];
  EXPECT_EQ(s.tx.packets, 250000u);
  EXPECT_EQ(s.rx.packets, 250000u);
  EXPECT_EQ(stamped_.load(), 250000u);
  const stats::LatencyHistogram& h = s.analysis.latency;
  EXPECT_EQ(h.count(), 250000u);
  // Within 100 ns of the injected values over the whole 2.5 s run.
  EXPECT_NEAR(static_cast<double>(h.min()), 10'000.0, 100.0);
  EXPECT_NEAR(static_cast<double>(h.max()), 16'000.0, 100.0);
  EXPECT_NEAR(h.Percentile(50), 13'000.0, 13'000 * 0.004 + 100.0);  // the 4th of 7 equally likely values
  EXPECT_NE(r.timestamp_source.find("NIC hardware RX timestamp"), std::string::npos) << r.timestamp_source;
  EXPECT_NE(r.timestamp_source.find("test clock"), std::string::npos) << r.timestamp_source;
  EXPECT_TRUE(r.warnings.empty());
  const port::NicClock& c = *path_->rx()->nic_clock();
  ASSERT_TRUE(c.line().has_value());
  EXPECT_GT(c.samples(), 200u);                         // every 10 ms through a 2.5 s run
  EXPECT_NEAR(c.line()->drift_ppm(), 50.0 + 2.6, 1.0);  // +50 ppm, +1 ppm/s by the end
}

// Stamps that do not count the fitted clock (here 1 frame in 100 stamped
// 50 us before it was sent) make negative latencies: the run says so.
TEST_F(HardwareTimestamps, StampsOffTheFittedClockAreReportedNotAveraged) {
  auto res = Run(20000, [](uint32_t seq) { return seq % 100 == 0 ? -50'000 : 10'000; });
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_EQ(res->streams[0].analysis.latency.overflow(), 200u);
  ASSERT_EQ(res->warnings.size(), 1u);
  EXPECT_NE(res->warnings[0].find("stream s: 200 latency samples above 2^40 ns or negative"), std::string::npos)
      << res->warnings[0];
}

// Send-on-timestamp: each burst's first mbuf carries, on the (simulated) NIC
// clock, the time the burst is due + the lead, and the signatures carry the
// same instant in TSC ns: paced slots exactly 10 us apart, not the jittery
// moments the lcore got round to them.
TEST_F(HardwareTimestamps, ScheduledBurstsCarryTheirDueTimeOnTheNicClock) {
  port::PortOptions tx;
  tx.tx_scheduled = true;
  tx.drivers = &drivers_;
  path_ = std::make_unique<RingPath>("hwsched", rx_options_, tx);
  ASSERT_TRUE(path_->ok()) << path_->error();
  const port::TxSchedule& sch = path_->tx()->tx_schedule();
  ASSERT_TRUE(sch.enabled());
  uint64_t flagged = 0, off_clock = 0, off_slot = 0, last_tx = 0;
  auto observe = [&](const rte_mbuf* m, uint64_t tx_ns) {
    if (!(m->ol_flags & sch.flag)) return;
    ++flagged;
    const uint64_t nic = *RTE_MBUF_DYNFIELD(m, sch.offset, const uint64_t*);
    const int64_t err = static_cast<int64_t>(nic - NicAt(tx_ns));
    if (err < -160 || err > 160) ++off_clock;  // 100 ns at 1.5625 ticks/ns
    // Bursts start on 10 us slots: consecutive scheduled times differ by a multiple of 10 us.
    if (last_tx != 0) {
      const uint64_t gap = tx_ns - last_tx;
      const uint64_t r = gap % 10'000;
      if (r > 2 && r < 9'998) ++off_slot;
    }
    last_tx = tx_ns;
  };
  auto res = Run(
      50000, [](uint32_t) { return 1'000; }, /*flows=*/1, observe);
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_EQ(res->streams[0].tx.packets, 50000u);
  EXPECT_EQ(res->streams[0].rx.packets, 50000u);
  EXPECT_GT(flagged, 45000u);  // one per burst: mostly one frame per 10 us slot
  EXPECT_EQ(off_clock, 0u);
  EXPECT_EQ(off_slot, 0u);
  // RX stamps were injected 1 us after the scheduled departure.
  EXPECT_NEAR(static_cast<double>(res->streams[0].analysis.latency.min()), 1'000.0, 100.0);
  EXPECT_NEAR(static_cast<double>(res->streams[0].analysis.latency.max()), 1'000.0, 100.0);
}

}  // namespace
}  // namespace fg::engine
