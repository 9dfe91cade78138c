// collective/cell.h: one cell of a collective test (op, algorithm, N ranks,
// S bytes) as its QPs carry it: which QPs exist, what each carries in each
// step, cut into RDMA WRITE messages and packets, and what each rank's
// barrier waits for in each step.
//
// A pair's transfer is split over its Q QPs (QpShare); a QP's part of a
// step (a Segment) is cut into messages of at most `message` bytes
// (CutMessages) and a message into packets of `pmtu` payload bytes, the last
// one shorter. Every packet carries the 16-byte test signature, so no packet
// has less than 16 B of payload: a message whose last packet would is sent
// as two (its bytes less 16, then 16), and a cell whose smallest QP part is
// under 16 B is refused.
//
//   auto s = fg::collective::Schedule::Make(Op::kAllReduce, Algorithm::kRing, 8, 64 << 20);
//   auto cell = fg::collective::Cell::Make(*s, /*qps_per_pair=*/2, /*message=*/65536, /*pmtu=*/1024);
//   for (const auto& qp : cell->qps()) ...   // 16 QPs, 14 segments each
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "collective/schedule.h"

namespace fg::collective {

// The least payload a packet carries: the test signature.
inline constexpr uint32_t kMinPayload = 16;
// The smallest `message` (ranks.message): a message split for its last
// packet keeps at least 48 B besides the 16 it gives up.
inline constexpr uint64_t kMinMessage = 64;

// `count` messages of `length` bytes.
struct MessageRun {
  uint64_t length = 0;
  uint64_t count = 0;
  bool operator==(const MessageRun&) const = default;
};

// `bytes` (>= kMinPayload) cut into messages of at most `message` bytes
// (>= kMinMessage) whose packets (pmtu payload, 256..4096) carry at least
// kMinPayload each, in the order sent: full messages, then the rest.
std::vector<MessageRun> CutMessages(uint64_t bytes, uint64_t message, uint32_t pmtu);
// Packets of a message of `length` bytes.
inline uint64_t PacketsOf(uint64_t length, uint32_t pmtu) { return (length + pmtu - 1) / pmtu; }
uint64_t PacketsOf(const std::vector<MessageRun>& runs, uint32_t pmtu);

// One QP's part of one step.
struct Segment {
  uint32_t step = 0;
  uint32_t packets = 0;
  uint64_t bytes = 0;
  uint64_t first_packet = 0;   // the QP's packet index where it starts (its PSN offset in the iteration)
  uint64_t first_message = 0;  // the QP's messages before it
};

// Where one packet of a QP's iteration sits: go-back-N's seek and the TX
// walking a released segment.
struct PacketPlace {
  uint32_t segment = 0;          // index into the QP's segments
  uint64_t message_length = 0;   // bytes of its message
  uint64_t message = 0;          // its message's index among the QP's messages
  uint32_t pos = 0;              // its index inside the message
  uint32_t message_packets = 0;  // packets of its message
};

struct Qp {
  uint32_t from = 0, to = 0, q = 0;
  std::vector<Segment> segments;  // in step order; steps where it carries nothing have none
  uint64_t packets = 0;           // over one iteration
  uint64_t messages = 0;          // over one iteration
};

class Cell {
 public:
  // Errors: a QP part under kMinPayload (naming the size, ranks and Q), a
  // message under kMinMessage, a pmtu not a power of two in 256..4096.
  static absl::StatusOr<Cell> Make(const Schedule& schedule, uint32_t qps_per_pair, uint64_t message, uint32_t pmtu);

  const Schedule& schedule() const { return schedule_; }
  uint32_t qps_per_pair() const { return qps_; }
  uint64_t message() const { return message_; }
  uint32_t pmtu() const { return pmtu_; }
  // Every QP, ordered by (from, to, q).
  const std::vector<Qp>& qps() const { return qps_list_; }
  // The index of QP q of pair (from, to); nullopt: the pair exchanges nothing.
  std::optional<uint32_t> QpIndex(uint32_t from, uint32_t to, uint32_t q) const;
  // Rank r's QPs (those it sends on): indices [first, second) into qps().
  std::pair<uint32_t, uint32_t> QpsFrom(uint32_t r) const { return {first_qp_of_rank_[r], first_qp_of_rank_[r + 1]}; }
  // Where packet `packet` (< qps()[qp].packets) of QP `qp` sits.
  PacketPlace Locate(uint32_t qp, uint64_t packet) const;
  // How many QP segments rank r receives in step k: what its barrier counts.
  uint32_t ArrivalsDue(uint32_t r, uint32_t k) const;
  // Packets and payload bytes of one iteration, all QPs together.
  uint64_t packets() const { return packets_; }
  uint64_t payload_bytes() const { return schedule_.wire_bytes(); }
  // Every distinct message length the cell sends, ascending (a packet
  // template per length).
  const std::vector<uint64_t>& message_lengths() const { return lengths_; }

 private:
  Cell(const Schedule& s) : schedule_(s) {}
  Schedule schedule_;
  uint32_t qps_ = 1;
  uint64_t message_ = 0;
  uint32_t pmtu_ = 0;
  std::vector<Qp> qps_list_;
  std::vector<uint32_t> first_qp_of_rank_;  // qps_list_ index of rank r's first QP (r + 1: the end)
  uint64_t packets_ = 0;
  std::vector<uint64_t> lengths_;
};

}  // namespace fg::collective
