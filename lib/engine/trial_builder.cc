// engine/trial_builder.cc: LiveRun::Start, a trial built step by step before
// its lcores launch: owners (placement), one FlowTable per worker, the
// handoff rings, the TX tasks with their shards, the closed loop's wiring
// (closed_loop.cc), the RX tasks with each port's dispatch and frame
// handlers, the QPs' CM set-up, then the launch.
#include <rte_launch.h>
#include <rte_lcore.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <thread>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/net_addr.h"
#include "base/status.h"
#include "base/tsc.h"
#include "engine/cell_work.h"
#include "engine/engine.h"
#include "engine/worker.h"
#include "port/kernel_if.h"
#include "proto/pfc.h"

namespace fg::engine {

namespace {

// The shards of port pi's streams whose flows worker w owns: their flows,
// their share of the stream's rate and of its count.
std::vector<tx::Shard> ShardsOf(const std::vector<stream::CompiledStream>& streams, const Placement& pl, uint32_t w,
                                size_t pi) {
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
  return shards;
}

// Where port pi's received frames and feedback go (rx::PortDispatch).
std::shared_ptr<rx::PortDispatch> DispatchOf(const std::vector<stream::CompiledStream>& streams, const Placement& pl,
                                             size_t pi, uint32_t nw, bool rx_is_own_tx) {
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
    // A responding port: ICRCs checked, but where RX takes the very mbufs TX
    // built in this process (the built-in loopback: PortOptions::rx_is_own_tx)
    // there is no wire to have changed them: the check would read each
    // frame's whole payload (cold: TX stamps a template the mbuf holds) to
    // confirm TX's own sum, 45 % of a collective's lcore time on 1 KB frames
    // (9.5 Mpps checked, 17.1 Mpps not; docs/benchmarks.md). Stated per port
    // (report.json ports[].rx_icrc_checked). A stream that sends bad ICRCs
    // on purpose (icrc: bad) keeps the check: its negative test is the point.
    if (s.answers != nullptr && s.rx_port == pi) d->check_icrc = d->check_icrc || !rx_is_own_tx || s.bad_icrc;
  }
  // The answers and READ requests coming back: ICRCs our responder and TX
  // made, read again only off the built-in loopback (3 % of a collective's
  // lcore time with an ACK every 8 frames), or when a stream sends bad ones.
  d->check_feedback_icrc =
      !rx_is_own_tx || std::any_of(streams.begin(), streams.end(), [](const auto& s) { return s.bad_icrc; });
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
    // Only QPs and PDCs are named by feedback (a UDP port is not).
    const stream::KeyKind kind = s.program.key_kind();
    if (kind != stream::KeyKind::kRoceQp && kind != stream::KeyKind::kUetPdc) continue;
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
  return d;
}

}  // namespace

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
  if (options.hosts != nullptr && options.hosts->size() != ports.size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("the trial's hosts name %d ports, the run has %d", options.hosts->size(), ports.size()));
  }
  r->lcores_ = workers;
  r->BuildOwners();
  const int tag_off = port::TxTemplateTagOffset();
  FG_RETURN_IF_ERROR(r->SetUpResponders(workers, tag_off));
  FG_RETURN_IF_ERROR(r->BuildTx(tag_off));
  r->SetUpFeedback();
  FG_RETURN_IF_ERROR(r->SetUpCells());
  r->BuildRx(tag_off);

  for (port::Port* p : ports) p->ResetStats();
  for (port::Port* p : ports) {
    if (!p->options().kernel_iface.empty()) r->backlog_drops_start_ = port::HostBacklogDrops();
  }
  TrialResult& result = r->result_;
  for (const LcoreWork& w : r->work_) {
    if (w.tx.empty() && w.rx.empty()) continue;
    result.placement.push_back(absl::StrFormat("lcore %d: %s", w.lcore, absl::StrJoin(w.names, ", ")));
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
    // The ports' hosts answer ARP and ND meanwhile (a leaf resolving the
    // ranks or addresses a REQ is routed to: `gateway` and `lab.resolve`).
    static const endpoint::PortHosts kNoHosts;
    std::vector<endpoint::PortContext> neighbors(ports.size());
    for (size_t pi = 0; pi < ports.size(); ++pi) {
      endpoint::PortContext& c = neighbors[pi];
      c.port = static_cast<uint16_t>(pi);
      c.hosts = options.hosts != nullptr ? &(*options.hosts)[pi] : &kNoHosts;
      if (pi < options.answer.size()) c.answer = options.answer[pi];
      if (auto mac = ParseMac(ports[pi]->capabilities().mac); mac.ok()) c.port_mac = *mac;
    }
    auto setups = ConnectQps(ports, streams, r->clock_, options.qp_setup_timeout_ns, neighbors);
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
  FG_RETURN_IF_ERROR(r->Launch());
  return r;
}

