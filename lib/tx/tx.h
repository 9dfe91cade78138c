// tx/tx.h: the TX lcore task: frames from templates, stamped and paced.
//
// One TxTask serves one (port, queue) and the streams (or the shards of
// streams: some of their flows) placed on it. Per burst
// it bulk-allocates mbufs, copies each stream's template, writes the
// per-packet signature fields (sequence, TX timestamp in ns), and hands the
// burst to the PMD. Frames the PMD does not take stay pending and go first
// on the next poll (counted as retries), so a full ring never loses a frame
// and never blocks an lcore that also serves the RX side of a loopback.
//
// Pacing is a token bucket on the TSC per stream in 52.12 fixed point: one
// division per burst, none per packet. A stream stops at its packet count or
// its duration, whichever comes first.
//
//   fg::tx::TxTask task(port.id(), /*queue=*/0, port.pool(), {&streams[0]}, clock);
//   task.Arm(fg::ReadTsc());            // the run starts now
//   while (!task.Done()) task.Poll();   // on the lcore
//   fg::tx::TxCounters c = task.counters(0);
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/counter.h"
#include "base/poll_task.h"
#include "base/tsc.h"
#include "endpoint/feedback.h"
#include "endpoint/rc_requester.h"
#include "port/port.h"
#include "stats/histogram.h"
#include "stream/stream.h"
#include "tx/flow_pacer.h"

struct rte_mempool;

namespace fg::tx {

inline constexpr unsigned kTxBurst = 32;
// READ requests a responses shard holds before it sends their data; more
// (the lcore far behind) are not answered and show as its shortfall.
inline constexpr size_t kReadJobsPerShard = 16384;  // a power of two

// The TX counts that add up over a stream's shards: a counter block
// (base/counter.h), summed and differenced member by member, so a count
// added here is summed over the lcores and shown live since a base reading
// (engine::LiveRun::StreamLive) with no other line.
struct TxCounts {
  uint64_t packets = 0;  // accepted by the PMD
  uint64_t bytes = 0;    // frame bytes, FCS included
  uint64_t retries = 0;  // tx_burst calls that left frames pending
  uint64_t alloc_failures = 0;
  uint64_t slots_skipped = 0;     // packet slots skipped because the lcore fell behind the set rate
  uint64_t stalls = 0;             // times the lcore fell more than 1 ms (or a burst) behind: slots skipped
  uint64_t late_burst_frames = 0;  // burst schedules: frames of bursts released more than 1 ms late
  // Frames the set rate (or burst schedule) and count called for over the
  // stream's sending time, pauses excluded and rate changes followed: what
  // TX should have sent. Final once the stream is done; `paced` false for an
  // unpaced (`max`) stream, whose due is what it generated.
  uint64_t due = 0;
};

// The counts, and what does not add up: a span, a maximum, a flag.
struct TxCounters : TxCounts {
  uint64_t stall_max_ns = 0;           // the longest hold-up that skipped slots: how far behind the lcore was (ns)
  // Time the stream sent nothing because its port was paused on its
  // priority (ports[].pfc.honor; not due, never a shortfall), ns: its
  // shards' longest (each owner lcore holds its shard through the same pause).
  uint64_t pfc_paused_ns = 0;
  uint64_t first_ns = 0, last_ns = 0;  // TSC ns of the first and last accepted burst
  bool paced = false;
  // Frames TX fell short of the set rate by: due - packets (0 when it kept up).
  uint64_t shortfall() const { return due > packets ? due - packets : 0; }
  // Adds another shard's counters (a stream whose flows several lcores send).
  TxCounters& operator+=(const TxCounters& o);
  // The counts since `o`, an earlier reading (the span, maximum and flag stay).
  TxCounters& operator-=(const TxCounts& o) {
    EachCount<TxCounts>(*this, o, [](uint64_t& x, uint64_t y) { x -= y; });
    return *this;
  }
};

// A QP's rate timeline (DCQCN), kept by its reaction point
// (endpoint/rc_requester.h): from t_ns (since the run's start) on, the QP was
// sent at bps (L2 bit/s, frames with FCS); at most three points per
// kRateTimelineNs window, kRateTimelinePoints per stream shard (more are
// dropped and the timeline says it is truncated).
using endpoint::kRateTimelineNs;
using endpoint::kRateTimelinePoints;
using endpoint::RatePoint;

// What the reaction points of one stream shard did (after the run).
struct DcqcnCounters {
  uint64_t cnps = 0, cuts = 0, ignored = 0;  // CNPs handed to them, rate cuts, CNPs within rate_reduce_period
  uint64_t late = 0;  // CNPs that came after the stream's TX had ended (stopped, past its end, or exhausted): no cut
  // A collective's QPs (ranks.dcqcn): turns that came while a QP's rate held
  // it back (once per wait out of the ready ring; a go-back's resend, once a poll).
  uint64_t held_turns = 0;
  stats::LatencyHistogram reaction;          // CNP received -> its cut in the pacer, ns
  bool timeline_truncated = false;
  DcqcnCounters& operator+=(const DcqcnCounters& o);  // another shard's
};

// What the RC requesters of one stream shard did (go-back-N), after the run.
// A counter block (base/counter.h): uint64_t counts only.
struct RetransmitCounters {
  uint64_t unique_packets = 0, unique_bytes = 0;                // each PSN once: the flows' highest sequence sent
  uint64_t retransmitted_packets = 0, retransmitted_bytes = 0;  // sent again after a NAK or a timeout
  uint64_t nak_rewinds = 0, timeouts = 0;                        // go-backs on a NAK, on a timeout
  RetransmitCounters& operator+=(const RetransmitCounters& o);
};

// The part of a stream one TX task sends: some of its flows (indices within
// the stream, increasing) at their share of its rate and count.
struct Shard {
  const stream::CompiledStream* s = nullptr;
  std::vector<uint32_t> flows;  // empty: every flow of the stream
  double pps = 0;               // this shard's rate (the stream's rate times its share of the flows)
  uint64_t count = 0;           // this shard's packet bound (0: none)
};

class TxTask : public PollTask {
 public:
  // With `template_tag_offset` >= 0 (port::TxTemplateTagOffset()), an mbuf
  // that still holds the template it carried last time gets its per-packet
  // fields stamped without a copy; RX tasks clear the tag of what they receive.
  // With `schedule` enabled (send-on-timestamp), each burst leaves at its due
  // time + the lead on the NIC clock: the first mbuf carries that time in the
  // TX timestamp dynfield, and the signatures carry it as TX time.
  TxTask(uint16_t port_id, uint16_t queue, rte_mempool* pool, const std::vector<Shard>& shards, TscClock clock,
         int template_tag_offset = -1, const port::TxSchedule& schedule = {});
  // Every flow of each stream at its own rate and count.
  static std::vector<Shard> Whole(const std::vector<const stream::CompiledStream*>& streams);
  ~TxTask() override;

