#include "stream/craft.h"

#include <cmath>

#include "base/status.h"
#include "proto/pcap.h"

namespace fg::stream {

absl::StatusOr<CraftSummary> CraftPcap(const std::vector<CompiledStream>& streams, const std::string& path,
                                       uint64_t packets_per_stream) {
  CraftSummary summary;
  summary.packets.assign(streams.size(), 0);
  std::vector<uint64_t> want(streams.size());
  std::vector<Cursor> cursors;
  uint32_t max_len = 0;
  for (size_t i = 0; i < streams.size(); ++i) {
    const CompiledStream& s = streams[i];
    uint64_t n = packets_per_stream != 0 ? packets_per_stream : s.program.packets_per_message();
    if (s.count != 0) n = std::min(n, s.count);
    want[i] = n;
    cursors.push_back(s.program.Start());
    max_len = std::max(max_len, s.program.buffer_len());
  }
  FG_ASSIGN_OR_RETURN(proto::PcapWriter w, proto::PcapWriter::Open(path));
  std::vector<uint8_t> buf(max_len);
  auto when = [&](size_t i) {
    const CompiledStream& s = streams[i];
    const uint64_t k = summary.packets[i];
    if (s.burst_frames != 0) {  // bursts of back-to-back frames, one per period
      return static_cast<uint64_t>(k / s.burst_frames) * static_cast<uint64_t>(s.burst_period_ns) +
             static_cast<uint64_t>(std::llround(static_cast<double>(k % s.burst_frames) * s.burst_frame_ns));
    }
    return static_cast<uint64_t>(std::llround(static_cast<double>(k) * 1e9 / s.pps));
  };
  for (;;) {
    // The stream whose next packet is due first.
    size_t best = streams.size();
    uint64_t best_ns = 0;
    for (size_t i = 0; i < streams.size(); ++i) {
      if (summary.packets[i] >= want[i]) continue;
      const uint64_t t = when(i);
      if (best == streams.size() || t < best_ns) best = i, best_ns = t;
    }
    if (best == streams.size()) break;
    const uint32_t len = streams[best].program.Emit(buf.data(), cursors[best], best_ns);
    FG_RETURN_IF_ERROR(w.Write(std::span<const uint8_t>(buf.data(), len), best_ns));
    ++summary.packets[best];
    ++summary.total;
  }
  FG_RETURN_IF_ERROR(w.Close());
  return summary;
}

}  // namespace fg::stream
