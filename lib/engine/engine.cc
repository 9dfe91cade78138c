#include "engine/engine.h"

#include <rte_launch.h>
#include <rte_pause.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/tsc.h"

namespace fg::engine {
namespace {

enum Phase : int { kRun = 0, kDrain = 1, kStop = 2 };

struct LcoreWork {
  std::vector<PollTask*> tx, rx;
  std::vector<std::string> names;
  std::atomic<int> phase{kRun};
};

int LcoreMain(void* arg) {
  LcoreWork& w = *static_cast<LcoreWork*>(arg);
  for (;;) {
    const int phase = w.phase.load(std::memory_order_acquire);
    if (phase == kStop) break;
    unsigned work = 0;
    if (phase == kRun) {
      for (PollTask* t : w.tx) work += t->Poll();
    }
    for (PollTask* t : w.rx) work += t->Poll();
    if (work == 0) rte_pause();
  }
  for (PollTask* t : w.tx) t->Finish();
  for (PollTask* t : w.rx) t->Finish();
  return 0;
}

}  // namespace

absl::StatusOr<TrialResult> RunTrial(const port::Eal& eal, const std::vector<port::Port*>& ports,
                                     const std::vector<stream::CompiledStream>& streams, const TrialOptions& options) {
  const std::vector<unsigned>& workers = eal.worker_lcores();
  if (workers.empty()) {
    return absl::FailedPreconditionError(
        "no worker lcore: fabricgen needs at least two lcores (e.g. EAL argument -l 0-1); the main lcore "
        "only controls the run");
  }
  const TscClock clock(eal.tsc_hz());
  for (size_t i = 0; i < streams.size(); ++i) {
    if (streams[i].index != i) {
      return absl::InvalidArgumentError(
          absl::StrFormat("stream %s: index %d at position %d; a trial's streams are numbered by their position",
                          streams[i].name, streams[i].index, i));
    }
  }

  const int tag_off = port::TxTemplateTagOffset();
  // TX: one task per (port, queue) that carries streams.
  std::map<std::pair<size_t, uint16_t>, std::vector<const stream::CompiledStream*>> by_queue;
  for (const auto& s : streams) by_queue[{s.tx_port, s.tx_queue}].push_back(&s);
  std::vector<std::unique_ptr<tx::TxTask>> txs;
  std::vector<std::string> tx_names;
  for (auto& [key, list] : by_queue) {
    port::Port* p = ports[key.first];
    txs.push_back(std::make_unique<tx::TxTask>(p->id(), key.second, p->pool(), list, clock, tag_off, p->tx_schedule()));
    tx_names.push_back(absl::StrFormat("tx %s/q%d", p->name(), key.second));
  }

  // RX: every queue of every port, so everything that arrives is counted;
  // each port's tasks analyse the flows of the streams it receives.
  uint32_t total_flows = 0;
  for (const auto& s : streams) total_flows = std::max(total_flows, s.flow_id + s.flows);
  struct RxRef {
    size_t port;
    std::unique_ptr<rx::RxTask> task;
  };
  std::vector<RxRef> rxs;
  std::vector<std::string> rx_names;
  for (size_t pi = 0; pi < ports.size(); ++pi) {
    std::vector<rx::GroupRange> groups;
    for (uint32_t i = 0; i < streams.size(); ++i) {
      // Data arrives on rx_port; feedback (CNP, NAK, NACK) returns to tx_port.
      if (streams[i].rx_port != pi && streams[i].tx_port != pi) continue;
      rx::GroupRange g{.group = i, .first_flow = streams[i].flow_id, .flows = streams[i].flows};
      switch (streams[i].program.key_kind()) {
        case stream::KeyKind::kRoceQp: g.key_kind = rx::GroupRange::KeyKind::kRoceQp; break;
        case stream::KeyKind::kUetPdc: g.key_kind = rx::GroupRange::KeyKind::kUetPdc; break;
        default: break;
      }
      g.key_base = streams[i].program.key_base();
      g.verify_payload = streams[i].verify_payload;
      groups.push_back(g);
    }
    for (uint16_t q = 0; q < ports[pi]->options().rx_queues; ++q) {
      rxs.push_back({pi, std::make_unique<rx::RxTask>(ports[pi]->id(), q, total_flows, groups,
                                                      static_cast<uint32_t>(streams.size()), clock,
                                                      options.loss_log_capacity, ports[pi]->rx_timestamp().offset,
                                                      ports[pi]->rx_timestamp().flag, ports[pi]->rx_timestamp().line,
                                                      tag_off, ports[pi]->rx_timestamp().shared)});
      rx_names.push_back(absl::StrFormat("rx %s/q%d", ports[pi]->name(), q));
    }
  }

  // Placement: TX round-robin from the first worker, RX round-robin from the
  // last, so two workers keep TX and RX apart.
  std::vector<LcoreWork> work(workers.size());
  for (size_t i = 0; i < txs.size(); ++i) {
    work[i % workers.size()].tx.push_back(txs[i].get());
    work[i % workers.size()].names.push_back(tx_names[i]);
  }
  for (size_t i = 0; i < rxs.size(); ++i) {
    LcoreWork& w = work[workers.size() - 1 - i % workers.size()];
    w.rx.push_back(rxs[i].task.get());
    w.names.push_back(rx_names[i]);
  }

  for (port::Port* p : ports) p->ResetStats();

  TrialResult result;
  int64_t expected_ns = 0;
  for (const auto& s : streams) expected_ns = std::max(expected_ns, s.duration_ns);
  const int64_t bound_ns = options.max_duration_ns > 0 ? options.max_duration_ns : expected_ns + 1'000'000'000;

  for (size_t i = 0; i < workers.size(); ++i) {
    if (work[i].tx.empty() && work[i].rx.empty()) continue;
    result.placement.push_back(absl::StrFormat("lcore %d: %s", workers[i], absl::StrJoin(work[i].names, ", ")));
  }
  if (options.on_placement) options.on_placement(result.placement);

  // A fresh fit of every NIC clock behind hardware RX stamps (10 ms of
  // readings): the line from port start may be minutes old.
  for (port::Port* p : ports) {
    if (p->nic_clock() != nullptr) p->nic_clock()->Calibrate(20, 500);
  }

  // Launch, then start every stream at the same instant a little ahead.
  const uint64_t start = ReadTsc() + clock.FromNs(2'000'000);
  for (auto& t : txs) t->Arm(start);
  for (size_t i = 0; i < workers.size(); ++i) {
    if (work[i].tx.empty() && work[i].rx.empty()) continue;
    if (int ret = rte_eal_remote_launch(LcoreMain, &work[i], workers[i]); ret != 0) {
      for (size_t j = 0; j < i; ++j) work[j].phase.store(kStop, std::memory_order_release);
      rte_eal_mp_wait_lcore();
      return absl::InternalError(absl::StrFormat("cannot launch lcore %d (%d)", workers[i], ret));
    }
  }

  auto sum_tx = [&]() {
    uint64_t n = 0;
    for (auto& t : txs) {
      for (size_t i = 0; i < t->num_streams(); ++i) n += t->counters(i).packets;
    }
    return n;
  };
  auto sum_rx = [&]() {
    uint64_t n = 0;
    for (auto& r : rxs) {
      for (uint32_t i = 0; i < streams.size(); ++i) n += r.task->counters(i).packets;
      n += r.task->unknown().packets;
    }
    return n;
  };

  auto sample = [&](uint64_t now) {
    Sample smp;
    smp.t_ns = now > start ? static_cast<int64_t>(clock.ToNs(now - start)) : 0;
    smp.tx_packets.assign(streams.size(), 0);
    smp.rx_packets.assign(streams.size(), 0);
    for (auto& t : txs) {
      for (size_t i = 0; i < t->num_streams(); ++i) smp.tx_packets[t->stream(i).index] += t->counters(i).packets;
    }
    for (auto& ref : rxs) {
      for (uint32_t i = 0; i < streams.size(); ++i) smp.rx_packets[i] += ref.task->counters(i).packets;
    }
    // The ports' extended counters too (read by the control thread, as
    // testpmd does; the lcores are not disturbed).
    const bool first = result.xstat_names.empty();
    if (first) result.xstat_names.resize(ports.size());
    smp.xstats.resize(ports.size());
    for (size_t pi = 0; pi < ports.size(); ++pi) {
      for (const port::Xstat& x : ports[pi]->xstats()) {
        if (first) result.xstat_names[pi].push_back(x.name);
        smp.xstats[pi].push_back(x.value);
      }
    }
    result.samples.push_back(std::move(smp));
  };
  const uint64_t sample_every = clock.FromNs(static_cast<uint64_t>(std::max<int64_t>(0, options.sample_interval_ns)));
  uint64_t next_sample = start;

  // NIC clocks behind hardware RX stamps: sampled every 10 ms, re-fitted and
  // handed to the RX lcores every 100 ms (the lcores copy the line per burst).
  std::vector<port::NicClock*> nic_clocks;
  for (port::Port* p : ports) {
    if (p->nic_clock() != nullptr) nic_clocks.push_back(p->nic_clock());
  }
  const uint64_t clock_sample_every = clock.FromNs(10'000'000), clock_fit_every = clock.FromNs(100'000'000);
  uint64_t next_clock_sample = ReadTsc(), next_clock_fit = next_clock_sample + clock_fit_every;
  auto track_clocks = [&](uint64_t now) {
    if (nic_clocks.empty() || now < next_clock_sample) return;
    for (port::NicClock* c : nic_clocks) c->Sample();
    next_clock_sample = now + clock_sample_every;
    if (now >= next_clock_fit) {
      for (port::NicClock* c : nic_clocks) c->Publish();
      next_clock_fit = now + clock_fit_every;
    }
  };

  // Control loop: watch for the end of TX, report progress.
  uint64_t last_report = start, last_tx = 0, last_rx = 0;
  const uint64_t interval = clock.FromNs(static_cast<uint64_t>(options.progress_interval_ns));
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const uint64_t now = ReadTsc();
    track_clocks(now);
    if (sample_every != 0 && now >= next_sample) {
      sample(now);
      next_sample += sample_every;
    }
    bool all_done = true;
    for (auto& t : txs) all_done = all_done && t->Done();
    if (all_done) break;
    if (options.interrupt != nullptr && options.interrupt->load(std::memory_order_relaxed)) {
      result.interrupted = true;
      break;
    }
    if (now > start && clock.ToNs(now - start) > static_cast<uint64_t>(bound_ns)) {
      result.timed_out = true;
      break;
    }
    if (options.on_progress && now > last_report + interval) {
      Progress p;
      p.elapsed_ns = static_cast<int64_t>(clock.ToNs(now - start));
      p.expected_ns = expected_ns;
      p.tx_packets = sum_tx();
      p.rx_packets = sum_rx();
      const double secs = static_cast<double>(now - last_report) / static_cast<double>(clock.hz());
      p.tx_pps = static_cast<double>(p.tx_packets - last_tx) / secs;
      p.rx_pps = static_cast<double>(p.rx_packets - last_rx) / secs;
      last_tx = p.tx_packets;
      last_rx = p.rx_packets;
      last_report = now;
      options.on_progress(p);
    }
  }
  const uint64_t tx_end = ReadTsc();
  if (sample_every != 0) sample(tx_end);
  for (auto& w : work) w.phase.store(kDrain, std::memory_order_release);
  const uint64_t drain_end = ReadTsc() + clock.FromNs(static_cast<uint64_t>(std::max<int64_t>(0, options.drain_ns)));
  for (uint64_t now = ReadTsc(); now < drain_end; now = ReadTsc()) {
    track_clocks(now);
    std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<uint64_t>(1'000'000, clock.ToNs(drain_end - now))));
  }
  for (auto& w : work) w.phase.store(kStop, std::memory_order_release);
  rte_eal_mp_wait_lcore();

  // Which clock the latency figures come from (the RX side decides).
  for (port::Port* p : ports) {
    if (p->rx_timestamp().unit != port::RxTimestamp::Unit::kNone) {
      result.timestamp_source = absl::StrFormat("RX: %s on port %s; TX: the signature's stamp",
                                                p->rx_timestamp().observation_point(), p->name());
      if (port::NicClock* c = p->nic_clock(); c != nullptr && c->line()) {
        const clock::ClockLine& l = *c->line();
        result.timestamp_source += absl::StrFormat(
            " (fit over the last %d of %d readings: %.9f units/ns, %+.3f ppm against the driver's %.6f, RMS residual "
            "%.0f ns, max %.0f ns)",
            std::min<uint64_t>(c->samples(), c->window()), c->samples(), l.slope, l.drift_ppm(), l.nominal,
            l.residual_ns, l.max_residual_ns);
      }
    }
  }

  // Sum per-lcore counters into per-stream and per-port results.
  result.duration_ns = tx_end > start ? static_cast<int64_t>(clock.ToNs(tx_end - start)) : 0;
  result.streams.resize(streams.size());
  for (size_t i = 0; i < streams.size(); ++i) {
    StreamResult& r = result.streams[i];
    r.name = streams[i].name;
    r.tx_port = streams[i].tx_port;
    r.rx_port = streams[i].rx_port;
    r.frame_size = streams[i].frame_size;
    r.signed_frames = streams[i].program.signed_frames();
    r.flows = streams[i].flows;
    r.verify_payload = streams[i].verify_payload;
    r.received = ports[streams[i].rx_port]->options().rx_queues > 0;
    r.set_pps = streams[i].pps;
  }
  for (auto& t : txs) {
    for (size_t i = 0; i < t->num_streams(); ++i) {
      StreamResult& r = result.streams[t->stream(i).index];
      r.tx = t->counters(i);
      if (r.tx.packets != 0) r.tx_duration_ns = static_cast<int64_t>(r.tx.last_ns - r.tx.first_ns);
    }
  }
  result.ports.resize(ports.size());
  for (size_t pi = 0; pi < ports.size(); ++pi) result.ports[pi].name = ports[pi]->name();
  for (const StreamResult& r : result.streams) {
    result.ports[r.tx_port].tx_packets += r.tx.packets;
    result.ports[r.tx_port].tx_bytes += r.tx.bytes;
  }
  for (auto& ref : rxs) {
    PortResult& pr = result.ports[ref.port];
    const std::vector<stats::GroupStats> summaries = ref.task->Summaries();
    for (uint32_t i = 0; i < streams.size(); ++i) {
      const rx::RxCounters c = ref.task->counters(i);
      result.streams[i].rx.packets += c.packets;
      result.streams[i].rx.bytes += c.bytes;
      result.streams[i].analysis.Merge(summaries[i]);
      pr.rx_packets += c.packets;
      pr.rx_bytes += c.bytes;
    }
    const stats::LossLog& log = ref.task->loss_log();
    result.loss_events.insert(result.loss_events.end(), log.events().begin(), log.events().end());
    result.loss_events_not_logged += log.dropped();
    const rx::FeedbackCounters fb = ref.task->feedback();
    pr.rx_cnp += fb.cnp;
    pr.rx_roce_nak += fb.roce_nak;
    pr.rx_uet_nack += fb.uet_nack;
    pr.rx_feedback_unmatched += fb.unmatched;
    const rx::RxCounters u = ref.task->unknown();
    pr.rx_unknown_packets += u.packets;
    pr.rx_unknown_bytes += u.bytes;
    pr.rx_packets += u.packets;
    pr.rx_bytes += u.bytes;
  }
  for (size_t pi = 0; pi < ports.size(); ++pi) {
    result.ports[pi].hw = ports[pi]->stats();
    result.ports[pi].xstats = ports[pi]->xstats();
  }
  // A NIC whose RX stamps do not count the clock its driver reads (a mode
  // the driver did not expect) shows as latencies beyond 2^40 ns, which is
  // where negative ones land: say so rather than report them as figures.
  for (const StreamResult& r : result.streams) {
    const port::Port& rx = *ports[r.rx_port];
    if (rx.rx_timestamp().unit == port::RxTimestamp::Unit::kNicClock && r.analysis.latency.overflow() != 0) {
      result.warnings.push_back(absl::StrFormat(
          "stream %s: %d latency samples above 2^40 ns or negative: the RX stamps on port %s do not follow the "
          "fitted %s; its latency figures are not valid (timestamps: software avoids the NIC clock)",
          r.name, r.analysis.latency.overflow(), rx.name(), rx.rx_timestamp().clock));
    }
  }
  return result;
}

}  // namespace fg::engine
