// proto/pcap.h: classic pcap files (nanosecond timestamps, Ethernet link type).
//
// The writer goes through report::AtomicFile: it fills "<path>.tmp-<pid>" and
// renames it over <path> on Close(), so a failed or interrupted run leaves no
// half-written capture (and no temporary file), and only a regular file is
// ever replaced (Open refuses a device, a FIFO or a directory).
//
//   auto w = fg::proto::PcapWriter::Open("out.pcap");
//   FG_RETURN_IF_ERROR(w->Write(frame_span, /*ts_ns=*/1234));
//   FG_RETURN_IF_ERROR(w->Close());
//   auto records = fg::proto::ReadPcap("out.pcap");   // frames and their ns timestamps
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "report/atomic_file.h"

namespace fg::proto {

inline constexpr uint32_t kPcapMagicNs = 0xA1B23C4D;
inline constexpr uint32_t kPcapMagicUs = 0xA1B2C3D4;
inline constexpr uint32_t kLinkTypeEthernet = 1;

class PcapWriter {
 public:
  static absl::StatusOr<PcapWriter> Open(const std::string& path, uint32_t snaplen = 65535);
  PcapWriter(PcapWriter&&) noexcept = default;
  PcapWriter& operator=(PcapWriter&&) noexcept = default;
  ~PcapWriter() = default;  // without Close(): the temporary file is removed

  // Writes one frame (without FCS); `ts_ns` since the epoch or since 0.
  absl::Status Write(std::span<const uint8_t> frame, uint64_t ts_ns);
  // A frame captured in part: `orig_len` bytes on the wire, `frame` of them kept.
  absl::Status Write(std::span<const uint8_t> frame, uint64_t ts_ns, uint32_t orig_len);
  absl::Status Close();
  uint64_t records() const { return records_; }

 private:
  explicit PcapWriter(report::AtomicFile file) : file_(std::move(file)) {}
  absl::Status Flush();

  report::AtomicFile file_;
  std::string buf_;  // written to file_ in blocks of kFlushBytes
  uint32_t snaplen_ = 65535;
  uint64_t records_ = 0;
  bool closed_ = false;
};

struct PcapRecord {
  uint64_t ts_ns = 0;
  uint32_t orig_len = 0;
  std::vector<uint8_t> data;
};

// Reads microsecond or nanosecond pcap files of either byte order.
absl::StatusOr<std::vector<PcapRecord>> ReadPcap(const std::string& path);
// The same from bytes in memory; `name` only appears in messages.
absl::StatusOr<std::vector<PcapRecord>> ParsePcap(std::span<const uint8_t> bytes, const std::string& name);

}  // namespace fg::proto
