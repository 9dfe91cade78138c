// tx/tx_state.h: TxTask's per-stream state (inside lib/tx only: tx.cc, the
// open-loop TX; requester.cc, which connects the RC requester
// (endpoint/rc_requester.h: go-back-N, DCQCN's reaction points) to the
// flows' cursors and pacer; read_responder.cc, a READ's responses).
//
// Each mode of a stream is one member object, empty when the stream does
// not use it: `rates` (per-flow pacing), `rp` (DCQCN), `gbn` (RC go-back-N,
// with its QPs' shares of a count), `reads` (READ responses).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "base/counter.h"
#include "base/spsc_ring.h"
#include "endpoint/rc_requester.h"
#include "stats/histogram.h"
#include "tx/flow_pacer.h"
#include "tx/tx.h"
#include "stream/cell_streams.h"

struct rte_mbuf;

namespace fg::tx {

// Read-only configuration first, then the state written every burst, then
// the counters other threads read (testpmd's stream layout).
// Fixed-point fraction of a TSC tick in the pacer. Times are relative to the
// run's start, so 2^(64-12) ticks (17 days at 3 GHz) fit; the interval's
// truncation error is < 1/4096 tick per packet (< 5 ppm at 50 Mpps).
constexpr int kFpShift = 12;
constexpr size_t kReadJobs = kReadJobsPerShard;
static_assert((kReadJobs & (kReadJobs - 1)) == 0);

struct alignas(64) TxTask::State {
  const stream::CompiledStream* s = nullptr;
  uint64_t interval_fp = 0;  // TSC ticks per packet << kFpShift
  uint64_t start_tsc = 0;
  uint64_t end_tsc = 0;
  uint64_t limit = 0;         // packets, 0 = none
  uint64_t max_backlog = 0;   // due packets beyond which missed slots are skipped (1 ms worth, at least a burst)
  uint32_t burst_frames = 0;  // burst schedule: frames per burst (0: paced by interval_fp)
  uint64_t burst_period = 0;  // TSC ticks from one burst's start to the next
  uint64_t next_burst = 0;    // TSC of the next burst's start
  uint64_t burst_left = 0;    // frames of released bursts not yet generated

  alignas(64) uint64_t next_fp = 0;  // when the next packet is due, since start_tsc, << kFpShift
  uint64_t generated = 0;            // stamped (sent + pending)
  uint64_t resent = 0;               // of them, resends after a go-back (a `count` bounds generated - resent)
  uint32_t next_flow = 0;            // flows take turns, one packet each
  std::vector<stream::Cursor> cursors;
  std::vector<stream::FlowVars> vars;
  std::vector<uint32_t> flow_index;  // shard flow -> flow within the stream
  struct FlowSent {
    uint64_t packets = 0, bytes = 0;
  };
  std::vector<FlowSent> flow_sent;  // per shard flow, accepted by the PMD (lcore); one line per four flows
  // Per-flow rates: each flow's own send times, and the control thread's
  // channel to change them (pacer null: the flows take turns under the
  // stream's one interval).
  struct FlowRates {
    std::unique_ptr<FlowPacer> pacer;
    double pps = 0;              // lcore: the shard rate the pacer's flow rates add up to
    double ctl_pps_applied = 0;  // lcore: the control rate last applied (a new one scales every flow)
    std::atomic<uint64_t> pps_bits{0};  // pps, published for rate()
    struct Cmd {
      uint32_t flow;
      double pps;
    };
    std::unique_ptr<SpscRing<Cmd>> cmds;  // control thread -> lcore
    std::mutex cmd_mu;                    // one producer at a time
    std::atomic<uint64_t> cmd_seq{0};     // commands pushed
    std::atomic<uint64_t> cmd_done{0};    // commands applied by the lcore
    std::vector<double> view;             // per shard flow: the last rate set (control thread)
  } rates;
  // DCQCN (frame.roce.dcqcn): each shard flow's reaction point and rate
  // timeline; TickDcqcn runs every rp_tick TSC ticks.
  endpoint::ReactionPoints rp;
  uint64_t cnps_late = 0;  // DcqcnCounters::late (lcore)
  double bits_per_frame = 0;
  uint64_t rp_tick = 0, rp_next = 0;
  uint64_t run_start_tsc = 0;  // the run's start (a `start` offset makes start_tsc later): timelines count from it
  // RC requesters: each shard flow's go-back-N (and, for a stream with a
  // `count` whose flows take turns, each QP's share of it: GenerateShares).
  endpoint::GoBackN gbn;
  // READ responses (the stream is a READ's responses, stream.h): sent as
  // the responder executes requests (OnRead), paced at the stream's rate,
  // in the order the requests came.
  struct ReadJobs {
    // A request to answer: its flow, its next response packet (the PSN
    // offset from the flow's start), packets left.
    struct Job {
      uint32_t flow = 0, seq = 0, left = 0;
    };
    std::vector<Job> ring;  // kReadJobs of them (empty: not a READ's responses)
    size_t head = 0, count = 0;
    std::vector<uint32_t> next;  // per shard flow: where its cursor is once the jobs planned so far are sent
    bool enabled() const { return !ring.empty(); }
  } reads;
  bool exhausted = false;
  bool is_cell = false;  // cell.enabled(), kept here beside the fields each poll reads
  // Due accounting (TxCounters::due): slots of closed pacing segments, and
  // the open segment's start (a segment runs from a rate change or resume
  // to the next change, pause or the end).
  uint64_t due_closed = 0;
  uint64_t seg_generated0 = 0;  // generated when the open segment began
  bool segment_open = true;
  uint16_t npending = 0;
  rte_mbuf* pending[kTxBurst] = {};
  uint32_t pending_len[kTxBurst] = {};   // frame bytes of each pending mbuf (never read an mbuf once sent)
  uint32_t pending_flow[kTxBurst] = {};  // its shard flow
  // The pending frames as the pacer's runs of one flow (npending_runs 0:
  // not known, count frame by frame), and their one length when every
  // pending frame has it (a one-kind program; 0: see pending_len).
  uint16_t npending_runs = 0;
  uint32_t pending_same_len = 0;
  FlowPacer::Run pending_runs[kTxBurst] = {};

