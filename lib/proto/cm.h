// proto/cm.h: InfiniBand Communication Management MADs (IBA vol. 1, ch. 12:
// REQ, REP, RTU) as RoCEv2 carries them: a UD SEND_ONLY to the General
// Service Interface (destination QP 1, from QP 1, Q_Key 0x80010000) whose
// payload is one 256-byte MAD (24-byte common header, management class 0x07,
// class version 2, method Send, then the CM message), with a valid ICRC.
//
//   fg::proto::cm::Message m{.attr = fg::proto::cm::kReq, .local_comm_id = 1, .local_qpn = 0x800100};
//   std::vector<uint8_t> frame = fg::proto::cm::BuildFrame(encap, m, /*psn=*/0);
//   std::optional<fg::proto::cm::Message> back = fg::proto::cm::Parse(frame);
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "proto/frame.h"

namespace fg::proto::cm {

inline constexpr uint32_t kGsiQp = 1;
inline constexpr uint32_t kGsiQkey = 0x80010000;
inline constexpr uint8_t kUdSendOnly = 0x64;
inline constexpr size_t kMadLen = 256, kMadHeaderLen = 24;
inline constexpr uint8_t kClassCm = 0x07, kClassVersion = 2, kMethodSend = 0x03;
// Attribute IDs (IBA 16.7.1 / 12.6).
inline constexpr uint16_t kReq = 0x0010, kRep = 0x0013, kRtu = 0x0014;

struct Message {
  uint16_t attr = kReq;
  uint64_t transaction_id = 0;
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;  // REP, RTU
  uint32_t local_qpn = 0;       // REQ: the requester's QP; REP: the responder's (24 bits)
  uint32_t start_psn = 0;       // REQ, REP (24 bits)
  uint64_t service_id = 0;      // REQ
  uint8_t pmtu_code = 3;        // REQ: path MTU, 1 = 256 .. 5 = 4096 (IBA MTU encoding)
  uint16_t pkey = 0xFFFF;       // REQ: the partition key
  uint64_t local_ca_guid = 0;   // REQ, REP
};

// IBA's encoding of a path MTU (256 -> 1 ... 4096 -> 5); 0 for another value.
uint8_t MtuCode(uint32_t pmtu);
// The EUI-64 a port's MAC gives (the CA GUID a RoCE NIC reports).
uint64_t GuidOfMac(const MacAddr& mac);

// The frame without FCS: `e`'s Ethernet and IP headers (UDP to 4791, its source
// port as given), BTH (UD SEND_ONLY, P_Key 0xFFFF, QP 1, `psn`), DETH, the MAD
// and the ICRC. REQ's primary path carries the addresses as GIDs (IPv4: the
// IPv4-mapped ::ffff:a.b.c.d) and the encap's DSCP and TTL.
std::vector<uint8_t> BuildFrame(const Encap& e, const Message& m, uint32_t psn);

// A CM REQ, REP or RTU MAD in a RoCEv2 frame (IPv4 or IPv6, one VLAN tag at
// most) to QP 1; nullopt for anything else (not checking the ICRC).
std::optional<Message> Parse(std::span<const uint8_t> frame);

}  // namespace fg::proto::cm