  // Sets the start time; streams begin sending from `start_tsc`.
  void Arm(uint64_t start_tsc);
  unsigned Poll() override { return PollAt(ReadTsc()); }
  // Poll with the loop's TSC, read by the caller just before (engine/worker.cc:
  // one read a loop serves its TX and its RX, not one each).
  unsigned PollAt(uint64_t now);
  // In the engine's drain (TX polled no more): a stream stopped as the run
  // ended takes the stop and sends the frames it had made; RC requesters go
  // on recovering what they sent before their end (NAK go-backs, timeouts);
  // nothing new is made. Returns the frames handed to the PMD.
  unsigned PollRecovery() { return PollRecoveryAt(ReadTsc()); }
  unsigned PollRecoveryAt(uint64_t now);
  bool Done() const override;
  void Finish() override;

  size_t num_streams() const;
  const stream::CompiledStream& stream(size_t i) const;
  // Thread-safe snapshot of stream i's counters.
  TxCounters counters(size_t i) const;
  // Shard i's flows (indices within its stream) and, after Finish, what
  // each sent (accepted by the PMD).
  const std::vector<uint32_t>& flows(size_t i) const;
  void FlowSent(size_t i, std::vector<uint64_t>& packets, std::vector<uint64_t>& bytes) const;
  // With per-flow rates (a FlowPacer): adds each flow's skipped slots (a
  // hold-up's, FlowPacer::skipped) to `skipped` and returns true. Read once
  // the lcore has stopped.
  bool FlowSkipped(size_t i, std::vector<uint64_t>& skipped) const;

