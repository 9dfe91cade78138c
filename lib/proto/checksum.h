// proto/checksum.h: the Internet checksum (RFC 1071) and its incremental
// update (RFC 1624).
//
//   uint16_t c = fg::proto::InternetChecksum(ip_header, 20);  // store as-is (big-endian)
//   ok = fg::proto::InternetChecksum(ip_header, 20) == 0;     // over a header with its checksum
#pragma once

#include <cstddef>
#include <cstdint>

namespace fg::proto {

// One's-complement sum folded and complemented: the value to store in
// network order. Over data that includes a correct checksum it returns 0.
uint16_t InternetChecksum(const uint8_t* data, size_t len, uint32_t initial = 0);

}  // namespace fg::proto
