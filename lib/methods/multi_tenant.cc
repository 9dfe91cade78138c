#include "methods/multi_tenant.h"

#include <set>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/status.h"
#include "config/reader.h"

namespace fg::methods {

namespace {

class MultiTenant final : public TestKind {
 public:
  std::string_view key() const override { return "multi_tenant"; }
  std::vector<std::string_view> own_keys() const override {
    return {"jobs", "iterations", "warmup_iterations", "iteration_timeout"};
  }
  bool needs_streams() const override { return false; }
  int64_t default_warmup_ns() const override { return 0; }

  absl::StatusOr<std::shared_ptr<const config::TestParams>> Parse(const config::Plan& plan, const config::Node& n,
                                                                  const config::TestSpec&) const override {
    using config::IntIn;
    using config::Opt;
    auto t = std::make_shared<MultiTenantParams>();
    FG_RETURN_IF_ERROR(CheckRanksForCells(plan, n));
    FG_RETURN_IF_ERROR(Opt(n, "iterations", t->iterations, IntIn(1, 1'000'000)));
    FG_RETURN_IF_ERROR(Opt(n, "warmup_iterations", t->warmup_iterations, IntIn(0, 1'000'000)));
    FG_RETURN_IF_ERROR(Opt(n, "iteration_timeout", t->iteration_timeout_ns, config::DurationIn()));
    if (t->iteration_timeout_ns <= 0) return n.At("iteration_timeout").Error("iteration_timeout must be positive");
    auto list = n.Optional("jobs");
    if (!list) return n.Error("missing field 'jobs' (two or more jobs on disjoint rank_ids)");
    FG_ASSIGN_OR_RETURN(std::vector<config::Node> items, list->Items());
    if (items.size() < 2) return list->Error("a multi_tenant test has two or more jobs");
    std::set<uint32_t> taken;
    std::set<std::string> names;
    for (const config::Node& j : items) {
      FG_RETURN_IF_ERROR(j.CheckKeys({"name", "rank_ids", "op", "algorithm", "size", "compute"}));
      CellJob job;
      job.name = absl::StrFormat("job%d", t->jobs.size());
      FG_RETURN_IF_ERROR(Opt(j, "name", job.name, [](const config::Node& x) { return x.String(); }));
      if (!names.insert(job.name).second) return j.At("name").Error("two jobs named '" + job.name + "'");
      FG_RETURN_IF_ERROR(ParseOpAlgorithm(j, job.op, job.algorithm));
      job.size_bytes = 1 << 20;
      FG_RETURN_IF_ERROR(Opt(j, "size", job.size_bytes, config::BytesIn(1, uint64_t{1} << 40)));
      FG_RETURN_IF_ERROR(Opt(j, "compute", job.play.compute_ns, config::DurationIn()));
      auto ids = j.Optional("rank_ids");
      if (!ids) return j.Error("missing field 'rank_ids'");
      FG_ASSIGN_OR_RETURN(std::vector<config::Node> rs, ids->Items());
      for (const config::Node& r : rs) {
        FG_ASSIGN_OR_RETURN(int64_t id, r.Int(0, plan.ranks->count - 1));
        if (!taken.insert(static_cast<uint32_t>(id)).second) {
          return r.Error(absl::StrFormat("rank %d is in two jobs (a rank plays one job)", id));
        }
        job.rank_ids.push_back(static_cast<uint32_t>(id));
      }
      if (job.rank_ids.size() < 2) return ids->Error("a job has at least two ranks");
      job.play.iterations = t->warmup_iterations + t->iterations;
      job.play.timeout_ns = t->iteration_timeout_ns;
      if (auto cell = JobCell(*plan.ranks, job); !cell.ok()) return j.Error(cell.status().message());
      t->jobs.push_back(std::move(job));
    }
    return t;
  }

  std::string Describe(const config::TestSpec& test) const override {
    const MultiTenantParams& t = test.As<MultiTenantParams>();
    return absl::StrFormat("multi_tenant, %d jobs, %u iterations each", t.jobs.size(), t.iterations);
  }

  double EstimateSeconds(const config::TestSpec& test, int64_t drain_ns) const override {
    const MultiTenantParams& t = test.As<MultiTenantParams>();
    double s = 0;
    for (const CellJob& j : t.jobs) s += 2 * (j.play.compute_ns / 1e9 * j.play.iterations + drain_ns / 1e9);
    return s + drain_ns / 1e9;
  }