  // Live control from another thread; the lcore applies each on its next
  // poll (one load per stream and poll when nothing changed). A new rate or a
  // resume restarts the stream's pacing from that moment (no catch-up
  // burst); a paused stream sends nothing and keeps its sequence; a stopped
  // one is done.
  void SetRate(size_t i, double pps);  // +inf: unpaced
  void SetPaused(size_t i, bool paused);
  void Stop(size_t i);
  // Before Arm: stream i's port honours PFC (ports[].pfc.honor); `until_ns`
  // is its priority's PfcGate slot (endpoint/pfc.h: ns of `clock`'s, 0: not
  // paused). While the time is before it the stream sends nothing new (its
  // pending frames go: at most a burst), owes nothing and keeps its
  // sequence; then its pacing restarts. Open-loop and RC requester streams;
  // READ responses and collective cells are not gated.
  void SetPfcGate(size_t i, const std::atomic<uint64_t>* until_ns);
  double rate(size_t i) const;
  // Per-flow rates (a stream with `flows: {count, rates}`): shard i's flow
  // `flow` (an index into flows(i)) to `pps`, applied on the lcore's next
  // poll (paused or not); false when the shard paces its flows together,
  // is done, or has 1,024 changes not yet applied. The shard's rate becomes
  // the sum of its flows'.
  bool SetFlowRate(size_t i, uint32_t flow, double pps);
  bool FlowRatesApplied(size_t i) const;  // every SetFlowRate so far is in effect
  double flow_rate(size_t i, uint32_t flow) const;
  bool per_flow_rates(size_t i) const;

  // On this task's lcore (the flow's owner): feedback to shard i's flow
  // `flow` (an index into flows(i)). A CNP for a DCQCN stream cuts the
  // flow's rate at once.
  void OnFeedback(size_t i, uint32_t flow, const endpoint::Feedback& f);
  // On this task's lcore: a READ's request `seq` of shard i's flow `flow`
  // was executed by the responder; the shard (that READ's responses) sends
  // its k response packets, seq x k on, after those asked for before.
  void OnRead(size_t i, uint32_t flow, uint32_t seq);
  bool responds(size_t i) const;  // shard i is a READ's responses
  // A collective cell's shard (CompiledStream::cell, cell_sender.cc), on
  // this task's lcore: shard i's flow `flow` may send its packets below
  // sequence `until` (its QP's packets released so far over the run's
  // iterations; a bound below the last one changes nothing).
  void ReleaseCell(size_t i, uint32_t flow, uint32_t until);
  // The TX time (ns) of the first frame shard i sent since the last call (0: none).
  uint64_t TakeCellFirstTx(size_t i);
  // Once the lcore has stopped: frame bytes (FCS included) shard i made as
  // resends, by the iteration of the packet resent (the last entry: beyond the cell's iterations).
  const std::vector<uint64_t>& CellResentBytes(size_t i) const;
  // Before the launch: the cell's end (its iterations done, or failed):
  // once it is set, shard i sends nothing new and is done.
  void SetCellFinished(size_t i, const std::atomic<bool>* finished);
  // After Finish: shard i's DCQCN figures, and flow `flow`'s rate timeline
  // (empty unless the stream has dcqcn).
  DcqcnCounters dcqcn(size_t i) const;
  // After Finish: shard i's go-back-N figures (all zero unless its RC
  // requesters retransmit: roce.retransmit with a responder).
  RetransmitCounters retransmit(size_t i) const;
  bool retransmits(size_t i) const;
  // Any thread, during the run: frames of shard i made again after a go-back so far.
  uint64_t resent(size_t i) const;
  // On this task's lcore (the flow's owner, where its RX analysis runs too),
  // or once it has stopped: how far shard i's flow `flow` (an index into
  // flows(i)) has got. Every frame it stamped has a sequence below `next`
  // (RC go-back-N: the highest sent before going back, or the cursor if it
  // is past that); `wrapped`: it has sent 2^32 frames, so its sequences
  // started over. RX counts only frames a flow could have sent.
  struct Stamped {
    uint32_t next = 0;
    bool wrapped = false;
  };
  Stamped FlowStamped(size_t i, uint32_t flow) const;
  const std::vector<RatePoint>& rate_timeline(size_t i, uint32_t flow) const;
  bool paused(size_t i) const;
  bool stopped(size_t i) const;  // done: count or duration reached, or stopped

