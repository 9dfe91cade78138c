#include "stream/cell_frames.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace fg::stream {

absl::StatusOr<CellFrames> CellFrames::Compile(const config::RanksSpec& ranks, const std::vector<config::Rank>& placed,
                                               const collective::Cell& cell, uint32_t first_flow_id) {
  const uint32_t n = cell.schedule().ranks();
  if (placed.size() < n) {
    return absl::InvalidArgumentError(absl::StrFormat("the cell has %u ranks, the plan %u", n, placed.size()));
  }
  if (uint64_t{first_flow_id} + cell.qps().size() > (1u << 24) ||
      uint64_t{kFirstQpKey} + first_flow_id + cell.qps().size() > (1u << 24)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%u QPs pass the 24-bit flow id and QP number (16,777,216)", cell.qps().size()));
  }
  CellFrames f;
  f.cell_ = &cell;
  f.ranks_.assign(placed.begin(), placed.begin() + n);
  f.first_flow_id_ = first_flow_id;
  for (const config::Rank& r : f.ranks_) f.nports_ = std::max(f.nports_, r.port + 1);
  f.lengths_ = cell.message_lengths();
  // Flow order: by (from port, to port), then QP index.
  const uint32_t nqps = static_cast<uint32_t>(cell.qps().size());
  auto pair_of = [&](uint32_t qp) {
    return f.ranks_[cell.qps()[qp].from].port * f.nports_ + f.ranks_[cell.qps()[qp].to].port;
  };
  f.order_.resize(nqps);
  for (uint32_t q = 0; q < nqps; ++q) f.order_[q] = q;
  std::stable_sort(f.order_.begin(), f.order_.end(), [&](uint32_t x, uint32_t y) { return pair_of(x) < pair_of(y); });
  f.pos_of_.resize(nqps);
  f.dst_mac_.resize(nqps);
  f.answer_dst_mac_.resize(nqps);
  for (uint32_t q = 0; q < nqps; ++q) {
    const config::Rank& from = f.ranks_[cell.qps()[q].from];
    const config::Rank& to = f.ranks_[cell.qps()[q].to];
    f.dst_mac_[q] = config::RankNextHop(ranks, from, to);
    f.answer_dst_mac_[q] = config::RankNextHop(ranks, to, from);
  }
  std::vector<uint32_t> pair_first(f.nports_ * f.nports_, 0);
  for (uint32_t p = 0; p < nqps; ++p) {
    const uint32_t q = f.order_[p];
    f.pos_of_[q] = p;
    const size_t pr = pair_of(q);
    if (f.pairs_.empty() || f.pairs_.back().from_port * f.nports_ + f.pairs_.back().to_port != pr) {
      f.pairs_.push_back(Pair{pr / f.nports_, pr % f.nports_, p, 0});
      pair_first[pr] = p;
    }
    ++f.pairs_.back().count;
  }
  // A representative pair per (from port, to port): the addresses' upper
  // bits (IPv6's first 96) come from the template, the last 32 per flow.
  std::vector<const config::Rank*> first_on(f.nports_, nullptr);
  for (const config::Rank& r : f.ranks_) {
    if (first_on[r.port] == nullptr) first_on[r.port] = &r;
  }
  for (size_t a = 0; a < f.nports_; ++a) {
    for (size_t b = 0; b < f.nports_; ++b) {
      for (uint64_t len : f.lengths_) {
        config::Rank from, to;
        if (first_on[a] != nullptr) from = *first_on[a];
        if (first_on[b] != nullptr) to = *first_on[b];
        if (first_on[a] == nullptr || first_on[b] == nullptr) {  // no rank there: a placeholder, never used
          from = f.ranks_[0];
          to = f.ranks_[0];
        }
        config::FrameSpec spec = config::RankQpFrame(ranks, from, to);
        spec.roce.message = len;
        // The pair's first QP number and flow id: its group's stream counts its flows' keys from them.
        const uint32_t first = pair_first[a * f.nports_ + b];
        spec.roce.dest_qp = kFirstQpKey + first_flow_id + first;
        spec.vary_src_ip = true;
        spec.vary_dst_ip = true;
        auto p = Program::Compile(spec, first_flow_id + first);
        if (!p.ok()) return p.status();
        f.programs_.push_back(std::move(*p));
      }
    }
  }
  return f;
}

size_t CellFrames::ProgramIndex(uint32_t qp, uint64_t length) const {
  const collective::Qp& q = cell_->qps()[qp];
  const size_t li = static_cast<size_t>(std::lower_bound(lengths_.begin(), lengths_.end(), length) - lengths_.begin());
  return (ranks_[q.from].port * nports_ + ranks_[q.to].port) * lengths_.size() + li;
}

const Program& CellFrames::ProgramFor(uint32_t qp, uint64_t length) const { return programs_[ProgramIndex(qp, length)]; }

FlowVars CellFrames::VarsFor(uint32_t qp, uint64_t length) const {
  const collective::Qp& q = cell_->qps()[qp];
  return ProgramFor(qp, length).FlowWith(flow_id(qp), key(qp), qp, IpLow32(ranks_[q.from].ip), IpLow32(ranks_[q.to].ip));
}

uint64_t CellFrames::IterationBytes(uint32_t qp) const {
  uint64_t bytes = 0;
  for (const collective::Segment& seg : cell_->qps()[qp].segments) {
    for (const collective::MessageRun& m : collective::CutMessages(seg.bytes, cell_->message(), cell_->pmtu())) {
      const Program& p = ProgramFor(qp, m.length);
      bytes += m.count * p.BytesOfFirst(p.packets_per_message());
    }
  }
  return bytes;
}

void CellFrames::ForEachFrame(uint32_t qp, const std::function<void(std::span<const uint8_t>)>& out) const {
  const collective::Qp& q = cell_->qps()[qp];
  Cursor c = Start();
  std::vector<uint8_t> buf;
  const Program* last = nullptr;
  for (const collective::Segment& seg : q.segments) {
    for (const collective::MessageRun& m : collective::CutMessages(seg.bytes, cell_->message(), cell_->pmtu())) {
      const Program& p = ProgramFor(qp, m.length);
      const FlowVars v = VarsFor(qp, m.length);
      if (&p != last) {
        c.icrc_key = ~uint64_t{0};  // the cached ICRC share (the TX loop's fixed-shape stamps) is the last Program's
        last = &p;
      }
      buf.resize(p.buffer_len());
      for (uint64_t k = 0; k < m.count; ++k) {
        c.pos = 0;
        for (uint64_t i = 0, np = collective::PacketsOf(m.length, cell_->pmtu()); i < np; ++i) {
          const uint32_t len = p.Emit(buf.data(), c, 0, v);
          std::copy(src_mac(qp).bytes.begin(), src_mac(qp).bytes.end(), buf.begin() + 6);
          std::copy(dst_mac(qp).bytes.begin(), dst_mac(qp).bytes.end(), buf.begin());
          out(std::span<const uint8_t>(buf.data(), len));
        }
      }
    }
  }
}

}  // namespace fg::stream
