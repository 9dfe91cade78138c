#include "engine/connect.h"

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_format.h"
#include "base/status.h"
#include "base/units.h"
#include "proto/cm.h"
#include "stream/cell_streams.h"

namespace fg::engine {

namespace {

constexpr int kMaxSends = 8;                      // a MAD and its repeats
constexpr uint64_t kResendNs = 50'000'000;        // CM's response timeout here
constexpr size_t kWindow = 64;                    // REQs outstanding at once
constexpr uint32_t kResponderCommBit = 0x80000000;  // the passive side's communication ids

// One QP being set up: the index into the list is its requester's
// communication id - 1.
struct Qp {
  size_t stream = 0;
  uint32_t flow = 0;
  uint64_t req_tsc = 0;   // first REQ sent
  uint64_t sent_tsc = 0;  // the last REQ (or, once REP'd, REP) sent
  int sends = 0;
  bool rep = false;  // the passive side answered (REP sent)
  bool done = false;
};

class Exchange {
 public:
  Exchange(const std::vector<port::Port*>& ports, const std::vector<stream::CompiledStream>& streams,
           const TscClock& clock, const std::vector<endpoint::PortContext>& neighbors)
      : ports_(ports), streams_(streams), clock_(clock), answers_(64) {
    for (endpoint::PortContext c : neighbors) {
      c.answers = &answers_;
      neighbors_.push_back(std::make_unique<endpoint::FrameHandlers>(c));
    }
  }

  absl::StatusOr<std::vector<std::optional<QpSetup>>> Run(int64_t timeout_ns) {
    std::vector<std::optional<QpSetup>> out(streams_.size());
    std::vector<uint64_t> first(streams_.size(), 0), last(streams_.size(), 0);
    for (const stream::CompiledStream& s : streams_) {
      if (!s.connect_cm) continue;
      out[s.index].emplace();
      out[s.index]->qps = s.flows;
      for (uint32_t f = 0; f < s.flows; ++f) qps_.push_back(Qp{.stream = s.index, .flow = f});
    }
    if (qps_.empty()) return out;
    const uint64_t deadline = ReadTsc() + clock_.FromNs(static_cast<uint64_t>(timeout_ns));
    const uint64_t resend = clock_.FromNs(kResendNs);
    // This exchange's communication ids start at a base of its own: a MAD left
    // over from an earlier one (or another CM peer's) names none of its QPs.
    base_ = static_cast<uint32_t>(ReadTsc() >> 4) & 0x3FFFFFFF;
    if (base_ + qps_.size() >= kResponderCommBit) base_ = 0;
    size_t done = 0, low = 0;  // low: no QP below it is still being set up
    while (done < qps_.size()) {
      const uint64_t now = ReadTsc();
      if (now > deadline) return Failure(timeout_ns);
      // New REQs while the window has room.
      while (next_ < qps_.size() && next_ < done + kWindow) {
        FG_RETURN_IF_ERROR(SendReq(next_, now));
        ++next_;
      }
      // What came back, on every RX queue of the ports involved.
      for (size_t pi = 0; pi < ports_.size(); ++pi) {
        if (!involved(pi)) continue;
        for (uint16_t q = 0; q < ports_[pi]->options().rx_queues; ++q) {
          rte_mbuf* m[32];
          const uint16_t n = rte_eth_rx_burst(ports_[pi]->id(), q, m, 32);
          absl::Status st;
          for (uint16_t i = 0; i < n; ++i) {
            if (st.ok()) st = Receive(m[i], pi, &out, &done, &first, &last);
            rte_pktmbuf_free(m[i]);
          }
          FG_RETURN_IF_ERROR(st);
        }
      }
      // Lost MADs: a REQ without a REP, a REP without an RTU (among the QPs
      // sent and not yet set up: about the window).
      while (low < next_ && qps_[low].done) ++low;
      for (size_t k = low; k < next_; ++k) {
        Qp& p = qps_[k];
        if (p.done || now < p.sent_tsc + resend) continue;  // (sent_tsc may be after `now`: a REP sent on receipt)
        if (p.sends >= kMaxSends) continue;  // given up: the deadline names it
        ++out[p.stream]->resent;
        FG_RETURN_IF_ERROR(p.rep ? SendRep(k, now) : SendReq(k, now));
      }
    }
    for (const stream::CompiledStream& s : streams_) {
      if (!out[s.index]) continue;
      QpSetup& q = *out[s.index];
      q.elapsed_ns = static_cast<int64_t>(clock_.ToNs(last[s.index] - first[s.index]));
      q.first_ns = clock_.ToNs(first[s.index]);
      q.last_ns = clock_.ToNs(last[s.index]);
      q.other_frames = other_;  // the exchange's, not one stream's: every connecting stream shows them
    }
    return out;
  }

