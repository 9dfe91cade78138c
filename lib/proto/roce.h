// proto/roce.h: RoCEv2 transport headers, segmentation, CNP and ACK/NAK.
//
// Opcode values come from rdma-core's <infiniband/opcode.h>; this file adds
// what that header does not say: which extension headers each opcode carries
// (RETH, AETH, ImmDt, DETH, AtomicETH, AtomicAckETH), and CNP (0x81).
//
//   auto info = fg::proto::roce::Describe(0x06);         // RC WRITE_FIRST: RETH, payload
//   fg::proto::roce::MessagePlan m = fg::proto::roce::PlanMessage(
//       fg::proto::roce::Verb::kWrite, fg::proto::roce::Transport::kRc, 1 << 20, 4096);
//   // m.packets == 256; m.Kind(0) == first, m.Kind(255) == last
//   uint8_t bth[12];
//   fg::proto::roce::WriteBth(bth, {.opcode = 0x81, .becn = true, .dest_qp = 0xD2});
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "absl/status/statusor.h"

namespace fg::proto::roce {

inline constexpr uint16_t kUdpPort = 4791;
inline constexpr uint8_t kOpcodeCnp = 0x81;
inline constexpr uint32_t kPsnMask = 0xFFFFFF;
inline constexpr size_t kBthLen = 12, kRethLen = 16, kAethLen = 4, kImmDtLen = 4, kDethLen = 8;
inline constexpr size_t kAtomicEthLen = 28, kAtomicAckEthLen = 8, kIcrcLen = 4;
inline constexpr size_t kCnpReservedLen = 16;

enum class Transport : uint8_t { kRc = 0x00, kUc = 0x20, kRd = 0x40, kUd = 0x60 };

struct OpcodeInfo {
  bool valid = false;
  const char* name = "?";
  bool reth = false, aeth = false, immdt = false, deth = false, atomic_eth = false, atomic_ack_eth = false;
  bool payload = false;  // carries data
  constexpr size_t ext_len() const {
    return (reth ? kRethLen : 0) + (aeth ? kAethLen : 0) + (immdt ? kImmDtLen : 0) + (deth ? kDethLen : 0) +
           (atomic_eth ? kAtomicEthLen : 0) + (atomic_ack_eth ? kAtomicAckEthLen : 0);
  }
};

// Every RC, UC and UD opcode of roce.md, and CNP; RD is not described.
OpcodeInfo Describe(uint8_t opcode);
// Offset of the payload from the start of the BTH (BTH + extension headers),
// or -1 when the opcode carries no payload (or is unknown): one table load.
int PayloadOffset(uint8_t opcode);

struct Bth {
  uint8_t opcode = 0;
  bool solicited = false;
  bool migreq = false;
  uint8_t pad_count = 0;  // 2 bits
  uint8_t tver = 0;       // 4 bits
  uint16_t pkey = 0xFFFF;
  bool fecn = false;
  bool becn = false;
  uint32_t dest_qp = 0;  // 24 bits
  bool ack_req = false;
  uint32_t psn = 0;  // 24 bits
};
struct Reth {
  uint64_t va = 0;
  uint32_t rkey = 0;
  uint32_t dma_length = 0;
};
struct Aeth {
  uint8_t syndrome = 0;  // bits 6:5 = 00 ACK, 01 RNR NAK, 11 NAK; 4:0 credits / timer / NAK code
  uint32_t msn = 0;      // 24 bits
};
struct Deth {
  uint32_t qkey = 0;
  uint32_t src_qp = 0;  // 24 bits
};

enum class NakCode : uint8_t {
  kPsnSequenceError = 0,
  kInvalidRequest = 1,
  kRemoteAccessError = 2,
  kRemoteOperationalError = 3,
  kInvalidRdRequest = 4
};
inline uint8_t AckSyndrome(uint8_t credits) { return credits & 0x1F; }
inline uint8_t RnrNakSyndrome(uint8_t timer) { return 0x20 | (timer & 0x1F); }
inline uint8_t NakSyndrome(NakCode c) { return 0x60 | static_cast<uint8_t>(c); }

size_t WriteBth(uint8_t* p, const Bth& h);
size_t WriteReth(uint8_t* p, const Reth& h);
size_t WriteAeth(uint8_t* p, const Aeth& h);
size_t WriteDeth(uint8_t* p, const Deth& h);
std::optional<Bth> ParseBth(std::span<const uint8_t> b);
std::optional<Reth> ParseReth(std::span<const uint8_t> b);
std::optional<Aeth> ParseAeth(std::span<const uint8_t> b);
std::optional<Deth> ParseDeth(std::span<const uint8_t> b);

// Messages split into packets of at most the path MTU.
enum class Verb { kWrite, kWriteImm, kSend, kSendImm, kReadResponse };
const char* VerbName(Verb v);

struct Segment {
  uint8_t opcode = 0;
  uint32_t payload_len = 0;
  uint8_t pad = 0;  // bytes added to reach a multiple of 4 (BTH PadCnt)
  bool last = false;
};

// One message of `size` bytes over path MTU `pmtu`: its packet count and the
// (at most) four packet kinds it uses, so a 1 GiB message costs no memory.
struct MessagePlan {
  Verb verb = Verb::kWrite;
  Transport transport = Transport::kRc;
  uint64_t size = 0;
  uint32_t pmtu = 0;
  uint32_t packets = 0;
  Segment only, first, middle, last;
  // The kind of packet i of the message (0 <= i < packets).
  const Segment& Kind(uint32_t i) const {
    if (packets == 1) return only;
    if (i == 0) return first;
    return i + 1 == packets ? last : middle;
  }
};

// Errors: pmtu not one of 256..4096 (powers of two), size 0 or above 2^32 - 1
// (the RETH DMA length), a verb the transport lacks (UD: SEND only; UC: no READ).
absl::StatusOr<MessagePlan> PlanMessage(Verb verb, Transport transport, uint64_t size, uint32_t pmtu);

}  // namespace fg::proto::roce
