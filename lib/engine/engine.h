// engine/engine.h: runs one trial: streams on lcores, start, stop, drain, sum.
//
// RunTrial gives every flow one owner lcore (engine/placement.h), builds a
// TX task per (worker, port) for the flows it owns and an RX task per (port,
// RX queue), each on one worker (engine/trial_builder.cc), starts every TX stream at the same TSC instant, waits until
// each stream has sent its count or reached its duration, keeps RX polling
// for the drain time so frames in flight are counted, then stops and sums the
// per-lcore counters. Port counters are reset before and read after.
//
//   fg::engine::TrialOptions opt;
//   opt.drain_ns = 100'000'000;
//   opt.on_progress = [](const fg::engine::Progress& p) { ... };   // ~1/s
//   auto r = fg::engine::RunTrial(*eal, ports, compiled, opt);
//   printf("%lu sent, %lu received\n", r->streams[0].tx.packets, r->streams[0].rx.packets);
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "base/tsc.h"
#include "endpoint/answer_queue.h"
#include "endpoint/frame_handler.h"
#include "endpoint/host.h"
#include "endpoint/pfc.h"
#include "endpoint/responder.h"
#include "engine/connect.h"
#include "engine/placement.h"
#include "engine/tester_limits.h"
#include "port/eal.h"
#include "port/port.h"
#include "rx/rx.h"
#include "stats/flow_analysis.h"
#include "stream/stream.h"
#include "tx/tx.h"

