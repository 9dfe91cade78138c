#include "methods/collective.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/status.h"
#include "base/units.h"
#include "collective/cell.h"
#include "config/reader.h"
#include "config/ranks.h"
#include "methods/cell_trial.h"

namespace fg::methods {

namespace {

// A point as the job it runs: the plan's first n ranks.
CellJob PointJob(const CollectiveParams& p, uint32_t n, uint64_t size) {
  CellJob job;
  job.name = "collective";
  job.rank_ids = FirstRanks(n);
  job.op = p.op;
  job.algorithm = p.algorithm;
  job.size_bytes = size;
  job.play.iterations = p.warmup_iterations + p.iterations;
  job.play.timeout_ns = p.iteration_timeout_ns;
  if (p.straggler) {
    job.play.straggler_rank = p.straggler->rank;
    job.play.straggler_delay_ns = p.straggler->delay_ns;
  }
  return job;
}

std::vector<uint32_t> RanksOf(const config::Plan& plan, const CollectiveParams& p) {
  return p.ranks.empty() ? std::vector<uint32_t>{plan.ranks->count} : p.ranks;
}

absl::StatusOr<CollectivePoint> RunPoint(const TestContext& c, const config::TestSpec& test, uint32_t n,
                                         uint64_t size, std::vector<TrialRecord>& trials) {
  const CollectiveParams& p = test.As<CollectiveParams>();
  const CellJob job = PointJob(p, n, size);
  FG_ASSIGN_OR_RETURN(collective::Cell cell, JobCell(*c.plan.ranks, job));
  CollectivePoint out;
  out.size_bytes = size;
  out.ranks = n;
  out.bus_factor = cell.schedule().bus_factor();
  out.rank_line_bps = RankLineBps(*c.plan.ranks, job.rank_ids, c.ports);
  FG_ASSIGN_OR_RETURN(
      engine::TrialResult r,
      RunCellTrial(c, test, {job}, absl::StrFormat("%u ranks, %u B x %u iterations", n, size, job.play.iterations),
                   trials));
  out.tester_limits = trials.back().tester_limits;
  const std::vector<engine::CellIteration>& its = r.cells[0].iterations;
  const std::vector<uint64_t>& resent_by = r.cells[0].resent_bytes;
  bool failed = false;
  for (uint32_t i = 0; i < its.size(); ++i) {
    const uint64_t resent = i < resent_by.size() ? resent_by[i] : 0;
    failed = failed || !its[i].completed;
    if (i < p.warmup_iterations) continue;
    CollectivePoint::Iteration it;
    it.index = i - p.warmup_iterations;
    it.duration_ns = its[i].completed ? its[i].time_ns() : 0;
    it.retransmitted_bytes = resent;
    it.failed = !its[i].completed;
    it.tester_holdup_ns = its[i].tester_holdup_ns;
    it.tester_held = its[i].tester_held;
    // (a failed iteration has no first send recorded: its compute's start, when it began)
    const uint64_t first = its[i].first_tx_ns != 0 ? its[i].first_tx_ns : its[i].compute_start_ns;
    it.start_unix_ns = static_cast<int64_t>(first) + r.unix_minus_host_ns;
    out.retransmitted_bytes += resent;
    out.iterations.push_back(it);
  }
  uint32_t good = 0;
  for (const auto& it : out.iterations) good += it.failed ? 0 : 1;
  out.wrong = p.iterations - good;
  // S_fabric: what the tester's ports sent, resends apart, per iteration
  // (every iteration sends the same bytes; known when none failed).
  uint64_t unique = 0;
  for (const engine::StreamResult& s : r.streams) {
    unique += s.retx.unique_bytes;
    out.retransmitted_frames += s.retx.retransmitted_packets;
    out.discarded_frames += s.responder.out_of_sequence;
    out.ce_marks += s.responder.ce_seen;
    out.cnps += s.responder.cnp_sent;
    out.rate_cuts += s.rp.cuts;
  }
  if (!failed && !its.empty()) out.s_fabric_bytes = unique / its.size();
  for (const engine::PortResult& pr : r.ports) {
    for (const port::Xstat& x : pr.xstats) {
      const bool pause = x.name.find("pause") != std::string::npos || x.name.find("pfc") != std::string::npos ||
                         x.name.find("xon") != std::string::npos || x.name.find("xoff") != std::string::npos;
      if (pause && x.name.find("rx") != std::string::npos) out.pfc_frames += x.value;
    }
  }
  return out;
}

class Collective final : public TestKind {
 public:
  std::string_view key() const override { return "collective"; }
  std::vector<std::string_view> own_keys() const override {
    return {"op", "algorithm", "sizes", "ranks", "iterations", "warmup_iterations", "straggler", "iteration_timeout"};
  }
  bool needs_streams() const override { return false; }
  int64_t default_warmup_ns() const override { return 0; }  // its warm-up is warmup_iterations

