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
LiveRun::LiveRun(const port::Eal& eal, const std::vector<port::Port*>& ports,
                 const std::vector<stream::CompiledStream>& streams, const TrialOptions& options)
    : clock_(eal.tsc_hz()), ports_(ports), streams_(streams), options_(options) {}

LiveRun::~LiveRun() {
  if (!finished_) Finish();
}

void LiveRun::TakeSample(uint64_t tx_end) {
  Sample smp;
  smp.tx_packets.assign(streams_.size(), 0);
  smp.rx_packets.assign(streams_.size(), 0);
  // The sample's time is when its TX counts were read: bracketed by two TSC
  // reads, and read again when this thread was held up in between (a 1 ms
  // hold-up would put 0.1 % into a 1 s window that the TX side never had).
  // After TX ended the counts stand still: the sample is at its end.
  const uint64_t max_read = clock_.FromNs(20'000);
  uint64_t now = tx_end;
  for (int attempt = 0;; ++attempt) {
    const uint64_t t0 = ReadTsc();
    std::fill(smp.tx_packets.begin(), smp.tx_packets.end(), 0);
    for (auto& t : txs_) {
      for (size_t i = 0; i < t->num_streams(); ++i) smp.tx_packets[t->stream(i).index] += t->counters(i).packets;
    }
    const uint64_t t1 = ReadTsc();
    if (tx_end != 0) break;
    now = t0 + (t1 - t0) / 2;
    if (t1 - t0 <= max_read || attempt == 3) break;
  }
  smp.t_ns = now > start_ ? static_cast<int64_t>(clock_.ToNs(now - start_)) : 0;
  // The end's sample after one the background thread timed by its read (later than tx_end when that read
  // straddled the end): never back in time.
  if (!result_.samples.empty()) smp.t_ns = std::max(smp.t_ns, result_.samples.back().t_ns);
  for (const auto& t : tables_) {
    for (uint32_t i = 0; i < streams_.size(); ++i) smp.rx_packets[i] += t->counters(i).packets;
  }
  // The ports' extended counters too (read by the control thread, as
  // testpmd does; the lcores are not disturbed).
  const bool first = result_.xstat_names.empty();
  if (first) result_.xstat_names.resize(ports_.size());
  smp.xstats.resize(ports_.size());
  for (size_t pi = 0; pi < ports_.size(); ++pi) {
    for (const port::Xstat& x : ports_[pi]->xstats()) {
      if (first) result_.xstat_names[pi].push_back(x.name);
      smp.xstats[pi].push_back(x.value);
    }
  }
  result_.samples.push_back(std::move(smp));
}

// The control side of a live run, on its own thread: per-stream samples and
// the NIC clocks behind hardware RX stamps (sampled every 10 ms, re-fitted
// and handed to the RX lcores every 100 ms; the lcores copy the line per burst).
void LiveRun::Background() {
  std::vector<port::NicClock*> nic_clocks;
  for (port::Port* p : ports_) {
    if (p->nic_clock() != nullptr) nic_clocks.push_back(p->nic_clock());
  }
  const uint64_t sample_every = clock_.FromNs(static_cast<uint64_t>(std::max<int64_t>(0, options_.sample_interval_ns)));
  uint64_t next_sample = start_;
  const uint64_t clock_sample_every = clock_.FromNs(10'000'000), clock_fit_every = clock_.FromNs(100'000'000);
  uint64_t next_clock_sample = ReadTsc(), next_clock_fit = next_clock_sample + clock_fit_every;
  // A packet socket's PMD asks the kernel to send what it put in the TX ring
  // once per burst; a refused request (the send buffer full) leaves frames
  // there until the lcore sends again. A port that went quiet (a collective's
  // ranks waiting at a barrier for the ACKs in that very ring: an iteration
  // held until a 1 s retransmission timeout sent again) is asked once a
  // millisecond, as the drain does: one empty sendto per socket.
  std::vector<uint64_t> last_took(ports_.size(), ~uint64_t{0});
  while (!stop_background_.load(std::memory_order_acquire)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    for (size_t pi = 0; pi < ports_.size(); ++pi) {
      if (ports_[pi]->options().kernel_iface.empty()) continue;
      const uint64_t took = ports_[pi]->stats().tx_packets;
      if (took == last_took[pi]) ports_[pi]->KickKernelTx();
      last_took[pi] = took;
    }
    const uint64_t now = ReadTsc();
    if (!nic_clocks.empty() && now >= next_clock_sample) {
      for (port::NicClock* c : nic_clocks) c->Sample();
      next_clock_sample = now + clock_sample_every;
      if (now >= next_clock_fit) {
        for (port::NicClock* c : nic_clocks) c->Publish();
        next_clock_fit = now + clock_fit_every;
      }
    }
    if (sample_every != 0 && now >= next_sample) {
      std::lock_guard<std::mutex> lock(sample_mu_);
      if (!tx_ended_) TakeSample(0);
      next_sample += sample_every;
    }
  }
}

bool LiveRun::tx_done() const {
  for (const auto& t : txs_) {
    if (!t->Done()) return false;
  }
  return true;
}

int64_t LiveRun::elapsed_ns() const {
  const uint64_t now = ReadTsc();
  return now > start_ ? static_cast<int64_t>(clock_.ToNs(now - start_)) : 0;
}

std::vector<LiveRun::StreamLive> LiveRun::Streams() const {
  std::vector<StreamLive> out(streams_.size());
  for (size_t i = 0; i < streams_.size(); ++i) {
    out[i].rx_counted = (streams_[i].program.signed_frames() || streams_[i].read_request()) &&
                        ports_[streams_[i].rx_port]->options().rx_queues > 0;
  }
  // RX first, then TX: a frame counted received was sent before it, so lost()
  // (tx - unique rx) reads the frames in flight rather than going negative
  // (bar a TX lcore that has not yet stored the count of a burst received).
  for (const auto& table : tables_) {
    for (uint32_t i = 0; i < streams_.size(); ++i) {
      out[i].rx += table->live(i);
    }
  }
  // The responders' counters (each its owner lcore's, read relaxed).
  for (uint32_t i = 0; i < streams_.size(); ++i) out[i].answered = streams_[i].answers != nullptr;
  for (const auto& resp : responders_) {
    for (uint32_t i = 0; i < streams_.size(); ++i) out[i].responder += resp->counters(i);
  }
  std::atomic_thread_fence(std::memory_order_acquire);  // the TX reads below stay below
  for (const auto& t : txs_) {
    for (size_t i = 0; i < t->num_streams(); ++i) {
      StreamLive& s = out[t->stream(i).index];
      s.tx += t->counters(i);
      s.retransmits = s.retransmits || t->retransmits(i);
      s.retransmitted_packets += t->resent(i);
    }
  }
  return out;
}

std::vector<LiveRun::PortLive> LiveRun::Ports() const {
  std::vector<PortLive> out(ports_.size());
  for (const auto& t : txs_) {
    for (size_t i = 0; i < t->num_streams(); ++i) {
      const tx::TxCounters c = t->counters(i);
      out[t->stream(i).tx_port].tx_packets += c.packets;
      out[t->stream(i).tx_port].tx_bytes += c.bytes;
    }
  }
  for (const LcoreWork& w : work_) {  // the responders' and the hosts' answers
    for (const std::vector<AnswerPort>* aps : {&w.answer_ports, &w.host_answer_ports}) {
      for (size_t pi = 0; pi < aps->size(); ++pi) {
        out[pi].tx_packets += (*aps)[pi].packets.Read();
        out[pi].tx_bytes += (*aps)[pi].bytes.Read();
      }
    }
  }
  for (const auto& ref : rxs_) {
    const rx::RxCounters d = ref.task->data();
    const rx::RxCounters u = ref.task->unknown();
    const rx::RxCounters v = ref.task->invalid();
    const rx::RxCounters h = ref.task->handled();
    out[ref.port].rx_packets += d.packets + u.packets + v.packets + h.packets;
    out[ref.port].rx_bytes += d.bytes + u.bytes + v.bytes + h.bytes;
    out[ref.port].rx_unknown_packets += u.packets;
    out[ref.port].rx_invalid_packets += v.packets;
    if (ref.task->handlers() != nullptr) {
      std::vector<std::vector<uint64_t>> sums = endpoint::EmptyHandlerCounts();
      ref.task->handlers()->AddCounts(sums);
      const std::span<const endpoint::HandlerKind> kinds = endpoint::HandlerKinds();
      const uint64_t now_ns = clock_.ToNs(ReadTsc());  // a pause in force counts up to now
      for (size_t k = 0; k < kinds.size(); ++k) {
        if (kinds[k].name != endpoint::PfcKind().name) continue;
        PortLive& o = out[ref.port];
        for (size_t slot = 0; slot < endpoint::kPfcSlots; ++slot) {
          const uint64_t* c = sums[k].data() + slot * endpoint::kPfcCountsPerSlot;
          o.pfc_pause_events[slot] += c[endpoint::kPauseEvents];
          o.pfc_xon_frames[slot] += c[endpoint::kXonFrames];
          o.pfc_paused_ns[slot] += endpoint::PausedNs(c, now_ns);
        }
      }
    }
  }
  // Frames the RX tasks took as a stream's that its flow's sender never sent
  // (found by the flow's owner): invalid on the stream's RX port.
  for (const auto& table : tables_) {
    for (uint32_t i = 0; i < streams_.size(); ++i) out[streams_[i].rx_port].rx_invalid_packets += table->invalid(i);
  }
  return out;
}

stats::LatencyHistogram LiveRun::Latency(size_t stream) const {
  stats::LatencyHistogram h;
  for (const auto& t : tables_) h.Merge(t->LatencySnapshot(static_cast<uint32_t>(stream)));
  return h;
}

std::vector<LcoreStats> LiveRun::Runtime() const {
  std::vector<LcoreStats> out;
  const std::vector<int64_t> steal = port::HostStealNs();
  for (const LcoreWork& w : work_) out.push_back(ReadLcoreStats(w, steal));
  return out;
}

absl::Status LiveRun::Ask(const std::vector<std::pair<rx::RxTask*, rx::RxRequest*>>& asks, int64_t timeout_ns,
                          bool cancel_on_timeout) const {
  for (auto [task, req] : asks) task->Post(*req);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(timeout_ns);
  for (;;) {
    bool all = true;
    for (auto [task, req] : asks) all = all && task->Served(*req);
    if (all) return absl::OkStatus();
    if (std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  if (!cancel_on_timeout) return absl::DeadlineExceededError("the RX lcores did not answer in time");
  // A capture still waiting for frames: cancel it, and wait for the lcore to let go of the buffer.
  std::vector<rx::RxRequest> cancels(asks.size());
  for (size_t i = 0; i < asks.size(); ++i) {
    if (asks[i].first->Served(*asks[i].second)) continue;
    cancels[i].kind = rx::RxRequest::Kind::kCancel;
    asks[i].first->Post(cancels[i]);
    while (!asks[i].first->Served(cancels[i])) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return absl::DeadlineExceededError("timed out");
}

absl::StatusOr<std::vector<rx::FlowView>> LiveRun::TopFlows(size_t n) const {
  if (finished_) return absl::FailedPreconditionError("the run has ended");
  // Owned here until answered; a request the lcores have not answered in
  // time is kept (the lcore may still write it) until the run is destroyed.
  auto reqs = std::make_unique<std::vector<rx::TopFlowsRequest>>(tables_.size());
  for (size_t i = 0; i < tables_.size(); ++i) {
    (*reqs)[i].n = n;
    tables_[i]->Post((*reqs)[i]);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (;;) {
    bool all = true;
    for (size_t i = 0; i < tables_.size(); ++i) all = all && tables_[i]->Served((*reqs)[i]);
    if (all) break;
    if (std::chrono::steady_clock::now() > deadline) {
      std::lock_guard<std::mutex> lock(abandoned_mu_);
      abandoned_.push_back(std::move(reqs));
      return absl::DeadlineExceededError("the RX lcores did not answer in time");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  std::vector<rx::FlowView> all;
  for (const rx::TopFlowsRequest& r : *reqs) all.insert(all.end(), r.flows.begin(), r.flows.end());
  std::stable_sort(all.begin(), all.end(), &rx::FlowView::Worse);
  if (all.size() > n) all.resize(n);
  return all;
}

absl::StatusOr<std::vector<CapturedFrame>> LiveRun::Capture(size_t port, size_t n, int64_t timeout_ns) const {
  if (finished_) return absl::FailedPreconditionError("the run has ended");
  std::vector<std::unique_ptr<rx::RxRequest>> reqs;
  std::vector<std::pair<rx::RxTask*, rx::RxRequest*>> asks;
  for (const auto& ref : rxs_) {
    if (ref.port != port) continue;
    reqs.push_back(std::make_unique<rx::RxRequest>());
    reqs.back()->kind = rx::RxRequest::Kind::kCapture;
    reqs.back()->n = n;
    // Whole jumbo frames when few are asked for; never more than 64 MiB of buffer.
    reqs.back()->snaplen = static_cast<uint32_t>(std::clamp<size_t>((64u << 20) / std::max<size_t>(n, 1), 2048, 16384));
    asks.emplace_back(ref.task.get(), reqs.back().get());
  }
  if (asks.empty()) return absl::FailedPreconditionError("the port has no RX queue");
  // Every queue captures up to n; the first n by receive time are kept.
  const absl::Status waited = Ask(asks, timeout_ns, true);
  std::vector<CapturedFrame> frames;
  for (const auto& r : reqs) {
    const size_t k = r->captured.load(std::memory_order_acquire);
    for (size_t i = 0; i < k; ++i) {
      const uint8_t* d = r->data.data() + i * r->snaplen;
      frames.push_back(CapturedFrame{r->rx_ns[i], r->wire_len[i], std::vector<uint8_t>(d, d + r->caplen[i])});
    }
  }
  std::stable_sort(frames.begin(), frames.end(),
                   [](const CapturedFrame& a, const CapturedFrame& b) { return a.rx_ns < b.rx_ns; });
  if (frames.size() > n) frames.resize(n);
  if (!waited.ok() && frames.empty()) {
    return absl::DeadlineExceededError(absl::StrFormat("no frame arrived within %.1f s", timeout_ns / 1e9));
  }
  return frames;
}

absl::StatusOr<TrialResult> RunTrial(const port::Eal& eal, const std::vector<port::Port*>& ports,
                                     const std::vector<stream::CompiledStream>& streams, const TrialOptions& options) {
  FG_ASSIGN_OR_RETURN(std::unique_ptr<LiveRun> run, LiveRun::Start(eal, ports, streams, options));
  int64_t expected_ns = 0;
  for (const auto& s : streams) expected_ns = std::max(expected_ns, s.duration_ns);
  const int64_t bound_ns = options.max_duration_ns > 0 ? options.max_duration_ns : expected_ns + 1'000'000'000;
  if (options.on_live) options.on_live(run.get());
  // Control loop: watch for the end of TX, report progress.
  bool interrupted = false, timed_out = false;
  int64_t last_report = 0;
  uint64_t last_tx = 0, last_rx = 0;
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (run->tx_done()) break;
    if (options.interrupt != nullptr && options.interrupt->load(std::memory_order_relaxed)) {
      interrupted = true;
      break;
    }
    const int64_t elapsed = run->elapsed_ns();
    if (elapsed > bound_ns) {
      timed_out = true;
      break;
    }
    if (options.on_progress && elapsed > last_report + options.progress_interval_ns) {
      Progress p;
      p.elapsed_ns = elapsed;
      p.expected_ns = expected_ns;
      for (const LiveRun::PortLive& port : run->Ports()) {
        p.tx_packets += port.tx_packets;
        p.rx_packets += port.rx_packets;
      }
      const double secs = static_cast<double>(elapsed - last_report) / 1e9;
      p.tx_pps = static_cast<double>(p.tx_packets - last_tx) / secs;
      p.rx_pps = static_cast<double>(p.rx_packets - last_rx) / secs;
      last_tx = p.tx_packets;
      last_rx = p.rx_packets;
      last_report = elapsed;
      options.on_progress(p);
    }
  }
  TrialResult result = run->Finish(interrupted, timed_out);
  if (options.on_live) options.on_live(nullptr);
  return result;
}

}  // namespace fg::engine