void LiveRun::BuildOwners() {
  const uint32_t nw = static_cast<uint32_t>(lcores_.size());
  // Owners: every flow to one worker (engine/placement.h).
  std::vector<uint16_t> txq(ports_.size());
  for (size_t pi = 0; pi < ports_.size(); ++pi) txq[pi] = ports_[pi]->options().tx_queues;
  placement_ = Place(streams_, nw, txq, options_.placement);
  const Placement& pl = placement_;
  result_.placement_policy = pl.Describe(streams_, lcores_);

  work_ = std::vector<LcoreWork>(nw);
  for (uint32_t w = 0; w < nw; ++w) {
    work_[w].index = w;
    work_[w].lcore = lcores_[w];
    work_[w].clock = clock_;
  }
  // RX analysis: one table per worker with the flows it owns.
  for (uint32_t w = 0; w < nw; ++w) {
    std::vector<rx::OwnedFlow> owned;
    owned.reserve(pl.owned[w].size());
    for (uint32_t g : pl.owned[w]) owned.push_back(rx::OwnedFlow{0, g});
    for (const auto& s : streams_) {
      for (uint32_t f = 0; f < s.flows; ++f) {
        const uint32_t g = s.flow_id + f;
        if (pl.owner[g] == w) owned[pl.slot[g]].stream = s.index;
      }
    }
    tables_.push_back(std::make_unique<rx::FlowTable>(std::move(owned), static_cast<uint32_t>(streams_.size()),
                                                      options_.loss_log_capacity, options_.per_flow != 0));
    work_[w].table = tables_.back().get();
  }
  // Handoff rings, one per ordered pair of workers.
  rings_.resize(size_t{nw} * nw);
  for (uint32_t from = 0; from < nw; ++from) {
    for (uint32_t to = 0; to < nw; ++to) {
      if (from == to) continue;
      rings_[from * nw + to] = std::make_unique<rx::HandoffRing>(rx::kHandoffRing);
      work_[to].in.push_back(rings_[from * nw + to].get());
    }
  }
}

