// Test helpers shared by the DPDK tests: a ring pair with a mover thread in
// between that impairs frames (drops, duplicates, reorders, corrupts, polices)
// or stamps them as a simulated NIC would.
#pragma once

#include <gtest/gtest.h>
#include <rte_eth_ring.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>
#include <rte_ring.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "base/tsc.h"
#include "config/plan.h"
#include "dpdk_test_env.h"
#include "engine/engine.h"
#include "host_holdups.h"
#include "port/port.h"
#include "proto/signature.h"
#include "stream/stream.h"

namespace fg::testing {

using engine::RunTrial;
using engine::TrialOptions;
using engine::TrialResult;

struct Impairments {
  std::set<uint32_t> drop;
  std::set<uint32_t> dup;
  std::map<uint32_t, uint32_t> hold_until;  // seq -> release right after this seq passes
  std::set<uint32_t> corrupt;               // flip the last payload byte
  std::set<uint32_t> ce;                    // mark ECN CE (IPv4; the header checksum kept valid)
  std::set<uint32_t> drop_first;            // drop each flow's first frame with this sequence (not its resends)
  std::optional<uint32_t> drop_first_flow;  // set: drop_first applies to this flow id (signature) only
  // Asked for every frame, in arrival order, with the frame's TX time from
  // its signature: true drops it (a policer, a shaper's tail drop).
  std::function<bool(uint64_t tx_ns)> police;
  // Duplicates handed on as the same mbuf twice (its refcnt raised) or as
  // an indirect clone (both then share one buffer), and frames handed on as
  // a copy from `foreign_pool` in place of the original: RX must free each
  // as DPDK requires, never put it back into a pool as a free mbuf while it
  // is still referenced, nor into another pool.
  std::set<uint32_t> dup_shared, dup_clone, foreign;
  rte_mempool* foreign_pool = nullptr;
  // Every drop_every-th frame with a signature the mover takes (resends
  // included) is dropped; 0: none. Mover::dropped_every() counts them.
  uint32_t drop_every = 0;
  // Every ce_every-th frame with a signature it hands on is marked CE (an
  // ECN switch queue's marks, IPv4); Mover::marked_every() counts them.
  uint32_t ce_every = 0;
  // Every frame handed on this long after the mover took it (a path's
  // delay), in the order taken; 0: at once.
  uint64_t delay_ns = 0;
  // Frames a test forges from one the mover takes (copies of it from
  // `pool`, changed: hostile input at the RX port), handed on right after
  // it; null entries are skipped.
  std::function<std::vector<rte_mbuf*>(const rte_mbuf* m, rte_mempool* pool)> inject;
};

// A token-bucket policer as a DUT of known capacity: `pps` tokens a second,
// at most `depth` saved. A trial of d seconds at a constant L > pps loses
// (L - pps) * d - depth frames. It runs on the frames' TX times (signature),
// so the mover thread's own scheduling on a busy host cannot change what it
// does: the truth depends only on what the tester sent.
class Policer {
 public:
  Policer(double pps, double depth) : pps_(pps), depth_(depth), tokens_(depth) {}
  bool Drop(uint64_t tx_ns) {
    if (started_ && tx_ns > last_ns_) {
      tokens_ = std::min(depth_, tokens_ + static_cast<double>(tx_ns - last_ns_) * pps_ / 1e9);
    }
    if (!started_ || tx_ns > last_ns_) last_ns_ = tx_ns;
    started_ = true;
    if (tokens_ < 1) return true;
    tokens_ -= 1;
    return false;
  }

