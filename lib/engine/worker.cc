#include "engine/worker.h"

#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>
#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_pause.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstring>

#include "engine/cell_work.h"
#include "engine/engine.h"
#include "port/kernel_if.h"

namespace fg::engine {

namespace {

// The answers queued in `q` (the responder's or the hosts'), in order, in
// bursts of one port's consecutive answers, each port's on `ports[port]`;
// what the PMD refuses stays queued for the next poll.
unsigned SendAnswers(endpoint::AnswerQueue& q, std::vector<AnswerPort>& ports, int tag_off) {
  unsigned total = 0;
  while (!q.empty()) {
    const uint16_t port = q.At(0).port;
    AnswerPort& ap = ports[port];
    unsigned n = 1;
    while (n < q.size() && n < 32 && q.At(n).port == port) ++n;
    rte_mbuf* m[32];
    if (!ap.has_queue || rte_pktmbuf_alloc_bulk(ap.pool, m, n) != 0) {
      ap.alloc_failures.Add(1);
      break;
    }
    uint64_t bytes = 0;
    for (unsigned i = 0; i < n; ++i) {
      const endpoint::Answer& a = q.At(i);
      std::memcpy(rte_pktmbuf_mtod(m[i], uint8_t*), a.bytes, a.len);
      m[i]->data_len = a.len;
      m[i]->pkt_len = a.len;
      // Not a TX template any more (TX would take it for one otherwise).
      if (tag_off >= 0) *RTE_MBUF_DYNFIELD(m[i], tag_off, uint64_t*) = 0;
      bytes += a.len + 4u;
    }
    const uint16_t sent = rte_eth_tx_burst(ap.port_id, ap.queue, m, static_cast<uint16_t>(n));
    if (sent < n) {
      for (unsigned i = sent; i < n; ++i) bytes -= q.At(i).len + 4u;
      rte_pktmbuf_free_bulk(m + sent, n - sent);
    }
    ap.packets.Add(sent);
    ap.bytes.Add(bytes);
    q.Pop(sent);
    total += sent;
    if (sent < n) break;
  }
  return total;
}

}  // namespace

// A worker's loop: its TX tasks, its RX queues, then what other lcores
// handed it for the flows it owns, then control requests. The loop's TSC
// reads (its end, between TX and RX) give VPP-style cycles per frame for TX
// and RX apart and serve as TX's and RX's poll times too.
void PlaceOnCpus(std::vector<LcoreWork>& work, bool kernel_io) {
  const std::vector<int64_t> steal = port::HostStealNs();
  for (LcoreWork& w : work) {
    w.cpu = rte_lcore_to_cpu_id(static_cast<int>(w.lcore));
    const size_t c = static_cast<size_t>(w.cpu);
    w.steal_start_ns = w.cpu >= 0 && c < steal.size() ? steal[c] : -1;
  }
  const int main_cpu = rte_lcore_to_cpu_id(static_cast<int>(rte_get_main_lcore()));
  for (LcoreWork& w : work) {
    const auto same = [&](const LcoreWork& o) { return o.cpu == w.cpu; };
    const bool shared = w.cpu == main_cpu || std::count_if(work.begin(), work.end(), same) > 1;
    w.nice = shared || kernel_io ? 0 : -20;
  }
}

LcoreStats ReadLcoreStats(const LcoreWork& w, const std::vector<int64_t>& steal) {
  LcoreStats l;
  l.lcore = w.lcore;
  l.polls = w.polls.Read();
  l.busy_polls = w.busy_polls.Read();
  l.tx_packets = w.tx_packets.Read();
  l.rx_packets = w.rx_packets.Read();
  l.tx_cycles = w.tx_cycles.Read();
  l.rx_cycles = w.rx_cycles.Read();
  l.handoff_in = w.handoff_in.Read();
  l.handoff_max_polls = w.handoff_max_polls.Read();
  l.handoff_max_ns = w.handoff_max_ns.Read();
  l.holdups = w.holdups.Read();
  l.holdup_ns = w.clock.ToNs(w.holdup_ticks.Read());
  l.holdup_max_ns = w.clock.ToNs(w.holdup_max_ticks.Read());
  l.short_holdups = w.short_holdups.Read();
  l.short_holdup_ns = w.clock.ToNs(w.short_holdup_ticks.Read());
  for (const rx::RxTask* t : w.rx) {
    l.handoff_out += t->handed_off();
    l.handoff_waits += t->handoff_waits();
  }
  l.flows = w.table != nullptr ? w.table->size() : 0;
  if (const int tid = w.tid.load(std::memory_order_acquire); tid > 0) {
    const int64_t start = w.run_delay_start_ns.load(std::memory_order_relaxed);
    const int64_t now = port::ThreadRunDelayNs(tid);
    if (start >= 0 && now >= start) l.guest_wait_ns = now - start;
  }
  l.cpu = w.cpu;
  const size_t c = static_cast<size_t>(w.cpu);
  if (w.cpu >= 0 && c < steal.size() && w.steal_start_ns >= 0) l.host_steal_ns = steal[c] - w.steal_start_ns;
  return l;
}

// RX bursts a worker takes from one queue in a loop while they come full.
constexpr unsigned kRxBurstsPerLoop = 4;

namespace {

// A turn more than 0.1 ms after the one before: under 1 ms a short
// hold-up, else a hold-up (logged).
[[gnu::noinline, gnu::cold]] void NoteGap(LcoreWork& w, uint64_t from_tsc, uint64_t to_tsc, uint64_t holdup_ticks) {
  const uint64_t ticks = to_tsc - from_tsc;
  if (ticks <= holdup_ticks) {
    w.short_holdups.Add(1);
    w.short_holdup_ticks.Add(ticks);
    return;
  }
  if (w.holdup_logged < LcoreWork::kHoldupLog) w.holdup_log[w.holdup_logged] = {from_tsc, to_tsc};
  ++w.holdup_logged;
  w.holdups.Add(1);
  w.holdup_ticks.Add(ticks);
  if (ticks > w.holdup_max_ticks.Read()) w.holdup_max_ticks.Set(ticks);
}

}  // namespace

int LcoreMain(void* arg) {
  LcoreWork& w = *static_cast<LcoreWork*>(arg);
  {
    const int tid = rte_sys_gettid();
    // The most CPU weight the kernel gives a normal task (nice -20, when
    // permitted: root or CAP_SYS_NICE), so a task that wakes on the lcore's
    // CPU gets a sliver of it rather than a whole slice of a few ms, the
    // hold-up that makes a trial tester-limited (guest_wait_ns says how much
    // is left). Not a real-time class: the CPU's own kernel threads still run.
    if (w.nice != 0) setpriority(PRIO_PROCESS, static_cast<id_t>(tid), w.nice);
    w.run_delay_start_ns.store(port::ThreadRunDelayNs(tid), std::memory_order_relaxed);
    w.tid.store(tid, std::memory_order_release);
  }
  rx::Handoff recs[64];
  uint64_t max_lag = 0, max_ns = 0;
  const uint64_t holdup_ticks = w.clock.hz() / 1000;  // 1 ms
  const uint64_t gap_ticks = w.clock.hz() / 10000;    // 0.1 ms: a busy turn takes a few us
  uint64_t last_t0 = ReadTsc();
  // The TSC is read three times a turn: at its end (t0 of the next turn, the
  // first TX queue's `now`), between TX and RX (t1, RX's poll time), and by
  // RX after each burst that brought frames (their RX time). A read costs
  // ~40 cycles here (perf: 6.6 % of a collective's lcore time on LcoreMain's
  // two reads and 4.2 % on RX's own, when TX, RX and the loop each read
  // their own: ~6 a turn). Three fewer a turn: loopback 1.04-1.07x, closed
  // loop 1.01-1.06x (tools/bench_vs_testpmd.sh ab, with the changes of
  // docs/benchmarks.md "Issue 28: the cell's stamp by shape, fewer TSC reads").
  uint64_t t0 = last_t0;
  for (;;) {
    const int phase = w.phase.load(std::memory_order_acquire);
    if (phase == kStop) break;
    const uint64_t poll = w.polls.Read() + 1;
    w.polls.Set(poll);
    // A turn more than 0.1 ms after the last: the lcore was away, for over
    // 1 ms a hold-up (one compare a poll, not a packet; per-frame code
    // untouched: TX 221.9, RX 235.9 instructions a frame,
    // tools/count_instructions.sh; docs/benchmarks.md "The lcore's hold-ups
    // counted per poll"; the 0.1 ms bound, same compare: docs/benchmarks.md
    // "Short hold-ups").
    if (t0 - last_t0 > gap_ticks) [[unlikely]] NoteGap(w, last_t0, t0, holdup_ticks);
    last_t0 = t0;
    unsigned tx = 0;
    // The first TX queue at t0; any other at its own time (a frame's TX
    // time is its burst's `now`: the queues before it took theirs).
    if (phase == kRun) {
      for (size_t i = 0; i < w.tx.size(); ++i) tx += i == 0 ? w.tx[i]->PollAt(t0) : w.tx[i]->Poll();
    } else {
      // The drain: RC requesters still recover.
      for (size_t i = 0; i < w.tx.size(); ++i) tx += i == 0 ? w.tx[i]->PollRecoveryAt(t0) : w.tx[i]->PollRecovery();
    }
    const uint64_t t1 = ReadTsc();
    unsigned rx = 0;
    for (rx::RxTask* t : w.rx) {
      // A full burst means more may be waiting: take up to kRxBurstsPerLoop
      // while they come full, so RX outruns what one loop can put on the
      // wire (a TX burst plus the responder's answers). Taking one burst a
      // loop, a closed loop on the built-in loopback (1,024 descriptors)
      // gained two ACKs a loop until its ring stood full: ~2.3 MB of mbufs
      // cycling through a 1 MiB L2, every frame's header a cache miss (RX 154
      // TSC cycles a packet against 74 open loop, perf annotate). With it:
      // RX 110-127 cycles a packet closed loop, closed loop 0.72-0.75x open
      // loop; the extra poll costs the open loop nothing measurable
      // (docs/benchmarks.md "Issue 14: the closed loop's ring stood full").
      unsigned got, k = 0;
      do {
        got = t->PollAt(t1);
        rx += got;
      } while (got == rx::kRxBurst && ++k < kRxBurstsPerLoop);
    }
    uint64_t handed = 0;
    for (rx::HandoffRing* ring : w.in) {
      // What the ring holds now (what comes in meanwhile waits for the next
      // poll, so a busy producer never starves this lcore's own work).
      size_t left = ring->Size();
      for (size_t k; left != 0 && (k = ring->Pop(recs, std::min<size_t>(64, left))) != 0; left -= k) {
        // The owner takes all a ring holds when it gets there, so a record is
        // observed in the first poll that sees it; these say how long it was
        // on its way (in this lcore's polls since it entered the ring, and in
        // ns since the other lcore received the frame).
        const uint64_t now_ns = w.clock.ToNs(ReadTsc());
        for (size_t i = 0; i < k; ++i) {
          const uint64_t lag = static_cast<uint16_t>(static_cast<uint16_t>(poll) - recs[i].owner_poll);
          if (lag > max_lag) max_lag = lag;
          if (now_ns > recs[i].rx_ns && now_ns - recs[i].rx_ns > max_ns) max_ns = now_ns - recs[i].rx_ns;
        }
        w.table->Deliver(recs, k);
        handed += k;
      }
    }
    if (w.table != nullptr) w.table->ServeRequests();
    // Collective cells: arrivals from other workers, the iterations' starts
    // and ends (one test a loop when the trial has none).
    unsigned cell_events = 0;
    if (!w.cells.empty()) [[unlikely]] {
      for (CellWork* c : w.cells) cell_events += c->Poll();
    }
    // The responder's answers (ACK, NAK, CNP), in the drain too: RX work
    // (its cycles count with RX's; AnswerPort counts the frames).
    unsigned answered =
        w.answers != nullptr && !w.answers->empty() ? SendAnswers(*w.answers, w.answer_ports, w.tag_off) : 0;
    // The hosts' answers (ARP, ND, echo): one more test per poll, within
    // the noise of an A/B in one sitting (closed loop 1.011x / 0.982x,
    // loopback 1.004x: docs/benchmarks.md, issue 27).
    if (w.host_answers != nullptr && !w.host_answers->empty()) [[unlikely]] {
      answered += SendAnswers(*w.host_answers, w.host_answer_ports, w.tag_off);
    }
    const uint64_t t2 = ReadTsc();
    if (tx != 0) {
      w.tx_packets.Add(tx);
      w.tx_cycles.Add(t1 - t0);
    }
    if (rx != 0 || handed != 0 || answered != 0) {
      w.rx_packets.Add(rx);
      w.rx_cycles.Add(t2 - t1);
      if (handed != 0) {
        w.handoff_in.Add(handed);
        if (max_lag > w.handoff_max_polls.Read()) w.handoff_max_polls.Set(max_lag);
        if (max_ns > w.handoff_max_ns.Read()) w.handoff_max_ns.Set(max_ns);
      }
    }
    if (tx != 0 || rx != 0 || handed != 0 || answered != 0 || cell_events != 0) {
      w.busy_polls.Add(1);
    } else {
      rte_pause();
    }
    t0 = t2;
  }
  for (tx::TxTask* t : w.tx) t->Finish();
  for (rx::RxTask* t : w.rx) t->Finish();
  return 0;
}

}  // namespace fg::engine
