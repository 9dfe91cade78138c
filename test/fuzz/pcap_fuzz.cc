// Fuzz target: the pcap reader.
#include <cstddef>
#include <cstdint>
#include <span>

#include "proto/pcap.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto r = fg::proto::ParsePcap(std::span<const uint8_t>(data, size), "fuzz.pcap");
  if (r.ok()) {
    size_t total = 24;
    for (const auto& rec : *r) total += 16 + rec.data.size();
    if (total != size) __builtin_trap();
  }
  return 0;
}