namespace fg::engine {

struct Progress {
  int64_t elapsed_ns = 0;
  int64_t expected_ns = 0;  // planned TX time (longest stream duration)
  uint64_t tx_packets = 0, rx_packets = 0;
  double tx_pps = 0, rx_pps = 0;  // over the last interval
};

// Counters of every stream at one instant of the run (TSC-timed).
struct Sample {
  int64_t t_ns = 0;                              // since the synchronized start
  std::vector<uint64_t> tx_packets, rx_packets;  // per stream
  std::vector<std::vector<uint64_t>> xstats;     // per port, in TrialResult::xstat_names order
};

// Answers (ACK, NAK, CNP) a worker's responder may hold before its loop sends
// them: 4096 x 192 B. A full queue drops the answer and counts it (a tester limit).
inline constexpr size_t kAnswerQueue = 4096;
// Answers of a worker's hosts (ARP, ND, echo: endpoint/neighbor.h) waiting
// to be sent: 256 x 192 B. A full queue leaves the request unanswered (counted).
inline constexpr size_t kHostAnswerQueue = 256;

struct TrialOptions {
  int64_t drain_ns = 100'000'000;
  int64_t qp_setup_timeout_ns = 10'000'000'000;  // CM set-up of every connect: cm QP (connect.h)
  // Hard bound on the TX phase; 0: the longest stream duration + 1 s.
  int64_t max_duration_ns = 0;
  std::function<void(const Progress&)> on_progress;
  // Called once before traffic starts with where each task runs.
  std::function<void(const std::vector<std::string>&)> on_placement;
  int64_t progress_interval_ns = 1'000'000'000;
  size_t loss_log_capacity = 4096;  // loss events kept per RX task
  // Per-stream counters are sampled this often (0: never) into
  // TrialResult::samples; rates over a window are exact to a burst, as each
  // sample is timed by the TSC.
  int64_t sample_interval_ns = 1'000'000'000;
  // Polled by the control thread; set it (e.g. from SIGINT) to end TX early.
  const std::atomic<bool>* interrupt = nullptr;
  // RunTrial: called with the live run once traffic starts, and with nullptr
  // before it is torn down (live metrics read it meanwhile).
  std::function<void(const class LiveRun*)> on_live;
  // Who owns each flow (engine/placement.h), over at most `max_workers`
  // worker lcores (0: every worker EAL has).
  PlacementPolicy placement = PlacementPolicy::kFlow;
  uint32_t max_workers = 0;
  // Flows reported one by one per stream (StreamResult::per_flow): every
  // flow when the stream has at most this many, else this many worst.
  uint32_t per_flow = 1024;
  // Each port's hosts (endpoint/host.h; null: none, every port answers
  // nothing) and what it answers for them (`ports[].answer`; by port, all
  // on where missing). methods::TrialOptionsOf(plan) sets both.
  std::shared_ptr<const std::vector<endpoint::PortHosts>> hosts;
  std::vector<endpoint::AnswerSpec> answer;
  // Each port's `ports[].pfc` (by port; the defaults where missing).
  std::vector<config::PortPfcSpec> pfc;
};

// One flow after the run: what TX sent and RX saw of it (report.json per_flow).
struct FlowReport {
  uint32_t index = 0;  // within the stream
  uint64_t key = 0;    // QP, PDC or UDP port the flow is addressed by (its key in the frame)
  uint32_t owner_lcore = 0;
  uint64_t tx_packets = 0, tx_bytes = 0;
  // Per-flow rates: slots this flow gave up to a hold-up of its lcore (the
  // stream's tx_slots_skipped, flow by flow); -1 for a stream without them
  // (its skipped slots are the stream's turns, not one flow's).
  int64_t tx_slots_skipped = -1;
  rx::FlowResult rx;
  // DCQCN streams: the QP's rate over the run (tx::RatePoint: from t_ns on, bps).
  std::vector<tx::RatePoint> rate_timeline;
  // Frames sent and never received once (stats::LostPackets).
  bool retransmits = false;  // its requester resends (go-back-N): lost counts frames, not packets
  int64_t lost() const { return stats::LostPackets(tx_packets, rx.rx_packets, rx.duplicate, retransmits); }
  // Received frames per second over the flow's first to last arrival.
  double rx_rate_pps() const {
    return rx.rx_packets >= 2 && rx.last_rx_ns > rx.first_rx_ns
               ? static_cast<double>(rx.rx_packets - 1) * 1e9 / static_cast<double>(rx.last_rx_ns - rx.first_rx_ns)
               : 0;
  }
};

// One worker lcore's loop (VPP's `show runtime`): polls, polls that moved
// frames, and the TSC cycles its TX and RX work took per frame.
struct LcoreStats {
  unsigned lcore = 0;
  uint64_t polls = 0, busy_polls = 0;
  uint64_t tx_packets = 0, rx_packets = 0;  // sent by its TX tasks; taken from its RX queues
  uint64_t tx_cycles = 0, rx_cycles = 0;    // TSC cycles in TX and RX work of polls that moved frames
  uint64_t handoff_in = 0;                  // records other lcores handed it (frames and feedback of its flows)
  uint64_t handoff_out = 0;                 // records it handed to other owners
  uint64_t handoff_waits = 0;               // polls whose records waited for an owner's full ring
  // Most of its own polls a handed record spent from entering its ring to
  // being observed (each poll takes all a ring holds: the polls it took to
  // cross between cores), and the most ns from the frame's receipt on the
  // other lcore to that observation.
  uint64_t handoff_max_polls = 0, handoff_max_ns = 0;
  // Turns of its loop that came more than 1 ms after the one before: the
  // lcore away from its queues and pacers (held up by the host, or its own
  // work), whether or not a slot was skipped; their time in all, the longest.
  uint64_t holdups = 0, holdup_ns = 0, holdup_max_ns = 0;
  // Turns 0.1 to 1 ms after the one before (short hold-ups: away in slices
  // a hold-up does not count): how many, their time in all.
  uint64_t short_holdups = 0, short_holdup_ns = 0;
  uint32_t flows = 0;  // flows it owns
  int cpu = -1;        // the CPU it runs on
  // The hypervisor's steal of that CPU since the launch (/proc/stat), ns: on
  // a virtual machine, time the lcore was not running although it had work
  // (-1: unknown). Shared with any other lcore on the same CPU.
  int64_t host_steal_ns = -1;
  // Time its thread waited, runnable, while the kernel ran another task on
  // its CPU (/proc/self/task/TID/schedstat run_delay, ns; -1: unknown).
  int64_t guest_wait_ns = -1;
  double tx_cycles_per_packet() const { return tx_packets ? static_cast<double>(tx_cycles) / tx_packets : 0; }
  double rx_cycles_per_packet() const { return rx_packets ? static_cast<double>(rx_cycles) / rx_packets : 0; }
};

struct StreamResult {
  std::string name;
  size_t tx_port = 0, rx_port = 0;
  double frame_size = 0;      // mean bytes per frame, FCS included
  bool signed_frames = true;  // false: no signature (CNP, ACK, PFC, LBN...): RX counts them per port only
  bool received = true;       // false: the RX port has no RX queues (a TX-only port): no RX figures
  double set_pps = 0;
  uint32_t flows = 1;
  bool verify_payload = false;
  tx::TxCounters tx;
  rx::RxCounters rx;
  stats::StreamStats analysis;  // sequence, latency and jitter over the stream's flows
  int64_t tx_duration_ns = 0;  // first to last accepted TX burst
  // Where the tester itself was the limit for this stream (its TX, its ports); empty when it kept up.
  std::vector<TesterLimit> tester_limits;
  // Flow by flow (TrialOptions::per_flow): every flow, or the worst by loss
  // then latency; in flow order.
  std::vector<FlowReport> per_flow;
  bool per_flow_all = true;  // false: per_flow holds only the worst flows
  // Received on a responding port (RoCEv2 data): what its responder did.
  bool answered = false;
  bool delivers = false;  // answered as RC SEND/WRITE: the responder counts what it delivers in order
  endpoint::ResponderCounters responder;
  // `frame.roce.dcqcn`: what its QPs' reaction points did.
  bool dcqcn = false;
  config::DcqcnSpec dcqcn_params;
  // RC requesters that go back (roce.retransmit with a responder).
  bool retransmits = false;
  tx::RetransmitCounters retx;
  // `frame.roce.connect: cm`: its QPs' set-up by CM MADs before the data.
  std::optional<QpSetup> qp_setup;
  tx::DcqcnCounters rp;
  // READ (stream::CompiledStream::read_*): the other half's position in
  // TrialResult::streams (-1: not a READ), and response packets per request.
  // The requests' stream has no latency (no signature); the responses'
  // tx.due is what its requests asked for.
  int32_t read_requests = -1, read_responses = -1;
  uint32_t read_packets = 0;
  // TX packets never received once (stats::LostPackets; losses after the
  // last arrival included). Exact when the drain time covers the path delay.
  int64_t lost() const { return stats::LostPackets(tx.packets, rx.packets, analysis.duplicate, retransmits); }
  // Frames missing at sequence gaps when each gap was seen (the live
  // gap_packets): the analysis nets late fills out, so they are added back.
  uint64_t sequence_gap_packets() const { return static_cast<uint64_t>(analysis.lost) + analysis.reordered; }
};

// One iteration of a collective cell as the lcores timed it (engine/cell_work.h).
struct CellIteration {
  uint64_t first_tx_ns = 0;  // the first frame any rank sent (TX time, this host's ns)
  uint64_t last_rx_ns = 0;   // the packet that completed the last segment any rank waited for (RX time)
  bool completed = false;    // false: not done within the timeout (the cell ended there)
  // When its compute began (stream::CellPlay::compute_ns before the
  // communication starts, overlap of it early), this host's ns: its job
  // completes at the later of compute_start_ns + compute and last_rx_ns.
  uint64_t compute_start_ns = 0;
  // The tester's own hold-ups within the iteration (from its compute's
  // start, or its first frame, to its last arrival): ns the worker lcores
  // were away (turns more than 1 ms apart, engine/worker.h), summed over
  // the workers: its time may include up to that much of the tester's own
  // delay. `tester_held`: more than 1 % of its time (from its compute's
  // start or first frame to its last arrival), so its time is not the
  // fabric's; also when the hold-up log was full and could not place one.
  uint64_t tester_holdup_ns = 0;
  bool tester_held = false;
  int64_t time_ns() const { return static_cast<int64_t>(last_rx_ns - first_tx_ns); }
};

// A collective cell's run (stream::CellStreams, played as its CellPlay says).
struct CellResult {
  std::vector<size_t> streams;            // its QPs' streams, positions in TrialResult::streams
  std::vector<CellIteration> iterations;  // in order; a last one not completed: the cell failed there
  // Frame bytes (FCS included) its QPs resent (go-back-N), by the iteration
  // the resent packet belongs to (its sequence over the QP's packets an iteration).
  std::vector<uint64_t> resent_bytes;
};

struct PortResult {
  std::string name;
  uint64_t tx_packets = 0, tx_bytes = 0;  // our TX counters, all streams of the port
  uint64_t rx_packets = 0, rx_bytes = 0;  // our RX counters, signature or not
  uint64_t rx_unknown_packets = 0, rx_unknown_bytes = 0;
  // Frames no stream sent and no spec shapes (in rx_packets, never in a
  // stream's figures nor taken for feedback): headers that contradict each
  // other or the frame's length; a signature whose flags, TX time, flow id or
  // sequence no stream of the run could have written; feedback or a READ
  // request not shaped as the spec shapes it (length, reserved bytes, ICRC).
  uint64_t rx_invalid_packets = 0;
  // Frames its frame handlers took (ARP, ND, echo, PFC: `handled` below).
  uint64_t rx_handled_packets = 0;
  // Feedback among the unknown frames (CNP, RoCE NAK, UET NACK); unmatched:
  // addressed to no flow of this run.
  uint64_t rx_cnp = 0, rx_roce_nak = 0, rx_uet_nack = 0, rx_feedback_unmatched = 0, rx_roce_ack = 0;
  // A responding port (`respond`): the answers its responders sent (also in
  // tx_packets/tx_bytes), and polls that found no mbuf for them.
  bool responds = false;
  uint64_t tx_answer_packets = 0, tx_answer_bytes = 0, answer_alloc_failures = 0;
  // Frames without a signature its frame handlers took (endpoint/frame_handler.h),
  // by kind and count as endpoint::HandlerKinds() declares them (report.json
  // ports[].<kind>: ports[].neighbors), and the answers its hosts sent (also
  // in tx_packets/tx_bytes; ARP, ND and echo replies) and polls that found no
  // mbuf for them. Never in a stream's figures, loss or tester limits.
  std::vector<std::vector<uint64_t>> handled;
  uint64_t tx_host_answer_packets = 0, host_answer_alloc_failures = 0;
  port::Stats hw;  // the PMD's counters over the trial
  std::vector<port::Xstat> xstats;
  port::KernelCounters kernel;  // the kernel interface behind the PMD (af_packet), over the trial
  uint64_t kernel_read_pmd_tx = 0;  // the PMD's tx_packets when `kernel` was read (TX may send after)
  // RX lcores that came back to this port's queues after more than 1 ms with frames waiting.
  uint64_t rx_stalls = 0, rx_stall_max_ns = 0;
  uint64_t rx_stall_frames = 0;  // frames drained in the catch-ups after those stalls
  bool software_rx_stamps = true;  // RX times from the TSC after rx_burst (a stall delays them)
  // A responding port's RX checked the ICRC of every RoCEv2 data frame (its
  // responder drops a bad one); false where RX takes TX's own mbufs (the
  // built-in loopback: nothing but this process touched them). null in the
  // report on a port that responds to nothing.
  std::optional<bool> rx_icrc_checked;
  std::string kernel_iface;
  std::string driver;                      // the PMD's name (where a frame handler's counts were observed)
  std::vector<TesterLimit> tester_limits;  // where this port's tester side was the limit
};

struct TrialResult {
  int64_t duration_ns = 0;  // TX phase, start to the last stream done
  bool interrupted = false;
  bool timed_out = false;  // the TX phase hit max_duration_ns
  std::vector<StreamResult> streams;
  std::vector<PortResult> ports;
  std::vector<std::string> placement;                 // "lcore 1: tx loop0/q0, rx loop0/q0"
  std::string placement_policy;                       // Placement::Describe
  std::vector<LcoreStats> lcores;                     // per worker lcore that ran
  std::vector<Sample> samples;                        // every sample_interval_ns, and one at the end of TX
  std::vector<std::vector<std::string>> xstat_names;  // per port (pause/PFC counters where the PMD has them)
  std::vector<CellResult> cells;                      // per collective cell among the streams
  std::vector<stats::LossEvent> loss_events;          // the first ones, in receive-time order per RX task
  uint64_t loss_events_not_logged = 0;
  std::string timestamp_source = "tsc: software, TX before rte_eth_tx_burst, RX after rte_eth_rx_burst";
  // What a reader of the figures must know (e.g. RX stamps that do not follow the fitted NIC clock).
  std::vector<std::string> warnings;
  // This host's ns (TscClock, the unit of every *_ns time above) plus this
  // is UNIX time (CLOCK_REALTIME ns): read once as the trial launched, so
  // the times of events (a collective's iterations) can be set against
  // other logs; off by the TSC's rate against the system clock's since (the
  // EAL's TSC calibration: up to some hundred ppm on a VM, 0.1 ms a second).
  int64_t unix_minus_host_ns = 0;
  int64_t start_unix_ns = 0;  // when the streams started, on that clock
  // Frames the host kernel dropped at its input backlog during the trial; -1: not read (no kernel-backed port).
  int64_t host_backlog_drops = -1;
  // The drain (TrialOptions::drain_ns, from the last frame an lcore sent):
  // how long it took, and the frames sent less than drain_ns before the
  // counters were read or after (its bound, drain_ns + max(drain_ns, 1 s),
  // reached while frames still went out: the tester limit drain_short).
  int64_t drain_ns = 0;
  uint64_t drain_late_frames = 0;
  // Some stream or port has a tester limit: its figures are not only the device's.
  bool tester_limited() const;
};

// Fills every stream's and port's tester_limits from the counters of the
// trial (engine/tester_limits.h lists the kinds); Finish calls it.
void AssessTesterLimits(TrialResult& r);

absl::StatusOr<TrialResult> RunTrial(const port::Eal& eal, const std::vector<port::Port*>& ports,
                                     const std::vector<stream::CompiledStream>& streams, const TrialOptions& options);

// The port replays a capture (net_pcap on a file, rx_pcap, not on a kernel
// interface): the frames it receives are the capture's (`craft` wrote them,
// their TX times in its own timebase), so their TX times and sequences are
// not held to what this run's senders sent (the rest of a frame's checks are).
bool ReplaysCapture(const port::Port& p);

struct LcoreWork;  // engine.cc: the tasks of one worker lcore
struct CellRun;    // cell_run.cc: a collective cell's barriers on the workers

// A received frame, as a capture request copied it.
struct CapturedFrame {
  uint64_t rx_ns = 0;     // this host's clock (TSC ns)
  uint32_t wire_len = 0;  // frame bytes without FCS
  std::vector<uint8_t> bytes;
};

// A run that keeps going while the caller does other things (the CLI, a
// metrics endpoint): RunTrial is Start, a wait, and Finish. Everything here
// is for the control thread; the lcores are never locked: counters and
// latency histograms are read with relaxed loads, rate/pause/stop are
// applied by the TX lcore on its next poll, and top-N flows and captures are
// requests the RX lcores serve between bursts.
//
//   auto run = fg::engine::LiveRun::Start(eal, ports, streams, opt);
//   (*run)->SetRate(0, 20'000);                  // stream 0 to 20 kpps, now
//   auto live = (*run)->Streams();               // counters so far
//   fg::engine::TrialResult r = (*run)->Finish();
class LiveRun {
 public:
  static absl::StatusOr<std::unique_ptr<LiveRun>> Start(const port::Eal& eal, const std::vector<port::Port*>& ports,
                                                        const std::vector<stream::CompiledStream>& streams,
                                                        const TrialOptions& options);
  ~LiveRun();  // finishes the run if Finish was not called
  LiveRun(const LiveRun&) = delete;
  LiveRun& operator=(const LiveRun&) = delete;

