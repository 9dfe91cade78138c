#include "rx/rx.h"

#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>

#include "base/counter.h"
#include "base/units.h"
#include "proto/signature.h"

namespace fg::rx {

struct alignas(64) RxTask::Slot {
  Counter packets, bytes;
};

RxTask::RxTask(uint16_t port_id, uint16_t queue, std::vector<uint32_t> flow_to_slot, uint32_t num_slots)
    : port_id_(port_id),
      queue_(queue),
      flow_to_slot_(std::move(flow_to_slot)),
      slots_(new Slot[num_slots + 1]),
      num_slots_(num_slots) {}

RxTask::~RxTask() = default;

unsigned RxTask::Poll() {
  rte_mbuf* pkts[kRxBurst];
  const uint16_t n = rte_eth_rx_burst(port_id_, queue_, pkts, kRxBurst);
  if (n == 0) return 0;
  const uint32_t nflows = static_cast<uint32_t>(flow_to_slot_.size());
  rte_prefetch0(rte_pktmbuf_mtod(pkts[0], void*));
  for (uint16_t i = 0; i < n; ++i) {
    if (i + 1 < n) rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 1], void*));
    const rte_mbuf* m = pkts[i];
    const uint8_t* d = rte_pktmbuf_mtod(m, const uint8_t*);
    uint32_t slot = num_slots_;  // unknown
    const int off = proto::FindSignatureOffset(d, m->data_len);
    if (off >= 0) {
      const uint32_t flow = proto::Load24(d + off + 3);
      if (flow < nflows && flow_to_slot_[flow] != kNoSlot) slot = flow_to_slot_[flow];
    }
    slots_[slot].packets.Add(1);
    slots_[slot].bytes.Add(m->pkt_len + kEthFcsLen);  // PMDs strip the FCS
  }
  rte_pktmbuf_free_bulk(pkts, n);
  return n;
}

RxCounters RxTask::counters(uint32_t slot) const {
  return RxCounters{slots_[slot].packets.Read(), slots_[slot].bytes.Read()};
}

RxCounters RxTask::unknown() const { return counters(num_slots_); }

}  // namespace fg::rx
