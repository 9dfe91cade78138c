#include "tx/tx.h"

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <mutex>
#include <thread>

#include "base/counter.h"
#include "base/spsc_ring.h"
#include "base/units.h"
#include "tx/flow_pacer.h"
#include "tx/tx_state.h"

namespace fg::tx {

namespace {

// Longest interval the pacer keeps exact: n * interval for a burst of 32
// stays below 2^62 (2^45 ticks, over 3 h at 3 GHz; the plan refuses rates
// below 0.001 pps, so this only guards against overflow).
constexpr double kMaxIntervalFp = static_cast<double>(uint64_t{1} << 57);

uint64_t IntervalFp(double pps, uint64_t hz) {
  // Unpaced ("max"): an interval of 0 makes every poll due a full burst.
  if (!std::isfinite(pps)) return 0;
  const double fp = static_cast<double>(hz) * (1 << kFpShift) / pps + 0.5;
  return fp >= kMaxIntervalFp ? static_cast<uint64_t>(kMaxIntervalFp)
                              : std::max<uint64_t>(1, static_cast<uint64_t>(fp));
}
// Slots the pacer catches up back to back after a short hold-up: 1 ms worth,
// at least one burst; beyond that it skips them (pacing_stall). Catching up
// more would send a micro-burst the set rate never called for.
uint64_t MaxBacklog(double pps) {
  return std::max<uint64_t>(kTxBurst, std::isfinite(pps) ? static_cast<uint64_t>(pps / 1000) : 0);
}

}  // namespace

TxCounters& TxCounters::operator+=(const TxCounters& o) {
  if (o.packets != 0) {
    first_ns = packets == 0 ? o.first_ns : std::min(first_ns, o.first_ns);
    last_ns = std::max(last_ns, o.last_ns);
  }
  EachCount<TxCounts>(*this, o, [](uint64_t& x, uint64_t y) { x += y; });
  stall_max_ns = std::max(stall_max_ns, o.stall_max_ns);
  pfc_paused_ns = std::max(pfc_paused_ns, o.pfc_paused_ns);
  paced = paced || o.paced;
  return *this;
}

std::vector<Shard> TxTask::Whole(const std::vector<const stream::CompiledStream*>& streams) {
  std::vector<Shard> out;
  for (const stream::CompiledStream* s : streams) out.push_back(Shard{s, {}, s->pps, s->count});
  return out;
}

TxTask::TxTask(uint16_t port_id, uint16_t queue, rte_mempool* pool, const std::vector<Shard>& shards,
               TscClock clock, int template_tag_offset, const port::TxSchedule& schedule)
    : port_id_(port_id),
      queue_(queue),
      pool_(pool),
      clock_(clock),
      tag_off_(template_tag_offset),
      tag_salt_((ReadTsc() << 1) | 1),
      late_ticks_(clock.FromNs(1'000'000)),
      sched_(schedule) {
  for (const Shard& sh : shards) {
    const stream::CompiledStream* s = sh.s;
    auto st = std::make_unique<State>();
    st->s = s;
    st->interval_fp = IntervalFp(sh.pps, clock.hz());
    st->limit = sh.count;
    st->burst_frames = s->burst_frames;
    st->burst_period = clock.FromNs(static_cast<uint64_t>(s->burst_period_ns));
    st->max_backlog = MaxBacklog(sh.pps);
    st->ctl_pps_bits.store(std::bit_cast<uint64_t>(sh.pps), std::memory_order_relaxed);
    if (sh.flows.empty()) {
      st->flow_index.resize(s->flows);
      for (uint32_t f = 0; f < s->flows; ++f) st->flow_index[f] = f;
    } else {
      st->flow_index = sh.flows;
    }
    const size_t nf = st->flow_index.size();
    st->cursors.assign(nf, s->program.Start());
    st->vars.resize(nf);
    for (size_t f = 0; f < nf; ++f) st->vars[f] = s->program.Flow(s->flow_id, st->flow_index[f]);
    st->flow_sent.assign(nf, State::FlowSent{});
    if (!s->flow_weight.empty() && std::isfinite(sh.pps)) {
      // This shard's rate shared in proportion to its flows' plan rates.
      std::vector<double> rates(nf);
      double sum = 0;
      for (size_t f = 0; f < nf; ++f) sum += s->flow_weight[st->flow_index[f]];
      for (size_t f = 0; f < nf; ++f) rates[f] = s->flow_weight[st->flow_index[f]] * (sum > 0 ? sh.pps / sum : 0);
      st->rates.pacer = std::make_unique<FlowPacer>(rates, clock.hz());
      st->rates.pps = st->rates.ctl_pps_applied = sh.pps;
      st->rates.pps_bits.store(std::bit_cast<uint64_t>(sh.pps), std::memory_order_relaxed);
      st->rates.cmds = std::make_unique<SpscRing<State::FlowRates::Cmd>>(1024);
      st->rates.view = rates;
      if (s->dcqcn) {
        // Each QP starts at its own rate, its maximum (the line it sends at).
        st->bits_per_frame = 8 * s->frame_size;
        std::vector<double> max_bps(nf);
        for (size_t f = 0; f < nf; ++f) max_bps[f] = rates[f] * st->bits_per_frame;
        st->rp = endpoint::ReactionPoints(*s->dcqcn, max_bps, s->start_ns, s->duration_ns);
        st->rp_tick = clock.FromNs(static_cast<uint64_t>(st->rp.tick_ns()));
      }
    }
    if (s->read_response()) {
      // Sent as asked, at the READ's data rate (Respond); nothing ends it but the run (Done ignores it).
      st->reads.ring.resize(kReadJobs);
      st->reads.next.assign(nf, 0);
      st->exhausted = true;
      st->paced.store(true, std::memory_order_relaxed);  // what was asked and not sent is the tester's shortfall
      st->done.store(true, std::memory_order_relaxed);
    }
    if (s->cell != nullptr) {
      // Sent as the ranks' barriers release it (SendCell), unpaced; done when the cell is.
      State::CellJobs& c = st->cell;
      c.cs = s->cell.get();
      st->is_cell = true;
      c.qp.resize(nf);
      for (size_t f = 0; f < nf; ++f) c.qp[f] = s->cell->frames.qp_at(s->cell_first + st->flow_index[f]);
      c.released.assign(nf, 0);
      c.ready.assign(std::max<size_t>(nf, 1), 0);
      c.queued.assign(nf, 0);
      c.place.assign(nf, {});
      c.resent_by_iteration.assign(s->cell->play.iterations + 1, 0);
      if (s->dcqcn) {
        // Each QP a reaction point starting at its port's line rate, its
        // maximum: unpaced there, paced at its rate once a CNP cut it (SendCell).
        c.max_bps = s->cell_qp_max_bps > 0 ? s->cell_qp_max_bps : 100e9;
        c.next_tsc.assign(nf, 0);
        c.held.reserve(nf);  // never more than the shard's QPs: no allocation on the lcore
        st->bits_per_frame = 8 * (s->frame_size + kEthL1Overhead);  // the rate is L1's, as the line it starts at
        st->rp = endpoint::ReactionPoints(*s->dcqcn, std::vector<double>(nf, c.max_bps), s->start_ns, s->duration_ns);
        st->rp_tick = clock.FromNs(static_cast<uint64_t>(st->rp.tick_ns()));
      }
    }
    if (s->answers != nullptr && s->answers->strict) {
      const uint64_t timeout = clock.FromNs(static_cast<uint64_t>(std::max<int64_t>(s->retransmit_timeout_ns, 1)));
      const uint64_t tick = std::max<uint64_t>(timeout / 4, clock.FromNs(100'000));
      st->gbn = endpoint::GoBackN(s->program, st->cursors, timeout, tick);
      gbn_ = true;
      // Each QP its share of the count: a QP held up by resends must not
      // leave its last packets to the others (GenerateShares).
      if (st->limit != 0 && nf > 1 && st->rates.pacer == nullptr) st->gbn.ShareCount(st->limit);
      // A cell's QPs resend what a go-back owes before anything new, all along (Owing).
      if (st->cell.enabled()) st->gbn.Ended();
    }
    streams_.push_back(std::move(st));
  }
}

TxTask::~TxTask() = default;

void TxTask::Arm(uint64_t start_tsc) {
  for (auto& st : streams_) {
    st->start_tsc = start_tsc + clock_.FromNs(static_cast<uint64_t>(st->s->start_ns));
    st->next_fp = 0;
    st->next_burst = st->start_tsc;
    st->burst_left = 0;
    st->end_tsc = start_tsc + clock_.FromNs(static_cast<uint64_t>(st->s->duration_ns));
    st->rp_next = st->start_tsc + st->rp_tick;
    st->run_start_tsc = start_tsc;
    st->gbn.Arm(st->start_tsc, st->start_tsc - held_up_ticks_);
  }
}

size_t TxTask::num_streams() const { return streams_.size(); }

// Frames the open segment called for. At the stream's end (`final`, at TSC
// time t): paced, the slots due before t (packet k is due k intervals after
// the segment's start, skipped ones included); a burst schedule, every burst
// that started before t. At a rate change or pause: the slots the pacer has
// passed (generated or skipped), so the poll in progress owes nothing, and
// released frames of a burst that a pause abandons are not owed either.
// Unpaced: what was made.
uint64_t TxTask::SegmentDue(const State& st, uint64_t t, bool final) {
  const uint64_t made = st.generated - st.seg_generated0;
  if (st.burst_frames != 0) {
    if (!final) return made;
    uint64_t unreleased = 0;
    if (st.burst_period != 0 && st.next_burst < t) unreleased = (t - st.next_burst - 1) / st.burst_period + 1;
    return made + st.burst_left + unreleased * st.burst_frames;
  }
  if (st.interval_fp == 0) return made;
  if (!final) return st.next_fp / st.interval_fp;
  if (t <= st.start_tsc) return 0;
  const uint64_t t_fp = (t - st.start_tsc) << kFpShift;
  return (t_fp + st.interval_fp - 1) / st.interval_fp;
}

void TxTask::CloseSegment(State& st, uint64_t t, bool final) {
  if (!st.segment_open) return;
  st.due_closed += SegmentDue(st, t, final);
  st.segment_open = false;
}

void TxTask::Exhaust(State& st, uint64_t t) {
  st.exhausted = true;
  // RC requesters owe what a go-back left behind the highest packet sent:
  // resent after the end (Recover), nothing new.
  if (st.gbn.enabled()) st.gbn.Ended();
  if (st.rates.pacer != nullptr) {
    st.due_closed = st.rates.pacer->Due(t > st.start_tsc ? (t - st.start_tsc) << kFpShift : 0);
    st.segment_open = false;
  }
  CloseSegment(st, t, true);
  uint64_t due = std::max(st.due_closed, st.generated);
  if (st.limit != 0) due = std::min(due, st.limit);
  st.due.Set(due);
  st.paced.store(st.burst_frames != 0 || st.interval_fp != 0 || st.rates.pacer != nullptr, std::memory_order_relaxed);
}

void TxTask::Apply(State& st, uint64_t gen, uint64_t now) {
  st.seen_gen = gen;
  if (st.exhausted) return;  // done sending (frames may still be pending): nothing changes what it owed
  const int mode = st.ctl_mode.load(std::memory_order_relaxed);
  if (mode == State::kStopped) {
    Exhaust(st, std::min(st.ctl_stop_tsc.load(std::memory_order_relaxed), st.end_tsc));
    return;
  }
  st.ctl_paused = mode == State::kPaused;
  const double pps = std::bit_cast<double>(st.ctl_pps_bits.load(std::memory_order_relaxed));
  if (st.rates.pacer != nullptr) {
    // Per-flow rates: the stream's rate scales every flow; pauses pause them all.
    const uint64_t now_fp = now > st.start_tsc ? (now - st.start_tsc) << kFpShift : 0;
    if (pps != st.rates.ctl_pps_applied) {
      st.rates.pacer->Scale(pps / st.rates.pps, now_fp);
      st.rates.pps = st.rates.ctl_pps_applied = pps;
      st.rates.pps_bits.store(std::bit_cast<uint64_t>(pps), std::memory_order_relaxed);
    }
  } else if (const uint64_t interval = IntervalFp(pps, clock_.hz()); interval != st.interval_fp) {
    // What the old rate called for ends here; pacing restarts now at the
    // new one (no burst to catch up on what the old rate did not send).
    CloseSegment(st, now, false);
    st.interval_fp = interval;
    st.max_backlog = MaxBacklog(pps);
    RestartPacing(st, now);
  }
  Hold(st, st.ctl_paused || st.pfc_paused, now);
}

void TxTask::RestartPacing(State& st, uint64_t now) {
  st.start_tsc = std::max(st.start_tsc, now);
  st.next_fp = 0;
  st.next_burst = st.start_tsc;
  st.burst_left = 0;
}

void TxTask::Hold(State& st, bool held, uint64_t now) {
  if (st.rates.pacer != nullptr) {
    const uint64_t now_fp = now > st.start_tsc ? (now - st.start_tsc) << kFpShift : 0;
    if (held) st.rates.pacer->Pause(now_fp);
    if (!held) st.rates.pacer->Resume(now_fp);
    st.paused = held;
    return;
  }
  if (held != st.paused) {
    // A pause sends nothing and owes nothing: what was due ends here; a
    // resume restarts the pacing now, with no burst to catch up.
    CloseSegment(st, now, false);
    if (!held) RestartPacing(st, now);
    st.paused = held;
  }
  if (!st.paused && !st.segment_open) {
    st.segment_open = true;
    st.seg_generated0 = st.generated;
  }
}

void TxTask::GatePfc(State& st, uint64_t now) {
  const uint64_t until = st.pfc_until->load(std::memory_order_relaxed);
  // (Past its end the stream ends, paused or not: a storm never holds the run.)
  const bool paused = until != 0 && now < st.end_tsc && !st.exhausted && clock_.ToNs(now) < until;
  if (paused == st.pfc_paused) return;
  st.pfc_paused = paused;
  if (paused) {
    st.pfc_since = now;
  } else {
    st.pfc_paused_ticks.Add(now - st.pfc_since);
  }
  if (!st.exhausted) Hold(st, st.ctl_paused || paused, now);
}

bool TxTask::Done() const {
  for (const auto& st : streams_) {
    if (!st->done.load(std::memory_order_acquire)) return false;
  }
  return true;
}

template <uint32_t kShape>
void TxTask::FillShaped(State& st, unsigned n, const stream::StampTime& ts, uint64_t keep_flags,
                        const FlowPacer::Run* runs, unsigned nruns) {
  const bool one_kind = st.s->program.packets_per_message() == 1;
  if (runs != nullptr) {
    one_kind ? Fill<kShape, true, true>(st, n, ts, keep_flags, runs, nruns)
             : Fill<kShape, true, false>(st, n, ts, keep_flags, runs, nruns);
  } else {
    one_kind ? Fill<kShape, false, true>(st, n, ts, keep_flags, runs, nruns)
             : Fill<kShape, false, false>(st, n, ts, keep_flags, runs, nruns);
  }
}

template <uint32_t kShape, bool kPaced, bool kOneKind>
void TxTask::Fill(State& st, unsigned n, const stream::StampTime& burst_ts, uint64_t keep_flags,
                  const FlowPacer::Run* runs, unsigned nruns) {
  const stream::Program& prog = st.s->program;
  const uint32_t nflows = static_cast<uint32_t>(st.cursors.size());
  // Locals no frame store can alias (see stream::StampConsts): the burst's
  // time and, for a one-kind program, everything Stamp reads of the kind,
  // loaded once per burst instead of once per frame.
  const stream::StampTime ts = burst_ts;
  const stream::StampConsts one_sc = kOneKind ? prog.Consts(prog.kinds()[0], ts) : stream::StampConsts{};
  // In locals: the frame stores below may alias any member (uint8_t*).
  const int tag_off = tag_off_;
  const uint64_t tag_salt = tag_salt_;
  const bool scheduled = keep_flags != ~uint64_t{0};
  stream::Cursor* const cursors = st.cursors.data();
  const State::FlowSent* const sent = st.flow_sent.data();
  const stream::FlowVars* const vars = st.vars.data();
  rte_mbuf** const pending = st.pending;
  uint32_t* const pending_len = st.pending_len;
  uint32_t* const pending_flow = st.pending_flow;
  uint32_t next_flow = st.next_flow;
  const bool many_flows = nflows > 64;
  // A one-kind program's kind, length and template tag, once per burst.
  const stream::PacketKind& k1 = prog.kinds()[0];
  const uint32_t len1 = static_cast<uint32_t>(k1.t.bytes.size());
  const uint64_t key1 = tag_salt ^ reinterpret_cast<uintptr_t>(&k1);
  // One frame of flow f into pending[i].
  auto frame = [&]<bool kScheduled>(unsigned i, uint32_t f) __attribute__((always_inline)) {
    rte_mbuf* m = pending[i];
    if (i + 2 < n) {
      char* ahead_data = rte_pktmbuf_mtod(pending[i + 2], char*);
      __builtin_prefetch(ahead_data, 1);
      __builtin_prefetch(ahead_data + 64, 1);
    }
    uint8_t* d = rte_pktmbuf_mtod_offset(m, uint8_t*, 0);
    const stream::PacketKind& k = kOneKind ? k1 : prog.KindAt(cursors[f]);
    const uint32_t len = kOneKind ? len1 : static_cast<uint32_t>(k.t.bytes.size());
    // Still holding this template (same task, same kind)? Stamp rewrites
    // every field that differs between packets: no reset, no copy.
    uint64_t* tag = tag_off >= 0 ? RTE_MBUF_DYNFIELD(m, tag_off, uint64_t*) : nullptr;
    const uint64_t key = kOneKind ? key1 : tag_salt ^ reinterpret_cast<uintptr_t>(&k);
    if (tag == nullptr || *tag != key) [[unlikely]] {
      rte_pktmbuf_reset(m);
      d = rte_pktmbuf_mtod(m, uint8_t*);
      stream::CopyTemplate(d, k.copy_src.data(), len);
      m->data_len = static_cast<uint16_t>(len);
      m->pkt_len = len;
      if (tag != nullptr) *tag = key;
    }
    if constexpr (kScheduled) m->ol_flags &= keep_flags;  // only the burst's first mbuf is scheduled
    if constexpr (kOneKind) {
      prog.StampWith<kShape>(d, one_sc, k, cursors[f], ts, vars[f]);
    } else {
      prog.Stamp<kShape>(d, k, cursors[f], ts, vars[f]);
    }
    pending_len[i] = len + kEthFcsLen;
    pending_flow[i] = f;
  };
  auto prefetch_flow = [&](uint32_t f) __attribute__((always_inline)) {
    __builtin_prefetch(&cursors[f], 1);
    __builtin_prefetch(&vars[f], 0);
    __builtin_prefetch(&sent[f], 1);  // counted once the PMD takes the frame
  };
  // Loop-invariant choices as constants (one copy of the loop each): no
  // per-frame test of them.
  auto fill = [&]<bool kMany, bool kScheduled>() __attribute__((always_inline)) {
    if constexpr (kPaced) {
      // Run by run: a run is one flow's frames in a row (a catch-up run of
      // the pacer, a READ's job), its flow's state fetched once. The flow 8
      // runs on is fetched now (a few flows' state stays in L1 by itself).
      unsigned i = 0;
      for (unsigned r = 0; r < nruns; ++r) {
        const uint32_t f = runs[r].flow;
        if constexpr (kMany) {
          if (r + 8 < nruns) prefetch_flow(runs[r + 8].flow);
        }
        for (const unsigned end = i + runs[r].count; i < end; ++i) frame.template operator()<kScheduled>(i, f);
      }
    } else {
      // The flows take turns: the state of the one 8 ahead fetched now.
      for (unsigned i = 0; i < n; ++i) {
        const uint32_t f = next_flow;
        if constexpr (kMany) prefetch_flow(f + 8 < nflows ? f + 8 : f + 8 - nflows);
        frame.template operator()<kScheduled>(i, f);
        if (++next_flow == nflows) next_flow = 0;
      }
    }
  };
  if (many_flows) {
    scheduled ? fill.template operator()<true, true>() : fill.template operator()<true, false>();
  } else {
    scheduled ? fill.template operator()<false, true>() : fill.template operator()<false, false>();
  }
  st.next_flow = next_flow;
  st.pending_same_len = kOneKind ? len1 + kEthFcsLen : 0;
}

bool TxTask::Generate(State& st, unsigned n, uint64_t now, uint64_t due, const FlowPacer::Run* runs,
                      unsigned nruns) {
  // Raw mbufs: the ones that still hold this task's template for the kind
  // are in the state TX left them in (a PMD frees an mbuf without touching
  // its fields or data); only the others are reset and filled.
  if (rte_mempool_get_bulk(pool_, reinterpret_cast<void**>(st.pending), n) != 0) {
    st.alloc_failures.Add(1);
    return false;
  }
  const stream::Program& prog = st.s->program;
  // Software stamp: now, just before tx_burst. Scheduled: the burst's due
  // time + the lead, which the NIC will honour.
  uint64_t tx_ns = clock_.ToNs(now);
  if (sched_.enabled()) {
    if (sched_.shared != nullptr) sched_.shared->Refresh(sched_.line, sched_seen_);
    tx_ns = clock_.ToNs(due) + static_cast<uint64_t>(sched_.lead_ns);
  }
  const stream::StampTime ts = prog.Time(tx_ns);
  const uint64_t keep_flags = ~sched_.flag;  // all ones unless scheduling
  // One loop per common stamp shape: no per-frame test of the fields a
  // RoCEv2 frame does not have (tools/count_instructions.sh: 356 -> see the
  // comment at Poll).
  switch (prog.shape()) {
    case stream::shape::kRoceEntropy: FillShaped<stream::shape::kRoceEntropy>(st, n, ts, keep_flags, runs, nruns); break;
    case stream::shape::kRoceSprayed: FillShaped<stream::shape::kRoceSprayed>(st, n, ts, keep_flags, runs, nruns); break;
    default: FillShaped<stream::shape::kAnyShape>(st, n, ts, keep_flags, runs, nruns); break;
  }
  if (sched_.enabled()) {
    *RTE_MBUF_DYNFIELD(st.pending[0], sched_.offset, uint64_t*) = sched_.line.ToNic(tx_ns);
    st.pending[0]->ol_flags |= sched_.flag;
  }
  st.npending = static_cast<uint16_t>(n);
  st.npending_runs = static_cast<uint16_t>(nruns);
  if (nruns != 0) std::memcpy(st.pending_runs, runs, nruns * sizeof(FlowPacer::Run));
  st.generated += n;
  if (st.gbn.any_behind()) {  // (a go-back-N stream's resends in the burst)
    st.resent += st.gbn.CountResends(st.pending_flow, n);
    st.resent_live.Set(st.resent);
  }
  return true;
}

// Measured cost (Poll, rte_eth_tx_burst into net_null included, ~98 of it the
// PMD freeing each mbuf; 10^6 RoCEv2 SEND frames of 78 B, unpaced): ~222
// instructions per packet (tools/count_instructions.sh build), 1.0-1.2x
// testpmd txonly at 78 B and 1022 B (tools/bench_vs_testpmd.sh build 10 tx;
// the spread is the host's drift between hours). 4,096 own-rate flows all
// behind, filled and counted by the pacer's runs: ~0.91x one flow's cycles a
// frame (tools/bench_flow_rates.sh build 5 5). Go-back-N's stall-free clock
// (a test a poll), the QPs' count shares (a test a burst) and the longest
// hold-up kept in the stall branches cost under one instruction a packet;
// the modes as member objects of State (rates, rp, gbn, reads) cost nothing
// measurable: 222.6 instructions, 1.01x / 1.02x the loop before them (A/B,
// docs/benchmarks.md "Issue 27: the requester in lib/endpoint").
// The history (356 -> 275 -> 223 -> 222: shape-specialised loops, stamps
// from locals, static DPDK, catch-up runs) is in docs/benchmarks.md, "Issue
// 13, stage 2" to "The longest hold-up, kept where TX skips".
unsigned TxTask::PollAt(uint64_t now) {
  unsigned sent_total = 0;
  if (gbn_) Clock(now);  // (only go-back-N reads it)
  // Streams sharing this queue take turns at going first, so when the PMD's
  // ring is the limit (several `max` streams) each gets an even share.
  const size_t nstreams = streams_.size();
  const size_t first = rr_;
  if (++rr_ == nstreams) rr_ = 0;
  for (size_t k = 0; k < nstreams; ++k) {
    State& st = *streams_[first + k < nstreams ? first + k : first + k - nstreams];
    if (st.reads.enabled()) {
      sent_total += Respond(st, now);
      continue;
    }
    if (st.is_cell) [[unlikely]] {
      sent_total += SendCell(st, now, true);
      continue;
    }
    if (st.done.load(std::memory_order_relaxed)) {
      if (st.gbn.enabled()) sent_total += Recover(st, now);
      continue;
    }
    // Per-flow rate changes apply in any state (paused, pending frames).
    if (st.rates.pacer != nullptr && st.rates.cmds->Size() != 0) ApplyFlowCommands(st, now);
    if (st.rp.enabled() && now >= st.rp_next && !st.exhausted) TickDcqcn(st, now);
    if (st.gbn.enabled() && st.gbn.TimerDue(now) && !st.exhausted) st.gbn.Tick(now, poll_tsc_);
    if (const uint64_t gen = st.ctl_gen.load(std::memory_order_acquire); gen != st.seen_gen) Apply(st, gen, now);
    // PFC honoured (ports[].pfc.honor): one predictable branch on a null
    // pointer per stream and poll when not gated (its line already read for
    // ctl_gen); all rows 0.979-1.022x of adb5b6c (docs/benchmarks.md, "PFC honoured on the TX loop").
    if (st.pfc_until != nullptr) [[unlikely]]
      GatePfc(st, now);

    // 1. New frames, if due and the stream is neither exhausted nor paused.
    if (!st.exhausted && !st.paused && st.npending == 0) {
      if (now >= st.end_tsc || (st.limit != 0 && st.generated - st.resent >= st.limit)) {
        Exhaust(st, std::min(now, st.end_tsc));
      } else if (st.burst_frames != 0) {
        // Burst schedule: each period releases a whole burst, sent as fast
        // as the port takes it (back to back at line rate on a NIC).
        while (now >= st.next_burst) {
          // Released more than 1 ms after its start: not the back-to-back
          // burst at its time that the schedule called for.
          if (now - st.next_burst > late_ticks_) [[unlikely]] {
            st.late_burst_frames.Add(st.burst_frames);
            NoteStall(st, now - st.next_burst);
          }
          st.burst_left += st.burst_frames;
          st.next_burst += st.burst_period;
        }
        unsigned n = static_cast<unsigned>(std::min<uint64_t>(st.burst_left, kTxBurst));
        if (st.limit != 0) n = static_cast<unsigned>(std::min<uint64_t>(n, st.limit - (st.generated - st.resent)));
        if (n != 0 && st.gbn.shares()) [[unlikely]] {
          st.burst_left -= GenerateShares(st, n, now, now);
        } else if (n != 0 && Generate(st, n, now, now)) {
          st.burst_left -= n;
        }
      } else if (st.rates.pacer != nullptr) {
        // Per-flow rates: the flows due now, a frame each (a catch-up run for one behind).
        if (now >= st.start_tsc) {
          FlowPacer::Run runs[kTxBurst];
          unsigned n = kTxBurst, nruns = 0;
          if (st.limit != 0) n = static_cast<unsigned>(std::min<uint64_t>(n, st.limit - (st.generated - st.resent)));
          uint64_t skipped = 0, stalls = 0;
          n = st.rates.pacer->Next((now - st.start_tsc) << kFpShift, n, nullptr, &skipped, &stalls, runs, &nruns);
          if (skipped != 0) {
            st.slots_skipped.Add(skipped);
            st.stalls.Add(stalls);
            NoteStall(st, st.rates.pacer->longest_stall_fp() >> kFpShift);
          }
          // A failed allocation leaves these slots unsent: counted (tx_error), never sent late.
          if (n != 0) Generate(st, n, now, now, runs, nruns);
        }
      } else if (now >= st.start_tsc && ((now - st.start_tsc) << kFpShift) >= st.next_fp) {
        const uint64_t now_fp = (now - st.start_tsc) << kFpShift;
        uint64_t due = st.interval_fp == 0 ? kTxBurst : (now_fp - st.next_fp) / st.interval_fp + 1;  // per burst
        if (due > st.max_backlog) {
          // Far behind (the lcore was held up for more than 1 ms): give up the
          // missed slots rather than send them back to back, and say so.
          // Shorter stalls are caught up, so every 1 s window keeps its rate.
          st.slots_skipped.Add(due - kTxBurst);
          st.stalls.Add(1);
          NoteStall(st, (now_fp - st.next_fp) >> kFpShift);
          st.next_fp += (due - kTxBurst) * st.interval_fp;
          due = kTxBurst;
        }
        unsigned n = static_cast<unsigned>(std::min<uint64_t>(due, kTxBurst));
        if (st.limit != 0) n = static_cast<unsigned>(std::min<uint64_t>(n, st.limit - (st.generated - st.resent)));
        const uint64_t due_tsc = st.interval_fp == 0 ? now : st.start_tsc + (st.next_fp >> kFpShift);
        if (st.gbn.shares()) [[unlikely]] {
          st.next_fp += GenerateShares(st, n, now, due_tsc) * st.interval_fp;
        } else if (Generate(st, n, now, due_tsc)) {
          st.next_fp += n * st.interval_fp;
        }
      }
    }

    // 2. Hand pending frames to the PMD; what it refuses stays for next time.
    if (st.npending != 0) sent_total += SendPending(st, now);
    if (st.exhausted && st.npending == 0) st.done.store(true, std::memory_order_release);
  }
  return sent_total;
}

void TxTask::NoteStall(State& st, uint64_t behind_ticks) {
  if (behind_ticks > st.stall_max_ticks.Read()) st.stall_max_ticks.Set(behind_ticks);
}

unsigned TxTask::SendPending(State& st, uint64_t now) {
  const uint16_t sent = rte_eth_tx_burst(port_id_, queue_, st.pending, st.npending);
  if (sent != 0) {
    const uint64_t ns = clock_.ToNs(now);
    if (st.packets.Read() == 0) st.first_ns.Set(ns);
    // (Resends after the end are not the TX span; a READ's responses go until the drain ends.)
    if (!st.done.load(std::memory_order_relaxed) || st.reads.enabled()) st.last_ns.Set(ns);
    uint64_t bytes = 0;
    const uint32_t same_len = st.pending_same_len;
    if (same_len != 0) {
      bytes = uint64_t{sent} * same_len;
    } else {
      for (uint16_t i = 0; i < sent; ++i) bytes += st.pending_len[i];
    }
    if (st.flow_sent.size() == 1) {  // one flow: its counts are the burst's
      st.flow_sent[0].packets += sent;
      st.flow_sent[0].bytes += bytes;
    } else if (st.npending_runs != 0) {
      // The pacer's runs (a flow's frames in a row): one update of a flow's
      // counts per run, no pass over the frames when they have one length.
      State::FlowSent* const fs = st.flow_sent.data();
      FlowPacer::Run* const runs = st.pending_runs;
      unsigned r = 0;
      for (uint32_t at = 0, left = sent; left != 0; ++r) {
        const uint32_t c = std::min(runs[r].count, left);
        uint64_t b = uint64_t{c} * same_len;
        if (same_len == 0) {
          for (uint32_t i = at; i < at + c; ++i) b += st.pending_len[i];
        }
        fs[runs[r].flow].packets += c;
        fs[runs[r].flow].bytes += b;
        at += c;
        left -= c;
        if (c < runs[r].count) {  // the PMD took part of this run: the rest stays pending
          runs[r].count -= c;
          break;
        }
      }
      if (r != 0) {
        std::memmove(runs, runs + r, (st.npending_runs - r) * sizeof(FlowPacer::Run));
        st.npending_runs = static_cast<uint16_t>(st.npending_runs - r);
      }
    } else {
      // Flows named frame by frame (round robin, resends): counted by runs
      // of one flow found here.
      State::FlowSent* const fs = st.flow_sent.data();
      uint32_t f = st.pending_flow[0];
      uint64_t run_packets = 0, run_bytes = 0;
      for (uint16_t i = 0; i < sent; ++i) {
        const uint32_t len = st.pending_len[i];
        if (st.pending_flow[i] != f) {
          fs[f].packets += run_packets;
          fs[f].bytes += run_bytes;
          f = st.pending_flow[i];
          run_packets = 0;
          run_bytes = 0;
        }
        ++run_packets;
        run_bytes += len;
      }
      fs[f].packets += run_packets;
      fs[f].bytes += run_bytes;
    }
    st.packets.Add(sent);
    st.bytes.Add(bytes);
  }
  if (sent < st.npending) {
    st.retries.Add(1);
    std::memmove(st.pending, st.pending + sent, (st.npending - sent) * sizeof(rte_mbuf*));
    std::memmove(st.pending_len, st.pending_len + sent, (st.npending - sent) * sizeof(uint32_t));
    std::memmove(st.pending_flow, st.pending_flow + sent, (st.npending - sent) * sizeof(uint32_t));
  }
  st.npending = static_cast<uint16_t>(st.npending - sent);
  return sent;
}

unsigned TxTask::PollRecoveryAt(uint64_t now) {
  unsigned sent = 0;
  Clock(now);
  for (auto& st : streams_) {
    if (st->reads.enabled()) {
      sent += Respond(*st, now);
      continue;
    }
    if (st->is_cell) {
      sent += SendCell(*st, now, false);
      continue;
    }
    if (!st->done.load(std::memory_order_relaxed)) {
      // Stopped as the run ended (an interrupt, the CLI's stop, the run's
      // bound): the stop takes effect here, its frames made go out, and an
      // RC requester then recovers what it sent like one that ended itself.
      if (const uint64_t gen = st->ctl_gen.load(std::memory_order_acquire); gen != st->seen_gen) Apply(*st, gen, now);
      if (st->npending != 0) sent += SendPending(*st, now);
      if (st->exhausted && st->npending == 0) st->done.store(true, std::memory_order_release);
    } else if (st->gbn.enabled()) {
      sent += Recover(*st, now);
    }
  }
  return sent;
}

void TxTask::ApplyFlowCommands(State& st, uint64_t now) {
  State::FlowRates::Cmd cmds[64];
  const uint64_t now_fp = now > st.start_tsc ? (now - st.start_tsc) << kFpShift : 0;
  for (size_t k; (k = st.rates.cmds->Pop(cmds, 64)) != 0;) {
    for (size_t i = 0; i < k; ++i) {
      st.rates.pps += cmds[i].pps - st.rates.pacer->rate(cmds[i].flow);
      st.rates.pacer->SetRate(cmds[i].flow, cmds[i].pps, now_fp);
    }
    st.rates.cmd_done.store(st.rates.cmd_done.load(std::memory_order_relaxed) + k, std::memory_order_release);
  }
  // The shard's rate is now the sum of its flows' (published apart from the
  // control thread's own input, ctl_pps_bits, which only the control thread writes).
  st.rates.pps_bits.store(std::bit_cast<uint64_t>(st.rates.pps), std::memory_order_relaxed);
}

void TxTask::SetCellFinished(size_t i, const std::atomic<bool>* finished) { streams_[i]->cell.finished = finished; }

void TxTask::Finish() {
  const uint64_t now = ReadTsc();
  for (auto& st : streams_) {
    if (st->npending != 0) rte_pktmbuf_free_bulk(st->pending, st->npending);
    st->npending = 0;
    st->npending_runs = 0;
    if (!st->exhausted) {
      const uint64_t stop = st->ctl_stop_tsc.load(std::memory_order_relaxed);
      Exhaust(*st, std::min(stop != 0 ? stop : now, st->end_tsc));
    }
    st->done.store(true, std::memory_order_release);
  }
}

}  // namespace fg::tx