  absl::StatusOr<std::vector<std::shared_ptr<const TestResult>>> Run(const TestContext& c,
                                                                     const config::TestSpec& test) const override {
    const MultiTenantParams& p = test.As<MultiTenantParams>();
    auto r = std::make_shared<MultiTenantResult>();
    r->name = test.name;
    auto fail = [&](const absl::Status& st) { return Stopped(r, st); };
    // Each job alone, then all at once.
    for (const CellJob& job : p.jobs) {
      auto t = RunCellTrial(c, test, {job}, absl::StrFormat("job %s alone", job.name), r->trials);
      if (!t.ok()) return fail(t.status());
      TenantJob tj;
      tj.name = job.name;
      tj.ranks = static_cast<uint32_t>(job.rank_ids.size());
      tj.isolated_iterations = JobIterations(*t, 0, p.warmup_iterations, job.play.compute_ns);
      tj.isolated_jct_ns = Mean(JobTimesNs(tj.isolated_iterations));
      tj.wrong = WrongIterations(t->cells[0], p.warmup_iterations, p.iterations);
      r->jobs.push_back(tj);
    }
    std::vector<std::string> names;
    for (const CellJob& job : p.jobs) names.push_back(job.name);
    auto shared = RunCellTrial(c, test, p.jobs, "jobs " + absl::StrJoin(names, ", ") + " at once", r->trials);
    if (!shared.ok()) return fail(shared.status());
    for (size_t k = 0; k < p.jobs.size(); ++k) {
      TenantJob& tj = r->jobs[k];
      tj.shared_iterations = JobIterations(*shared, k, p.warmup_iterations, p.jobs[k].play.compute_ns);
      tj.shared_jct_ns = Mean(JobTimesNs(tj.shared_iterations));
      tj.wrong += WrongIterations(shared->cells[k], p.warmup_iterations, p.iterations);
      tj.interference_factor = tj.isolated_jct_ns > 0 ? tj.shared_jct_ns / tj.isolated_jct_ns : 0;
    }
    return std::vector<std::shared_ptr<const TestResult>>{r};
  }

  void WriteParameters(report::JsonWriter& w, const config::TestSpec& test, const TestResult&) const override {
    const MultiTenantParams& t = test.As<MultiTenantParams>();
    w.Field("iterations", t.iterations);
    w.Field("warmup_iterations", t.warmup_iterations);
    w.Key("jobs");
    w.BeginArray();
    for (const CellJob& j : t.jobs) {
      w.BeginObject();
      w.Field("name", j.name);
      w.Key("rank_ids");
      w.BeginArray();
      for (uint32_t id : j.rank_ids) w.Int(id);
      w.EndArray();
      w.Field("op", std::string(collective::OpName(j.op)));
      w.Field("algorithm", std::string(collective::AlgorithmName(j.algorithm)));
      w.Field("size_bytes", static_cast<int64_t>(j.size_bytes));
      w.Field("compute_ns", j.play.compute_ns);
      w.EndObject();
    }
    w.EndArray();
  }

  void WriteResults(report::JsonWriter& w, const config::TestSpec&, const TestResult& result) const override {
    const auto& r = static_cast<const MultiTenantResult&>(result);
    w.Field("observation_point",
            "fabricgen's lcores: each job's JCT from its compute's start to the later of the compute's end and its "
            "last arrival; isolated: the job alone, shared: all jobs at once, in the same test");
    w.Key("jobs");
    w.BeginArray();
    for (const TenantJob& j : r.jobs) {
      w.BeginObject();
      w.Field("name", j.name);
      w.Field("ranks", j.ranks);
      w.Field("isolated_jct_ns", j.isolated_jct_ns);
      w.Field("shared_jct_ns", j.shared_jct_ns);
      w.Field("interference_factor", j.interference_factor);
      w.Field("wrong", j.wrong);
      WriteJobIterations(w, "isolated_iterations", j.isolated_iterations);
      WriteJobIterations(w, "shared_iterations", j.shared_iterations);
      w.EndObject();
    }
    w.EndArray();
  }

  std::string Summary(const TestResult& result) const override {
    const auto& r = static_cast<const MultiTenantResult&>(result);
    std::string out = absl::StrFormat("test %s (multi_tenant, %d jobs)%s\n", r.name, r.jobs.size(),
                                      r.complete ? "" : ", INCOMPLETE: " + r.stopped_because);
    out += "  job              ranks   isolated JCT (ms)   shared JCT (ms)   interference   #wrong\n";
    for (const TenantJob& j : r.jobs) {
      out += absl::StrFormat("  %-16s %5u %19.3f %17.3f %14.3f %8u\n", j.name, j.ranks, j.isolated_jct_ns / 1e6,
                             j.shared_jct_ns / 1e6, j.interference_factor, j.wrong);
    }
    return out;
  }
};

}  // namespace

const TestKind& MultiTenantKind() {
  static const MultiTenant kind;
  return kind;
}

}  // namespace fg::methods
