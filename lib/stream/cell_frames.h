// stream/cell_frames.h: the frames of a collective cell's QPs (issue 28):
// each QP an RC WRITE flow between two ranks, its messages of the lengths
// the cell's cut gives (collective/cell.h), one Program per (sending port,
// receiving port, message length), switched at message boundaries while
// the QP's cursor (PSN, signature sequence) runs on.
//
// The QPs in flow order: grouped by (sending port, receiving port), within
// a group by QP index (a group is one stream of the engine's: cell_streams.h).
// A QP's fixed fields: flow id first_flow_id + its position in that order,
// destination QP kFirstQpKey + first_flow_id + its position (what the
// responder and feedback know it by: unique across the cells of a trial), the two ranks' addresses (the last 32 bits stamped per flow)
// and MACs (written by the sender after the stamp: no checksum or ICRC
// covers them).
//
//   auto frames = fg::stream::CellFrames::Compile(ranks, placed, cell, /*first_flow_id=*/0);
//   fg::stream::Cursor c = frames->Start(qp);
//   frames->ForEachFrame(qp, [&](std::span<const uint8_t> f) { ... });   // the QP's whole iteration
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "collective/cell.h"
#include "config/ranks.h"
#include "stream/program.h"

namespace fg::stream {

inline constexpr uint32_t kFirstQpKey = 0x100;

class CellFrames {
 public:
  // `placed`: PlaceRanks(ranks); the cell's ranks are its first N. The
  // CellFrames refers to `cell`, which must outlive it.
  static absl::StatusOr<CellFrames> Compile(const config::RanksSpec& ranks, const std::vector<config::Rank>& placed,
                                            const collective::Cell& cell, uint32_t first_flow_id);

  const collective::Cell& cell() const { return *cell_; }
  // The Program of QP `qp`'s messages of `length` bytes (a length the cell sends).
  const Program& ProgramFor(uint32_t qp, uint64_t length) const;
  // QP `qp`'s fixed fields under that Program.
  FlowVars VarsFor(uint32_t qp, uint64_t length) const;
  const MacAddr& src_mac(uint32_t qp) const { return ranks_[cell_->qps()[qp].from].mac; }
  // Where QP `qp`'s frames go: the destination rank, or the sending port's next hop (config::RankNextHop).
  const MacAddr& dst_mac(uint32_t qp) const { return dst_mac_[qp]; }
  // Where the answers to QP `qp` go: the sending rank, or the receiving port's next hop.
  const MacAddr& answer_dst_mac(uint32_t qp) const { return answer_dst_mac_[qp]; }
  const config::Rank& rank(uint32_t r) const { return ranks_[r]; }
  uint32_t flow_id(uint32_t qp) const { return first_flow_id_ + pos_of_[qp]; }
  uint32_t key(uint32_t qp) const { return kFirstQpKey + first_flow_id_ + pos_of_[qp]; }
  // QP `qp`'s place in flow order, and the QP at a place.
  uint32_t position(uint32_t qp) const { return pos_of_[qp]; }
  uint32_t qp_at(uint32_t position) const { return order_[position]; }
  // A group: the QPs from ranks on one port to ranks on another, at
  // positions [first, first + count).
  struct Pair {
    size_t from_port = 0, to_port = 0;
    uint32_t first = 0, count = 0;
  };
  const std::vector<Pair>& pairs() const { return pairs_; }
  Cursor Start() const { return Cursor{}; }
  // Every frame of QP `qp` over one iteration, in the order sent (segments
  // in step order, each cut into its messages), stamped with TX time 0:
  // what `craft` writes and the tests decode.
  void ForEachFrame(uint32_t qp, const std::function<void(std::span<const uint8_t>)>& out) const;
  // Frame bytes (FCS included) of QP `qp`'s iteration: what ForEachFrame
  // writes plus 4 B a frame, from the Programs' sizes (no frame made).
  uint64_t IterationBytes(uint32_t qp) const;
  size_t programs() const { return programs_.size(); }

 private:
  size_t ProgramIndex(uint32_t qp, uint64_t length) const;
  const collective::Cell* cell_ = nullptr;
  std::vector<config::Rank> ranks_;
  uint32_t first_flow_id_ = 0;
  size_t nports_ = 0;
  std::vector<uint64_t> lengths_;  // the cell's message lengths, ascending
  std::vector<Program> programs_;  // [(from port x nports + to port) x lengths + length index]
  std::vector<uint32_t> order_, pos_of_;
  std::vector<MacAddr> dst_mac_, answer_dst_mac_;  // by QP
  std::vector<Pair> pairs_;
};

}  // namespace fg::stream