  absl::StatusOr<std::shared_ptr<const config::TestParams>> Parse(const config::Plan& plan, const config::Node& n,
                                                                  const config::TestSpec&) const override {
    using config::IntIn;
    using config::Opt;
    auto t = std::make_shared<CollectiveParams>();
    FG_RETURN_IF_ERROR(CheckRanksForCells(plan, n));
    FG_RETURN_IF_ERROR(ParseOpAlgorithm(n, t->op, t->algorithm));
    if (auto list = n.Optional("sizes")) {
      t->sizes.clear();
      FG_ASSIGN_OR_RETURN(std::vector<config::Node> items, list->Items());
      if (items.empty()) return list->Error("sizes lists at least one size");
      for (const config::Node& i : items) {
        FG_ASSIGN_OR_RETURN(uint64_t b, i.Bytes(1, uint64_t{1} << 40));
        t->sizes.push_back(b);
      }
    }
    if (auto list = n.Optional("ranks")) {
      FG_ASSIGN_OR_RETURN(std::vector<config::Node> items, list->Items());
      if (items.empty()) return list->Error("ranks lists at least one rank count");
      for (const config::Node& i : items) {
        FG_ASSIGN_OR_RETURN(int64_t k, i.Int(2, plan.ranks->count));
        t->ranks.push_back(static_cast<uint32_t>(k));
      }
    }
    FG_RETURN_IF_ERROR(Opt(n, "iterations", t->iterations, IntIn(1, 1'000'000)));
    FG_RETURN_IF_ERROR(Opt(n, "warmup_iterations", t->warmup_iterations, IntIn(0, 1'000'000)));
    FG_RETURN_IF_ERROR(Opt(n, "iteration_timeout", t->iteration_timeout_ns, config::DurationIn()));
    if (t->iteration_timeout_ns <= 0) return n.At("iteration_timeout").Error("iteration_timeout must be positive");
    if (auto s = n.Optional("straggler")) {
      FG_RETURN_IF_ERROR(s->CheckKeys({"rank", "delay"}));
      CollectiveParams::Straggler st;
      FG_RETURN_IF_ERROR(Opt(*s, "rank", st.rank, IntIn(0, plan.ranks->count - 1)));
      FG_RETURN_IF_ERROR(Opt(*s, "delay", st.delay_ns, config::DurationIn()));
      t->straggler = st;
    }
    // Every point as it will run: the schedule (op, algorithm, N, S) and its cut into QPs.
    for (uint32_t k : RanksOf(plan, *t)) {
      for (uint64_t size : t->sizes) {
        if (auto cell = JobCell(*plan.ranks, PointJob(*t, k, size)); !cell.ok()) {
          return n.Error(absl::StrFormat("%u ranks, %u B: %s", k, size, cell.status().message()));
        }
      }
    }
    return t;
  }

  std::string Describe(const config::TestSpec& test) const override {
    const CollectiveParams& t = test.As<CollectiveParams>();
    return absl::StrFormat("collective %s (%s), %d size(s), %d iterations after %d warm-up",
                           collective::OpName(t.op), collective::AlgorithmName(t.algorithm), t.sizes.size(),
                           t.iterations, t.warmup_iterations);
  }

  double EstimateSeconds(const config::TestSpec& test, int64_t drain_ns) const override {
    const CollectiveParams& t = test.As<CollectiveParams>();
    const double points = static_cast<double>(t.sizes.size() * std::max<size_t>(1, t.ranks.size()));
    return points * (0.1 + drain_ns / 1e9);  // a cell's iterations take milliseconds on the built-in loopback
  }

  absl::StatusOr<std::vector<std::shared_ptr<const TestResult>>> Run(const TestContext& c,
                                                                     const config::TestSpec& test) const override {
    const CollectiveParams& p = test.As<CollectiveParams>();
    auto r = std::make_shared<CollectiveResult>();
    r->name = test.name;
    r->op = p.op;
    r->algorithm = p.algorithm;
    r->straggler = p.straggler ? absl::StrFormat("rank %u, sends of every step %.3f ms late", p.straggler->rank,
                                                 p.straggler->delay_ns / 1e6)
                               : "none";
    for (uint32_t n : RanksOf(c.plan, p)) {
      for (uint64_t size : p.sizes) {
        auto point = RunPoint(c, test, n, size, r->trials);
        if (!point.ok()) return Stopped(r, point.status());
        r->points.push_back(std::move(*point));
      }
    }
    return std::vector<std::shared_ptr<const TestResult>>{r};
  }