 private:
  struct State;
  // Allocates `n` mbufs and writes the stream's next `n` packets into them
  // (pending); false when the pool is empty (counted, retried next poll).
  // `due` is the TSC time the burst is due (its first slot; now when unpaced).
  // `runs`: whose frames they are, in runs of one flow (a FlowPacer's
  // turns, a READ's jobs, resends), `nruns` of them summing to n; null: the
  // flows take turns. SendPending counts a flow's frames once per run.
  bool Generate(State& st, unsigned n, uint64_t now, uint64_t due, const FlowPacer::Run* runs = nullptr,
                unsigned nruns = 0);
  // Generate's loop over the burst, for a program whose kinds all have stamp
  // shape kShape (stream::shape; kAnyShape tests each field per frame).
  // kPaced: `runs` name the frames' flows (else they take turns); kOneKind:
  // one packet per message (every frame is kinds()[0]).
  template <uint32_t kShape, bool kPaced, bool kOneKind>
  void Fill(State& st, unsigned n, const stream::StampTime& burst_ts, uint64_t keep_flags,
            const FlowPacer::Run* runs, unsigned nruns);
  template <uint32_t kShape>
  void FillShaped(State& st, unsigned n, const stream::StampTime& ts, uint64_t keep_flags, const FlowPacer::Run* runs,
                  unsigned nruns);
  void ApplyFlowCommands(State& st, uint64_t now);  // on the lcore
  void TickDcqcn(State& st, uint64_t now);          // on the lcore: timers and byte counters
  // After the stream's end: resend what go-backs owe (one frame per owing
  // flow per call), then hand pending frames to the PMD.
  unsigned Recover(State& st, uint64_t now);
  // A READ's responses: the jobs' frames (a burst at most), then pending frames to the PMD.
  unsigned Respond(State& st, uint64_t now);
  // A cell's QPs: resends owed, then released packets (fresh; the drain:
  // resends only), then pending frames to the PMD.
  [[gnu::noinline]] unsigned SendCell(State& st, uint64_t now, bool fresh);
  bool GenerateCell(State& st, const FlowPacer::Run* runs, unsigned nruns, unsigned n, uint64_t now);
  // Points shard flow f's cursor at its packet (its sequence) of the run:
  // which message of which iteration, and that message's Program and fields.
  static void LocateCell(State& st, uint32_t f);
  // A hold-up `behind_ticks` long that skipped slots or made a burst late:
  // kept if the longest yet (TxCounters::stall_max_ns). Off the per-packet path.
  static void NoteStall(State& st, uint64_t behind_ticks);
  // Generate for a go-back-N stream whose QPs have shares of its count: up to n frames with the flows
  // taking turns, but only flows with a resend owed or their share not yet
  // sent take one; when none has, the stream ends here (Exhaust). The
  // frames made (0: none, or the pool was empty).
  unsigned GenerateShares(State& st, unsigned n, uint64_t now, uint64_t due);
  unsigned SendPending(State& st, uint64_t now);  // pending frames to the PMD; counts what it took
  // The pacer follows flow f's rate (its reaction point's Rc, after a cut or an increase).
  static void SetQpRate(State& st, uint32_t f, uint64_t now);
  void PaceCellQp(State& st, uint32_t f, unsigned frames, uint64_t now);
  void Apply(State& st, uint64_t gen, uint64_t now);  // on the lcore: a control change
  void Hold(State& st, bool held, uint64_t now);      // on the lcore: pause (a control's or PFC's) or resume
  void GatePfc(State& st, uint64_t now);              // on the lcore: follows the stream's PFC gate
  static void RestartPacing(State& st, uint64_t now);
  // On the lcore: the stream stops generating at `t`; its due count is final.
  void Exhaust(State& st, uint64_t t);
  static uint64_t SegmentDue(const State& st, uint64_t t, bool final);
  static void CloseSegment(State& st, uint64_t t, bool final);
  size_t rr_ = 0;  // the stream that goes first this poll (streams sharing the queue take turns)
  // Go-back-N's clock: the TSC less the time this lcore was held up beyond
  // 1 ms between two polls. After such a stall the ACKs that came meanwhile
  // still wait in an RX queue this lcore has not polled yet; the time it did
  // not run is the tester's, not the path's silence, and fires no timeout.
  void Clock(uint64_t now) {
    if (last_poll_tsc_ != 0 && now - last_poll_tsc_ > late_ticks_) held_up_ticks_ += now - last_poll_tsc_ - late_ticks_;
    last_poll_tsc_ = now;
    poll_tsc_ = now - held_up_ticks_;
  }
  uint64_t poll_tsc_ = 0;        // the go-back-N clock at this lcore's last poll (feedback's and the timers' time)
  uint64_t last_poll_tsc_ = 0;   // the TSC then
  uint64_t held_up_ticks_ = 0;   // the stalls' time left out of poll_tsc_
  bool gbn_ = false;             // a stream of this task is a go-back-N requester
  void Control(size_t i, double pps, int mode);  // control thread
  uint16_t port_id_, queue_;
  rte_mempool* pool_;
  TscClock clock_;
  int tag_off_;
  uint64_t tag_salt_;    // differs per task, so a tag from an earlier run never matches
  uint64_t late_ticks_;  // 1 ms: a burst released later than this after its start is late
  std::vector<std::unique_ptr<State>> streams_;
  port::TxSchedule sched_;
  uint64_t sched_seen_ = 0;  // the shared line's sequence last copied
};

}  // namespace fg::tx
