// stream/cell_frames.h: the frames of a collective cell's QPs (issue 28):
// each QP an RC WRITE flow between two ranks, its messages of the lengths
// the cell's cut gives (collective/cell.h), one Program per (sending port,
// receiving port, message length), switched at message boundaries while
// the QP's cursor (PSN, signature sequence) runs on.
//
// A QP's fixed fields: flow id first_flow_id + its index, destination QP
// kFirstQpKey + its index (what the responder and feedback know it by), the
// two ranks' addresses (the last 32 bits stamped per flow) and MACs (written
// by the sender after the stamp: no checksum or ICRC covers them).
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
  const MacAddr& dst_mac(uint32_t qp) const { return ranks_[cell_->qps()[qp].to].mac; }
  uint32_t flow_id(uint32_t qp) const { return first_flow_id_ + qp; }
  Cursor Start() const { return Cursor{}; }
  // Every frame of QP `qp` over one iteration, in the order sent (segments
  // in step order, each cut into its messages), stamped with TX time 0:
  // what `craft` writes and the tests decode.
  void ForEachFrame(uint32_t qp, const std::function<void(std::span<const uint8_t>)>& out) const;
  size_t programs() const { return programs_.size(); }

 private:
  size_t ProgramIndex(uint32_t qp, uint64_t length) const;
  const collective::Cell* cell_ = nullptr;
  std::vector<config::Rank> ranks_;
  uint32_t first_flow_id_ = 0;
  size_t nports_ = 0;
  std::vector<uint64_t> lengths_;  // the cell's message lengths, ascending
  std::vector<Program> programs_;  // [(from port x nports + to port) x lengths + length index]
};

}  // namespace fg::stream
