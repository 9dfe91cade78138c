// stream/craft.h: write what streams would send into a pcap file.
//
// Every frame comes from Program::Emit, the code the TX lcore runs, in the
// order the TX lcore sends them: a stream's flows take turns, one packet each
// (flow 0, 1, ..., n-1, 0, ...), each flow with its own key, addresses and
// sequence. Timestamps are the scheduled send times at each stream's rate
// (packet i at i / pps), and the streams are merged in time order, as one TX
// queue would interleave them.
//
//   auto streams = fg::stream::Compile(plan, line_bps);
//   auto summary = fg::stream::CraftPcap(*streams, "out.pcap", /*packets_per_stream=*/0);
//   // 0: one message per flow of each stream, bounded by the stream's count
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "stream/stream.h"

namespace fg::stream {

// The most packets craft writes of one stream (--count, and the default of
// one message per flow).
inline constexpr uint64_t kMaxCraftPackets = 1'000'000;

struct CraftSummary {
  std::vector<uint64_t> packets;  // per stream
  uint64_t total = 0;
};

// `packets_per_stream` is 1..kMaxCraftPackets, or 0 for the default. When
// `interrupt` becomes true the capture is abandoned (nothing is written).
absl::StatusOr<CraftSummary> CraftPcap(const std::vector<CompiledStream>& streams, const std::string& path,
                                       uint64_t packets_per_stream, const std::atomic<bool>* interrupt = nullptr);

}  // namespace fg::stream
