#include "methods/jct.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "base/status.h"
#include "config/reader.h"
#include "methods/cell_trial.h"

namespace fg::methods {

namespace {

CellJob JctJob(const config::Plan& plan, const JctParams& p, int64_t compute_ns) {
  CellJob job;
  job.name = "jct";
  job.rank_ids = FirstRanks(p.ranks != 0 ? p.ranks : plan.ranks->count);
  job.op = p.op;
  job.algorithm = p.algorithm;
  job.size_bytes = p.size_bytes;
  job.play.iterations = p.warmup_iterations + p.iterations;
  job.play.timeout_ns = p.iteration_timeout_ns;
  job.play.compute_ns = compute_ns;
  job.play.overlap = compute_ns != 0 ? p.overlap : 0;
  return job;
}

class Jct final : public TestKind {
 public:
  std::string_view key() const override { return "jct"; }
  std::vector<std::string_view> own_keys() const override {
    return {"op", "algorithm", "size", "ranks", "compute", "overlap", "iterations", "warmup_iterations",
            "iteration_timeout"};
  }
  bool needs_streams() const override { return false; }
  int64_t default_warmup_ns() const override { return 0; }

  absl::StatusOr<std::shared_ptr<const config::TestParams>> Parse(const config::Plan& plan, const config::Node& n,
                                                                  const config::TestSpec&) const override {
    using config::IntIn;
    using config::Opt;
    auto t = std::make_shared<JctParams>();
    FG_RETURN_IF_ERROR(CheckRanksForCells(plan, n));
    FG_RETURN_IF_ERROR(ParseOpAlgorithm(n, t->op, t->algorithm));
    FG_RETURN_IF_ERROR(Opt(n, "size", t->size_bytes, config::BytesIn(1, uint64_t{1} << 40)));
    FG_RETURN_IF_ERROR(Opt(n, "ranks", t->ranks, IntIn(2, plan.ranks->count)));
    if (auto list = n.Optional("compute")) {
      t->compute_ns.clear();
      FG_ASSIGN_OR_RETURN(std::vector<config::Node> items, list->Items());
      if (items.empty()) return list->Error("compute lists at least one duration");
      for (const config::Node& i : items) {
        FG_ASSIGN_OR_RETURN(int64_t d, i.Duration());
        if (d < 0 || d > 3'600'000'000'000) return i.Error("a compute time is 0 .. 1 h");
        t->compute_ns.push_back(d);
      }
    }
    FG_RETURN_IF_ERROR(Opt(n, "overlap", t->overlap, config::PercentIn(0, 100)));
    FG_RETURN_IF_ERROR(Opt(n, "iterations", t->iterations, IntIn(1, 1'000'000)));
    FG_RETURN_IF_ERROR(Opt(n, "warmup_iterations", t->warmup_iterations, IntIn(0, 1'000'000)));
    FG_RETURN_IF_ERROR(Opt(n, "iteration_timeout", t->iteration_timeout_ns, config::DurationIn()));
    if (t->iteration_timeout_ns <= 0) return n.At("iteration_timeout").Error("iteration_timeout must be positive");
    if (auto cell = JobCell(*plan.ranks, JctJob(plan, *t, 0)); !cell.ok()) return n.Error(cell.status().message());
    return t;
  }

  std::string Describe(const config::TestSpec& test) const override {
    const JctParams& t = test.As<JctParams>();
    return absl::StrFormat("jct %s (%s), %u B, %d compute time(s), overlap %.0f %%", collective::OpName(t.op),
                           collective::AlgorithmName(t.algorithm), t.size_bytes, t.compute_ns.size(),
                           t.overlap * 100);
  }

  double EstimateSeconds(const config::TestSpec& test, int64_t drain_ns) const override {
    const JctParams& t = test.As<JctParams>();
    double s = 0;
    for (int64_t c : t.compute_ns) s += c / 1e9 * (t.iterations + t.warmup_iterations) + drain_ns / 1e9;
    return s + drain_ns / 1e9 + 0.1;
  }

