// The READ responder's TX, on the lcore that owns the responding flows: the
// requests RX executed (OnRead) become jobs, sent as READ responses in the
// order they came (Respond, from Poll and the drain).
#include <algorithm>

#include "tx/flow_pacer.h"
#include "tx/tx.h"
#include "tx/tx_state.h"

namespace fg::tx {

void TxTask::OnRead(size_t i, uint32_t flow, uint32_t seq) {
  State& st = *streams_[i];
  const uint32_t k = st.s->read_packets;
  st.due.Set(st.due.Read() + k);  // asked for: sent, or the tester's shortfall
  State::ReadJobs& r = st.reads;
  if (r.count == kReadJobs) return;
  r.ring[(r.head + r.count) & (kReadJobs - 1)] = State::ReadJobs::Job{flow, seq * k, k};
  ++r.count;
}

// A READ's responses, in the order their requests were executed: each
// job's packets back to back, several jobs to a burst. A job whose flow
// must move to another PSN (past requests that never came, or back to a
// late one) starts a burst of its own: its cursor moves before any of its
// frames is stamped.
//
// Paced at the READ's data rate (the plan stream's rate, this shard's share:
// interval_fp), as a NIC's responder is held to its port: a request for a
// 2 GB message (1.95 million responses) goes out at the rate, never back to
// back past it. Slots accrue only while jobs wait: after an idle spell (no
// request to answer) the next response goes at once, and at most one burst
// of saved slots is sent together. Costs a compare and a division per burst.
unsigned TxTask::Respond(State& st, uint64_t now) {
  State::ReadJobs& r = st.reads;
  if (st.npending == 0 && r.count != 0) {
    unsigned allowed = kTxBurst;
    if (st.interval_fp != 0) {
      const uint64_t now_fp = now > st.start_tsc ? (now - st.start_tsc) << kFpShift : 0;
      if (now_fp > st.next_fp + kTxBurst * st.interval_fp) st.next_fp = now_fp - (kTxBurst - 1) * st.interval_fp;
      if (now_fp < st.next_fp) return 0;
      allowed = static_cast<unsigned>(std::min<uint64_t>(kTxBurst, (now_fp - st.next_fp) / st.interval_fp + 1));
    }
    FlowPacer::Run runs[kTxBurst] = {};  // (zeroed: the compiler cannot see that `allowed` >= 1 fills one)
    unsigned n = 0, nruns = 0;
    size_t head = r.head, count = r.count;
    State::ReadJobs::Job front = r.ring[head];
    while (n < allowed && count != 0) {
      // r.next: the packet (PSN) the flow's cursor will be at once the
      // frames planned so far are stamped. A job elsewhere (requests skipped
      // or late) moves its PSN there; its signature sequence goes on, so the
      // requester's analysis sees what was sent, in the order it was sent.
      if (r.next[front.flow] != front.seq) {
        if (n != 0) break;
        st.s->program.SeekPacket(st.cursors[front.flow], front.seq);
        r.next[front.flow] = front.seq;
      }
      const unsigned m = std::min<unsigned>(front.left, allowed - n);
      runs[nruns++] = FlowPacer::Run{front.flow, m};
      n += m;
      r.next[front.flow] += m;
      front.seq += m;
      front.left -= m;
      if (front.left == 0) {
        head = (head + 1) & (kReadJobs - 1);
        --count;
        if (count != 0) front = r.ring[head];
      }
    }
    if (Generate(st, n, now, now, runs, nruns)) {
      st.next_fp += n * st.interval_fp;
      r.head = head;
      r.count = count;
      if (count != 0) r.ring[head] = front;  // the one left part-sent
    } else {
      for (unsigned k = 0; k < nruns; ++k) r.next[runs[k].flow] -= runs[k].count;  // the jobs stay for the next poll
    }
  }
  return st.npending != 0 ? SendPending(st, now) : 0;
}

}  // namespace fg::tx
