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
#include "engine/worker.h"
#include "port/kernel_if.h"

namespace fg::engine {
absl::StatusOr<std::unique_ptr<LiveRun>> LiveRun::Start(const port::Eal& eal, const std::vector<port::Port*>& ports,
                                                        const std::vector<stream::CompiledStream>& streams,
                                                        const TrialOptions& options) {
  std::unique_ptr<LiveRun> r(new LiveRun(eal, ports, streams, options));
  std::vector<unsigned> workers = eal.worker_lcores();
  if (workers.empty()) {
    return absl::FailedPreconditionError(
        "no worker lcore: fabricgen needs at least two lcores (e.g. EAL argument -l 0-1); the main lcore "
        "only controls the run");
  }
  if (options.max_workers != 0 && workers.size() > options.max_workers) workers.resize(options.max_workers);
  for (size_t i = 0; i < streams.size(); ++i) {
    if (streams[i].index != i) {
      return absl::InvalidArgumentError(
          absl::StrFormat("stream %s: index %d at position %d; a trial's streams are numbered by their position",
                          streams[i].name, streams[i].index, i));
    }
  }
  const uint32_t nw = static_cast<uint32_t>(workers.size());
  r->lcores_ = workers;

  // Owners: every flow to one worker (engine/placement.h).
  std::vector<uint16_t> txq(ports.size());
  for (size_t pi = 0; pi < ports.size(); ++pi) txq[pi] = ports[pi]->options().tx_queues;
  r->placement_ = Place(streams, nw, txq, options.placement);
  const Placement& pl = r->placement_;
  r->result_.placement_policy = pl.Describe(streams, workers);

  auto& work = r->work_;
  work = std::vector<LcoreWork>(nw);
  for (uint32_t w = 0; w < nw; ++w) {
    work[w].index = w;
    work[w].lcore = workers[w];
    work[w].clock = r->clock_;
  }

  // RX analysis: one table per worker with the flows it owns.
  for (uint32_t w = 0; w < nw; ++w) {
    std::vector<rx::OwnedFlow> owned;
    owned.reserve(pl.owned[w].size());
    for (uint32_t g : pl.owned[w]) owned.push_back(rx::OwnedFlow{0, g});
    for (const auto& s : streams) {
      for (uint32_t f = 0; f < s.flows; ++f) {
        const uint32_t g = s.flow_id + f;
        if (pl.owner[g] == w) owned[pl.slot[g]].group = s.index;
      }
    }
    r->tables_.push_back(std::make_unique<rx::FlowTable>(std::move(owned), static_cast<uint32_t>(streams.size()),
                                                         options.loss_log_capacity, options.per_flow != 0));
    work[w].table = r->tables_.back().get();
  }
  // Handoff rings, one per ordered pair of workers.
  r->rings_.resize(size_t{nw} * nw);
  for (uint32_t from = 0; from < nw; ++from) {
    for (uint32_t to = 0; to < nw; ++to) {
      if (from == to) continue;
      r->rings_[from * nw + to] = std::make_unique<rx::HandoffRing>(rx::kHandoffRing);
      work[to].in.push_back(r->rings_[from * nw + to].get());
    }
  }

  const int tag_off = port::TxTemplateTagOffset();
  FG_RETURN_IF_ERROR(r->SetUpResponders(workers, tag_off));

  // TX: one task per (worker, port) with the shards of the streams it owns
  // flows of, on the worker's own TX queue of that port.
  auto& txs = r->txs_;
  for (uint32_t w = 0; w < nw; ++w) {
    for (size_t pi = 0; pi < ports.size(); ++pi) {
      std::vector<tx::Shard> shards;
      for (const auto& s : streams) {
        if (s.tx_port != pi) continue;
        tx::Shard sh{&s, {}, 0, 0};
        uint64_t count = 0;
        // Per-flow rates: flow f's part of the count follows its weight
        // (cumulative rounding, so the parts add up to the count exactly).
        std::vector<uint64_t> weighted;
        if (s.count != 0 && !s.flow_weight.empty()) {
          long double total = 0, before = 0;
          for (double x : s.flow_weight) total += x;
          weighted.resize(s.flows);
          uint64_t prev = 0;
          for (uint32_t f = 0; f < s.flows; ++f) {
            before += s.flow_weight[f];
            const uint64_t upto = f + 1 == s.flows ? s.count : static_cast<uint64_t>(s.count * before / total);
            weighted[f] = upto - prev;
            prev = upto;
          }
        }
        for (uint32_t f = 0; f < s.flows; ++f) {
          if (pl.owner[s.flow_id + f] != w) continue;
          sh.flows.push_back(f);
          // Flows take turns: flow f sends every flows-th packet of the count.
          if (s.count != 0) {
            count += weighted.empty() ? s.count / s.flows + (f < s.count % s.flows ? 1 : 0) : weighted[f];
          }
        }
        if (sh.flows.empty()) continue;
        sh.pps = s.pps * s.FlowShare(sh.flows);
        sh.count = count;
        if (s.count != 0 && count == 0) continue;  // fewer packets than flows: this shard has none to send
        if (sh.flows.size() == s.flows) sh.flows.clear();
        shards.push_back(std::move(sh));
      }
      if (shards.empty()) continue;
      port::Port* p = ports[pi];
      if (w >= p->options().tx_queues) {
        return absl::InternalError(absl::StrFormat("port %s: worker %d has no TX queue of its own", p->name(), w));
      }
      txs.push_back(std::make_unique<tx::TxTask>(p->id(), static_cast<uint16_t>(w), p->pool(), shards, r->clock_,
                                                 tag_off, p->tx_schedule()));
      work[w].tx.push_back(txs.back().get());
      work[w].names.push_back(absl::StrFormat("tx %s/q%d", p->name(), w));
    }
  }

  r->SetUpFeedback();

  // RX: every queue of every port, so everything that arrives is counted;
  // queue q of a port is polled by worker q % workers.
  auto& rxs = r->rxs_;
  std::vector<const Counter*> polls(nw);
  for (uint32_t w = 0; w < nw; ++w) polls[w] = &work[w].polls;
  for (size_t pi = 0; pi < ports.size(); ++pi) {
    auto d = std::make_shared<rx::PortDispatch>();
    std::vector<std::pair<uint32_t, uint32_t>> ranges;  // data flows received here
    bool verify = false;
    for (const auto& s : streams) {
      if (s.rx_port == pi) ranges.emplace_back(s.flow_id, s.flow_id + s.flows);
      verify = verify || (s.rx_port == pi && s.verify_payload);
    }
    std::sort(ranges.begin(), ranges.end());
    d->flows = static_cast<uint32_t>(pl.owner.size());  // a signature with a flow id beyond: no stream of the run's
    for (const auto& s : streams) {
      if (s.answers != nullptr && s.rx_port == pi) d->check_icrc = true;  // a responding port: ICRCs checked
    }
    bool contiguous = !ranges.empty();
    for (size_t i = 1; i < ranges.size(); ++i) contiguous = contiguous && ranges[i].first == ranges[i - 1].second;
    if (pl.modulo && contiguous) {
      d->modulo = nw;
      d->lo = ranges.front().first;
      d->hi = ranges.back().second;
    } else {
      d->data.assign(pl.owner.size(), {});
      for (const auto& [lo, hi] : ranges) {
        for (uint32_t g = lo; g < hi; ++g) d->data[g] = {pl.owner[g], pl.slot[g]};
      }
    }
    if (verify) {
      d->verify.assign(streams.size(), 0);
      d->group_of.assign(pl.owner.size(), 0);
      for (const auto& s : streams) {
        if (s.rx_port == pi && s.verify_payload) d->verify[s.index] = 1;
        for (uint32_t f = 0; f < s.flows; ++f) d->group_of[s.flow_id + f] = s.index;
      }
    }
    for (const auto& s : streams) {
      // Feedback (CNP, NAK, NACK) returns to tx_port (or arrives where the data does).
      if (s.rx_port != pi && s.tx_port != pi) continue;
      rx::PortDispatch::KeyKind kind = rx::PortDispatch::KeyKind::kNone;
      switch (s.program.key_kind()) {
        case stream::KeyKind::kRoceQp: kind = rx::PortDispatch::KeyKind::kRoceQp; break;
        case stream::KeyKind::kUetPdc: kind = rx::PortDispatch::KeyKind::kUetPdc; break;
        default: break;
      }
      if (kind == rx::PortDispatch::KeyKind::kNone) continue;
      for (uint32_t f = 0; f < s.flows; ++f) {
        const uint32_t g = s.flow_id + f;
        d->keys.emplace(uint64_t{static_cast<uint8_t>(kind)} << 32 | (s.program.key_base() + f),
                        rx::PortDispatch::Target{pl.owner[g], pl.slot[g]});
      }
    }
    // READ requests answered here (no signature: known by their QP).
    for (const auto& s : streams) {
      if (!s.read_request() || s.rx_port != pi) continue;
      for (uint32_t f = 0; f < s.flows; ++f) {
        const uint32_t g = s.flow_id + f;
        d->reads.emplace(s.program.key_base() + f, rx::PortDispatch::Target{pl.owner[g], pl.slot[g]});
      }
    }
    for (uint16_t q = 0; q < ports[pi]->options().rx_queues; ++q) {
      const uint32_t w = q % nw;
      std::vector<rx::HandoffRing*> out(nw, nullptr);
      for (uint32_t to = 0; to < nw; ++to) {
        if (to != w) out[to] = r->rings_[w * nw + to].get();
      }
      rxs.push_back({pi, std::make_unique<rx::RxTask>(ports[pi]->id(), q, w, d, work[w].table, out, polls, r->clock_,
                                                      ports[pi]->rx_timestamp().offset, ports[pi]->rx_timestamp().flag,
                                                      ports[pi]->rx_timestamp().line,
                                                      ports[pi]->options().rx_is_own_tx ? -1 : tag_off,
                                                      ports[pi]->rx_timestamp().shared)});
      work[w].rx.push_back(rxs.back().task.get());
      work[w].names.push_back(absl::StrFormat("rx %s/q%d", ports[pi]->name(), q));
    }
  }

  for (port::Port* p : ports) p->ResetStats();
  TrialResult& result = r->result_;
  for (port::Port* p : ports) {
    if (!p->options().kernel_iface.empty()) r->backlog_drops_start_ = port::HostBacklogDrops();
  }

  for (uint32_t i = 0; i < nw; ++i) {
    if (work[i].tx.empty() && work[i].rx.empty()) continue;
    result.placement.push_back(absl::StrFormat("lcore %d: %s", workers[i], absl::StrJoin(work[i].names, ", ")));
  }
  if (options.on_placement) options.on_placement(result.placement);

  // A fresh fit of every NIC clock behind hardware RX stamps (10 ms of
  // readings): the line from port start may be minutes old.
  for (port::Port* p : ports) {
    if (p->nic_clock() != nullptr) p->nic_clock()->Calibrate(20, 500);
  }

  // QPs set up by CM MADs (frame.roce.connect: cm), here before any lcore
  // polls: nothing else is on the ports then.
  {
    auto setups = ConnectQps(ports, streams, r->clock_, options.qp_setup_timeout_ns);
    if (!setups.ok()) {
      r->finished_ = true;
      return setups.status();
    }
    r->qp_setup_ = *std::move(setups);
    // The ports' own counts (and the kernel's) start after it: the MADs are
    // the set-up's, not the trial's (qp_setup counts them and what else came).
    if (std::any_of(r->qp_setup_.begin(), r->qp_setup_.end(), [](const auto& q) { return q.has_value(); })) {
      for (port::Port* p : ports) p->ResetStats();
    }
  }

  // Launch, then start every stream at the same instant a little ahead.
  const uint64_t start = ReadTsc() + r->clock_.FromNs(2'000'000);
  r->start_ = start;
  for (auto& t : txs) t->Arm(start);
  // No signature of this run carries a TX time before its start (RX counts
  // such a frame invalid); a port that replays a capture receives its times.
  for (auto& ref : rxs) {
    if (!ReplaysCapture(*ports[ref.port])) ref.task->SetRunStart(r->clock_.ToNs(start));
  }
  PlaceOnCpus(work);  // each worker's CPU, its steal from here, its nice value
  for (uint32_t i = 0; i < nw; ++i) {
    // Every worker runs: one with no queue of its own may still own flows
    // whose frames others hand it.
    if (int ret = rte_eal_remote_launch(LcoreMain, &work[i], workers[i]); ret != 0) {
      for (uint32_t j = 0; j < i; ++j) work[j].phase.store(kStop, std::memory_order_release);
      rte_eal_mp_wait_lcore();
      r->finished_ = true;
      return absl::InternalError(absl::StrFormat("cannot launch lcore %d (%d)", workers[i], ret));
    }
  }

  r->finished_ = false;  // launched: from here the destructor finishes the run
  r->background_ = std::thread([p = r.get()] { p->Background(); });
  return r;
}

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
  while (!stop_background_.load(std::memory_order_acquire)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
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
      const rx::GroupLiveView v = table->live(i);
      StreamLive& s = out[i];
      s.rx_packets += v.packets;
      s.rx_bytes += v.bytes;
      s.gap_packets += v.gap_packets;
      s.duplicate += v.duplicate;
      s.reordered += v.reordered;
      s.ce += v.ce;
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
      const tx::TxCounters c = t->counters(i);
      StreamLive& s = out[t->stream(i).index];
      s.tx_packets += c.packets;
      s.tx_bytes += c.bytes;
      s.tx_slots_skipped += c.credit_dropped;
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
  for (const LcoreWork& w : work_) {  // the responders' answers
    for (size_t pi = 0; pi < w.answer_ports.size(); ++pi) {
      out[pi].tx_packets += w.answer_ports[pi].packets.Read();
      out[pi].tx_bytes += w.answer_ports[pi].bytes.Read();
    }
  }
  for (const auto& ref : rxs_) {
    const rx::RxCounters d = ref.task->data();
    const rx::RxCounters u = ref.task->unknown();
    const rx::RxCounters v = ref.task->invalid();
    out[ref.port].rx_packets += d.packets + u.packets + v.packets;
    out[ref.port].rx_bytes += d.bytes + u.bytes + v.bytes;
    out[ref.port].rx_unknown_packets += u.packets;
    out[ref.port].rx_invalid_packets += v.packets;
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
        const tx::DcqcnCounters c = t->dcqcn(i);
        sr.dcqcn = true;
        sr.dcqcn_params = *t->stream(i).dcqcn;
        sr.rp.cnps += c.cnps;
        sr.rp.cuts += c.cuts;
        sr.rp.ignored += c.ignored;
        sr.rp.reaction.Merge(c.reaction);
        sr.rp.timeline_truncated |= c.timeline_truncated;
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
  for (size_t i = 0; i < streams_.size(); ++i) {
    if (streams_[i].answers == nullptr) continue;
    result_.ports[streams_[i].answers->port].responds = true;
    result_.streams[i].answered = true;
    result_.streams[i].delivers = streams_[i].answers->reliable;
    for (const auto& resp : responders_) result_.streams[i].responder += resp->counters(static_cast<uint32_t>(i));
  }
  for (const auto& table : tables_) {
    const std::vector<stats::GroupStats> summaries = table->Summaries();
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
    const rx::RxCounters u = ref.task->unknown();
    pr.rx_unknown_packets += u.packets;
    pr.rx_unknown_bytes += u.bytes;
    pr.rx_packets += u.packets;
    pr.rx_bytes += u.bytes;
    const rx::RxCounters v = ref.task->invalid();
    pr.rx_invalid_packets += v.packets;
    pr.rx_packets += v.packets;
    pr.rx_bytes += v.bytes;
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
    result_.ports[pi].software_rx_stamps = ports_[pi]->rx_timestamp().unit == port::RxTimestamp::Unit::kNone;
    if (pi < kernel_end_.size()) {
      result_.ports[pi].kernel = kernel_end_[pi];
      result_.ports[pi].kernel_read_pmd_tx = kernel_pmd_tx_[pi];
    }
  }
  AssessTesterLimits(result_);
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
