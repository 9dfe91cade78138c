// A collective cell's TX (CompiledStream::cell), on the lcore that owns the
// ranks' QPs: each QP sends the packets its rank's barrier released
// (ReleaseCell), as fast as the port takes them, the QPs with packets to
// send taking turns of up to kCellRun frames; a go-back (a NAK, the
// timeout) resends from the packet named, before anything new. A QP's
// messages have the lengths the cell's cut gives, each from its own
// Program (stream/cell_frames.h): the place of the cursor's packet in the
// QP's iteration (Cell::Locate) picks it, once per message or go-back.
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>

#include <algorithm>
#include <cstring>
#include <functional>

#include "tx/flow_pacer.h"
#include "tx/tx.h"
#include "tx/tx_state.h"

namespace fg::tx {

namespace {

// Frames a QP sends in one turn before the next QP with packets to send:
// QPs sharing a port interleave at this grain, as a NIC's send queues do.
constexpr unsigned kCellRun = 8;

}  // namespace

void TxTask::ReleaseCell(size_t i, uint32_t flow, uint32_t until) {
  State& st = *streams_[i];
  State::CellJobs& c = st.cell;
  if (static_cast<int32_t>(until - c.released[flow]) <= 0) return;
  c.released[flow] = until;
  if (c.queued[flow] == 0) {
    c.queued[flow] = 1;
    c.ready[(c.head + c.count) % c.ready.size()] = flow;
    ++c.count;
  }
}

uint64_t TxTask::TakeCellFirstTx(size_t i) {
  State& st = *streams_[i];
  const uint64_t t = st.cell.first_tx_ns.Read();
  st.cell.first_tx_ns.Set(0);
  return t;
}

// DCQCN (ranks.dcqcn): QP f's next turn's earliest start once it takes
// `frames` frames at its reaction point's rate (a QP at its maximum, the
// port's line, stays unpaced: the port paces it).
void TxTask::PaceCellQp(State& st, uint32_t f, unsigned frames, uint64_t now) {
  State::CellJobs& c = st.cell;
  if (c.next_tsc.empty()) return;
  const double bps = st.rp.rate_bps(f);
  if (bps >= c.max_bps) {
    c.next_tsc[f] = 0;
    return;
  }
  const double ns = static_cast<double>(frames) * st.bits_per_frame / bps * 1e9;
  c.next_tsc[f] = std::max(c.next_tsc[f], now) + clock_.FromNs(static_cast<uint64_t>(ns));
}

const std::vector<uint64_t>& TxTask::CellResentBytes(size_t i) const { return streams_[i]->cell.resent_by_iteration; }

// Points flow f's cursor at its packet `seq` of the run: which message of
// which iteration, and that message's Program and fixed fields.
void TxTask::LocateCell(State& st, uint32_t f) {
  State::CellJobs& c = st.cell;
  stream::Cursor& cur = st.cursors[f];
  const collective::Cell& cell = c.cs->cell;
  const uint32_t qp = c.qp[f];
  const collective::Qp& q = cell.qps()[qp];
  const uint64_t it = cur.seq / q.packets, p = cur.seq % q.packets;
  const collective::PacketPlace at = cell.Locate(qp, p);
  State::CellJobs::Place& pl = c.place[f];
  if (pl.program == nullptr || pl.length != at.message_length) {
    pl.program = &c.cs->frames.ProgramFor(qp, at.message_length);
    pl.vars = c.cs->frames.VarsFor(qp, at.message_length);
    pl.length = at.message_length;
    cur.icrc_key = ~uint64_t{0};  // the cached ICRC share was another Program's
  }
  pl.program->Seek(cur, cur.seq);  // PSN and round-robin entropy from the sequence
  cur.pos = at.pos;
  cur.message = it * q.messages + at.message;
  pl.seq = cur.seq;
  pl.pos = cur.pos;
  pl.message = cur.message;
  pl.left = at.message_packets - at.pos;
}

// Writes the frames of `runs` (n in all) into fresh mbufs: each frame its
// message's template (copied unless the mbuf still holds it), stamped, the
// ranks' MACs written after; a Locate per message.
bool TxTask::GenerateCell(State& st, const FlowPacer::Run* runs, unsigned nruns, unsigned n, uint64_t now) {
  if (rte_mempool_get_bulk(pool_, reinterpret_cast<void**>(st.pending), n) != 0) {
    st.alloc_failures.Add(1);
    return false;
  }
  State::CellJobs& c = st.cell;
  const uint64_t tx_ns = clock_.ToNs(now);
  const stream::Program* timed = nullptr;
  stream::StampTime ts;
  // What Stamp reads of the kind and its Program, made again only when the
  // kind changes (a message's first, middle and last, or another QP's
  // Program): in a local no frame store can alias (stream::StampConsts).
  const stream::PacketKind* made_for = nullptr;
  stream::StampConsts sc;
  unsigned i = 0;
  for (unsigned r = 0; r < nruns; ++r) {
    const uint32_t f = runs[r].flow;
    stream::Cursor& cur = st.cursors[f];
    const uint32_t high = st.gbn.enabled() ? st.gbn.qp(f).high : 0;
    const MacAddr& src = c.cs->frames.src_mac(c.qp[f]);
    const MacAddr& dst = c.cs->frames.dst_mac(c.qp[f]);
    for (unsigned k = 0; k < runs[r].count; ++k, ++i) {
      State::CellJobs::Place& pl = c.place[f];
      if (pl.seq != cur.seq || pl.left == 0 || pl.pos != cur.pos || pl.message != cur.message) LocateCell(st, f);
      if (pl.program != timed) {
        timed = pl.program;
        ts = timed->Time(tx_ns);
        made_for = nullptr;
      }
      rte_mbuf* m = st.pending[i];
      uint8_t* d = rte_pktmbuf_mtod(m, uint8_t*);
      const stream::PacketKind& kind = pl.program->KindAt(cur);
      const uint32_t len = static_cast<uint32_t>(kind.t.bytes.size());
      // An mbuf that still holds this kind's template (the loopback's own
      // frames come back untouched) is only stamped, as in Fill: every field
      // a QP changes is stamped or, the MACs, written below.
      uint64_t* tag = tag_off_ >= 0 ? RTE_MBUF_DYNFIELD(m, tag_off_, uint64_t*) : nullptr;
      const uint64_t key = tag_salt_ ^ reinterpret_cast<uintptr_t>(&kind);
      if (tag == nullptr || *tag != key) {
        rte_pktmbuf_reset(m);
        d = rte_pktmbuf_mtod(m, uint8_t*);
        stream::CopyTemplate(d, kind.copy_src.data(), len);
        m->data_len = static_cast<uint16_t>(len);
        m->pkt_len = len;
        if (tag != nullptr) *tag = key;
      }
      const bool resend = cur.seq < high;
      const uint32_t seq = cur.seq;
      if (&kind != made_for) {
        made_for = &kind;
        sc = pl.program->Consts(kind, ts);
      }
      // The shapes a cell's Programs have (the ranks' addresses stamped per
      // QP; entropy fixed or sprayed) compiled with only their fields, the
      // consts made once per kind: a collective's rate 16.0 -> 18.1 Mpps
      // against the generic stamp and consts per frame (1.13x, 1 KB frames;
      // docs/benchmarks.md "Issue 28: the cell's stamp by shape").
      switch (sc.shape) {
        case stream::shape::kRoceCell: pl.program->StampWith<stream::shape::kRoceCell>(d, sc, kind, cur, ts, pl.vars); break;
        case stream::shape::kRoceCellSprayed:
          pl.program->StampWith<stream::shape::kRoceCellSprayed>(d, sc, kind, cur, ts, pl.vars);
          break;
        default: pl.program->StampWith(d, sc, kind, cur, ts, pl.vars); break;
      }
      std::memcpy(d, dst.bytes.data(), 6);
      std::memcpy(d + 6, src.bytes.data(), 6);
      ++pl.seq;
      --pl.left;
      pl.pos = cur.pos;
      pl.message = cur.message;
      st.pending_len[i] = len + kEthFcsLen;
      st.pending_flow[i] = f;
      if (resend) [[unlikely]] {
        c.resent_bytes += len + kEthFcsLen;
        const uint64_t it = seq / c.cs->cell.qps()[c.qp[f]].packets;
        c.resent_by_iteration[std::min<uint64_t>(it, c.resent_by_iteration.size() - 1)] += len + kEthFcsLen;
      }
    }
  }
  if (c.first_tx_ns.Read() == 0) c.first_tx_ns.Set(tx_ns);
  st.npending = static_cast<uint16_t>(n);
  st.npending_runs = static_cast<uint16_t>(nruns);
  st.pending_same_len = 0;
  std::memcpy(st.pending_runs, runs, nruns * sizeof(FlowPacer::Run));
  st.generated += n;
  if (st.gbn.any_behind()) {
    st.resent += st.gbn.CountResends(st.pending_flow, n);
    st.resent_live.Set(st.resent);
  }
  return true;
}

// One burst of a cell's shard: resends owed first (a go-back's), then the
// QPs with released packets in turn. `fresh` false (the drain): resends only.
unsigned TxTask::SendCell(State& st, uint64_t now, bool fresh) {
  State::CellJobs& c = st.cell;
  if (const uint64_t gen = st.ctl_gen.load(std::memory_order_acquire); gen != st.seen_gen) Apply(st, gen, now);
  if (!st.exhausted && c.finished->load(std::memory_order_acquire)) Exhaust(st, now);
  if (st.gbn.enabled() && st.gbn.TimerDue(now)) st.gbn.Tick(now, poll_tsc_);
  if (st.rp.enabled() && now >= st.rp_next && !st.exhausted) TickDcqcn(st, now);
  // Whether DCQCN holds QP f back now (PaceCellQp).
  auto held = [&c, now](uint32_t f) {
    const bool h = !c.next_tsc.empty() && c.next_tsc[f] > now;
    c.held_turns += h ? 1 : 0;
    return h;
  };
  // The held QPs whose time came: back to the end of the ready ring.
  while (!c.held.empty() && c.held.front().first <= now) {
    std::pop_heap(c.held.begin(), c.held.end(), std::greater<>());
    c.ready[(c.head + c.count) % c.ready.size()] = c.held.back().second;
    ++c.count;
    c.held.pop_back();
  }
  if (st.npending == 0) {
    FlowPacer::Run runs[kTxBurst];
    unsigned n = 0, nruns = 0;
    if (st.gbn.owes()) {
      uint32_t qps[kTxBurst];
      const unsigned k = st.gbn.Owing(qps, kTxBurst);
      for (unsigned j = 0; j < k && n < kTxBurst; ++j) {
        const uint32_t f = qps[j];
        const uint32_t owed = st.gbn.qp(f).high - st.cursors[f].seq;
        const unsigned m = std::min<unsigned>({owed, kCellRun, kTxBurst - n});
        if (m == 0 || held(f)) continue;
        runs[nruns++] = FlowPacer::Run{f, m};
        n += m;
      }
    }
    // New packets: a QP is in `ready` while its cursor is below what was
    // released; one that still has some after its turn goes to the back.
    for (size_t visits = c.count; fresh && !st.exhausted && n < kTxBurst && visits != 0; --visits) {
      const uint32_t f = c.ready[c.head];
      c.head = (c.head + 1) % c.ready.size();
      --c.count;
      uint32_t at = st.cursors[f].seq;
      for (unsigned r = 0; r < nruns; ++r) at += runs[r].flow == f ? runs[r].count : 0;
      const uint32_t left = c.released[f] - at;
      if (static_cast<int32_t>(left) <= 0) {
        c.queued[f] = 0;
        continue;
      }
      bool mine = false;
      for (unsigned r = 0; r < nruns; ++r) mine = mine || runs[r].flow == f;
      // (a QP resending this burst takes no new turn in it; one DCQCN holds
      // back waits out of the ring until its time)
      if (!mine && held(f)) {
        c.held.emplace_back(c.next_tsc[f], f);
        std::push_heap(c.held.begin(), c.held.end(), std::greater<>());
        continue;
      }
      if (!mine) {
        const unsigned m = std::min<unsigned>({left, kCellRun, kTxBurst - n});
        runs[nruns++] = FlowPacer::Run{f, m};
        n += m;
        if (m == left) {
          c.queued[f] = 0;
          continue;
        }
      }
      c.ready[(c.head + c.count) % c.ready.size()] = f;
      ++c.count;
    }
    const bool made = n != 0 && GenerateCell(st, runs, nruns, n, now);
    // DCQCN: each QP's next turn after the frames it was given (none when the pool was empty).
    if (made && !c.next_tsc.empty()) {
      for (unsigned r = 0; r < nruns; ++r) PaceCellQp(st, runs[r].flow, runs[r].count, now);
    }
    if (n != 0 && !made) {
      // The pool was empty: the turns given come back (their QPs go on from their cursors).
      for (unsigned r = 0; r < nruns; ++r) {
        const uint32_t f = runs[r].flow;
        if (c.queued[f] == 0 && static_cast<int32_t>(c.released[f] - st.cursors[f].seq) > 0) {
          c.queued[f] = 1;
          c.ready[(c.head + c.count) % c.ready.size()] = f;
          ++c.count;
        }
      }
    }
  }
  const unsigned sent = st.npending != 0 ? SendPending(st, now) : 0;
  if (st.exhausted && st.npending == 0) st.done.store(true, std::memory_order_release);
  return sent;
}

}  // namespace fg::tx
