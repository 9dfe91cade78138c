// collective/schedule.h: what every rank of a collective sends and receives,
// step by step (the draft's category 5; collectives.md "Schedules").
//
// A Schedule is generative: Sends(r, k) and Receives(r, k) compute rank r's
// transfers of step k from (op, algorithm, n, S) when asked, so a 1,024-rank
// ring AllReduce (2,046 steps) costs no table. S is nccl-tests' `size`: the
// buffer per rank for AllReduce and AllToAll, the total (all ranks' parts) for
// AllGather and ReduceScatter, so busbw = S / t x bus_factor() compares with
// a link's rate whatever the collective.
//
// The data is cut into n chunks, chunk i of S / n bytes plus one for the
// first S % n (AllToAll: block j, what each rank sends rank j), so every
// byte of S is in exactly one chunk and the bytes on the wire are exact:
// ring and halving-doubling AllReduce put 2(n-1)S on the wire in all,
// AllGather, ReduceScatter and AllToAll (n-1)S. A rank's step k+1 may start
// only when every transfer it receives in step k has arrived (the barrier).
//
//   auto s = fg::collective::Schedule::Make(Op::kAllReduce, Algorithm::kRing, 8, 64 << 20);
//   std::vector<fg::collective::Transfer> out;
//   for (uint32_t k = 0; k < s->steps(); ++k) s->Sends(/*rank=*/3, k, out);  // 14 sends to rank 4
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace fg::collective {

enum class Op : uint8_t { kAllReduce, kAllGather, kReduceScatter, kAllToAll };
// ring: AllReduce (reduce-scatter then all-gather), AllGather, ReduceScatter;
// halving_doubling: AllReduce with n a power of two; parallel and pairwise:
// AllToAll, every block at once or n-1 rounds (round k pairs r with r+k).
enum class Algorithm : uint8_t { kRing, kHalvingDoubling, kParallel, kPairwise };

std::string_view OpName(Op op);                // "allreduce", ...: the plan's and report's names
std::string_view AlgorithmName(Algorithm a);  // "ring", "halving_doubling", "parallel", "pairwise"
// nccl-tests' names of the table's columns: "all_reduce", "sum" (AllGather and AllToAll: "none").
std::string_view NcclName(Op op);
std::string_view RedOp(Op op);

// One rank's data to another in one step: the chunks j = first (mod m) of
// the data (ring and AllToAll: m = n, the one chunk or block `first`), so a
// test can follow every chunk from rank to rank.
struct Transfer {
  uint32_t from = 0, to = 0;
  uint64_t bytes = 0;
  uint32_t m = 0, first = 0;
  bool operator==(const Transfer&) const = default;
};

class Schedule {
 public:
  // Errors: n < 2, S < n (a chunk of no byte), an algorithm the op has not
  // (AllToAll is parallel or pairwise; the others ring; AllReduce also
  // halving_doubling, for n a power of two).
  static absl::StatusOr<Schedule> Make(Op op, Algorithm algorithm, uint32_t ranks, uint64_t size_bytes);

  Op op() const { return op_; }
  Algorithm algorithm() const { return algorithm_; }
  uint32_t ranks() const { return n_; }
  uint64_t size_bytes() const { return size_; }
  uint32_t steps() const { return steps_; }
  // nccl-tests' busbw factor: AllReduce 2(n-1)/n; the others (n-1)/n.
  double bus_factor() const;
  // Bytes all ranks put on the wire in one run of the collective (exact).
  uint64_t wire_bytes() const;

  // Rank r's transfers of step k, appended to `out` (sends: from == r;
  // receives: to == r).
  void Sends(uint32_t r, uint32_t k, std::vector<Transfer>& out) const;
  void Receives(uint32_t r, uint32_t k, std::vector<Transfer>& out) const;
  // The ranks r sends to in some step, ascending: the far ends of its QPs.
  std::vector<uint32_t> Peers(uint32_t r) const;
  // The smallest transfer of any step (what the QPs of a pair split).
  uint64_t smallest_transfer() const;

  // Chunk i's bytes: S / n, plus one for the first S % n.
  uint64_t chunk(uint32_t i) const { return base_ + (i < rem_ ? 1 : 0); }

 private:
  Schedule(Op op, Algorithm a, uint32_t n, uint64_t size);
  // Bytes of the chunks j with j % m == c (halving-doubling's halves).
  uint64_t ClassBytes(uint32_t m, uint32_t c) const;
  // Step k's one transfer out of r (every algorithm but parallel AllToAll).
  Transfer RingLikeSend(uint32_t r, uint32_t k) const;

  Op op_;
  Algorithm algorithm_;
  uint32_t n_;
  uint64_t size_;
  uint64_t base_;  // S / n
  uint32_t rem_;   // S % n
  uint32_t steps_;
  uint32_t log2n_ = 0;  // halving-doubling
};

// A pair's transfer split over its QPs: QP q of Q carries bytes / Q, plus
// one for the first bytes % Q (Keysight's "split evenly over Q flows").
inline uint64_t QpShare(uint64_t bytes, uint32_t q, uint32_t qps) {
  return bytes / qps + (q < bytes % qps ? 1 : 0);
}

}  // namespace fg::collective