  bool tx_done() const;        // every stream has sent its count, reached its duration or was stopped
  int64_t elapsed_ns() const;  // since the synchronized start
  const std::vector<std::string>& placement() const { return result_.placement; }
  const std::string& placement_policy() const { return result_.placement_policy; }
  // Per worker lcore, so far (relaxed reads: `show runtime`).
  std::vector<LcoreStats> Runtime() const;
  const std::vector<stream::CompiledStream>& streams() const { return streams_; }

  absl::Status SetRate(size_t stream, double pps);
  // One flow's rate (a stream with per-flow rates), applied by its owner
  // lcore on its next poll (waits up to 1 s for it).
  struct FlowRateChange {
    int64_t ns = 0;  // from this call until the owner had it in effect
    // The longest the host held up either side meanwhile: the owner lcore's
    // loop not going round, or this thread not running (over 1 ms: the
    // tester's delay, not the engine's).
    int64_t held_up_ns = 0;
  };
  absl::StatusOr<FlowRateChange> SetFlowRate(size_t stream, uint32_t flow, double pps);
  absl::StatusOr<double> FlowRate(size_t stream, uint32_t flow) const;
  absl::Status SetPaused(size_t stream, bool paused);
  absl::Status StopStream(size_t stream);
  struct StreamState {
    double pps = 0;
    bool paused = false, done = false;
  };
  StreamState state(size_t stream) const;

