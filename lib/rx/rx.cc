#include "rx/rx.h"

#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>
#include <rte_prefetch.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "base/units.h"
#include "proto/signature.h"

namespace fg::rx {

RxTask::RxTask(uint16_t port_id, uint16_t queue, uint32_t self, std::shared_ptr<const PortDispatch> dispatch,
               FlowTable* table, std::vector<HandoffRing*> out, std::vector<const Counter*> owner_polls,
               TscClock clock, int ts_offset, uint64_t ts_flag, clock::ClockLine ts_line, int template_tag_offset,
               const clock::SharedClockLine* ts_shared)
    : port_id_(port_id),
      queue_(queue),
      self_(self),
      dispatch_(std::move(dispatch)),
      table_(table),
      out_(std::move(out)),
      owner_polls_(std::move(owner_polls)),
      clock_(clock),
      waiting_(out_.size()),
      stall_ticks_(clock.FromNs(kRxStallNs)),
      ts_offset_(ts_offset),
      ts_flag_(ts_flag),
      tag_off_(template_tag_offset),
      ts_shared_(ts_shared),
      ts_line_(ts_line) {
  UseLine(ts_line_);
  for (auto& w : waiting_) w.reserve(4 * kRxBurst);
}

RxTask::~RxTask() = default;

// A record for a flow another lcore owns: queued for that owner, handed
// over in bulk by HandOver (the flows this lcore owns are observed in place,
// without a record).
void RxTask::EmitRemote(uint32_t owner, const Handoff& h) {
  waiting_[owner].push_back(h);
  ++waiting_total_;
}

void RxTask::HandOver(const std::vector<FlowTable*>& owners, std::vector<uint64_t>& delivered) {
  for (size_t w = 0; w < waiting_.size(); ++w) {
    if (waiting_[w].empty()) continue;
    owners[w]->Deliver(waiting_[w].data(), waiting_[w].size());
    delivered[w] += waiting_[w].size();
    handed_off_.Add(waiting_[w].size());
    waiting_total_ -= waiting_[w].size();
    waiting_[w].clear();
  }
}

bool RxTask::FlushWaiting() {
  if (waiting_total_ == 0) return true;
  for (size_t w = 0; w < waiting_.size(); ++w) {
    std::vector<Handoff>& q = waiting_[w];
    if (q.empty()) continue;
    // Stamped as they enter the ring: the owner counts its polls from here.
    const uint16_t poll = static_cast<uint16_t>(owner_polls_[w]->Read());
    for (Handoff& h : q) h.owner_poll = poll;
    const size_t pushed = out_[w]->Push(q.data(), q.size());
    handed_off_.Add(pushed);
    waiting_total_ -= pushed;
    q.erase(q.begin(), q.begin() + static_cast<std::ptrdiff_t>(pushed));
  }
  return waiting_total_ == 0;
}

// Off the fast path: control frames are few.
RxTask::Apart RxTask::CountFeedback(const uint8_t* frame, uint32_t len, uint64_t rx_ns, uint32_t bytes) {
  proto::SignatureParse parse;
  parse.feedback_icrc = dispatch_->check_feedback_icrc;
  const proto::Feedback fb = proto::ClassifyFeedback(frame, len, parse);
  using K = proto::Feedback::Kind;
  if (fb.kind == K::kNone) {
    if (handlers_ == nullptr) return Apart::kUnknown;
    switch (handlers_->Take(endpoint::RxFrame{frame, len, rx_ns})) {
      case endpoint::Taken::kYes:
        return Apart::kHandled;
      case endpoint::Taken::kInvalid:
        return Apart::kInvalid;
      case endpoint::Taken::kNo:
        return Apart::kUnknown;
    }
  }
  if (fb.kind == K::kInvalid) return Apart::kInvalid;  // not shaped as the spec shapes it: taken for nothing
  // To the flow's owner: observed here, or handed over.
  auto route = [this](const PortDispatch::Target& t, Handoff& h) {
    h.slot = t.slot;
    if (t.owner == self_) {
      table_->ObserveFeedback(h);
    } else {
      EmitRemote(t.owner, h);
    }
  };
  if (fb.kind == K::kRoceReadRequest) {
    // Data of a READ stream this port answers (else an unknown frame).
    auto r = dispatch_->reads.find(fb.key);
    if (r == dispatch_->reads.end()) return Apart::kUnknown;
    Handoff h;
    h.kind = proto::RxKind::kRoceReadRequest;
    h.seq = fb.psn;  // the owner's responder turns it into the request's sequence
    h.rx_ns = rx_ns;
    h.bytes = bytes;
    h.flags = fb.ce ? Handoff::kCe : 0;
    route(r->second, h);
    return Apart::kData;
  }
  const PortDispatch::KeyKind kind =
      fb.kind == K::kUetNack ? PortDispatch::KeyKind::kUetPdc : PortDispatch::KeyKind::kRoceQp;
  (fb.kind == K::kRoceCnp ? fb_cnp_ : fb.kind == K::kRoceNak ? fb_nak_ : fb.kind == K::kRoceAck ? fb_ack_ : fb_nack_)
      .Add(1);
  auto it = dispatch_->keys.find(uint64_t{static_cast<uint8_t>(kind)} << 32 | fb.key);
  if (it == dispatch_->keys.end()) {
    fb_unmatched_.Add(1);
    return Apart::kUnknown;
  }
  Handoff h;
  h.kind = fb.kind;  // (one vocabulary: proto/rx_kind.h)
  h.seq = fb.psn;     // ACK, NAK: the PSN it names
  if (h.kind == K::kRoceAck || h.kind == K::kRoceNak) h.said = Handoff::Said{fb.msn, fb.code};
  h.rx_ns = rx_ns;
  h.bytes = len + kEthFcsLen;
  route(it->second, h);
  return Apart::kUnknown;
}

unsigned RxTask::PollAt(uint64_t now) { return ts_offset_ >= 0 ? PollImpl<true>(now) : PollImpl<false>(now); }

void RxTask::Post(RxRequest& r) {
  if (r.kind == RxRequest::Kind::kCapture) {
    r.data.assign(r.n * r.snaplen, 0);
    r.caplen.assign(r.n, 0);
    r.wire_len.assign(r.n, 0);
    r.rx_ns.assign(r.n, 0);
    r.captured.store(0, std::memory_order_relaxed);
  }
  requests_.Post(r);
}

bool RxTask::Served(const RxRequest& r) const { return requests_.Served(r); }

// On the lcore, between bursts: one load when nothing is asked.
void RxTask::ServeRequest() {
  auto [req, seq] = requests_.Take();
  if (req == nullptr) return;
  RxRequest& r = *req;
  switch (r.kind) {
    case RxRequest::Kind::kCapture:
      capture_ = &r;
      capture_seq_ = seq;
      if (r.n == 0) {
        capture_ = nullptr;
        requests_.Answer(seq);
      }
      break;
    case RxRequest::Kind::kCancel:
      capture_ = nullptr;
      requests_.Answer(seq);
      break;
  }
}

void RxTask::CaptureFrames(rte_mbuf** pkts, uint16_t n, uint64_t rx_ns) {
  RxRequest& r = *capture_;
  size_t k = r.captured.load(std::memory_order_relaxed);
  for (uint16_t i = 0; i < n && k < r.n; ++i, ++k) {
    const rte_mbuf* m = pkts[i];
    const uint32_t len = std::min<uint32_t>(rte_pktmbuf_data_len(m), r.snaplen);
    std::memcpy(r.data.data() + k * r.snaplen, rte_pktmbuf_mtod(m, const uint8_t*), len);
    r.caplen[k] = len;
    r.wire_len[k] = m->pkt_len;
    r.rx_ns[k] = rx_ns;
  }
  r.captured.store(k, std::memory_order_release);
  if (k == r.n) {
    capture_ = nullptr;
    requests_.Answer(capture_seq_);
  }
}

// Measured cost (tools/count_instructions.sh build; report.json
// lcores[].rx_cycles_per_packet; tools/bench_vs_testpmd.sh build 10 loop):
// ~241 instructions and ~42 TSC cycles a frame on the net_ring loopback, 1
// flow, 78 B; loopback ~0.8x testpmd flowgen, 1,000,000 flows ~19 % below
// one flow (AMD EPYC Zen 4 VM). Where it went: 303 -> 241 instructions by
// 48-bit loads off the stack (proto/bytes.h), the queue's last test-frame
// layout answering the header walk (proto::SignatureFinder: one masked
// compare of 64 bytes) returned by value, the free loop's checks ORed into
// one word, and a frame's latency runs tested once (FlowTable::Observe).
// Frames that waited through a stall are marked in a pass of their own (one
// test a burst) and left out of latency by an outlined
// FlowTable::ObserveLate; the responder's fast path is one load and test a
// frame where no responder runs (380 instructions a data packet on a
// responding port). The runs behind each figure are in docs/benchmarks.md,
// "Issue 13, stage 2" to "RX: the put-back checks in the first pass".
// Issue 26's checks of what a frame claims: in the first pass the
// signature's flags and TX time, ~6 instructions and one predictable branch
// a data frame; in the owner's Observe one compare against the flow's sent
// bound (its hot line) and, once per window of frames in flight, an
// out-of-line ask of the sender; the header checks ride in the layout
// compare (two more mask bytes). Cost: the 1-flow loopback 0.72x testpmd
// flowgen against 0.74x without them, 1,000,000 flows within the host's
// spread; responding ports add the ICRC of each RoCEv2 data frame (below).
// docs/benchmarks.md "Issue 26: frames checked before they count".
//
// Two passes over the burst (VPP's shape): the first finds each frame's
// signature and owner and prefetches the flow's state when this lcore owns
// it, the second builds the records, so the cache misses of a million-flow
// table overlap instead of stalling one after another.
template <bool kPerPacketTs>
unsigned RxTask::PollImpl(uint64_t before) {
  ServeRequest();
  // Records an owner's full ring held back go first; until they are out, the
  // queue is left to fill (its drops are the PMD's imissed: a tester limit).
  if (!FlushWaiting()) {
    handoff_waits_.Add(1);
    return 0;
  }
  rte_mbuf* pkts[kRxBurst];
  const uint64_t since = before - last_poll_tsc_;
  const bool polled_before = last_poll_tsc_ != 0;
  last_poll_tsc_ = before;
  const uint16_t n = rte_eth_rx_burst(port_id_, queue_, pkts, kRxBurst);
  if (n == 0) {
    catching_up_ = false;  // the queue is empty: whatever waited through a stall has been drained
    return 0;
  }
  if (since > stall_ticks_ && polled_before) {
    // Held up with frames waiting: the lcore was elsewhere (descheduled, or
    // a long TX poll on the same lcore); say so beside the latency figures.
    stalls_.Add(1);
    const uint64_t ns = clock_.ToNs(since);
    if (ns > stall_max_ns_.Read()) stall_max_ns_.Set(ns);
    catching_up_ = true;
    catch_up_ns_ = clock_.ToNs(before);
  }
  const uint64_t rx_ns = clock_.ToNs(ReadTsc());
  table_->SetClock(rx_ns);
  if (capture_ != nullptr) CaptureFrames(pkts, n, rx_ns);
  if constexpr (kPerPacketTs) {
    if (ts_shared_ != nullptr && ts_shared_->Refresh(ts_line_, ts_seen_)) UseLine(ts_line_);
  }
  const PortDispatch& dp = *dispatch_;
  int32_t sig[kRxBurst];
  uint32_t end[kRxBurst];
  PortDispatch::Target tgt[kRxBurst];
  uint8_t flags0[kRxBurst];  // each frame's Handoff flags before the per-frame checks
  // Whether the burst can go back to the pool in one put (below): checked
  // here, where each mbuf's header is read anyway (RX writes nothing into
  // an mbuf and keeps none past this poll). `next` is in the header's
  // second line (DPDK 22.11 built with RTE_IOVA_AS_PA), which the free loop
  // read before too; the rest in its first. refcnt and nb_segs from one
  // load of the 8 bytes they share with data_off and port (rearm_data, as
  // DPDK's vector PMDs read them); the checks ORed into one word, not
  // branched on per mbuf.
  rte_mempool* pool = pkts[0]->pool;
  uint64_t odd = 0;
  constexpr uint64_t kRefSegsMask = 0x0000FFFFFFFF0000ull;  // refcnt (bytes 2-3), nb_segs (4-5)
  constexpr uint64_t kRefSegsOne = 0x0000000100010000ull;   // both 1
  static_assert(offsetof(rte_mbuf, refcnt) == offsetof(rte_mbuf, data_off) + 2 &&
                offsetof(rte_mbuf, nb_segs) == offsetof(rte_mbuf, data_off) + 4);
  // The signature's own checks (the sequence is its flow owner's,
  // FlowTable::Observe): its flags are the ones every stream writes, and its
  // TX time lies within the run, from just before its start to just after
  // this burst's arrival (48-bit wrap-safe: one subtract and mask a frame;
  // the window once a burst, its start moving on in a run longer than half
  // the 48-bit range). Without a run start, every time passes.
  const uint64_t tx_lo = rx_ns - tx_lo_ > kTxWindowMaxNs ? rx_ns - kTxWindowMaxNs : tx_lo_;
  const uint64_t tx_span = tx_window_ ? (rx_ns + kTxAfterRxNs - tx_lo) & stats::kTs48Mask : stats::kTs48Mask;
  rte_prefetch0(rte_pktmbuf_mtod(pkts[0], void*));
  for (uint16_t i = 0; i < n; ++i) {
    if (i + 1 < n) rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 1], void*));
    const rte_mbuf* m = pkts[i];
    uint64_t rearm;
    std::memcpy(&rearm, &m->data_off, sizeof(rearm));
    odd |= ((rearm & kRefSegsMask) ^ kRefSegsOne) |
           (reinterpret_cast<uintptr_t>(m->pool) ^ reinterpret_cast<uintptr_t>(pool)) |
           reinterpret_cast<uintptr_t>(m->next) | (m->ol_flags & (RTE_MBUF_F_INDIRECT | RTE_MBUF_F_EXTERNAL));
    const uint8_t* d = static_cast<const uint8_t*>(m->buf_addr) + static_cast<uint16_t>(rearm);
    const proto::SignatureFinder::At at = finder_.Find(d, m->data_len);
    sig[i] = at.offset;
    end[i] = at.payload_end;
    flags0[i] = at.ecn == 3 ? Handoff::kCe : 0;
    tgt[i] = PortDispatch::Target{};
    if (sig[i] >= 0) {
      const uint8_t* s = d + sig[i];
      tgt[i] = dp.DataTarget(proto::Load24(s + 3));
      // ~3 cycles: a byte compare, a 48-bit load (the signature's line, read
      // for the flow id already), a subtract, a mask and a compare, ORed
      // into one predictable branch.
      const bool forged = (s[2] != proto::kSigFlagTimestamp) |
                          (((proto::Load48(s + 10) - tx_lo) & stats::kTs48Mask) > tx_span);
      if (forged) [[unlikely]] {
        tgt[i].owner = kForged;
      } else if (tgt[i].owner == self_) {
        table_->Prefetch(tgt[i].slot);
      }
    }
  }
  uint32_t late_frames = 0, data_checked = 0;
  if (catching_up_) [[unlikely]] {
    // Draining what waited through a stall: a frame sent before the lcore
    // came back has the tester's own delay in its software RX time. Counted
    // as any, its latency left out (48-bit TX times: before when the
    // difference is under half their range). A pass of its own, so the
    // common path pays one test a burst.
    for (uint16_t i = 0; i < n; ++i) {
      if (tgt[i].owner >= kForged) continue;  // no data of a stream received here
      ++data_checked;
      const uint64_t tx_ns = proto::Load48(rte_pktmbuf_mtod(pkts[i], const uint8_t*) + sig[i] + 10);
      const uint64_t ahead = (catch_up_ns_ - tx_ns) & stats::kTs48Mask;
      if (ahead != 0 && ahead < stats::kTs48Mask / 2) {
        flags0[i] |= Handoff::kRxLate;
        ++late_frames;
      }
    }
  }
  uint64_t data_packets = 0, data_bytes = 0, unknown_packets = 0, unknown_bytes = 0;
  uint64_t invalid_packets = 0, invalid_bytes = 0;
  const bool check_icrc = dp.check_icrc;
  FlowTable::Run run;
  for (uint16_t i = 0; i < n; ++i) {
    const rte_mbuf* m = pkts[i];
    const uint8_t* d = rte_pktmbuf_mtod(m, const uint8_t*);
    const uint32_t bytes = m->pkt_len + kEthFcsLen;  // PMDs strip the FCS
    if (tgt[i].owner >= kForged) {
      // No data of a stream received here: a signature no stream sent
      // (kForged, or a flow id none of the run's has), a signed frame of a
      // stream received elsewhere (unknown here), or without a signature:
      // feedback, a READ request, or nothing of ours (CountFeedback).
      Apart a = Apart::kInvalid;
      if (tgt[i].owner == kNoSlot) {
        if (sig[i] < 0) {
          a = CountFeedback(d, m->data_len, rx_ns, bytes);
        } else {
          a = proto::Load24(d + sig[i] + 3) < dp.flows ? Apart::kUnknown : Apart::kInvalid;
        }
      }
      if (a == Apart::kData) {  // a READ request
        ++data_packets;
        data_bytes += bytes;
      } else if (a == Apart::kHandled) {
        handled_packets_.Add(1);
        handled_bytes_.Add(bytes);
      } else if (a == Apart::kUnknown) {
        ++unknown_packets;
        unknown_bytes += bytes;
      } else {
        ++invalid_packets;
        invalid_bytes += bytes;
      }
      continue;
    }
    const uint8_t* s = d + sig[i];
    uint64_t t = rx_ns;
    uint8_t flags = flags0[i];
    if (!dp.verify.empty()) {
      const uint32_t flow = proto::Load24(s + 3);
      if (flow < dp.group_of.size() && dp.verify[dp.group_of[flow]] &&
          proto::CountPayloadErrors(d, static_cast<uint32_t>(sig[i]), end[i]) != 0) {
        flags |= Handoff::kPayloadError;
      }
    }
    // A responding port: RoCEv2 data with a bad ICRC is the stream's (the
    // device delivered it) but its responder takes nothing from it, as a
    // RoCE NIC drops it. A header walk, a copy and a CRC over the frame, on
    // responding ports only; elsewhere one predictable test. Cost ~26 ns a
    // frame: 8 QPs of 94 B WRITEs on one lcore, 28.8 Mpps without the check,
    // 16.3 Mpps with it (docs/benchmarks.md "Issue 26: frames checked before
    // they count").
    if (check_icrc) {
      if (!proto::RoceIcrcValid(d, m->data_len)) [[unlikely]] flags |= Handoff::kIcrcBad;
    }
    if constexpr (kPerPacketTs) {
      if (m->ol_flags & ts_flag_) {
        const uint64_t v = *RTE_MBUF_DYNFIELD(m, ts_offset_, const uint64_t*);
        const double dv = static_cast<double>(static_cast<int64_t>(v - ts_nic_ref_));
        t = ts_tsc_ref_ + static_cast<uint64_t>(static_cast<int64_t>(ts_c_ + dv * ts_ns_per_unit_));
        if (flags & Handoff::kRxLate) [[unlikely]] {  // the NIC's time of arrival: no delay of ours in it
          flags &= static_cast<uint8_t>(~Handoff::kRxLate);
          --late_frames;
        }
      }
    }
    ++data_packets;
    data_bytes += bytes;
    const uint32_t seq = proto::Load32(s + 6);
    const uint64_t tx_ns = proto::Load48(s + 10);
    if (tgt[i].owner == self_) [[likely]] {
      table_->Observe(tgt[i].slot, seq, tx_ns, t, bytes, flags, run);
    } else {
      Handoff h;
      h.slot = tgt[i].slot;
      h.seq = seq;
      h.tx_ns = tx_ns;
      h.rx_ns = t;
      h.bytes = bytes;
      h.kind = proto::RxKind::kData;
      h.flags = flags;
      EmitRemote(tgt[i].owner, h);
    }
  }
  FlowTable::Run done = run;  // a copy: `run` stays in registers in the loop
  table_->Flush(done);
  if (catching_up_) [[unlikely]] {
    // Drained once the queue came back short (or empty, above), or a burst's
    // data frames were all sent after the lcore came back (a burst of only
    // feedback or unknown frames says nothing: the catch-up goes on).
    stall_frames_.Add(late_frames);
    if (n < kRxBurst || (data_checked != 0 && late_frames == 0)) catching_up_ = false;
  }
  if (waiting_total_ != 0) FlushWaiting();
  data_packets_.Add(data_packets);
  data_bytes_.Add(data_bytes);
  if (unknown_packets != 0) {
    unknown_packets_.Add(unknown_packets);
    unknown_bytes_.Add(unknown_bytes);
  }
  if (invalid_packets != 0) [[unlikely]] {
    invalid_packets_.Add(invalid_packets);
    invalid_bytes_.Add(invalid_bytes);
  }
  // Whatever wrote these frames (a NIC, a test's mover), TX must not take
  // them for intact templates when they come back from the pool (the
  // built-in loopback's RX gets TX's own mbufs: no tag to clear).
  if (const int tag_off = tag_off_; tag_off >= 0) {
    for (uint16_t i = 0; i < n; ++i) *RTE_MBUF_DYNFIELD(pkts[i], tag_off, uint64_t*) = 0;
  }
  // Back to the pool in one put when every mbuf is direct, unshared, one
  // segment and from one pool (`odd`, above: what the PMD's fast-free
  // offload assumes); otherwise the general free.
  if (odd == 0) {
    rte_mempool_put_bulk(pool, reinterpret_cast<void**>(pkts), n);
  } else {
    rte_pktmbuf_free_bulk(pkts, n);
  }
  return n;
}

}  // namespace fg::rx
