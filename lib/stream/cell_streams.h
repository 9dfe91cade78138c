// stream/cell_streams.h: a collective cell as the engine runs it (issue 28):
// the cell (collective/cell.h), its QPs' frames (cell_frames.h) and one
// CompiledStream per (sending port, receiving port) group of its QPs, each
// flow a QP: unpaced (a rank's NIC sends what its barrier released as fast
// as its port takes it), answered by the receiving port's responder (RC:
// ACKs and NAKs to the ranks' own addresses and MACs), its requester going
// back on a NAK or a timeout. The flows of one rank have one home (its
// barrier and its QPs on one lcore: engine/placement.h).
//
//   auto cs = fg::stream::CellStreams::Make(ranks, placed, std::move(*cell), /*first_flow_id=*/0);
//   auto streams = fg::stream::CellStreams::Streams(*cs, 0, "allreduce", 10'000'000'000);
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "collective/cell.h"
#include "config/ranks.h"
#include "stream/cell_frames.h"
#include "stream/stream.h"

namespace fg::stream {

// How the engine plays a cell: its iterations one after another, each after
// its compute time (every rank idle), communication starting `overlap` of it
// early.
struct CellPlay {
  uint32_t iterations = 1;                 // warm-up included
  int64_t timeout_ns = 10'000'000'000;     // an iteration not done this long after its start fails the cell
  int64_t straggler_rank = -1;             // a rank whose sends of every step start late (-1: none)
  int64_t straggler_delay_ns = 0;
  int64_t compute_ns = 0;                  // C: before each iteration's communication, every rank idle
  double overlap = 0;                      // the share of C the communication starts early (0..1)
};

struct CellStreams {
  config::RanksSpec ranks;
  collective::Cell cell;
  CellFrames frames;  // refers to `cell`: a CellStreams never moves (Make gives a shared one)
  uint32_t first_flow_id = 0;
  CellPlay play;

  // `placed`: the cell's ranks in cell order (rank i of the cell is
  // placed[i]: the plan's first N, or a job's rank_ids); flow ids and QP
  // numbers from first_flow_id on (cells of one trial take disjoint ones).
  static absl::StatusOr<std::shared_ptr<const CellStreams>> Make(const config::RanksSpec& ranks,
                                                                 const std::vector<config::Rank>& placed,
                                                                 collective::Cell cell, uint32_t first_flow_id,
                                                                 const CellPlay& play = {});
  uint32_t flows() const { return static_cast<uint32_t>(cell.qps().size()); }
  // The addresses of the CM MADs setting up the QP at `position` (ranks.connect:
  // cm, engine/connect.h): from its sending rank to its receiving rank (REQ,
  // RTU), or `back` (REP), each to its port's next hop where it has one.
  proto::Encap CmEncap(uint32_t position, bool back) const;
  // The engine's streams, one per pair of frames.pairs(): indices
  // first_index.., named "<name> <from port>-><to port>" (port indices), each
  // until `duration_ns` at most (the cell ends them when its iterations are done).
  static absl::StatusOr<std::vector<CompiledStream>> Streams(const std::shared_ptr<const CellStreams>& cs, uint32_t first_index,
                                             const std::string& name, int64_t duration_ns);

 private:
  explicit CellStreams(collective::Cell c) : cell(std::move(c)) {}
};

}  // namespace fg::stream