  // A stream's counts so far, as its shards' and tables' own blocks (each
  // summed member by member): a count added to one of them (tx::TxCounts,
  // rx::StreamLiveView, endpoint::ResponderCounters) is here with no other
  // line; engine/counters.cc declares how it is read and shown.
  struct StreamLive {
    tx::TxCounters tx;      // its TX shards' (tx.slots_skipped: TX fell more than 1 ms behind: a tester limit)
    rx::StreamLiveView rx;  // its RX analysis' (rx.gap_packets: sequence_gap_packets)
    // Its RX port's responder so far (`answered` false, all 0: the port does not respond).
    endpoint::ResponderCounters responder;
    uint64_t retransmitted_packets = 0;  // go-back-N: frames made again after a NAK or a timeout
    bool answered = false;
    // Its frames carry a signature and its RX port receives: it has RX figures.
    bool rx_counted = true;
    bool retransmits = false;  // go-back-N: lost counts frames (stats::LostPackets)
    // Sent and not received once so far (stats::LostPackets): while the run
    // goes on this includes the frames in flight (Streams() reads RX before
    // TX); after Finish it is the report's lost_packets.
    int64_t lost() const { return stats::LostPackets(tx.packets, rx.packets, rx.duplicate, retransmits); }
    // What was counted since `base` (an earlier reading): every count less
    // the base's; what the stream is (answered, rx_counted, retransmits) stays.
    StreamLive operator-(const StreamLive& b) const {
      StreamLive d = *this;
      d.tx -= b.tx;
      d.rx -= b.rx;
      d.responder -= b.responder;
      d.retransmitted_packets -= b.retransmitted_packets;
      return d;
    }
  };
  std::vector<StreamLive> Streams() const;  // by stream index
  struct PortLive {
    uint64_t tx_packets = 0, tx_bytes = 0, rx_packets = 0, rx_bytes = 0, rx_unknown_packets = 0;
    uint64_t rx_invalid_packets = 0;  // PortResult::rx_invalid_packets so far
    // PFC and PAUSE received so far, per slot (priorities 0-7, then link-level
    // PAUSE: endpoint/pfc.h): pause events, X-ON frames, paused time (ns).
    std::array<uint64_t, endpoint::kPfcSlots> pfc_pause_events{}, pfc_xon_frames{}, pfc_paused_ns{};
    PortLive operator-(const PortLive& b) const {
      PortLive d{tx_packets - b.tx_packets,
                 tx_bytes - b.tx_bytes,
                 rx_packets - b.rx_packets,
                 rx_bytes - b.rx_bytes,
                 rx_unknown_packets - b.rx_unknown_packets,
                 rx_invalid_packets - b.rx_invalid_packets};
      for (size_t i = 0; i < endpoint::kPfcSlots; ++i) {
        d.pfc_pause_events[i] = pfc_pause_events[i] - b.pfc_pause_events[i];
        d.pfc_xon_frames[i] = pfc_xon_frames[i] - b.pfc_xon_frames[i];
        d.pfc_paused_ns[i] = pfc_paused_ns[i] - b.pfc_paused_ns[i];
      }
      return d;
    }
  };
  std::vector<PortLive> Ports() const;
  stats::LatencyHistogram Latency(size_t stream) const;
  // The n worst flows (by lost, then duplicates + reordered, then received);
  // each RX lcore makes one pass over its flows to answer.
  absl::StatusOr<std::vector<rx::FlowView>> TopFlows(size_t n) const;
  // The next n frames the port receives (any frame), within timeout_ns;
  // fewer when the time runs out (none: DeadlineExceeded).
  absl::StatusOr<std::vector<CapturedFrame>> Capture(size_t port, size_t n, int64_t timeout_ns) const;

