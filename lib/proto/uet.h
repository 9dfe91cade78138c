// proto/uet.h: Ultra Ethernet Transport (UEC 1.0.x) PDS and SES headers.
//
// Layouts follow shared/reference/uet.md (where Wireshark's packet-uet.c, the
// UEC reference provider and other public sources agree). Points the sources
// dispute are settings of UetProfile, never constants. All fields big-endian.
//
//   uint8_t pds[16];
//   fg::proto::uet::PdsHeader h{.type = fg::proto::uet::PdsType::kRudReq,
//                               .next_hdr = fg::proto::uet::NextHdr::kReqStd,
//                               .flags = fg::proto::uet::kReqRetx | fg::proto::uet::kReqAr, .psn = 7};
//   size_t n = fg::proto::uet::WritePds(pds, h, profile);    // 12; prologue 0x1198
//   auto back = fg::proto::uet::ParsePds(std::span(pds, n), profile);
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "absl/status/statusor.h"

namespace fg::proto::uet {

inline constexpr uint16_t kUdpPort = 4793;

enum class PdsType : uint8_t {
  kTss = 1,
  kRudReq = 2,
  kRodReq = 3,
  kRudiReq = 4,
  kRudiResp = 5,
  kUudReq = 6,
  kAck = 7,
  kAckCc = 8,
  kAckCcx = 9,
  kNack = 10,
  kCp = 11,
  kNackCcx = 12,
  kRudCcReq = 13,
  kRodCcReq = 14,
};
enum class NextHdr : uint8_t {
  kNone = 0,
  kReqSmall = 1,
  kReqMedium = 2,
  kReqStd = 3,
  kResponse = 4,
  kResponseData = 5,
  kResponseDataSmall = 6,
};
enum class CtlType : uint8_t {
  kNoop = 0,
  kReqAck = 1,
  kClear = 2,
  kReqClear = 3,
  kClose = 4,
  kReqClose = 5,
  kProbe = 6,
  kCredit = 7,
  kCreditReq = 8,
};
// NACK codes (uet.md).
enum class NackCode : uint8_t {
  kTrimmed = 0x01,
  kTrimmedLastHop = 0x02,
  kNoPdcAvail = 0x04,
  kNoCccAvail = 0x05,
  kNoBitmap = 0x06,
  kNoPktBuffer = 0x07,
  kNoGtdDelAvail = 0x08,
  kNoSesMsgAvail = 0x09,
  kNoResource = 0x0A,
  kPsnOorWindow = 0x0B,
  kRodOoo = 0x0D,
  kInvDpdcid = 0x0E,
  kPdcHdrMismatch = 0x0F,
  kClosing = 0x10,
  kClosingInErr = 0x11,
  kPktNotRcvd = 0x12,
  kGtdRespUnavail = 0x13,
  kAckWithData = 0x14,
  kInvalidSyn = 0x15,
  kPdcModeMismatch = 0x16,
  kNewStartPsn = 0x17,
  kRcvdSesProcg = 0x18,
  kUnexpEvent = 0x19,
  kRcvrInferLoss = 0x1A,
};
inline constexpr NackCode kAllNackCodes[] = {
    NackCode::kTrimmed,        NackCode::kTrimmedLastHop, NackCode::kNoPdcAvail,    NackCode::kNoCccAvail,
    NackCode::kNoBitmap,       NackCode::kNoPktBuffer,    NackCode::kNoGtdDelAvail, NackCode::kNoSesMsgAvail,
    NackCode::kNoResource,     NackCode::kPsnOorWindow,   NackCode::kRodOoo,        NackCode::kInvDpdcid,
    NackCode::kPdcHdrMismatch, NackCode::kClosing,        NackCode::kClosingInErr,  NackCode::kPktNotRcvd,
    NackCode::kGtdRespUnavail, NackCode::kAckWithData,    NackCode::kInvalidSyn,    NackCode::kPdcModeMismatch,
    NackCode::kNewStartPsn,    NackCode::kRcvdSesProcg,   NackCode::kUnexpEvent,    NackCode::kRcvrInferLoss,
};
const char* NackCodeName(NackCode c);

// Flags (values inside the 7-bit field).
inline constexpr uint8_t kReqRetx = 0x10, kReqAr = 0x08, kReqSyn = 0x04;
inline constexpr uint8_t kAckM = 0x20, kAckRetx = 0x10, kAckP = 0x08;  // REQ in bits 1:0
inline constexpr uint8_t kNackM = 0x20, kNackRetx = 0x10, kNackNt = 0x08;
inline constexpr uint8_t kCpRetx = 0x10, kCpAr = 0x08, kCpSyn = 0x04;
inline constexpr uint8_t kRudiM = 0x20, kRudiRetx = 0x10;

// The points public sources disagree on, plus deployment settings.
struct UetProfile {
  uint32_t ack_ccx_len = 40;                 // ACK_CCX header bytes (40 by the majority)
  uint32_t nack_ccx_len = 32;                // NACK_CCX header bytes
  uint16_t use_rsv_pdc_bit = 0x8000;         // where use_rsv_pdc sits in pdc_info (0x8000 or 0x1000)
  uint8_t cp_flag_0x20_is_rod = true;        // CP flag 0x20 = isROD (disputed)
  bool small_req_has_message_id = false;     // small request 16-bit field: request_length (false) or message_id
  uint32_t resp_data_payload_len_bits = 14;  // RESPONSE_DATA payload_length width (14 or 12)
  // RESPONSE_DATA_SMALL length: 12 by uet.md; Wireshark decodes its first 4
  // bytes (list/opcode, version/return code, payload length) only.
  uint32_t resp_data_small_len = 12;
  uint16_t udp_port = kUdpPort;
  uint8_t native_ip_protocol = 253;  // native-IP mode (no UDP): experimental protocol number
  bool udp_checksum = false;         // zero or computed
  // Trimming (DSCP only; the spec fixes no numbers).
  uint8_t dscp_trimmable = 10;
  uint8_t dscp_trimmed = 11;
  uint8_t dscp_trimmed_lasthop = 12;
  uint8_t dscp_control = 48;
  uint32_t trim_size = 24;  // bytes of IP payload kept: UDP 8 + PDS 16
};

inline uint16_t Prologue(PdsType type, uint8_t next_or_ctl, uint8_t flags) {
  return static_cast<uint16_t>(static_cast<uint8_t>(type) << 11 | (next_or_ctl & 0x0F) << 7 | (flags & 0x7F));
}

// One struct for every PDS type; each type uses the fields its layout has.
struct PdsHeader {
  PdsType type = PdsType::kRudReq;
  NextHdr next_hdr = NextHdr::kNone;  // data packets
  CtlType ctl_type = CtlType::kNoop;  // CP packets (in the next_hdr bits)
  uint8_t flags = 0;
  // Requests (RUD/ROD[/CC]) and CP.
  int16_t clear_psn_offset = 0;  // requests
  uint16_t probe_opaque = 0;     // CP
  uint32_t psn = 0;              // requests, CP; RUDI pkt_id
  uint16_t spdcid = 0;
  uint16_t dpdcid = 0;         // SYN = 0
  uint8_t pdc_info = 0;        // SYN = 1: 4 bits
  uint16_t psn_offset = 0;     // SYN = 1: 12 bits (Start_PSN = PSN - psn_offset)
  uint8_t ccc_id = 0;          // _CC requests
  uint32_t credit_target = 0;  // _CC requests, 24 bits
  uint32_t cp_payload = 0;     // CP
  // ACK family.
  int16_t ack_psn_offset = 0;
  uint32_t cack_psn = 0;
  uint8_t cc_type = 0;   // 4 bits (ccx_type for ACK_CCX)
  uint8_t cc_flags = 0;  // 4 bits
  uint8_t mpr = 0;
  uint16_t sack_psn_offset = 0;
  uint64_t sack_bitmap = 0;
  uint64_t ack_cc_state = 0;  // ACK_CC: see PackNsccState / PackCreditState
  uint8_t ack_ccx_state[16] = {};
  // NACK.
  NackCode nack_code = NackCode::kTrimmed;
  uint8_t vendor_code = 0;
  uint32_t nack_psn = 0;
  uint32_t nack_payload = 0;
  uint8_t nccx_type = 0;  // NACK_CCX: 4 bits, then 124 bits of state
  uint8_t nccx_state[16] = {};
};

// Header length of a PDS type under a profile (TSS: 12 without SSI).
size_t PdsLen(PdsType type, const UetProfile& profile);
size_t WritePds(uint8_t* p, const PdsHeader& h, const UetProfile& profile);
std::optional<PdsHeader> ParsePds(std::span<const uint8_t> b, const UetProfile& profile);

// ACK_CC state words.
uint64_t PackNsccState(uint16_t service_time, bool restore_cwnd, uint8_t rcv_cwnd_pend, uint32_t rcvd_bytes_256,
                       uint16_t ooo_count);
uint64_t PackCreditState(uint32_t credit, uint16_t ooo_count);

// SES request opcodes and response opcodes.
enum class SesOpcode : uint8_t {
  kNoOp = 0,
  kWrite = 1,
  kRead = 2,
  kAtomic = 3,
  kFetchingAtomic = 4,
  kSend = 5,
  kRendezvousSend = 6,
  kDatagramSend = 7,
  kDeferrableSend = 8,
  kTaggedSend = 9,
  kRendezvousTsend = 0x0A,
  kDeferrableTsend = 0x0B,
  kDeferrableRtr = 0x0C,
  kTsendAtomic = 0x0D,
  kTsendFetchAtomic = 0x0E,
  kMsgError = 0x0F,
};
enum class SesRespOpcode : uint8_t { kDefault = 0, kResponse = 1, kResponseWithData = 2, kNoResponse = 3 };
inline constexpr uint8_t kSesDc = 0x20, kSesIe = 0x10, kSesRel = 0x08, kSesHd = 0x04, kSesEom = 0x02, kSesSom = 0x01;
inline constexpr size_t kSesStdLen = 44, kSesSmallLen = 20, kSesMediumLen = 32;
inline constexpr size_t kSesResponseLen = 12, kSesResponseDataLen = 20, kSesResponseDataSmallLen = 12;

struct SesRequest {
  NextHdr format = NextHdr::kReqStd;  // kReqStd, kReqSmall or kReqMedium
  SesOpcode opcode = SesOpcode::kWrite;
  uint8_t version = 0;
  uint8_t flags = kSesSom | kSesEom;
  uint16_t message_id = 0;        // standard (and small when the profile says so)
  uint16_t request_length14 = 0;  // small/medium: 14-bit request length
  uint8_t ri_generation = 0;
  uint32_t job_id = 0;          // 24 bits
  uint16_t pid_on_fep = 0;      // 12 bits
  uint16_t resource_index = 0;  // 12 bits
  uint64_t buffer_offset = 0;
  uint32_t initiator = 0;
  uint64_t match_bits = 0;      // memory key or match bits
  uint64_t header_data = 0;     // standard with SOM=1; medium
  uint16_t payload_length = 0;  // standard with SOM=0: 14 bits
  uint32_t message_offset = 0;  // standard with SOM=0
  uint32_t request_length = 0;  // standard
};

struct SesResponse {
  NextHdr format = NextHdr::kResponse;  // kResponse, kResponseData, kResponseDataSmall
  uint8_t list = 0;                     // 2 bits
  SesRespOpcode opcode = SesRespOpcode::kResponse;
  uint8_t version = 0;
  uint8_t return_code = 0;  // 6 bits
  uint16_t message_id = 0;
  uint8_t ri_generation = 0;
  uint32_t job_id = 0;
  uint32_t modified_length = 0;          // RESPONSE
  uint16_t payload_length = 0;           // RESPONSE_DATA(_SMALL), profile width
  uint32_t message_offset = 0;           // RESPONSE_DATA
  uint32_t read_request_message_id = 0;  // RESPONSE_DATA: original message id (low 16 bits used)
};

size_t SesLen(NextHdr format, const UetProfile& profile);  // 0 for kNone
size_t WriteSesRequest(uint8_t* p, const SesRequest& r, const UetProfile& profile);
size_t WriteSesResponse(uint8_t* p, const SesResponse& r, const UetProfile& profile);
std::optional<SesRequest> ParseSesRequest(std::span<const uint8_t> b, NextHdr format, const UetProfile& profile);
std::optional<SesResponse> ParseSesResponse(std::span<const uint8_t> b, NextHdr format, const UetProfile& profile);

// Native-IP mode entropy header (4 bytes: entropy, reserved).
inline constexpr size_t kEntropyHeaderLen = 4;
size_t WriteEntropyHeader(uint8_t* p, uint16_t entropy);

// A message of `size` bytes cut into packets of at most `max_payload` bytes:
// SOM on the first, EOM on the last, message offset per packet.
struct UetMessagePlan {
  uint64_t size = 0;
  uint32_t max_payload = 0;
  uint32_t packets = 0;
  uint32_t payload(uint32_t i) const {
    return i + 1 < packets ? max_payload : static_cast<uint32_t>(size - uint64_t{i} * max_payload);
  }
  uint8_t som_eom(uint32_t i) const {
    return static_cast<uint8_t>((i == 0 ? kSesSom : 0) | (i + 1 == packets ? kSesEom : 0));
  }
  uint64_t offset(uint32_t i) const { return uint64_t{i} * max_payload; }
};
absl::StatusOr<UetMessagePlan> PlanUetMessage(uint64_t size, uint32_t max_payload);

}  // namespace fg::proto::uet