 private:
  bool involved(size_t pi) const {
    return std::any_of(streams_.begin(), streams_.end(),
                       [pi](const stream::CompiledStream& s) { return s.connect_cm && (s.tx_port == pi || s.rx_port == pi); });
  }

  // The MAD addresses: requester to responder (REQ, RTU), or back (REP).
  // A collective's QP: between its own two ranks (CellStreams::CmEncap).
  proto::Encap EncapOf(const Qp& p, bool back) const {
    const stream::CompiledStream& s = streams_[p.stream];
    proto::Encap e = s.cell != nullptr ? s.cell->CmEncap(s.cell_first + p.flow, back)
                     : back            ? s.cm_back_encap
                                       : s.cm_encap;
    e.udp_src = static_cast<uint16_t>(0xC000 | ((s.cm_encap.udp_src + p.flow) & 0x3FFF));
    return e;
  }
  // The QP's number, at both ends: the data's destination QP, which its ACKs,
  // NAKs and CNPs also carry (a QP number is each node's own).
  uint32_t Qpn(const Qp& p) const { return (streams_[p.stream].program.key_base() + p.flow) & 0xFFFFFF; }

  absl::Status Send(size_t port, const std::vector<uint8_t>& frame) {
    port::Port* p = ports_[port];
    rte_mbuf* m = rte_pktmbuf_alloc(p->pool());
    if (m == nullptr) return absl::ResourceExhaustedError("QP set-up: the port's mbuf pool is empty");
    char* d = rte_pktmbuf_append(m, static_cast<uint16_t>(frame.size()));
    if (d == nullptr) {
      rte_pktmbuf_free(m);
      return absl::InternalError("QP set-up: a MAD frame does not fit an mbuf");
    }
    std::memcpy(d, frame.data(), frame.size());
    // Not a TX template any more (TX would take it for one otherwise: RX on
    // the built-in loopback leaves tags as they are, PortOptions::rx_is_own_tx).
    if (const int tag = port::TxTemplateTagOffset(); tag >= 0) *RTE_MBUF_DYNFIELD(m, tag, uint64_t*) = 0;
    const uint64_t until = ReadTsc() + clock_.FromNs(100'000'000);
    while (rte_eth_tx_burst(p->id(), 0, &m, 1) == 0) {
      if (ReadTsc() > until) {
        rte_pktmbuf_free(m);
        return absl::UnavailableError(absl::StrFormat("QP set-up: port %s took no frame for 100 ms", p->name()));
      }
    }
    return absl::OkStatus();
  }

  // QP k's MAD of kind `attr`: its transaction, and its communication ids
  // (the requester's k + 1; the passive side's with the top bit set).
  proto::cm::Message Mad(uint16_t attr, size_t k) const {
    proto::cm::Message m;
    m.attr = attr;
    m.transaction_id = base_ + k + 1;
    const uint32_t requester = static_cast<uint32_t>(base_ + k + 1);
    m.local_comm_id = attr == proto::cm::kRep ? requester | kResponderCommBit : requester;
    m.remote_comm_id = attr == proto::cm::kRep ? requester : requester | kResponderCommBit;
    return m;
  }

  absl::Status SendReq(size_t k, uint64_t now) {
    Qp& p = qps_[k];
    const stream::CompiledStream& s = streams_[p.stream];
    proto::cm::Message m = Mad(proto::cm::kReq, k);
    m.remote_comm_id = 0;
    m.local_qpn = Qpn(p);
    m.pkey = s.cm_pkey;
    m.start_psn = s.program.psn_start();
    m.service_id = 0x0000000001060000ull + proto::roce::kUdpPort;  // RDMA CM's TCP port space, port 4791
    m.pmtu_code = proto::cm::MtuCode(s.pmtu);
    m.local_ca_guid = proto::cm::GuidOfMac(EncapOf(p, false).src_mac);
    if (p.sends == 0) p.req_tsc = now;
    p.sent_tsc = now;
    ++p.sends;
    return Send(s.tx_port, proto::cm::BuildFrame(EncapOf(p, false), m, p.sends - 1));
  }

  absl::Status SendRep(size_t k, uint64_t now) {
    Qp& p = qps_[k];
    const stream::CompiledStream& s = streams_[p.stream];
    proto::cm::Message m = Mad(proto::cm::kRep, k);
    m.local_qpn = Qpn(p);
    m.start_psn = 0;
    m.local_ca_guid = proto::cm::GuidOfMac(EncapOf(p, true).src_mac);
    p.sent_tsc = now;
    ++p.sends;
    return Send(s.rx_port, proto::cm::BuildFrame(EncapOf(p, true), m, 0));
  }

