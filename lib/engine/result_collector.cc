// engine/result_collector.cc: LiveRun::Finish, the end of a trial: stop TX,
// drain, stop the lcores, then sum what every task counted into the
// TrialResult (streams, ports, flows, lcores) and judge the tester's own
// limits (engine/tester_limits.h).
#include "engine/engine.h"

#include <rte_launch.h>
#include <rte_lcore.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <thread>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/status.h"
#include "base/tsc.h"
#include "base/units.h"
#include "engine/cell_work.h"
#include "engine/worker.h"
#include "port/kernel_if.h"

namespace fg::engine {

TrialResult LiveRun::Finish(bool interrupted, bool timed_out) {
  if (finished_) return result_;
  finished_ = true;
  result_.interrupted = interrupted;
  result_.timed_out = timed_out;
  // End TX: streams still sending stop here (a live run's `stop`).
  for (auto& t : txs_) {
    for (size_t i = 0; i < t->num_streams(); ++i) t->Stop(i);
  }
  const uint64_t tx_end = ReadTsc();
  {
    // The background thread samples no more; one last sample at the end of TX.
    std::lock_guard<std::mutex> lock(sample_mu_);
    tx_ended_ = true;
    if (options_.sample_interval_ns > 0) TakeSample(tx_end);
  }
  for (auto& w : work_) w.phase.store(kDrain, std::memory_order_release);
  const uint64_t drain_start = ReadTsc();
  const DrainEnd drained = Drain();
  uint64_t late = drained.late;
  // The kernel's side of kernel-backed ports while RX still polls (a frame
  // the kernel counted is read within the millisecond that follows), then
  // the PMDs' once the lcores have stopped: a frame never shows as dropped
  // only because it came between the two readings.
  kernel_end_.assign(ports_.size(), {});
  kernel_pmd_tx_.assign(ports_.size(), 0);
  // From the drain's last sample: a frame sent since counts as after the reading.
  const uint64_t sent_at_read = drained.sent;
  result_.drain_ns = static_cast<int64_t>(clock_.ToNs(ReadTsc() - drain_start));
  bool kernel_backed = false;
  for (size_t pi = 0; pi < ports_.size(); ++pi) {
    if (ports_[pi]->options().kernel_iface.empty()) continue;
    // The PMD's first: a frame it takes between the two readings is the
    // kernel's to count, never one the kernel had not sent.
    kernel_pmd_tx_[pi] = ports_[pi]->stats().tx_packets;
    kernel_end_[pi] = ports_[pi]->kernel_stats();
    kernel_backed = true;
  }
  if (backlog_drops_start_ >= 0) {
    const int64_t end = port::HostBacklogDrops();
    if (end >= 0) result_.host_backlog_drops = end - backlog_drops_start_;
  }
  if (kernel_backed) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  for (auto& w : work_) w.phase.store(kStop, std::memory_order_release);
  rte_eal_mp_wait_lcore();
  // Frames sent after the reading (in its last millisecond): not in the
  // kernel's counts, and no time to arrive; into a path that was losing
  // everything, its loss like those before (Drain's warning says so).
  if (!drained.path_lost) late += FramesSent() - sent_at_read;
  result_.drain_late_frames = late;
  // Each collective cell's iterations, as its worker 0 recorded them.
  for (const auto& c : cells_) {
    CellResult cr;
    cr.streams = c->streams;
    cr.iterations = c->shared.recorded;
    MarkTesterHoldups(cr.iterations, work_);
    cr.resent_bytes.assign(c->shared.iterations + 1, 0);
    for (const auto& w : c->work) {
      for (const auto& [task, shard] : w->shards()) {
        const std::vector<uint64_t>& b = task->CellResentBytes(shard);
        for (size_t i = 0; i < b.size() && i < cr.resent_bytes.size(); ++i) cr.resent_bytes[i] += b[i];
      }
    }
    result_.cells.push_back(std::move(cr));
  }
  // Records handed over as the lcores stopped one after another (still in a
  // ring, or held back by a full one): observed here, the lcores being gone.
  {
    std::vector<rx::FlowTable*> owners;
    for (auto& t : tables_) owners.push_back(t.get());
    const size_t nw = tables_.size();
    std::vector<uint64_t> delivered(nw, 0);
    for (auto& ref : rxs_) ref.task->HandOver(owners, delivered);
    rx::Handoff recs[64];
    for (size_t from = 0; from < nw; ++from) {
      for (size_t to = 0; to < nw; ++to) {
        if (from == to) continue;
        rx::HandoffRing* ring = rings_[from * nw + to].get();
        for (size_t k; (k = ring->Pop(recs, 64)) != 0;) {
          tables_[to]->Deliver(recs, k);
          delivered[to] += k;
        }
      }
    }
    // The lcores are gone: this thread is now the counters' one writer.
    for (size_t w = 0; w < nw; ++w) work_[w].handoff_in.Add(delivered[w]);
    // Answers never sent (queued as the lcores stopped, or made from the
    // records just delivered): counted as dropped, not sent.
    for (size_t i = 0; i < responders_.size(); ++i) responders_[i]->Unsent(*answer_queues_[i]);
  }
  stop_background_.store(true, std::memory_order_release);
  if (background_.joinable()) background_.join();

  // Which clock the latency figures come from (the RX side decides).
  for (port::Port* p : ports_) {
    if (p->rx_timestamp().unit != port::RxTimestamp::Unit::kNone) {
      result_.timestamp_source = absl::StrFormat("RX: %s on port %s; TX: the signature's stamp",
                                                 p->rx_timestamp().observation_point(), p->name());
      if (port::NicClock* c = p->nic_clock(); c != nullptr && c->line()) {
        const clock::ClockLine& l = *c->line();
        result_.timestamp_source += absl::StrFormat(
            " (fit over the last %d of %d readings: %.9f units/ns, %+.3f ppm against the driver's %.6f, RMS residual "
            "%.0f ns, max %.0f ns)",
            std::min<uint64_t>(c->samples(), c->window()), c->samples(), l.slope, l.drift_ppm(), l.nominal,
            l.residual_ns, l.max_residual_ns);
      }
    }
  }

  // Sum per-lcore counters into per-stream and per-port results.
  result_.duration_ns = tx_end > start_ ? static_cast<int64_t>(clock_.ToNs(tx_end - start_)) : 0;
  result_.streams.resize(streams_.size());
  for (size_t i = 0; i < streams_.size(); ++i) {
    StreamResult& r = result_.streams[i];
    r.name = streams_[i].name;
    r.tx_port = streams_[i].tx_port;
    r.rx_port = streams_[i].rx_port;
    r.frame_size = streams_[i].frame_size;
    r.signed_frames = streams_[i].program.signed_frames();
    r.flows = streams_[i].flows;
    r.verify_payload = streams_[i].verify_payload;
    r.received = ports_[streams_[i].rx_port]->options().rx_queues > 0;
    r.set_pps = streams_[i].pps;
    if (i < qp_setup_.size()) r.qp_setup = qp_setup_[i];
    r.read_requests = streams_[i].read_requests;
    r.read_responses = streams_[i].read_responses;
    r.read_packets = streams_[i].read_packets;
    if (streams_[i].read_request()) r.signed_frames = true;  // counted by their QP and PSN
  }
  for (auto& t : txs_) {
    for (size_t i = 0; i < t->num_streams(); ++i) {
      StreamResult& sr = result_.streams[t->stream(i).index];
      sr.tx += t->counters(i);
      if (t->retransmits(i)) {
        sr.retransmits = true;
        sr.retx += t->retransmit(i);
      }
      if (t->stream(i).dcqcn) {
        sr.dcqcn = true;
        sr.dcqcn_params = *t->stream(i).dcqcn;
        sr.rp += t->dcqcn(i);
      }
    }
  }
  for (StreamResult& r : result_.streams) {
    if (r.tx.packets != 0) r.tx_duration_ns = static_cast<int64_t>(r.tx.last_ns - r.tx.first_ns);
  }
  result_.ports.resize(ports_.size());
  for (size_t pi = 0; pi < ports_.size(); ++pi) result_.ports[pi].name = ports_[pi]->name();
  for (const StreamResult& r : result_.streams) {
    result_.ports[r.tx_port].tx_packets += r.tx.packets;
    result_.ports[r.tx_port].tx_bytes += r.tx.bytes;
  }
  // The responders' answers: in their port's TX counts, and on their own.
  for (const LcoreWork& w : work_) {
    for (size_t pi = 0; pi < w.answer_ports.size(); ++pi) {
      const AnswerPort& ap = w.answer_ports[pi];
      PortResult& pr = result_.ports[pi];
      pr.tx_answer_packets += ap.packets.Read();
      pr.tx_answer_bytes += ap.bytes.Read();
      pr.tx_packets += ap.packets.Read();
      pr.tx_bytes += ap.bytes.Read();
      pr.answer_alloc_failures += ap.alloc_failures.Read();
    }
  }
  // The hosts' answers (ARP, ND, echo): in their port's TX counts, and on their own.
  for (const LcoreWork& w : work_) {
    for (size_t pi = 0; pi < w.host_answer_ports.size(); ++pi) {
      const AnswerPort& ap = w.host_answer_ports[pi];
      PortResult& pr = result_.ports[pi];
      pr.tx_host_answer_packets += ap.packets.Read();
      pr.tx_packets += ap.packets.Read();
      pr.tx_bytes += ap.bytes.Read();
      pr.host_answer_alloc_failures += ap.alloc_failures.Read();
    }
  }
  for (size_t i = 0; i < streams_.size(); ++i) {
    if (streams_[i].answers == nullptr) continue;
    result_.ports[streams_[i].answers->port].responds = true;
    result_.streams[i].answered = true;
    result_.streams[i].delivers = streams_[i].answers->reliable;
    for (const auto& resp : responders_) result_.streams[i].responder += resp->counters(static_cast<uint32_t>(i));
  }
  for (const auto& table : tables_) {
    const std::vector<stats::StreamStats> summaries = table->Summaries();
    for (uint32_t i = 0; i < streams_.size(); ++i) {
      const rx::RxCounters c = table->counters(i);
      result_.streams[i].rx.packets += c.packets;
      result_.streams[i].rx.bytes += c.bytes;
      result_.streams[i].analysis.Merge(summaries[i]);
      // Taken by RX as the stream's, found never sent by the flow's owner: its RX port's invalid frames.
      result_.ports[streams_[i].rx_port].rx_invalid_packets += table->invalid(i);
    }
    const stats::LossLog& log = table->loss_log();
    result_.loss_events.insert(result_.loss_events.end(), log.events().begin(), log.events().end());
    result_.loss_events_not_logged += log.dropped();
  }
  for (auto& ref : rxs_) {
    PortResult& pr = result_.ports[ref.port];
    const rx::RxCounters d = ref.task->data();
    pr.rx_packets += d.packets;
    pr.rx_bytes += d.bytes;
    const rx::FeedbackCounters fb = ref.task->feedback();
    pr.rx_cnp += fb.cnp;
    pr.rx_roce_nak += fb.roce_nak;
    pr.rx_roce_ack += fb.roce_ack;
    pr.rx_uet_nack += fb.uet_nack;
    pr.rx_feedback_unmatched += fb.unmatched;
    // Frames counted apart (unknown, invalid, taken by a frame handler) are
    // still frames the port received: in its rx totals too.
    const rx::RxCounters u = ref.task->unknown(), v = ref.task->invalid(), h = ref.task->handled();
    for (const rx::RxCounters& c : {u, v, h}) {
      pr.rx_packets += c.packets;
      pr.rx_bytes += c.bytes;
    }
    pr.rx_unknown_packets += u.packets;
    pr.rx_unknown_bytes += u.bytes;
    pr.rx_invalid_packets += v.packets;
    pr.rx_handled_packets += h.packets;
    if (pr.handled.empty()) pr.handled = endpoint::EmptyHandlerCounts();
    if (ref.task->handlers() != nullptr) ref.task->handlers()->AddCounts(pr.handled);
    pr.rx_stalls += ref.task->stalls();
    pr.rx_stall_max_ns = std::max(pr.rx_stall_max_ns, ref.task->stall_max_ns());
    pr.rx_stall_frames += ref.task->stall_frames();
  }
  result_.lcores = Runtime();
  CollectFlows();
  for (size_t pi = 0; pi < ports_.size(); ++pi) {
    result_.ports[pi].hw = ports_[pi]->stats();
    result_.ports[pi].xstats = ports_[pi]->xstats();
    result_.ports[pi].kernel_iface = ports_[pi]->options().kernel_iface;
    result_.ports[pi].driver = ports_[pi]->capabilities().driver;
    result_.ports[pi].software_rx_stamps = ports_[pi]->rx_timestamp().unit == port::RxTimestamp::Unit::kNone;
    if (pi < rx_icrc_checked_.size()) result_.ports[pi].rx_icrc_checked = rx_icrc_checked_[pi];
    if (pi < kernel_end_.size()) {
      result_.ports[pi].kernel = kernel_end_[pi];
      result_.ports[pi].kernel_read_pmd_tx = kernel_pmd_tx_[pi];
    }
  }
  AssessTesterLimits(result_);
  // Said in every report, a run's (ports[].rx_icrc_checked) or a test's
  // (its trials' warnings): RX did not read the ICRCs again on such a port.
  for (size_t pi = 0; pi < result_.ports.size(); ++pi) {
    if (result_.ports[pi].rx_icrc_checked == std::optional<bool>(false)) {
      result_.warnings.push_back(absl::StrFormat(
          "port %s: the ICRCs of the RoCEv2 frames its responders and requesters took (data; ACKs, NAKs, CNPs) were "
          "not read again on RX: the built-in loopback hands RX the very mbufs TX built (no wire between them)",
          ports_[pi]->name()));
    }
  }
  // A responder drops RoCEv2 data with a bad ICRC, as a RoCE NIC does: the
  // stream counts those frames received (the device delivered them), and
  // its requesters see no ACK for them.
  for (const StreamResult& r : result_.streams) {
    if (!r.answered || r.responder.icrc_dropped == 0) continue;
    result_.warnings.push_back(absl::StrFormat(
        "stream %s: the responder on port %s dropped %s frames with a bad ICRC, as a RoCE NIC does (not "
        "acknowledged, not delivered; counted received)",
        r.name, ports_[r.rx_port]->name(), FormatCount(r.responder.icrc_dropped)));
  }
  // A NIC whose RX stamps do not count the clock its driver reads (a mode
  // the driver did not expect) shows as latencies beyond 2^40 ns, which is
  // where negative ones land: say so rather than report them as figures.
  for (const StreamResult& r : result_.streams) {
    const port::Port& rx = *ports_[r.rx_port];
    if (rx.rx_timestamp().unit == port::RxTimestamp::Unit::kNicClock && r.analysis.latency.overflow() != 0) {
      result_.warnings.push_back(absl::StrFormat(
          "stream %s: %d latency samples above 2^40 ns or negative: the RX stamps on port %s do not follow the "
          "fitted %s; its latency figures are not valid (timestamps: software avoids the NIC clock)",
          r.name, r.analysis.latency.overflow(), rx.name(), rx.rx_timestamp().clock));
    }
  }
  return result_;
}

}  // namespace fg::engine
