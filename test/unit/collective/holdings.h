// What each rank holds of a collective's data, chunk by chunk, for the
// schedule and barrier tests: bit s of chunk[r][j] is set when rank s's part
// of chunk j is in what rank r holds (reduced or gathered); AllToAll: the
// sources of block r that reached rank r.
#pragma once

#include <cstdint>
#include <vector>

#include "collective/schedule.h"
#include "gtest/gtest.h"

namespace fg::collective::testing_holdings {

inline uint64_t Full(uint32_t n) { return n == 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1; }

struct Holdings {
  uint32_t n = 0;
  std::vector<std::vector<uint64_t>> chunk;  // [rank][chunk]

  // Before the first step: each rank its own part of every chunk (AllReduce,
  // ReduceScatter), of chunk r only (AllGather), of block r (AllToAll).
  static Holdings Initial(const Schedule& s) {
    const uint32_t n = s.ranks();
    Holdings h{n, std::vector<std::vector<uint64_t>>(n, std::vector<uint64_t>(n, 0))};
    for (uint32_t r = 0; r < n; ++r) {
      for (uint32_t j = 0; j < n; ++j) {
        const bool own_only = s.op() == Op::kAllGather || s.op() == Op::kAllToAll;
        h.chunk[r][j] = !own_only || j == r ? uint64_t{1} << r : 0;
      }
    }
    return h;
  }
  // Transfer t's chunks as its sender holds them in `from` arrive at t.to.
  void Receive(const Schedule& s, const Transfer& t, const Holdings& from) {
    uint64_t bytes = 0;
    for (uint32_t j = t.first; j < n; j += t.m) {
      bytes += s.chunk(j);
      if (s.op() == Op::kAllToAll) {
        EXPECT_EQ(j, t.to);  // block j of a rank goes to rank j
        chunk[t.to][t.to] |= uint64_t{1} << t.from;
      } else {
        EXPECT_NE(from.chunk[t.from][j], 0u) << "rank " << t.from << " sends chunk " << j << " it does not hold";
        chunk[t.to][j] |= from.chunk[t.from][j];
      }
    }
    EXPECT_EQ(bytes, t.bytes);
  }
  // What the collective defines once every step is done.
  void ExpectFinal(const Schedule& s) const {
    for (uint32_t r = 0; r < n; ++r) {
      for (uint32_t j = 0; j < n; ++j) {
        const uint64_t h = chunk[r][j];
        switch (s.op()) {
          case Op::kAllReduce: EXPECT_EQ(h, Full(n)) << r << " " << j; break;
          case Op::kReduceScatter:
            if (j == r) {
              EXPECT_EQ(h, Full(n)) << r;
            }
            break;
          case Op::kAllGather: EXPECT_EQ(h, uint64_t{1} << j) << r << " " << j; break;
          case Op::kAllToAll:
            if (j == r) {
              EXPECT_EQ(h, Full(n)) << r;
            }
            break;
        }
      }
    }
  }
};

}  // namespace fg::collective::testing_holdings
