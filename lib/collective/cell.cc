#include "collective/cell.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_format.h"

namespace fg::collective {

namespace {

// A message of at most `message` bytes as sent: itself, or (its last packet
// under kMinPayload) its bytes less 16, then 16.
void AddMessage(std::vector<MessageRun>& runs, uint64_t length, uint64_t count, uint32_t pmtu) {
  if (count == 0) return;
  auto add = [&runs](uint64_t len, uint64_t n) {
    if (!runs.empty() && runs.back().length == len) {
      runs.back().count += n;
    } else {
      runs.push_back(MessageRun{len, n});
    }
  };
  const uint64_t last = length % pmtu;
  if (last == 0 || last >= kMinPayload) {
    add(length, count);
    return;
  }
  for (uint64_t i = 0; i < count; ++i) {  // (rare: `message` % pmtu in 1..15, or one tail)
    add(length - kMinPayload, 1);
    add(kMinPayload, 1);
  }
}

}  // namespace

std::vector<MessageRun> CutMessages(uint64_t bytes, uint64_t message, uint32_t pmtu) {
  std::vector<MessageRun> runs;
  uint64_t full = bytes / message, tail = bytes % message;
  if (tail != 0 && tail < kMinPayload && full > 0) {
    // The last full message and the tail, M + t bytes, go as M + t - 16 and 16.
    --full;
    AddMessage(runs, message, full, pmtu);
    AddMessage(runs, message + tail - kMinPayload, 1, pmtu);
    AddMessage(runs, kMinPayload, 1, pmtu);
    return runs;
  }
  AddMessage(runs, message, full, pmtu);
  if (tail != 0) AddMessage(runs, tail, 1, pmtu);
  return runs;
}

uint64_t PacketsOf(const std::vector<MessageRun>& runs, uint32_t pmtu) {
  uint64_t n = 0;
  for (const MessageRun& r : runs) n += r.count * PacketsOf(r.length, pmtu);
  return n;
}

absl::StatusOr<Cell> Cell::Make(const Schedule& s, uint32_t qps_per_pair, uint64_t message, uint32_t pmtu) {
  if (pmtu < 256 || pmtu > 4096 || (pmtu & (pmtu - 1)) != 0) {
    return absl::InvalidArgumentError(absl::StrFormat("pmtu %u is not 256, 512, 1024, 2048 or 4096", pmtu));
  }
  if (message < kMinMessage) {
    return absl::InvalidArgumentError(absl::StrFormat("a message of %u B is under the least, %u B", message, kMinMessage));
  }
  if (qps_per_pair == 0) return absl::InvalidArgumentError("qps_per_pair is at least 1");
  const uint64_t least = s.smallest_transfer() / qps_per_pair;
  if (least < kMinPayload) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%u B over %u ranks: the smallest transfer, %u B, split over %u QPs leaves %u B on a QP; each QP's part needs "
        "at least %u B (the test signature every packet carries): a larger size or fewer qps_per_pair",
        s.size_bytes(), s.ranks(), s.smallest_transfer(), qps_per_pair, least, kMinPayload));
  }
  Cell c(s);
  c.qps_ = qps_per_pair;
  c.message_ = message;
  c.pmtu_ = pmtu;
  const uint32_t n = s.ranks();
  std::set<uint64_t> lengths;
  std::vector<Transfer> sends;
  c.first_qp_of_rank_.reserve(n + 1);
  for (uint32_t r = 0; r < n; ++r) {
    c.first_qp_of_rank_.push_back(static_cast<uint32_t>(c.qps_list_.size()));
    const std::vector<uint32_t> peers = s.Peers(r);
    const size_t first = c.qps_list_.size();
    for (uint32_t p : peers) {
      for (uint32_t q = 0; q < qps_per_pair; ++q) c.qps_list_.push_back(Qp{r, p, q, {}, 0});
    }
    // Peers are ascending, so pair (r, p)'s QPs start at first + its rank among them x Q.
    for (uint32_t k = 0; k < s.steps(); ++k) {
      sends.clear();
      s.Sends(r, k, sends);
      for (const Transfer& t : sends) {
        const size_t at = static_cast<size_t>(std::lower_bound(peers.begin(), peers.end(), t.to) - peers.begin());
        for (uint32_t q = 0; q < qps_per_pair; ++q) {
          Qp& qp = c.qps_list_[first + at * qps_per_pair + q];
          Segment seg;
          seg.step = k;
          seg.bytes = QpShare(t.bytes, q, qps_per_pair);
          const std::vector<MessageRun> runs = CutMessages(seg.bytes, message, pmtu);
          for (const MessageRun& m : runs) lengths.insert(m.length);
          seg.packets = static_cast<uint32_t>(PacketsOf(runs, pmtu));
          seg.first_packet = qp.packets;
          seg.first_message = qp.messages;
          qp.packets += seg.packets;
          for (const MessageRun& m : runs) qp.messages += m.count;
          c.packets_ += seg.packets;
          qp.segments.push_back(seg);
        }
      }
    }
  }
  c.first_qp_of_rank_.push_back(static_cast<uint32_t>(c.qps_list_.size()));
  c.lengths_.assign(lengths.begin(), lengths.end());
  return c;
}

std::optional<uint32_t> Cell::QpIndex(uint32_t from, uint32_t to, uint32_t q) const {
  if (from >= schedule_.ranks() || q >= qps_) return std::nullopt;
  const auto begin = qps_list_.begin() + first_qp_of_rank_[from];
  const auto end = qps_list_.begin() + first_qp_of_rank_[from + 1];
  const auto it = std::lower_bound(begin, end, to, [](const Qp& x, uint32_t v) { return x.to < v; });
  if (it == end || it->to != to) return std::nullopt;
  return static_cast<uint32_t>(it - qps_list_.begin()) + q;
}

PacketPlace Cell::Locate(uint32_t qp, uint64_t packet) const {
  const std::vector<Segment>& segs = qps_list_[qp].segments;
  // The last segment starting at or before the packet.
  const auto it = std::upper_bound(segs.begin(), segs.end(), packet,
                                   [](uint64_t p, const Segment& s) { return p < s.first_packet; }) - 1;
  PacketPlace at;
  at.segment = static_cast<uint32_t>(it - segs.begin());
  uint64_t off = packet - it->first_packet, message = it->first_message;
  for (const MessageRun& m : CutMessages(it->bytes, message_, pmtu_)) {
    const uint64_t per = PacketsOf(m.length, pmtu_);
    if (off < m.count * per) {
      at.message_length = m.length;
      at.message = message + off / per;
      at.pos = static_cast<uint32_t>(off % per);
      at.message_packets = static_cast<uint32_t>(per);
      return at;
    }
    off -= m.count * per;
    message += m.count;
  }
  return at;  // (past the segment's packets: not a packet of the QP)
}

uint32_t Cell::ArrivalsDue(uint32_t r, uint32_t k) const {
  std::vector<Transfer> in;
  schedule_.Receives(r, k, in);
  return static_cast<uint32_t>(in.size()) * qps_;
}

}  // namespace fg::collective
