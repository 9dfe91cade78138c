#include "proto/signature.h"

#include "proto/udp_frame.h"

namespace fg::proto {

int FindSignatureOffset(const uint8_t* frame, size_t len) {
  size_t off = 12;
  if (len < off + 2) return -1;
  uint16_t type = Load16(frame + off);
  for (int tags = 0; tags < 2 && (type == kEtherTypeVlan || type == 0x88A8); ++tags) {
    off += 4;
    if (len < off + 2) return -1;
    type = Load16(frame + off);
  }
  off += 2;
  if (type != kEtherTypeIpv4 || len < off + 20) return -1;
  const uint8_t* ip = frame + off;
  const size_t ihl = (ip[0] & 0x0F) * 4u;
  if ((ip[0] >> 4) != 4 || ihl < 20 || ip[9] != kIpProtoUdp) return -1;
  if ((Load16(ip + 6) & 0x3FFF) != 0) return -1;  // a fragment (MF set or offset != 0)
  off += ihl + 8;
  if (len < off + kSignatureLen) return -1;
  if (Load16(frame + off) != kSignatureMagic) return -1;
  return static_cast<int>(off);
}

}  // namespace fg::proto