 private:
  double pps_, depth_, tokens_;
  uint64_t last_ns_ = 0;
  bool started_ = false;
};

// Moves frames from `in` to `out`, impairing them; counts what it did.
class Mover {
 public:
  // `on_forward`, if set, sees every frame handed on (e.g. to stamp it as a NIC would).
  Mover(rte_ring* in, rte_ring* out, rte_mempool* pool, Impairments imp,
        std::function<void(rte_mbuf*)> on_forward = nullptr)
      : in_(in), out_(out), pool_(pool), imp_(std::move(imp)), on_forward_(std::move(on_forward)), thread_([this] {
          Run();
        }) {}
  ~Mover() {
    stop_.store(true);
    thread_.join();
  }
  uint64_t moved() const { return moved_.load(); }
  uint64_t dropped_every() const { return dropped_every_.load(); }  // Impairments::drop_every's drops
  uint64_t marked_every() const { return marked_every_.load(); }    // Impairments::ce_every's marks
  // The longest this DUT went without looking at its rings (its thread held
  // up by the host): a path that delays frames that long, whatever it was told.
  uint64_t max_gap_ns() const { return max_gap_tsc_.load() * 1'000'000'000 / rte_get_tsc_hz(); }
  // Each time it went more than kStopNs without looking (UNIX ns): a DUT
  // the host stopped fills the TX port's ring, whose refusals the product
  // rightly calls the tester's limit (HostHeldUpEveryAttempt takes these).
  static constexpr uint64_t kStopNs = 100'000;
  std::vector<DutStop> stops() const {
    std::lock_guard<std::mutex> lock(stops_mu_);
    return stops_;
  }

 private:
  // An untagged IPv4 frame: ECN bits to CE, the header checksum recomputed.
  static void MarkCe(uint8_t* f) {
    uint8_t* ip = f + 14;
    ip[1] |= 3;
    ip[10] = ip[11] = 0;
    uint32_t sum = 0;
    for (int i = 0; i < 20; i += 2) sum += uint32_t{ip[i]} << 8 | ip[i + 1];
    while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
    ip[10] = static_cast<uint8_t>(~sum >> 8);
    ip[11] = static_cast<uint8_t>(~sum);
  }
  void Put(rte_mbuf* m) {
    if (imp_.delay_ns != 0) {
      delayed_.emplace_back(rte_rdtsc() + imp_.delay_ns * rte_get_tsc_hz() / 1'000'000'000, m);
      return;
    }
    Forward(m);
  }
  void Forward(rte_mbuf* m) {
    if (on_forward_) on_forward_(m);
    while (rte_ring_enqueue(out_, m) != 0) {
    }
    moved_.fetch_add(1);
  }
  void NoteStop(uint64_t ticks) {
    timespec now{};
    clock_gettime(CLOCK_REALTIME, &now);
    const int64_t to = int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
    const auto ns = static_cast<int64_t>(ticks * 1'000'000'000 / rte_get_tsc_hz());
    std::lock_guard<std::mutex> lock(stops_mu_);
    stops_.push_back(DutStop{to - ns, to});
  }
  void ReleaseDue() {
    const uint64_t now = rte_rdtsc();
    while (!delayed_.empty() && delayed_.front().first <= now) {
      Forward(delayed_.front().second);
      delayed_.pop_front();
    }
  }
  void Run() {
    // On the main lcore's CPU, never on a worker's: the DUT must not take
    // the tester's core (the tester would then be the limit, and say so).
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(rte_lcore_to_cpu_id(static_cast<int>(rte_get_main_lcore())), &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    rte_mbuf* burst[32];
    std::map<uint32_t, rte_mbuf*> held;
    uint64_t last = rte_rdtsc();
    const uint64_t stop_tsc = kStopNs * rte_get_tsc_hz() / 1'000'000'000;
    while (!stop_.load()) {
      const uint64_t t = rte_rdtsc();
      if (t - last > max_gap_tsc_.load(std::memory_order_relaxed)) max_gap_tsc_.store(t - last, std::memory_order_relaxed);
      if (t - last > stop_tsc) [[unlikely]] NoteStop(t - last);
      last = t;
      ReleaseDue();
      const unsigned n = rte_ring_dequeue_burst(in_, reinterpret_cast<void**>(burst), 32, nullptr);
      for (unsigned i = 0; i < n; ++i) {
        rte_mbuf* m = burst[i];
        const uint8_t* d = rte_pktmbuf_mtod(m, const uint8_t*);
        const int off = proto::FindSignatureOffset(d, m->data_len);
        const uint32_t seq = off >= 0 ? proto::Load32(d + off + 6) : UINT32_MAX;
        const uint32_t flow = off >= 0 ? proto::Load24(d + off + 3) : UINT32_MAX;
        if (off >= 0 && imp_.drop_first.count(seq) && (!imp_.drop_first_flow || *imp_.drop_first_flow == flow) &&
            dropped_first_.insert(uint64_t{flow} << 32 | seq).second) {
          rte_pktmbuf_free(m);
          continue;
        }
        if (imp_.drop_every != 0 && off >= 0 && ++signed_seen_ % imp_.drop_every == 0) {
          dropped_every_.fetch_add(1);
          rte_pktmbuf_free(m);
          continue;
        }
        if (imp_.drop.count(seq) || (imp_.police && off >= 0 && imp_.police(proto::Load48(d + off + 10)))) {
          rte_pktmbuf_free(m);
          continue;
        }
        if (imp_.foreign.count(seq)) {
          rte_mbuf* copy = rte_pktmbuf_copy(m, imp_.foreign_pool, 0, UINT32_MAX);
          rte_pktmbuf_free(m);
          m = copy;
        }
        if (imp_.corrupt.count(seq)) rte_pktmbuf_mtod(m, uint8_t*)[m->data_len - 1] ^= 0x5A;
        if (imp_.ce.count(seq)) MarkCe(rte_pktmbuf_mtod(m, uint8_t*));
        if (imp_.ce_every != 0 && off >= 0 && ++signed_passed_ % imp_.ce_every == 0) {
          MarkCe(rte_pktmbuf_mtod(m, uint8_t*));
          marked_every_.fetch_add(1);
        }
        if (imp_.hold_until.count(seq)) {
          held[seq] = m;
          continue;
        }
        if (imp_.dup.count(seq)) Put(rte_pktmbuf_copy(m, pool_, 0, UINT32_MAX));
        if (imp_.dup_shared.count(seq)) {
          rte_mbuf_refcnt_update(m, 1);
          Put(m);
        }
        if (imp_.dup_clone.count(seq)) Put(rte_pktmbuf_clone(m, pool_));
        std::vector<rte_mbuf*> forged;
        if (imp_.inject) forged = imp_.inject(m, pool_);  // before m goes on (and may be freed)
        Put(m);
        for (rte_mbuf* x : forged) {
          if (x != nullptr) Put(x);
        }
        for (auto it = held.begin(); it != held.end();) {
          if (imp_.hold_until[it->first] == seq) {
            Put(it->second);
            it = held.erase(it);
          } else {
            ++it;
          }
        }
      }
    }
    for (auto& [s, m] : held) rte_pktmbuf_free(m);
    for (auto& [t, m] : delayed_) rte_pktmbuf_free(m);
  }

  rte_ring* in_;
  rte_ring* out_;
  rte_mempool* pool_;
  Impairments imp_;
  std::set<uint64_t> dropped_first_;  // (flow id << 32 | seq) dropped once already
  std::deque<std::pair<uint64_t, rte_mbuf*>> delayed_;  // (TSC due, frame), Impairments::delay_ns
  std::function<void(rte_mbuf*)> on_forward_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> moved_{0};
  std::atomic<uint64_t> dropped_every_{0}, marked_every_{0};
  uint64_t signed_seen_ = 0, signed_passed_ = 0;  // (the mover's thread)
  std::atomic<uint64_t> max_gap_tsc_{0};
  mutable std::mutex stops_mu_;
  std::vector<DutStop> stops_;
  std::thread thread_;
};

// An mbuf from `pool` holding `bytes`, or null when the pool is empty.
inline rte_mbuf* FrameMbuf(rte_mempool* pool, const std::vector<uint8_t>& bytes) {
  rte_mbuf* m = rte_pktmbuf_alloc(pool);
  if (m == nullptr) return nullptr;
  char* p = rte_pktmbuf_append(m, static_cast<uint16_t>(bytes.size()));
  if (p == nullptr) {
    rte_pktmbuf_free(m);
    return nullptr;
  }
  std::copy(bytes.begin(), bytes.end(), reinterpret_cast<uint8_t*>(p));
  return m;
}

// Two ring ports with a gap between them for a Mover: the TX port sends
// into ring `in`, the RX port receives from ring `out` (each also has an
// unused direction on a shared sink ring). Names are unique per instance.
class RingPath {
 public:
  static constexpr unsigned kGapRing = 16384;  // 5.5 ms at 3 Mpps
  // `rx_options` / `tx_options` supply each port's timestamp modes and drivers.
  explicit RingPath(const std::string& prefix, const port::PortOptions& rx_options = {},
                    const port::PortOptions& tx_options = {}) {
    static int id = 0;
    const std::string tag = prefix + std::to_string(id++);
    // The gap holds kGapRing frames each way: the Mover runs on the main
    // lcore's CPU, where the host's housekeeping (kernel threads moved there
    // by tools/isolate_cpus.sh) can hold it for milliseconds; 4096 frames
    // (1.4 ms at the searches' 3 Mpps) filled then, and TX, refused by the
    // ring, called the trial tester-limited (Throughput.BinarySearch... failed
    // 2 runs in 3 on the Zen 5 host of 2026-12-02, before and after that day's
    // TX changes). The TX pool holds both rings' worth.
    in_ = rte_ring_create((tag + "_in").c_str(), kGapRing, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
    out_ = rte_ring_create((tag + "_out").c_str(), kGapRing, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
    sink_ = rte_ring_create((tag + "_sink").c_str(), 4096, SOCKET_ID_ANY, 0);
    if (!in_ || !out_ || !sink_) return;
    if (rte_eth_from_rings((tag + "_tx").c_str(), &sink_, 1, &in_, 1, SOCKET_ID_ANY) < 0) return;
    if (rte_eth_from_rings((tag + "_rx").c_str(), &out_, 1, &sink_, 1, SOCKET_ID_ANY) < 0) return;
    for (const std::string side : {"_tx", "_rx"}) {
      port::PortOptions o = side == "_rx" ? rx_options : tx_options;
      o.name = tag + side;
      o.dpdk_name = "net_ring_" + tag + side;
      o.lcores = 2;
      if (side == "_tx" && o.mbufs == 0) o.mbufs = 2 * kGapRing + port::MbufsNeeded(o) + 1;
      auto p = OpenStarted(o);
      if (!p.ok()) {
        error_ = p.status().ToString();
        return;
      }
      ports_.push_back(std::move(*p));
    }
  }
  // A port opened and started.
  static absl::StatusOr<std::unique_ptr<port::Port>> OpenStarted(const port::PortOptions& o) {
    auto p = port::Port::Open(o);
    if (!p.ok()) return p.status();
    if (auto st = (*p)->Start(); !st.ok()) return st;
    return std::move(*p);
  }
  ~RingPath() {
    ports_.clear();
    rte_ring_free(in_);
    rte_ring_free(out_);
    rte_ring_free(sink_);
  }
  bool ok() const { return ports_.size() == 2; }
  const std::string& error() const { return error_; }
  // One trial with a Mover applying `imp` (and `on_forward`) in the gap.
  // `interrupt`: the trial's interrupt flag (TrialOptions::interrupt), or null.
  absl::StatusOr<TrialResult> Run(const std::vector<stream::CompiledStream>& streams, Impairments imp,
                                  std::function<void(rte_mbuf*)> on_forward = nullptr,
                                  const std::atomic<bool>* interrupt = nullptr) {
    // A path that forges nothing: every frame a port received is one a
    // stream sent (resends, duplicates, corrupt payloads included), so no
    // test's genuine traffic is ever taken for forged (issue 26's checks).
    const bool forges = static_cast<bool>(imp.inject) || sink_used_;
    Mover mover(in_, out_, tx()->pool(), std::move(imp), std::move(on_forward));
    TrialOptions opt;
    opt.drain_ns = 100'000'000;
    opt.interrupt = interrupt;
    opt.pfc = pfc_;
    auto res = RunTrial(TestEal(), {tx(), rx()}, streams, opt);
    mover_max_gap_ns_ = mover.max_gap_ns();
    dropped_every_ = mover.dropped_every();
    marked_every_ = mover.marked_every();
    if (res.ok() && !forges) {
      for (const fg::engine::PortResult& p : res->ports) {
        EXPECT_EQ(p.rx_invalid_packets, 0u) << "port " << p.name;
      }
    }
    return res;
  }
  // The last Run's Mover::max_gap_ns, dropped_every and marked_every.
  uint64_t mover_max_gap_ns() const { return mover_max_gap_ns_; }
  uint64_t dropped_every() const { return dropped_every_; }
  uint64_t marked_every() const { return marked_every_; }
  // The plan `yaml` (ports a and b), compiled for two 10 G ports, in one trial.
  absl::StatusOr<TrialResult> RunPlan(const std::string& yaml, Impairments imp,
                                      const std::atomic<bool>* interrupt = nullptr) {
    auto plan = config::ParsePlan("ring.yaml", yaml);
    if (!plan.ok()) return plan.status();
    auto streams = stream::Compile(*plan, {10e9, 10e9});
    if (!streams.ok()) return streams.status();
    pfc_.clear();
    for (const config::PortSpec& p : plan->ports) pfc_.push_back(p.pfc);  // what else the plan's ports say is not used
    return Run(*streams, std::move(imp), nullptr, interrupt);
  }
  port::Port* tx() { return ports_[0].get(); }
  port::Port* rx() { return ports_[1].get(); }
  rte_ring* in() { return in_; }
  rte_ring* out() { return out_; }
  // The return path (the RX port's TX to the TX port's RX), multi-producer:
  // a test may put frames of its own there while a trial runs.
  rte_ring* sink() {
    sink_used_ = true;  // a test writing frames of its own: they may be forged
    return sink_;
  }

 private:
  rte_ring *in_ = nullptr, *out_ = nullptr, *sink_ = nullptr;
  std::vector<std::unique_ptr<port::Port>> ports_;
  std::string error_;
  uint64_t mover_max_gap_ns_ = 0, dropped_every_ = 0, marked_every_ = 0;
  bool sink_used_ = false;
  std::vector<config::PortPfcSpec> pfc_;  // the last RunPlan's ports' (ports[].pfc)
};

// One ring port whose frames come back to it through a Mover: the built-in
// loopback with an impairing gap (every QP of a collective, whatever ports
// its ranks would have, crosses it).
class LoopPath {
 public:
  explicit LoopPath(const std::string& prefix) {
    static int id = 0;
    const std::string tag = prefix + std::to_string(id++);
    in_ = rte_ring_create((tag + "_in").c_str(), RingPath::kGapRing, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
    out_ = rte_ring_create((tag + "_out").c_str(), RingPath::kGapRing, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
    if (!in_ || !out_) return;
    if (rte_eth_from_rings((tag + "_lp").c_str(), &out_, 1, &in_, 1, SOCKET_ID_ANY) < 0) return;
    port::PortOptions o;
    o.name = tag;
    o.dpdk_name = "net_ring_" + tag + "_lp";
    o.lcores = 2;
    o.mbufs = 2 * RingPath::kGapRing + port::MbufsNeeded(o) + 1;
    auto p = RingPath::OpenStarted(o);
    if (!p.ok()) {
      error_ = p.status().ToString();
      return;
    }
    port_ = std::move(*p);
  }
  ~LoopPath() {
    port_.reset();
    rte_ring_free(in_);
    rte_ring_free(out_);
  }
  bool ok() const { return port_ != nullptr; }
  const std::string& error() const { return error_; }
  absl::StatusOr<TrialResult> Run(const std::vector<stream::CompiledStream>& streams, Impairments imp,
                                  int64_t max_duration_ns) {
    Mover mover(in_, out_, port_->pool(), std::move(imp));
    TrialOptions opt;
    opt.drain_ns = 100'000'000;
    opt.max_duration_ns = max_duration_ns;
    auto res = RunTrial(TestEal(), {port_.get()}, streams, opt);
    dropped_every_ = mover.dropped_every();
    return res;
  }
  uint64_t dropped_every() const { return dropped_every_; }

 private:
  rte_ring *in_ = nullptr, *out_ = nullptr;
  std::unique_ptr<port::Port> port_;
  std::string error_;
  uint64_t dropped_every_ = 0;
};

}  // namespace fg::testing