absl::Status LiveRun::BuildTx(int tag_off) {
  // Ports that honour PFC: their gates, made before any handler or TX task reads them.
  pfc_gates_.resize(ports_.size());
  for (size_t pi = 0; pi < ports_.size(); ++pi) {
    if (pi < options_.pfc.size() && options_.pfc[pi].honor) {
      // A pause lasts its quanta at the port's line rate: without one, honouring would hold nothing.
      if (ports_[pi]->capabilities().line_bps() <= 0) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "port %s: pfc.honor needs the port's line rate (a pause quantum is 512 bit times of it), and its PMD "
            "reports none: set ports[].link_speed",
            ports_[pi]->name()));
      }
      pfc_gates_[pi] = std::make_unique<endpoint::PfcGate>();
    }
  }
  // TX: one task per (worker, port) with the shards of the streams it owns
  // flows of, on the worker's own TX queue of that port.
  for (uint32_t w = 0; w < work_.size(); ++w) {
    for (size_t pi = 0; pi < ports_.size(); ++pi) {
      std::vector<tx::Shard> shards = ShardsOf(streams_, placement_, w, pi);
      if (shards.empty()) continue;
      port::Port* p = ports_[pi];
      if (w >= p->options().tx_queues) {
        return absl::InternalError(absl::StrFormat("port %s: worker %d has no TX queue of its own", p->name(), w));
      }
      txs_.push_back(std::make_unique<tx::TxTask>(p->id(), static_cast<uint16_t>(w), p->pool(), shards, clock_,
                                                  tag_off, p->tx_schedule()));
      if (endpoint::PfcGate* gate = pfc_gates_[pi].get()) {
        // Each stream waits on its priority's pause (its frames' VLAN PCP, or DSCP / 8).
        for (size_t i = 0; i < shards.size(); ++i) {
          const auto& kinds = shards[i].s->program.kinds();
          if (kinds.empty()) continue;
          txs_.back()->SetPfcGate(i, &gate->until_ns[proto::PriorityOf(kinds[0].t.bytes)]);
        }
      }
      work_[w].tx.push_back(txs_.back().get());
      work_[w].names.push_back(absl::StrFormat("tx %s/q%d", p->name(), w));
    }
  }
  return absl::OkStatus();
}

void LiveRun::BuildRx(int tag_off) {
  // RX: every queue of every port, so everything that arrives is counted;
  // queue q of a port is polled by worker q % workers.
  const uint32_t nw = static_cast<uint32_t>(work_.size());
  std::vector<const Counter*> polls(nw);
  for (uint32_t w = 0; w < nw; ++w) polls[w] = &work_[w].polls;
  for (size_t pi = 0; pi < ports_.size(); ++pi) {
    const port::Port& port = *ports_[pi];
    const std::shared_ptr<const rx::PortDispatch> d =
        DispatchOf(streams_, placement_, pi, nw, port.options().rx_is_own_tx);
    // The report says what RX did (PortResult::rx_icrc_checked): on a port a
    // responder receives data on, or its answers come back to, as decided.
    rx_icrc_checked_.resize(ports_.size());
    const bool responds = std::any_of(streams_.begin(), streams_.end(), [pi](const stream::CompiledStream& s) {
      return s.answers != nullptr && s.rx_port == pi;
    });
    const bool answered = std::any_of(streams_.begin(), streams_.end(), [pi](const stream::CompiledStream& s) {
      return s.answers != nullptr && s.tx_port == pi;
    });
    if (responds || answered) {
      rx_icrc_checked_[pi] = (!responds || d->check_icrc) && (!answered || d->check_feedback_icrc);
    }
    for (uint16_t q = 0; q < port.options().rx_queues; ++q) {
      const uint32_t w = q % nw;
      std::vector<rx::HandoffRing*> out(nw, nullptr);
      for (uint32_t to = 0; to < nw; ++to) {
        if (to != w) out[to] = rings_[w * nw + to].get();
      }
      rxs_.push_back({pi, std::make_unique<rx::RxTask>(port.id(), q, w, d, work_[w].table, out, polls, clock_,
                                                       port.rx_timestamp().offset, port.rx_timestamp().flag,
                                                       port.rx_timestamp().line,
                                                       port.options().rx_is_own_tx ? -1 : tag_off,
                                                       port.rx_timestamp().shared)});
      rxs_.back().task->SetHandlers(HandlersOf(pi, w, tag_off));
      work_[w].rx.push_back(rxs_.back().task.get());
      work_[w].names.push_back(absl::StrFormat("rx %s/q%d", port.name(), q));
    }
  }
}