  // Stops every stream still sending, drains, stops the lcores and sums
  // everything (RunTrial's result). Further calls return the same result.
  TrialResult Finish(bool interrupted = false, bool timed_out = false);

 private:
  LiveRun(const port::Eal& eal, const std::vector<port::Port*>& ports,
          const std::vector<stream::CompiledStream>& streams, const TrialOptions& options);
  void Background();
  // At the time its TX counts are read; at `tx_end` (TSC) when TX has ended (0: not).
  void TakeSample(uint64_t tx_end);
  // The closed loop's wiring (closed_loop.cc), in Start: responders on the
  // workers that own answered flows, the feedback sinks to the senders, and
  // the senders' progress for RX (rx::SentSource).
  absl::Status SetUpResponders(const std::vector<unsigned>& workers, int tag_off);
  void SetUpFeedback();
  // Start's other steps (trial_builder.cc): owners, FlowTables and rings;
  // the TX tasks; the RX tasks with their frame handlers; the launch.
  void BuildOwners();
  absl::Status BuildTx(int tag_off);
  void BuildRx(int tag_off);
  std::unique_ptr<endpoint::FrameHandlers> HandlersOf(size_t port, uint32_t worker, int tag_off);
  absl::Status Launch();
  // Every shard of a stream: (task, index in the task, share of the stream's rate).
  struct ShardRef {
    tx::TxTask* task;
    size_t index;
    double share;
  };
  std::vector<ShardRef> TxOf(size_t stream) const;
  absl::Status Ask(const std::vector<std::pair<rx::RxTask*, rx::RxRequest*>>& asks, int64_t timeout_ns,
                   bool cancel_on_timeout) const;
  void CollectFlows();
  // Frames the lcores have sent so far (TX tasks' and responders' answers),
  // and received.
  uint64_t FramesSent() const;
  uint64_t FramesReceived() const;
  // Frames port pi's PMD took that its kernel interface has neither sent
  // nor refused (waiting in its packet socket's TX ring); 0 without one.
  uint64_t UnsentInKernel(size_t pi) const;
  // The drain: until drain_ns have passed since the last frame an lcore sent
  // (TX, answers, a requester's recovery) or a packet socket's TX ring last
  // held one (the control thread asks the kernel to send them, every 1 ms),
  // at least drain_ns after TX ended, at most drain_ns + max(drain_ns, 1 s).
  struct DrainEnd {
    uint64_t sent = 0;  // FramesSent() at its last sample
    uint64_t late = 0;  // sent less than drain_ns before its end (0: it ended quiet, or nothing arrived then)
    // The bound reached with frames going out and none arriving: they, and
    // those sent after the reading, are the path's loss (a warning), not late.
    bool path_lost = false;
  };
  DrainEnd Drain();

