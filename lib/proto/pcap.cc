#include "proto/pcap.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_format.h"

namespace fg::proto {
namespace {

absl::Status Errno(const std::string& what) {
  return absl::InternalError(absl::StrFormat("%s: %s", what, std::strerror(errno)));
}

bool Put32(std::FILE* f, uint32_t v) { return std::fwrite(&v, 4, 1, f) == 1; }  // host order, per pcap
bool Put16(std::FILE* f, uint16_t v) { return std::fwrite(&v, 2, 1, f) == 1; }

}  // namespace

absl::StatusOr<PcapWriter> PcapWriter::Open(const std::string& path, uint32_t snaplen) {
  PcapWriter w;
  w.path_ = path;
  w.tmp_ = absl::StrFormat("%s.tmp-%d", path, getpid());
  w.snaplen_ = snaplen;
  w.f_ = std::fopen(w.tmp_.c_str(), "wb");
  if (w.f_ == nullptr) return Errno(absl::StrFormat("%s: cannot create", w.tmp_));
  const bool ok = Put32(w.f_, kPcapMagicNs) && Put16(w.f_, 2) && Put16(w.f_, 4) && Put32(w.f_, 0) && Put32(w.f_, 0) &&
                  Put32(w.f_, snaplen) && Put32(w.f_, kLinkTypeEthernet);
  if (!ok) return Errno(absl::StrFormat("%s: write", w.tmp_));
  return w;
}

PcapWriter::PcapWriter(PcapWriter&& o) noexcept { *this = std::move(o); }

PcapWriter& PcapWriter::operator=(PcapWriter&& o) noexcept {
  std::swap(f_, o.f_);
  std::swap(path_, o.path_);
  std::swap(tmp_, o.tmp_);
  snaplen_ = o.snaplen_;
  records_ = o.records_;
  return *this;
}

PcapWriter::~PcapWriter() {
  if (f_ != nullptr) {
    std::fclose(f_);
    std::remove(tmp_.c_str());
  }
}

absl::Status PcapWriter::Write(std::span<const uint8_t> frame, uint64_t ts_ns) {
  const uint32_t caplen = std::min<uint32_t>(static_cast<uint32_t>(frame.size()), snaplen_);
  const bool ok = Put32(f_, static_cast<uint32_t>(ts_ns / 1'000'000'000)) &&
                  Put32(f_, static_cast<uint32_t>(ts_ns % 1'000'000'000)) && Put32(f_, caplen) &&
                  Put32(f_, static_cast<uint32_t>(frame.size())) && std::fwrite(frame.data(), 1, caplen, f_) == caplen;
  if (!ok) return Errno(absl::StrFormat("%s: write", tmp_));
  ++records_;
  return absl::OkStatus();
}

absl::Status PcapWriter::Close() {
  if (f_ == nullptr) return absl::OkStatus();
  const bool flushed = std::fflush(f_) == 0 && fsync(fileno(f_)) == 0;
  const bool closed = std::fclose(f_) == 0;
  f_ = nullptr;
  if (!flushed || !closed) {
    std::remove(tmp_.c_str());
    return Errno(absl::StrFormat("%s: flush", tmp_));
  }
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    std::remove(tmp_.c_str());
    return Errno(absl::StrFormat("%s: rename", path_));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<PcapRecord>> ReadPcap(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return Errno(absl::StrFormat("%s: cannot open", path));
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> closer(f, std::fclose);
  uint32_t hdr[6];
  if (std::fread(hdr, 4, 6, f) != 6) return absl::InvalidArgumentError(path + ": not a pcap file (short header)");
  bool swap = false, ns = false;
  switch (hdr[0]) {
    case kPcapMagicNs: ns = true; break;
    case kPcapMagicUs: break;
    case __builtin_bswap32(kPcapMagicNs): ns = swap = true; break;
    case __builtin_bswap32(kPcapMagicUs): swap = true; break;
    default: return absl::InvalidArgumentError(absl::StrFormat("%s: not a pcap file (magic 0x%08x)", path, hdr[0]));
  }
  auto fix = [swap](uint32_t v) { return swap ? __builtin_bswap32(v) : v; };
  if (fix(hdr[5]) != kLinkTypeEthernet) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: link type %d, not Ethernet", path, fix(hdr[5])));
  }
  std::vector<PcapRecord> out;
  uint32_t rec[4];
  while (std::fread(rec, 4, 4, f) == 4) {
    PcapRecord r;
    const uint32_t caplen = fix(rec[2]);
    if (caplen > 262144) return absl::InvalidArgumentError(absl::StrFormat("%s: record %d too long", path, out.size()));
    r.ts_ns = uint64_t{fix(rec[0])} * 1'000'000'000 + uint64_t{fix(rec[1])} * (ns ? 1 : 1000);
    r.orig_len = fix(rec[3]);
    r.data.resize(caplen);
    if (std::fread(r.data.data(), 1, caplen, f) != caplen) {
      return absl::InvalidArgumentError(absl::StrFormat("%s: record %d truncated", path, out.size()));
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace fg::proto
