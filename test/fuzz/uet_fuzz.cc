// Fuzz target: UET PDS and SES parsers under varied profiles, plus a
// parse -> write -> parse round trip of every PDS header that parses.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "proto/uet.h"

namespace uet = fg::proto::uet;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  uet::UetProfile prof;
  prof.ack_ccx_len = (data[0] & 1) ? 48 : 40;
  prof.nack_ccx_len = (data[0] & 2) ? 40 : 32;
  prof.small_req_has_message_id = data[0] & 4;
  prof.resp_data_payload_len_bits = (data[0] & 8) ? 12 : 14;
  std::span<const uint8_t> b(data + 1, size - 1);
  if (auto h = uet::ParsePds(b, prof)) {
    uint8_t out[64];
    const size_t n = uet::WritePds(out, *h, prof);
    if (n != uet::PdsLen(h->type, prof)) __builtin_trap();
    auto again = uet::ParsePds(std::span<const uint8_t>(out, n), prof);
    if (!again || again->type != h->type || again->flags != h->flags || again->spdcid != h->spdcid) __builtin_trap();
    if (std::memcmp(out, b.data(), 2) != 0) __builtin_trap();  // the prologue survives
    b = b.subspan(n);
  }
  for (uint8_t f = 0; f <= 6; ++f) {
    uet::ParseSesRequest(b, static_cast<uet::NextHdr>(f), prof);
    uet::ParseSesResponse(b, static_cast<uet::NextHdr>(f), prof);
  }
  return 0;
}