  struct RxRef {
    size_t port;
    std::unique_ptr<rx::RxTask> task;
  };
  TscClock clock_;
  std::vector<port::Port*> ports_;
  std::vector<stream::CompiledStream> streams_;  // the tasks point into this copy
  TrialOptions options_;
  std::vector<std::unique_ptr<tx::TxTask>> txs_;
  std::vector<RxRef> rxs_;
  std::vector<std::unique_ptr<rx::FlowTable>> tables_;   // per worker
  std::vector<std::unique_ptr<rx::HandoffRing>> rings_;  // [from * W + to]
  // Per worker whose flows a responding port receives (not indexed by worker).
  std::vector<std::unique_ptr<endpoint::AnswerQueue>> answer_queues_;
  std::vector<std::unique_ptr<endpoint::Responder>> responders_;
  std::vector<std::unique_ptr<endpoint::AnswerQueue>> host_answer_queues_;  // per worker with RX queues
  // Per port that honours PFC (ports[].pfc.honor; null otherwise): the
  // pause state its RX handlers set and its streams' TX reads.
  std::vector<std::unique_ptr<endpoint::PfcGate>> pfc_gates_;
  std::vector<std::unique_ptr<endpoint::FeedbackSink>> feedback_;  // per worker with DCQCN flows
  std::vector<std::unique_ptr<endpoint::ReadSink>> read_sinks_;    // per worker answering READs
  std::vector<std::unique_ptr<rx::SentSource>> sent_sources_;      // per worker: its flows' senders, for RX
  absl::Status FollowsRequests(size_t stream, const char* what) const;  // refuses control of a READ's responses
  std::vector<std::optional<QpSetup>> qp_setup_;  // per stream: its CM set-up (connect: cm)
  // Collective cells (cell_run.cc): each one's barriers on the workers.
  absl::Status SetUpCells();
  std::vector<std::unique_ptr<CellRun>> cells_;
  std::vector<std::unique_ptr<endpoint::ArrivalSink>> arrival_sinks_;  // per worker with cells
  Placement placement_;
  mutable std::mutex abandoned_mu_;
  mutable std::vector<std::unique_ptr<std::vector<rx::TopFlowsRequest>>> abandoned_;  // TopFlows timed out
  std::vector<unsigned> lcores_;                                                      // worker index -> lcore id
  std::vector<LcoreWork> work_;
  uint64_t start_ = 0;
  // True until every lcore is launched: a Start that fails before then has
  // nothing to stop or collect (its destructor must not Finish).
  bool finished_ = true;
  TrialResult result_;
  std::thread background_;
  std::atomic<bool> stop_background_{false};
  std::mutex sample_mu_;                          // the samples: the background thread and Finish (never an lcore)
  bool tx_ended_ = false;                         // under sample_mu_
  std::vector<std::optional<bool>> rx_icrc_checked_;  // per port: PortResult::rx_icrc_checked, set by BuildRx
  int64_t backlog_drops_start_ = -1;              // HostBacklogDrops() at start, with a kernel-backed port
  std::vector<port::KernelCounters> kernel_end_;  // per port, read at the end of the drain
  std::vector<uint64_t> kernel_pmd_tx_;           // per port, the PMD's tx_packets at that reading
};

}  // namespace fg::engine
