#include "collective/schedule.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace fg::collective {

std::string_view OpName(Op op) {
  switch (op) {
    case Op::kAllReduce: return "allreduce";
    case Op::kAllGather: return "allgather";
    case Op::kReduceScatter: return "reducescatter";
    case Op::kAllToAll: return "alltoall";
  }
  return "?";
}

std::string_view AlgorithmName(Algorithm a) {
  switch (a) {
    case Algorithm::kRing: return "ring";
    case Algorithm::kHalvingDoubling: return "halving_doubling";
    case Algorithm::kParallel: return "parallel";
    case Algorithm::kPairwise: return "pairwise";
  }
  return "?";
}

std::string_view NcclName(Op op) {
  switch (op) {
    case Op::kAllReduce: return "all_reduce";
    case Op::kAllGather: return "all_gather";
    case Op::kReduceScatter: return "reduce_scatter";
    case Op::kAllToAll: return "alltoall";
  }
  return "?";
}

std::string_view RedOp(Op op) { return op == Op::kAllReduce || op == Op::kReduceScatter ? "sum" : "none"; }

Schedule::Schedule(Op op, Algorithm a, uint32_t n, uint64_t size)
    : op_(op), algorithm_(a), n_(n), size_(size), base_(size / n), rem_(static_cast<uint32_t>(size % n)) {
  while ((1u << log2n_) < n) ++log2n_;
  switch (a) {
    case Algorithm::kRing: steps_ = op == Op::kAllReduce ? 2 * (n - 1) : n - 1; break;
    case Algorithm::kHalvingDoubling: steps_ = 2 * log2n_; break;
    case Algorithm::kParallel: steps_ = 1; break;
    case Algorithm::kPairwise: steps_ = n - 1; break;
  }
}

absl::StatusOr<Schedule> Schedule::Make(Op op, Algorithm a, uint32_t ranks, uint64_t size_bytes) {
  if (ranks < 2) return absl::InvalidArgumentError(absl::StrFormat("a collective needs 2 ranks or more, not %u", ranks));
  const bool alltoall = op == Op::kAllToAll;
  const bool allowed = alltoall ? (a == Algorithm::kParallel || a == Algorithm::kPairwise)
                                : (a == Algorithm::kRing || (a == Algorithm::kHalvingDoubling && op == Op::kAllReduce));
  if (!allowed) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s has no algorithm '%s'; it has %s", OpName(op), AlgorithmName(a),
                        alltoall ? "parallel, pairwise" : op == Op::kAllReduce ? "ring, halving_doubling" : "ring"));
  }
  if (a == Algorithm::kHalvingDoubling && (ranks & (ranks - 1)) != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("halving_doubling needs a power of two of ranks (its partners are r xor 2^k), not %u", ranks));
  }
  if (size_bytes < ranks) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%u B over %u ranks leaves a chunk with no byte; the size is at least the number of ranks", size_bytes, ranks));
  }
  return Schedule(op, a, ranks, size_bytes);
}

double Schedule::bus_factor() const {
  const double n = n_;
  return op_ == Op::kAllReduce ? 2.0 * (n - 1) / n : (n - 1) / n;
}

uint64_t Schedule::wire_bytes() const { return (op_ == Op::kAllReduce ? 2 : 1) * uint64_t{n_ - 1} * size_; }

uint64_t Schedule::ClassBytes(uint32_t m, uint32_t c) const {
  const uint64_t count = n_ / m;  // n is a power of two, m one no greater
  const uint64_t longer = rem_ > c ? (rem_ - 1 - c) / m + 1 : 0;
  return count * base_ + longer;
}

Transfer Schedule::RingLikeSend(uint32_t r, uint32_t k) const {
  const uint32_t n = n_;
  auto mod = [n](int64_t x) { return static_cast<uint32_t>(((x % n) + n) % n); };
  Transfer t;
  t.from = r;
  switch (algorithm_) {
    case Algorithm::kRing: {
      t.to = mod(int64_t{r} + 1);
      // Reduce-scatter sends chunk r-k-1 (its own first), so that rank r
      // ends holding the reduced chunk r; all-gather then sends chunk r-k'.
      uint32_t c;
      if (op_ == Op::kAllGather) {
        c = mod(int64_t{r} - k);
      } else if (op_ == Op::kReduceScatter || k < n - 1) {
        c = mod(int64_t{r} - k - 1);
      } else {
        c = mod(int64_t{r} - (k - (n - 1)));
      }
      t.bytes = chunk(c);
      t.m = n;
      t.first = c;
      break;
    }
    case Algorithm::kPairwise:
      t.to = mod(int64_t{r} + k + 1);
      t.bytes = chunk(t.to);  // block j is what every rank sends rank j
      t.m = n;
      t.first = t.to;
      break;
    case Algorithm::kHalvingDoubling: {
      // Reduce-scatter step k: r holds the chunks j = r (mod 2^k) and sends
      // its partner r ^ 2^k the half it keeps (j = partner mod 2^(k+1)).
      // All-gather mirrors it: step L + i uses bit L-1-i and sends what r holds.
      const bool gather = k >= log2n_;
      const uint32_t bit = gather ? log2n_ - 1 - (k - log2n_) : k;
      const uint32_t m = 2u << bit;
      t.to = r ^ (1u << bit);
      t.m = m;
      t.first = (gather ? r : t.to) % m;
      t.bytes = ClassBytes(m, t.first);
      break;
    }
    case Algorithm::kParallel: break;  // several transfers: Sends()
  }
  return t;
}

void Schedule::Sends(uint32_t r, uint32_t k, std::vector<Transfer>& out) const {
  if (algorithm_ != Algorithm::kParallel) {
    out.push_back(RingLikeSend(r, k));
    return;
  }
  for (uint32_t j = 0; j < n_; ++j) {
    if (j != r) out.push_back(Transfer{r, j, chunk(j), n_, j});
  }
}

void Schedule::Receives(uint32_t r, uint32_t k, std::vector<Transfer>& out) const {
  const uint32_t n = n_;
  switch (algorithm_) {
    case Algorithm::kRing: out.push_back(RingLikeSend((r + n - 1) % n, k)); return;
    case Algorithm::kPairwise: out.push_back(RingLikeSend((r + n - (k + 1) % n) % n, k)); return;
    case Algorithm::kHalvingDoubling: {
      const uint32_t bit = k >= log2n_ ? log2n_ - 1 - (k - log2n_) : k;
      out.push_back(RingLikeSend(r ^ (1u << bit), k));
      return;
    }
    case Algorithm::kParallel:
      for (uint32_t j = 0; j < n; ++j) {
        if (j != r) out.push_back(Transfer{j, r, chunk(r), n, r});
      }
      return;
  }
}

std::vector<uint32_t> Schedule::Peers(uint32_t r) const {
  std::vector<uint32_t> p;
  switch (algorithm_) {
    case Algorithm::kRing: p.push_back((r + 1) % n_); break;
    case Algorithm::kHalvingDoubling:
      for (uint32_t b = 0; b < log2n_; ++b) p.push_back(r ^ (1u << b));
      break;
    case Algorithm::kParallel:
    case Algorithm::kPairwise:
      for (uint32_t j = 0; j < n_; ++j) {
        if (j != r) p.push_back(j);
      }
      break;
  }
  std::sort(p.begin(), p.end());
  return p;
}

uint64_t Schedule::smallest_transfer() const {
  // Every transfer is one chunk or a set of them, and some chunk has S / n
  // bytes (S % n < n).
  return base_;
}

}  // namespace fg::collective