  absl::Status Receive(rte_mbuf* mb, size_t pi, std::vector<std::optional<QpSetup>>* out, size_t* done,
                       std::vector<uint64_t>* first, std::vector<uint64_t>* last) {
    const uint64_t now = ReadTsc();
    const auto* d = rte_pktmbuf_mtod(mb, const uint8_t*);
    const auto m = proto::cm::Parse(std::span<const uint8_t>(d, rte_pktmbuf_data_len(mb)));
    // Whose: the requester's communication id (REP names it as the remote
    // one), of a QP whose REQ this exchange sent, in its transaction.
    uint64_t k = 0;
    if (m) k = uint64_t{m->attr == proto::cm::kRep ? m->remote_comm_id : m->local_comm_id} - base_;
    if (!m || k == 0 || k > next_ || m->transaction_id != base_ + k) {
      ++other_;
      return Neighbor(pi, d, rte_pktmbuf_data_len(mb));
    }
    Qp& p = qps_[k - 1];
    const stream::CompiledStream& s = streams_[p.stream];
    switch (m->attr) {
      case proto::cm::kReq:  // at the passive side: REP (again, for a repeated REQ)
        if (!p.done) {
          p.rep = true;
          p.sends = 0;
          return SendRep(k - 1, now);
        }
        return absl::OkStatus();
      case proto::cm::kRep: {  // at the requester: RTU, for every REP
        proto::cm::Message rtu = Mad(proto::cm::kRtu, k - 1);
        rtu.remote_comm_id = m->local_comm_id;  // as the REP named itself
        return Send(s.tx_port, proto::cm::BuildFrame(EncapOf(p, false), rtu, 0));
      }
      default:  // RTU at the passive side: established
        if (!p.done) {
          p.done = true;
          ++*done;
          QpSetup& q = *(*out)[p.stream];
          q.setup.Record(clock_.ToNs(now - p.req_tsc));
          if ((*first)[p.stream] == 0 || p.req_tsc < (*first)[p.stream]) (*first)[p.stream] = p.req_tsc;
          (*last)[p.stream] = std::max((*last)[p.stream], now);
          q.other_frames = other_;
        }
        return absl::OkStatus();
    }
  }

  // An ARP or ND for a host of port pi (a rank a leaf resolves before it
  // routes a REQ there): answered as the trial's hosts answer it.
  absl::Status Neighbor(size_t pi, const uint8_t* d, uint32_t len) {
    if (pi >= neighbors_.size()) return absl::OkStatus();
    neighbors_[pi]->Take(endpoint::RxFrame{d, len, 0});
    for (; !answers_.empty(); answers_.Pop()) {
      const endpoint::Answer& a = *answers_.Front();
      FG_RETURN_IF_ERROR(Send(a.port, std::vector<uint8_t>(a.bytes, a.bytes + a.len)));
    }
    return absl::OkStatus();
  }

  absl::Status Failure(int64_t timeout_ns) const {
    uint64_t no_rep = 0, no_rtu = 0;
    std::string first;
    for (const Qp& p : qps_) {
      if (p.done) continue;
      (p.rep ? no_rtu : no_rep) += 1;
      if (first.empty()) {
        first = absl::StrFormat("stream %s QP %#x", streams_[p.stream].name, Qpn(p));
      }
    }
    return absl::DeadlineExceededError(absl::StrFormat(
        "QP set-up by CM (frame.roce.connect: cm): %d of %d QPs not established within %s (%d got no REP, %d no "
        "RTU; the first: %s); the path between the stream's port and its rx_port must carry RoCEv2 to QP 1 both ways",
        no_rep + no_rtu, qps_.size(), FormatDuration(timeout_ns), no_rep, no_rtu, first));
  }

  const std::vector<port::Port*>& ports_;
  const std::vector<stream::CompiledStream>& streams_;
  const TscClock& clock_;
  endpoint::AnswerQueue answers_;  // the neighbors' answers, sent at once
  std::vector<std::unique_ptr<endpoint::FrameHandlers>> neighbors_;
  std::vector<Qp> qps_;
  size_t next_ = 0;    // REQs sent for qps_[0 .. next_)
  uint32_t base_ = 0;  // communication ids: base_ + 1 ..
  uint64_t other_ = 0;
};

}  // namespace

absl::StatusOr<std::vector<std::optional<QpSetup>>> ConnectQps(
    const std::vector<port::Port*>& ports, const std::vector<stream::CompiledStream>& streams, const TscClock& clock,
    int64_t timeout_ns, const std::vector<endpoint::PortContext>& neighbors) {
  Exchange x(ports, streams, clock, neighbors);
  return x.Run(timeout_ns);
}

}  // namespace fg::engine
