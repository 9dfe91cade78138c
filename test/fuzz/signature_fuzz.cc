// Fuzz target: the RX path's walk from Ethernet to the test signature.
#include <cstddef>
#include <cstdint>

#include "proto/signature.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int off = fg::proto::FindSignatureOffset(data, size);
  if (off >= 0) {
    if (static_cast<size_t>(off) + fg::proto::kSignatureLen > size) __builtin_trap();
    if (fg::proto::Load16(data + off) != fg::proto::kSignatureMagic) __builtin_trap();
    fg::proto::ReadSignature(data + off);
  }
  fg::proto::SignatureParse native;
  native.uet_ip_protocol = 17;  // collides with UDP: UDP must win
  fg::proto::FindSignatureOffset(data, size, native);
  return 0;
}