  void WriteParameters(report::JsonWriter& w, const config::TestSpec& test, const TestResult&) const override {
    const CollectiveParams& t = test.As<CollectiveParams>();
    w.Field("op", std::string(collective::OpName(t.op)));
    w.Field("algorithm", std::string(collective::AlgorithmName(t.algorithm)));
    w.Key("sizes_bytes");
    w.BeginArray();
    for (uint64_t s : t.sizes) w.Int(static_cast<int64_t>(s));
    w.EndArray();
    w.Key("ranks");
    w.BeginArray();
    for (uint32_t n : t.ranks) w.Int(n);
    w.EndArray();
    w.Field("iterations", t.iterations);
    w.Field("warmup_iterations", t.warmup_iterations);
    w.Field("iteration_timeout_s", t.iteration_timeout_ns / 1e9);
  }

  void WriteResults(report::JsonWriter& w, const config::TestSpec&, const TestResult& result) const override;
  std::string Summary(const TestResult& result) const override;
};

void Collective::WriteResults(report::JsonWriter& w, const config::TestSpec&, const TestResult& result) const {
  const auto& r = static_cast<const CollectiveResult&>(result);
  w.Field("observation_point",
          "fabricgen's lcores: an iteration runs from the TX time of the first frame any rank sent to the RX time "
          "of the packet that completed the last segment any rank waited for (the responder's in-order PSN)");
  w.Key("statement");
  w.BeginObject();
  w.Field("barriers_reproduced", true);
  w.Field("flows_schedule_driven", true);
  w.Field("stragglers_modelled", r.straggler);
  w.EndObject();
  w.Key("points");
  w.BeginArray();
  for (const CollectivePoint& p : r.points) {
    const CollectiveStats s = StatsOf(p);
    w.BeginObject();
    w.Field("op", std::string(collective::OpName(r.op)));
    w.Field("algorithm", std::string(collective::AlgorithmName(r.algorithm)));
    w.Field("ranks", p.ranks);
    w.Field("size_bytes", static_cast<int64_t>(p.size_bytes));
    w.Field("count", static_cast<int64_t>(p.size_bytes / 4));
    w.Field("type", "float");
    w.Field("redop", std::string(collective::RedOp(r.op)));
    w.Field("bus_factor", p.bus_factor);
    w.Key("time_ns");
    w.BeginObject();
    for (auto [k, v] : {std::pair{"mean", s.mean}, {"p50", s.p50}, {"p95", s.p95}, {"p99", s.p99}, {"min", s.min},
                        {"max", s.max}}) {
      w.Field(k, v);
    }
    w.EndObject();
    w.Field("algbw_bps", s.algbw_bps);
    w.Key("busbw_bps");
    w.BeginObject();
    for (auto [k, v] : {std::pair{"mean", s.busbw_mean}, {"p50", s.busbw_p50}, {"p95", s.busbw_p95},
                        {"p99", s.busbw_p99}}) {
      w.Field(k, v);
    }
    w.EndObject();
    w.Field("rank_line_bps", p.rank_line_bps);
    w.Field("busbw_efficiency", p.rank_line_bps > 0 ? s.busbw_mean / p.rank_line_bps : 0.0);
    w.Field("s_fabric_bytes", static_cast<int64_t>(p.s_fabric_bytes));
    w.Field("retransmitted_bytes", static_cast<int64_t>(p.retransmitted_bytes));
    w.Field("retransmitted_frames", static_cast<int64_t>(p.retransmitted_frames));
    w.Field("discarded_frames", static_cast<int64_t>(p.discarded_frames));
    w.Field("wrong", p.wrong);
    w.Field("ce_marks", static_cast<int64_t>(p.ce_marks));
    w.Field("cnps", static_cast<int64_t>(p.cnps));
    w.Field("rate_cuts", static_cast<int64_t>(p.rate_cuts));
    w.Field("pfc_frames", static_cast<int64_t>(p.pfc_frames));
    w.Field("tester_limited", !p.tester_limits.empty() || s.all_held);
    w.Field("iterations_in_figures", static_cast<int64_t>(s.n));
    w.Field("tester_held_iterations", static_cast<int64_t>(s.held + (s.all_held ? s.n : 0)));
    w.Key("iterations");
    w.BeginArray();
    for (const auto& it : p.iterations) {
      w.BeginObject();
      w.Field("index", it.index);
      w.Field("start_unix_ns", it.start_unix_ns);
      w.Field("duration_ns", it.duration_ns);
      w.Field("retransmitted_bytes", static_cast<int64_t>(it.retransmitted_bytes));
      w.Field("failed", it.failed);
      w.Field("tester_holdup_ns", static_cast<int64_t>(it.tester_holdup_ns));
      w.Field("tester_held", it.tester_held);
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
}

std::string Collective::Summary(const TestResult& result) const {
  const auto& r = static_cast<const CollectiveResult&>(result);
  std::string out = absl::StrFormat("test %s (collective %s, %s; stragglers: %s)%s\n", r.name,
                                    collective::OpName(r.op), collective::AlgorithmName(r.algorithm), r.straggler,
                                    r.complete ? "" : ", INCOMPLETE: " + r.stopped_because);
  // nccl-tests' table: time in us, algbw and busbw in GB/s (10^9 bytes a second).
  out += "  #  ranks        size         count    type   redop      time   algbw   busbw  #wrong\n";
  out += "  #               (B)    (elements)                       (us)  (GB/s)  (GB/s)\n";
  for (const CollectivePoint& p : r.points) {
    const CollectiveStats s = StatsOf(p);
    out += absl::StrFormat("  %8u  %10u  %12u  %6s  %6s  %8.1f  %6.2f  %6.2f  %6u%s\n", p.ranks, p.size_bytes,
                           p.size_bytes / 4, "float", collective::RedOp(r.op), s.mean / 1e3, s.algbw_bps / 8e9,
                           s.busbw_mean / 8e9, p.wrong,
                           p.tester_limits.empty() && !s.all_held ? "" : "  tester-limited");
  }
  for (const CollectivePoint& p : r.points) {
    const CollectiveStats s = StatsOf(p);
    if (s.held != 0 || s.all_held) {
      out += absl::StrFormat(
          "  %u ranks, %u B: %s of %u iterations held up by the tester (its lcores away for more than 1 %% of "
          "each): %s\n",
          p.ranks, p.size_bytes, s.all_held ? "all" : absl::StrFormat("%u", s.held), s.n + s.held,
          s.all_held ? "the figures are over them, the tester's as much as the fabric's" : "left out of the figures");
    }
  }
  for (const CollectivePoint& p : r.points) {
    if (p.retransmitted_bytes != 0) {
      out += absl::StrFormat("  %u ranks, %u B: %u B retransmitted over %u iterations (S_fabric %u B an iteration)\n",
                             p.ranks, p.size_bytes, p.retransmitted_bytes, p.iterations.size(), p.s_fabric_bytes);
    }
  }
  return out;
}

}  // namespace

CollectiveStats StatsOf(const CollectivePoint& p) {
  CollectiveStats s;
  // The completed iterations the tester kept up through; all of them,
  // flagged, when it kept up through none.
  std::vector<double> t, held;
  for (const auto& it : p.iterations) {
    if (it.failed || it.duration_ns <= 0) continue;
    (it.tester_held ? held : t).push_back(static_cast<double>(it.duration_ns));
  }
  s.held = held.size();
  if (t.empty() && !held.empty()) {
    t = held;
    s.held = 0;
    s.all_held = true;
  }
  s.n = t.size();
  if (t.empty()) return s;
  std::sort(t.begin(), t.end());
  double sum = 0;
  for (double x : t) sum += x;
  s.mean = sum / static_cast<double>(t.size());
  s.p50 = Percentile(t, 50);
  s.p95 = Percentile(t, 95);
  s.p99 = Percentile(t, 99);
  s.min = t.front();
  s.max = t.back();
  const double bits = 8.0 * static_cast<double>(p.size_bytes);
  s.algbw_bps = bits / (s.mean / 1e9);
  // busbw at a time percentile: the bus bandwidth that share of iterations reach or exceed.
  auto bus = [&](double ns) { return bits / (ns / 1e9) * p.bus_factor; };
  s.busbw_mean = bus(s.mean);
  s.busbw_p50 = bus(s.p50);
  s.busbw_p95 = bus(s.p95);
  s.busbw_p99 = bus(s.p99);
  return s;
}

const TestKind& CollectiveKind() {
  static const Collective kind;
  return kind;
}

}  // namespace fg::methods