std::unique_ptr<endpoint::FrameHandlers> LiveRun::HandlersOf(size_t pi, uint32_t w, int tag_off) {
  static const endpoint::PortHosts kNoHosts;
  LcoreWork& work = work_[w];
  // The worker's queue of host answers, sent on its own TX queue of each port.
  if (work.host_answers == nullptr) {
    host_answer_queues_.push_back(std::make_unique<endpoint::AnswerQueue>(kHostAnswerQueue));
    work.host_answers = host_answer_queues_.back().get();
    work.host_answer_ports = std::vector<AnswerPort>(ports_.size());
    for (size_t p = 0; p < ports_.size(); ++p) {
      AnswerPort& ap = work.host_answer_ports[p];
      ap.port_id = ports_[p]->id();
      ap.queue = static_cast<uint16_t>(w);
      ap.pool = ports_[p]->pool();
      ap.has_queue = w < ports_[p]->options().tx_queues;
    }
    work.tag_off = tag_off;
  }
  endpoint::PortContext c;
  c.port = static_cast<uint16_t>(pi);
  c.hosts = options_.hosts != nullptr ? &(*options_.hosts)[pi] : &kNoHosts;
  if (pi < options_.answer.size()) c.answer = options_.answer[pi];
  if (auto mac = ParseMac(ports_[pi]->capabilities().mac); mac.ok()) c.port_mac = *mac;
  // A worker without a TX queue on the port cannot answer there (its requests are counted unanswered).
  c.answers = work.host_answer_ports[pi].has_queue ? work.host_answers : nullptr;
  c.line_bps = ports_[pi]->capabilities().line_bps();
  if (pi < options_.pfc.size()) {
    const config::PortPfcSpec& pfc = options_.pfc[pi];
    c.pfc_storm_window_ns = static_cast<uint64_t>(pfc.storm_window_ns);
    c.pfc_storm_events = static_cast<uint32_t>(
        std::max(1.0, std::ceil(pfc.storm_events_per_s * static_cast<double>(pfc.storm_window_ns) / 1e9)));
  }
  if (pi < pfc_gates_.size()) c.pfc_gate = pfc_gates_[pi].get();
  return std::make_unique<endpoint::FrameHandlers>(c);
}

absl::Status LiveRun::Launch() {
  // Launch, then start every stream at the same instant a little ahead.
  const uint64_t start = ReadTsc() + clock_.FromNs(2'000'000);
  start_ = start;
  timespec unix_now{};
  clock_gettime(CLOCK_REALTIME, &unix_now);
  result_.unix_minus_host_ns = unix_now.tv_sec * 1'000'000'000LL + unix_now.tv_nsec -
                               static_cast<int64_t>(clock_.ToNs(ReadTsc()));
  result_.start_unix_ns = result_.unix_minus_host_ns + static_cast<int64_t>(clock_.ToNs(start));
  for (auto& t : txs_) t->Arm(start);
  for (auto& c : cells_) c->shared.start_tsc = start;  // the first iteration starts with the streams
  // No signature of this run carries a TX time before its start (RX counts
  // such a frame invalid); a port that replays a capture receives its times.
  for (auto& ref : rxs_) {
    if (!ReplaysCapture(*ports_[ref.port])) ref.task->SetRunStart(clock_.ToNs(start));
  }
  // Each worker's CPU, its steal from here, its nice value.
  PlaceOnCpus(work_, std::any_of(ports_.begin(), ports_.end(),
                                 [](const port::Port* p) { return !p->options().kernel_iface.empty(); }));
  for (uint32_t i = 0; i < work_.size(); ++i) {
    // Every worker runs: one with no queue of its own may still own flows
    // whose frames others hand it.
    if (int ret = rte_eal_remote_launch(LcoreMain, &work_[i], lcores_[i]); ret != 0) {
      for (uint32_t j = 0; j < i; ++j) work_[j].phase.store(kStop, std::memory_order_release);
      rte_eal_mp_wait_lcore();
      finished_ = true;
      return absl::InternalError(absl::StrFormat("cannot launch lcore %d (%d)", lcores_[i], ret));
    }
  }
  finished_ = false;  // launched: from here the destructor finishes the run
  background_ = std::thread([p = this] { p->Background(); });
  return absl::OkStatus();
}

}  // namespace fg::engine