  absl::StatusOr<std::vector<std::shared_ptr<const TestResult>>> Run(const TestContext& c,
                                                                     const config::TestSpec& test) const override {
    const JctParams& p = test.As<JctParams>();
    auto r = std::make_shared<JctResult>();
    r->name = test.name;
    r->op = p.op;
    r->algorithm = p.algorithm;
    r->size_bytes = p.size_bytes;
    r->overlap = p.overlap;
    const CellJob base = JctJob(c.plan, p, 0);
    r->ranks = static_cast<uint32_t>(base.rank_ids.size());
    r->rank_line_bps = RankLineBps(*c.plan.ranks, base.rank_ids, c.ports);
    auto fail = [&](const absl::Status& st) { return Stopped(r, st); };
    auto cell = JobCell(*c.plan.ranks, base);
    if (!cell.ok()) return fail(cell.status());
    r->bus_factor = cell->schedule().bus_factor();
    // T_comm: the collective alone, no compute.
    auto comm = RunCellTrial(c, test, {base}, absl::StrFormat("%u ranks, %u B, no compute", r->ranks, p.size_bytes),
                             r->trials);
    if (!comm.ok()) return fail(comm.status());
    r->comm_iterations = JobIterations(*comm, 0, p.warmup_iterations, 0);
    r->comm_ns = Mean(JobTimesNs(r->comm_iterations));
    for (int64_t compute : p.compute_ns) {
      const CellJob job = JctJob(c.plan, p, compute);
      auto t = RunCellTrial(c, test, {job},
                            absl::StrFormat("%u ranks, %u B, compute %.3f ms", r->ranks, p.size_bytes, compute / 1e6),
                            r->trials);
      if (!t.ok()) return fail(t.status());
      JctPoint pt;
      pt.iterations = JobIterations(*t, 0, p.warmup_iterations, compute);
      std::vector<double> jct = JobTimesNs(pt.iterations);
      std::sort(jct.begin(), jct.end());
      pt.compute_ns = compute;
      pt.jct_mean = Mean(jct);
      pt.jct_p50 = Percentile(jct, 50);
      pt.jct_p99 = Percentile(jct, 99);
      pt.wrong = WrongIterations(t->cells[0], p.warmup_iterations, p.iterations);
      pt.tester_limited = !r->trials.back().tester_limits.empty() || EveryIterationHeld(t->cells[0], p.warmup_iterations);
      const double comm_roof =
          r->rank_line_bps > 0 ? 8.0 * static_cast<double>(p.size_bytes) * r->bus_factor / r->rank_line_bps * 1e9 : 0;
      pt.roofline_ns = static_cast<double>(compute) + comm_roof;
      pt.jct_ratio = pt.roofline_ns > 0 ? pt.jct_mean / pt.roofline_ns : 0;
      const double shorter = std::min(static_cast<double>(compute), r->comm_ns);
      pt.measured_overlap =
          shorter > 0 ? std::clamp((static_cast<double>(compute) + r->comm_ns - pt.jct_mean) / shorter, 0.0, 1.0) : 0;
      r->points.push_back(pt);
    }
    return std::vector<std::shared_ptr<const TestResult>>{r};
  }

  void WriteParameters(report::JsonWriter& w, const config::TestSpec& test, const TestResult&) const override {
    const JctParams& t = test.As<JctParams>();
    w.Field("op", std::string(collective::OpName(t.op)));
    w.Field("algorithm", std::string(collective::AlgorithmName(t.algorithm)));
    w.Field("size_bytes", static_cast<int64_t>(t.size_bytes));
    w.Field("ranks", t.ranks);
    w.Key("compute_ns");
    w.BeginArray();
    for (int64_t c : t.compute_ns) w.Int(c);
    w.EndArray();
    w.Field("overlap", t.overlap);
    w.Field("iterations", t.iterations);
    w.Field("warmup_iterations", t.warmup_iterations);
  }

  void WriteResults(report::JsonWriter& w, const config::TestSpec&, const TestResult& result) const override {
    const auto& r = static_cast<const JctResult&>(result);
    w.Field("observation_point",
            "fabricgen's lcores: an iteration's JCT runs from its compute's start (worker 0's clock) to the later of "
            "the compute's end and the RX time of the last segment any rank waited for");
    w.Field("op", std::string(collective::OpName(r.op)));
    w.Field("algorithm", std::string(collective::AlgorithmName(r.algorithm)));
    w.Field("ranks", r.ranks);
    w.Field("size_bytes", static_cast<int64_t>(r.size_bytes));
    w.Field("bus_factor", r.bus_factor);
    w.Field("rank_line_bps", r.rank_line_bps);
    w.Field("comm_ns", r.comm_ns);
    WriteJobIterations(w, "comm_iterations", r.comm_iterations);
    w.Key("points");
    w.BeginArray();
    for (const JctPoint& p : r.points) {
      w.BeginObject();
      w.Field("compute_ns", p.compute_ns);
      w.Key("jct_ns");
      w.BeginObject();
      w.Field("mean", p.jct_mean);
      w.Field("p50", p.jct_p50);
      w.Field("p99", p.jct_p99);
      w.EndObject();
      w.Field("roofline_ns", p.roofline_ns);
      w.Field("jct_ratio", p.jct_ratio);
      w.Field("overlap_fraction", r.overlap);
      w.Field("measured_overlap_fraction", p.measured_overlap);
      w.Field("wrong", p.wrong);
      w.Field("tester_limited", p.tester_limited);
      WriteJobIterations(w, "iterations", p.iterations);
      w.EndObject();
    }
    w.EndArray();
  }

  std::string Summary(const TestResult& result) const override {
    const auto& r = static_cast<const JctResult&>(result);
    std::string out = absl::StrFormat(
        "test %s (jct %s, %s, %u ranks, %u B, overlap %.0f %%; communication alone %.3f ms)%s\n", r.name,
        collective::OpName(r.op), collective::AlgorithmName(r.algorithm), r.ranks, r.size_bytes, r.overlap * 100,
        r.comm_ns / 1e6, r.complete ? "" : ", INCOMPLETE: " + r.stopped_because);
    out += "     compute (ms)   JCT mean (ms)   p50 (ms)   p99 (ms)   roofline (ms)   JCT ratio   overlap   #wrong\n";
    for (const JctPoint& p : r.points) {
      out += absl::StrFormat("  %15.3f %15.3f %10.3f %10.3f %15.3f %11.3f %9.2f %8u%s\n", p.compute_ns / 1e6,
                             p.jct_mean / 1e6, p.jct_p50 / 1e6, p.jct_p99 / 1e6, p.roofline_ns / 1e6, p.jct_ratio,
                             p.measured_overlap, p.wrong, p.tester_limited ? "  tester-limited" : "");
    }
    return out;
  }
};

}  // namespace

const TestKind& JctKind() {
  static const Jct kind;
  return kind;
}

}  // namespace fg::methods
