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
  if (st.job_count == kReadJobs) return;
  st.jobs[(st.job_head + st.job_count) & (kReadJobs - 1)] = State::ReadJob{flow, seq * k, k};
  ++st.job_count;
}

// A READ's responses, in the order their requests were executed: each
// job's packets back to back, several jobs to a burst. A job whose flow
// must move to another PSN (past requests that never came, or back to a
// late one) starts a burst of its own: its cursor moves before any of its
// frames is stamped.
unsigned TxTask::Respond(State& st, uint64_t now) {
  if (st.npending == 0 && st.job_count != 0) {
    FlowPacer::Run runs[kTxBurst];
    unsigned n = 0, nruns = 0;
    size_t head = st.job_head, count = st.job_count;
    State::ReadJob front = st.jobs[head];
    while (n < kTxBurst && count != 0) {
      // read_next: the packet (PSN) the flow's cursor will be at once the
      // frames planned so far are stamped. A job elsewhere (requests skipped
      // or late) moves its PSN there; its signature sequence goes on, so the
      // requester's analysis sees what was sent, in the order it was sent.
      if (st.read_next[front.flow] != front.seq) {
        if (n != 0) break;
        st.s->program.SeekPacket(st.cursors[front.flow], front.seq);
        st.read_next[front.flow] = front.seq;
      }
      const unsigned m = std::min<unsigned>(front.left, kTxBurst - n);
      runs[nruns++] = FlowPacer::Run{front.flow, m};
      n += m;
      st.read_next[front.flow] += m;
      front.seq += m;
      front.left -= m;
      if (front.left == 0) {
        head = (head + 1) & (kReadJobs - 1);
        --count;
        if (count != 0) front = st.jobs[head];
      }
    }
    if (Generate(st, n, now, now, runs, nruns)) {
      st.job_head = head;
      st.job_count = count;
      if (count != 0) st.jobs[head] = front;  // the one left part-sent
    } else {
      for (unsigned r = 0; r < nruns; ++r) st.read_next[runs[r].flow] -= runs[r].count;  // the jobs stay for the next poll
    }
  }
  return st.npending != 0 ? SendPending(st, now) : 0;
}

}  // namespace fg::tx
