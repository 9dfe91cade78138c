#include "proto/roce.h"

#include <infiniband/opcode.h>

#include <array>

#include "absl/strings/str_format.h"
#include "proto/bytes.h"

namespace fg::proto::roce {

namespace {

constexpr OpcodeInfo Build(uint8_t opcode) {
  OpcodeInfo i;
  if (opcode == kOpcodeCnp) {
    i.valid = true;
    i.name = "CNP";
    return i;
  }
  const uint8_t transport = opcode & 0xE0;
  const uint8_t op = opcode & 0x1F;
  if (transport == IBV_OPCODE_UD) {
    if (op == IBV_OPCODE_SEND_ONLY || op == IBV_OPCODE_SEND_ONLY_WITH_IMMEDIATE) {
      i.valid = true;
      i.deth = true;
      i.immdt = op == IBV_OPCODE_SEND_ONLY_WITH_IMMEDIATE;
      i.payload = true;
      i.name = i.immdt ? "UD SEND_ONLY_IMM" : "UD SEND_ONLY";
    }
    return i;
  }
  if (transport != IBV_OPCODE_RC && transport != IBV_OPCODE_UC) return i;
  const bool uc = transport == IBV_OPCODE_UC;
  struct Row {
    uint8_t op;
    const char* rc;
    const char* uc;
    bool reth, aeth, imm, payload, atomic, atomic_ack, uc_ok;
  };
  constexpr Row kRows[] = {
      {IBV_OPCODE_SEND_FIRST, "RC SEND_FIRST", "UC SEND_FIRST", false, false, false, true, false, false, true},
      {IBV_OPCODE_SEND_MIDDLE, "RC SEND_MIDDLE", "UC SEND_MIDDLE", false, false, false, true, false, false, true},
      {IBV_OPCODE_SEND_LAST, "RC SEND_LAST", "UC SEND_LAST", false, false, false, true, false, false, true},
      {IBV_OPCODE_SEND_LAST_WITH_IMMEDIATE, "RC SEND_LAST_IMM", "UC SEND_LAST_IMM", false, false, true, true, false,
       false, true},
      {IBV_OPCODE_SEND_ONLY, "RC SEND_ONLY", "UC SEND_ONLY", false, false, false, true, false, false, true},
      {IBV_OPCODE_SEND_ONLY_WITH_IMMEDIATE, "RC SEND_ONLY_IMM", "UC SEND_ONLY_IMM", false, false, true, true, false,
       false, true},
      {IBV_OPCODE_RDMA_WRITE_FIRST, "RC WRITE_FIRST", "UC WRITE_FIRST", true, false, false, true, false, false, true},
      {IBV_OPCODE_RDMA_WRITE_MIDDLE, "RC WRITE_MIDDLE", "UC WRITE_MIDDLE", false, false, false, true, false, false,
       true},
      {IBV_OPCODE_RDMA_WRITE_LAST, "RC WRITE_LAST", "UC WRITE_LAST", false, false, false, true, false, false, true},
      {IBV_OPCODE_RDMA_WRITE_LAST_WITH_IMMEDIATE, "RC WRITE_LAST_IMM", "UC WRITE_LAST_IMM", false, false, true, true,
       false, false, true},
      {IBV_OPCODE_RDMA_WRITE_ONLY, "RC WRITE_ONLY", "UC WRITE_ONLY", true, false, false, true, false, false, true},
      {IBV_OPCODE_RDMA_WRITE_ONLY_WITH_IMMEDIATE, "RC WRITE_ONLY_IMM", "UC WRITE_ONLY_IMM", true, false, true, true,
       false, false, true},
      {IBV_OPCODE_RDMA_READ_REQUEST, "RC READ_REQUEST", "", true, false, false, false, false, false, false},
      {IBV_OPCODE_RDMA_READ_RESPONSE_FIRST, "RC READ_RESP_FIRST", "", false, true, false, true, false, false, false},
      {IBV_OPCODE_RDMA_READ_RESPONSE_MIDDLE, "RC READ_RESP_MIDDLE", "", false, false, false, true, false, false, false},
      {IBV_OPCODE_RDMA_READ_RESPONSE_LAST, "RC READ_RESP_LAST", "", false, true, false, true, false, false, false},
      {IBV_OPCODE_RDMA_READ_RESPONSE_ONLY, "RC READ_RESP_ONLY", "", false, true, false, true, false, false, false},
      {IBV_OPCODE_ACKNOWLEDGE, "RC ACKNOWLEDGE", "", false, true, false, false, false, false, false},
      {IBV_OPCODE_ATOMIC_ACKNOWLEDGE, "RC ATOMIC_ACKNOWLEDGE", "", false, true, false, false, false, true, false},
      {IBV_OPCODE_COMPARE_SWAP, "RC CMP_SWAP", "", false, false, false, false, true, false, false},
      {IBV_OPCODE_FETCH_ADD, "RC FETCH_ADD", "", false, false, false, false, true, false, false},
  };
  for (const Row& r : kRows) {
    if (r.op != op || (uc && !r.uc_ok)) continue;
    i.valid = true;
    i.name = uc ? r.uc : r.rc;
    i.reth = r.reth;
    i.aeth = r.aeth;
    i.immdt = r.imm;
    i.payload = r.payload;
    i.atomic_eth = r.atomic;
    i.atomic_ack_eth = r.atomic_ack;
  }
  return i;
}

constexpr std::array<OpcodeInfo, 256> BuildTable() {
  std::array<OpcodeInfo, 256> t{};
  for (int op = 0; op < 256; ++op) t[op] = Build(static_cast<uint8_t>(op));
  return t;
}

// Built at compile time: the RX path looks an opcode up with one load.
constexpr std::array<OpcodeInfo, 256> kOpcodeTable = BuildTable();

}  // namespace

OpcodeInfo Describe(uint8_t opcode) { return kOpcodeTable[opcode]; }

int PayloadOffset(uint8_t opcode) {
  static constexpr auto kOffsets = [] {
    std::array<int16_t, 256> o{};
    for (int op = 0; op < 256; ++op) {
      o[op] = kOpcodeTable[op].valid && kOpcodeTable[op].payload
                  ? static_cast<int16_t>(kBthLen + kOpcodeTable[op].ext_len())
                  : int16_t{-1};
    }
    return o;
  }();
  return kOffsets[opcode];
}

size_t WriteBth(uint8_t* p, const Bth& h) {
  p[0] = h.opcode;
  p[1] =
      static_cast<uint8_t>((h.solicited ? 0x80 : 0) | (h.migreq ? 0x40 : 0) | (h.pad_count & 3) << 4 | (h.tver & 0x0F));
  Store16(p + 2, h.pkey);
  p[4] = static_cast<uint8_t>((h.fecn ? 0x80 : 0) | (h.becn ? 0x40 : 0));
  Store24(p + 5, h.dest_qp & 0xFFFFFF);
  p[8] = h.ack_req ? 0x80 : 0;
  Store24(p + 9, h.psn & kPsnMask);
  return kBthLen;
}

size_t WriteReth(uint8_t* p, const Reth& h) {
  Store64(p, h.va);
  Store32(p + 8, h.rkey);
  Store32(p + 12, h.dma_length);
  return kRethLen;
}

size_t WriteAeth(uint8_t* p, const Aeth& h) {
  p[0] = h.syndrome;
  Store24(p + 1, h.msn & 0xFFFFFF);
  return kAethLen;
}

size_t WriteDeth(uint8_t* p, const Deth& h) {
  Store32(p, h.qkey);
  p[4] = 0;
  Store24(p + 5, h.src_qp & 0xFFFFFF);
  return kDethLen;
}

std::optional<Bth> ParseBth(std::span<const uint8_t> b) {
  if (b.size() < kBthLen) return std::nullopt;
  const uint8_t* p = b.data();
  Bth h;
  h.opcode = p[0];
  h.solicited = p[1] & 0x80;
  h.migreq = p[1] & 0x40;
  h.pad_count = (p[1] >> 4) & 3;
  h.tver = p[1] & 0x0F;
  h.pkey = Load16(p + 2);
  h.fecn = p[4] & 0x80;
  h.becn = p[4] & 0x40;
  h.dest_qp = Load24(p + 5);
  h.ack_req = p[8] & 0x80;
  h.psn = Load24(p + 9);
  return h;
}

std::optional<Reth> ParseReth(std::span<const uint8_t> b) {
  if (b.size() < kRethLen) return std::nullopt;
  return Reth{Load64(b.data()), Load32(b.data() + 8), Load32(b.data() + 12)};
}

std::optional<Aeth> ParseAeth(std::span<const uint8_t> b) {
  if (b.size() < kAethLen) return std::nullopt;
  return Aeth{b[0], Load24(b.data() + 1)};
}

std::optional<Deth> ParseDeth(std::span<const uint8_t> b) {
  if (b.size() < kDethLen) return std::nullopt;
  return Deth{Load32(b.data()), Load24(b.data() + 5)};
}

const char* VerbName(Verb v) {
  switch (v) {
    case Verb::kWrite: return "WRITE";
    case Verb::kWriteImm: return "WRITE_IMM";
    case Verb::kSend: return "SEND";
    case Verb::kSendImm: return "SEND_IMM";
    case Verb::kReadResponse: return "READ_RESPONSE";
  }
  return "?";
}

absl::StatusOr<MessagePlan> PlanMessage(Verb verb, Transport transport, uint64_t size, uint32_t pmtu) {
  if (pmtu < 256 || pmtu > 4096 || (pmtu & (pmtu - 1)) != 0) {
    return absl::InvalidArgumentError(absl::StrFormat("path MTU %d B is not one of 256, 512, 1024, 2048, 4096", pmtu));
  }
  if (size == 0 || size > 0xFFFFFFFFull) {
    return absl::OutOfRangeError(
        absl::StrFormat("message size %d B is outside 1 B .. 4 GiB - 1 (the RETH DMA length is 32 bits)", size));
  }
  if (transport == Transport::kRd) return absl::InvalidArgumentError("RD transport is not supported");
  if (transport == Transport::kUd && verb != Verb::kSend && verb != Verb::kSendImm) {
    return absl::InvalidArgumentError(absl::StrFormat("UD carries SEND only, not %s", VerbName(verb)));
  }
  if (transport == Transport::kUd && size > pmtu) {
    return absl::InvalidArgumentError(
        absl::StrFormat("a UD message is one packet: %d B exceeds the path MTU of %d B", size, pmtu));
  }
  if (transport == Transport::kUc && verb == Verb::kReadResponse) {
    return absl::InvalidArgumentError("UC has no RDMA READ");
  }
  const uint8_t t = static_cast<uint8_t>(transport);
  uint8_t op_only = 0, op_first = 0, op_middle = 0, op_last = 0;
  switch (verb) {
    case Verb::kWrite:
      op_only = IBV_OPCODE_RDMA_WRITE_ONLY, op_first = IBV_OPCODE_RDMA_WRITE_FIRST;
      op_middle = IBV_OPCODE_RDMA_WRITE_MIDDLE, op_last = IBV_OPCODE_RDMA_WRITE_LAST;
      break;
    case Verb::kWriteImm:
      op_only = IBV_OPCODE_RDMA_WRITE_ONLY_WITH_IMMEDIATE, op_first = IBV_OPCODE_RDMA_WRITE_FIRST;
      op_middle = IBV_OPCODE_RDMA_WRITE_MIDDLE, op_last = IBV_OPCODE_RDMA_WRITE_LAST_WITH_IMMEDIATE;
      break;
    case Verb::kSend:
      op_only = IBV_OPCODE_SEND_ONLY, op_first = IBV_OPCODE_SEND_FIRST;
      op_middle = IBV_OPCODE_SEND_MIDDLE, op_last = IBV_OPCODE_SEND_LAST;
      break;
    case Verb::kSendImm:
      op_only = IBV_OPCODE_SEND_ONLY_WITH_IMMEDIATE, op_first = IBV_OPCODE_SEND_FIRST;
      op_middle = IBV_OPCODE_SEND_MIDDLE, op_last = IBV_OPCODE_SEND_LAST_WITH_IMMEDIATE;
      break;
    case Verb::kReadResponse:
      op_only = IBV_OPCODE_RDMA_READ_RESPONSE_ONLY, op_first = IBV_OPCODE_RDMA_READ_RESPONSE_FIRST;
      op_middle = IBV_OPCODE_RDMA_READ_RESPONSE_MIDDLE, op_last = IBV_OPCODE_RDMA_READ_RESPONSE_LAST;
      break;
  }
  auto seg = [&](uint8_t op, uint64_t len, bool last) {
    Segment s;
    s.opcode = static_cast<uint8_t>(t | op);
    s.payload_len = static_cast<uint32_t>(len);
    s.pad = static_cast<uint8_t>((4 - len % 4) % 4);
    s.last = last;
    return s;
  };
  MessagePlan m;
  m.verb = verb;
  m.transport = transport;
  m.size = size;
  m.pmtu = pmtu;
  m.packets = static_cast<uint32_t>((size + pmtu - 1) / pmtu);
  const uint64_t tail = size - uint64_t{m.packets - 1} * pmtu;
  m.only = seg(op_only, size, true);
  m.first = seg(op_first, pmtu, false);
  m.middle = seg(op_middle, pmtu, false);
  m.last = seg(op_last, tail, true);
  return m;
}

}  // namespace fg::proto::roce