  alignas(64) Counter packets, bytes, retries, alloc_failures, slots_skipped, stalls,
      late_burst_frames, first_ns, last_ns, due;
  Counter stall_max_ticks;  // the longest hold-up that skipped slots or made a burst late (TSC ticks)
  Counter resent_live;  // `resent`, for other threads (set once per burst that resends)
  std::atomic<bool> paced{false};
  std::atomic<bool> done{false};

  // Control: written by the control thread (ctl_gen last, release), read by
  // the lcore when ctl_gen moves.
  alignas(64) std::atomic<uint64_t> ctl_gen{0};
  std::atomic<uint64_t> ctl_pps_bits{0};
  std::atomic<int> ctl_mode{kRunning};
  std::atomic<uint64_t> ctl_stop_tsc{0};  // when Stop was asked: the stream owes nothing after it
  uint64_t seen_gen = 0;                  // lcore
  bool paused = false;                    // lcore: held, by the control (ctl_paused) or PFC (pfc_paused)
  bool ctl_paused = false;                // lcore
  bool pfc_paused = false;                // lcore
  const std::atomic<uint64_t>* pfc_until = nullptr;  // SetPfcGate (null: not gated)
  uint64_t pfc_since = 0;                            // lcore: TSC the PFC pause began
  Counter pfc_paused_ticks;                          // TxCounts::pfc_paused_ns, in TSC ticks
  static constexpr int kRunning = 0, kPaused = 1, kStopped = 2;

  // Last: a stream that is no cell's never touches it, and the hot fields above keep their lines.
  // A collective cell's QPs (CompiledStream::cell; cell_sender.cc): each
  // sends the packets its rank's barrier released (ReleaseCell), its
  // messages from the cell's Programs by length, until the cell is done.
  struct CellJobs {
    const stream::CellStreams* cs = nullptr;  // null: not a cell's
    const std::atomic<bool>* finished = nullptr;
    std::vector<uint32_t> qp;        // per shard flow: its QP in the cell
    std::vector<uint32_t> released;  // per shard flow: packets it may send (its sequence bound)
    std::vector<uint32_t> ready;     // shard flows with released packets not sent, in turn (a ring)
    std::vector<uint8_t> queued;     // per shard flow: in `ready`
    size_t head = 0, count = 0;
    // Per shard flow: the Program and fixed fields of the message its
    // cursor is in, valid while the cursor's sequence is `seq` (a go-back
    // or a message's end makes TX locate the next packet again).
    struct Place {
      uint32_t seq = ~uint32_t{0};
      uint32_t pos = 0;      // the cursor's place in its message at `seq`
      uint64_t message = 0;  // and its message count (a go-back's Seek by the stream's Program changes both)
      uint32_t left = 0;     // packets of the message from `seq` on
      uint64_t length = 0;
      const stream::Program* program = nullptr;
      stream::FlowVars vars;
    };
    std::vector<Place> place;
    uint64_t resent_bytes = 0;  // frame bytes of resends (FCS included), made
    std::vector<uint64_t> resent_by_iteration;  // the same, by the iteration of the packet resent
    Counter first_tx_ns;        // TX time of the first frame since the engine last cleared it (0: none)
    // DCQCN (ranks.dcqcn): per shard flow, the TSC before which a QP its
    // reaction point cut may not start its next turn (empty without DCQCN).
    std::vector<uint64_t> next_tsc;
    // QPs whose turn came while their rate held them back, out of `ready`
    // until their next_tsc: a min-heap on it (std::push_heap with greater),
    // so a poll looks at the earliest only, however many QPs wait (a ready
    // ring they stayed in was walked whole every poll: 65,280 QPs of an
    // AllToAll). Still `queued` while in it.
    std::vector<std::pair<uint64_t, uint32_t>> held;
    uint64_t held_turns = 0;  // DcqcnCounters::held_turns: turns that came while held back
    double max_bps = 0;  // each QP's maximum: unpaced at it
    bool enabled() const { return cs != nullptr; }
  } cell;
};

}  // namespace fg::tx
