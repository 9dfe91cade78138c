#include "proto/pcap.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_format.h"

namespace fg::proto {
namespace {

absl::Status Errno(const std::string& what) {
  return absl::InternalError(absl::StrFormat("%s: %s", what, std::strerror(errno)));
}

constexpr size_t kFlushBytes = 1 << 20;

void Put32(std::string& b, uint32_t v) { b.append(reinterpret_cast<const char*>(&v), 4); }  // host order, per pcap
void Put16(std::string& b, uint16_t v) { b.append(reinterpret_cast<const char*>(&v), 2); }

}  // namespace

absl::StatusOr<PcapWriter> PcapWriter::Open(const std::string& path, uint32_t snaplen) {
  auto file = report::AtomicFile::Create(path);
  if (!file.ok()) return file.status();
  PcapWriter w(*std::move(file));
  w.snaplen_ = snaplen;
  Put32(w.buf_, kPcapMagicNs);
  Put16(w.buf_, 2);
  Put16(w.buf_, 4);
  Put32(w.buf_, 0);
  Put32(w.buf_, 0);
  Put32(w.buf_, snaplen);
  Put32(w.buf_, kLinkTypeEthernet);
  return w;
}

absl::Status PcapWriter::Flush() {
  absl::Status s = file_.Write(buf_);
  buf_.clear();
  return s;
}

absl::Status PcapWriter::Write(std::span<const uint8_t> frame, uint64_t ts_ns) {
  return Write(frame, ts_ns, static_cast<uint32_t>(frame.size()));
}

absl::Status PcapWriter::Write(std::span<const uint8_t> frame, uint64_t ts_ns, uint32_t orig_len) {
  if (closed_) return absl::FailedPreconditionError(absl::StrFormat("%s: already closed", file_.target()));
  const uint32_t caplen = std::min<uint32_t>(static_cast<uint32_t>(frame.size()), snaplen_);
  Put32(buf_, static_cast<uint32_t>(ts_ns / 1'000'000'000));
  Put32(buf_, static_cast<uint32_t>(ts_ns % 1'000'000'000));
  Put32(buf_, caplen);
  Put32(buf_, std::max(orig_len, caplen));
  buf_.append(reinterpret_cast<const char*>(frame.data()), caplen);
  ++records_;
  return buf_.size() >= kFlushBytes ? Flush() : absl::OkStatus();
}

absl::Status PcapWriter::Close() {
  if (closed_) return absl::OkStatus();
  closed_ = true;
  if (auto s = Flush(); !s.ok()) return s;
  return file_.Commit();
}

absl::StatusOr<std::vector<PcapRecord>> ReadPcap(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return Errno(absl::StrFormat("%s: cannot open", path));
  std::vector<uint8_t> bytes;
  uint8_t chunk[65536];
  size_t n;
  while ((n = std::fread(chunk, 1, sizeof chunk, f)) > 0) bytes.insert(bytes.end(), chunk, chunk + n);
  const bool err = std::ferror(f) != 0;
  std::fclose(f);
  if (err) return Errno(absl::StrFormat("%s: read", path));
  return ParsePcap(bytes, path);
}

absl::StatusOr<std::vector<PcapRecord>> ParsePcap(std::span<const uint8_t> b, const std::string& name) {
  auto u32 = [&](size_t at) {
    uint32_t v;
    std::memcpy(&v, b.data() + at, 4);
    return v;
  };
  if (b.size() < 24) return absl::InvalidArgumentError(name + ": not a pcap file (short header)");
  bool swap = false, ns = false;
  switch (u32(0)) {
    case kPcapMagicNs: ns = true; break;
    case kPcapMagicUs: break;
    case __builtin_bswap32(kPcapMagicNs): ns = swap = true; break;
    case __builtin_bswap32(kPcapMagicUs): swap = true; break;
    default: return absl::InvalidArgumentError(absl::StrFormat("%s: not a pcap file (magic 0x%08x)", name, u32(0)));
  }
  auto fix = [swap](uint32_t v) { return swap ? __builtin_bswap32(v) : v; };
  if (fix(u32(20)) != kLinkTypeEthernet) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: link type %d, not Ethernet", name, fix(u32(20))));
  }
  std::vector<PcapRecord> out;
  size_t at = 24;
  while (at + 16 <= b.size()) {
    PcapRecord r;
    const uint32_t caplen = fix(u32(at + 8));
    if (caplen > 262144) return absl::InvalidArgumentError(absl::StrFormat("%s: record %d too long", name, out.size()));
    const uint32_t frac = fix(u32(at + 4));
    r.ts_ns = uint64_t{fix(u32(at))} * 1'000'000'000 + uint64_t{frac} * (ns ? 1 : 1000);
    r.orig_len = fix(u32(at + 12));
    at += 16;
    if (b.size() - at < caplen) {
      return absl::InvalidArgumentError(absl::StrFormat("%s: record %d truncated", name, out.size()));
    }
    r.data.assign(b.begin() + at, b.begin() + at + caplen);
    at += caplen;
    out.push_back(std::move(r));
  }
  if (at != b.size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %d trailing bytes after record %d", name, b.size() - at, out.size()));
  }
  return out;
}

}  // namespace fg::proto
