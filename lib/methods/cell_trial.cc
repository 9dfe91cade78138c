#include "methods/cell_trial.h"

#include <algorithm>
#include <cmath>

#include "base/status.h"
#include "config/ranks.h"

namespace fg::methods {

namespace {

constexpr std::string_view kOps[] = {"allreduce", "allgather", "reducescatter", "alltoall"};
constexpr std::string_view kAlgorithms[] = {"ring", "halving_doubling", "parallel", "pairwise"};

}  // namespace

absl::Status CheckRanksForCells(const config::Plan& plan, const config::Node& n) {
  if (!plan.ranks) return n.Error("this test plays the plan's ranks: the plan has no `ranks`");
  if (!plan.ranks->go_back_n) {
    return n.Error("a collective needs its QPs' go-back-N (ranks.retransmit): with `none` a lost packet is "
                   "never resent and its step never completes");
  }
  return absl::OkStatus();
}

absl::Status ParseOpAlgorithm(const config::Node& n, collective::Op& op, collective::Algorithm& algorithm) {
  op = collective::Op::kAllReduce;
  if (auto o = n.Optional("op")) {
    FG_ASSIGN_OR_RETURN(std::string s, o->OneOf({"allreduce", "allgather", "reducescatter", "alltoall"}));
    op = static_cast<collective::Op>(std::find(std::begin(kOps), std::end(kOps), s) - std::begin(kOps));
  }
  algorithm = op == collective::Op::kAllToAll ? collective::Algorithm::kParallel : collective::Algorithm::kRing;
  if (auto a = n.Optional("algorithm")) {
    FG_ASSIGN_OR_RETURN(std::string s, a->OneOf({"ring", "halving_doubling", "parallel", "pairwise"}));
    algorithm = static_cast<collective::Algorithm>(std::find(std::begin(kAlgorithms), std::end(kAlgorithms), s) -
                                                   std::begin(kAlgorithms));
  }
  return absl::OkStatus();
}

std::vector<uint32_t> FirstRanks(uint32_t n) {
  std::vector<uint32_t> v(n);
  for (uint32_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

absl::StatusOr<collective::Cell> JobCell(const config::RanksSpec& ranks, const CellJob& job) {
  FG_ASSIGN_OR_RETURN(collective::Schedule s, collective::Schedule::Make(job.op, job.algorithm,
                                                                         static_cast<uint32_t>(job.rank_ids.size()),
                                                                         job.size_bytes));
  return collective::Cell::Make(s, ranks.qps_per_pair, ranks.message, ranks.pmtu);
}

absl::StatusOr<engine::TrialResult> RunCellTrial(const TestContext& c, const config::TestSpec& test,
                                                 const std::vector<CellJob>& jobs, const std::string& label,
                                                 std::vector<TrialRecord>& trials) {
  const config::RanksSpec& ranks = *c.plan.ranks;
  const std::vector<config::Rank> all = config::PlaceRanks(ranks);
  std::vector<stream::CompiledStream> streams;
  int64_t bound = 0;
  uint32_t flows = 0, nranks = 0;
  double bus_factor = 0;  // the first job's
  for (const CellJob& job : jobs) {
    FG_ASSIGN_OR_RETURN(collective::Cell cell, JobCell(ranks, job));
    if (flows == 0) bus_factor = cell.schedule().bus_factor();
    std::vector<config::Rank> placed;
    for (uint32_t id : job.rank_ids) placed.push_back(all[id]);
    FG_ASSIGN_OR_RETURN(std::shared_ptr<const stream::CellStreams> cs,
                        stream::CellStreams::Make(ranks, placed, std::move(cell), flows, job.play));
    flows += cs->flows();
    nranks += static_cast<uint32_t>(job.rank_ids.size());
    // The TX phase's bound: every iteration at its timeout after its compute (the cell ends far sooner).
    const int64_t b = (job.play.timeout_ns + job.play.compute_ns) * static_cast<int64_t>(job.play.iterations) +
                      1'000'000'000;
    bound = std::max(bound, b);
    FG_ASSIGN_OR_RETURN(std::vector<stream::CompiledStream> s,
                        stream::CellStreams::Streams(cs, static_cast<uint32_t>(streams.size()),
                                                     test.name + (jobs.size() > 1 ? "/" + job.name : ""), b));
    for (auto& x : s) {
      x.cell_qp_max_bps = c.ports[x.tx_port]->capabilities().line_bps();  // ranks.dcqcn: where each QP starts
      streams.push_back(std::move(x));
    }
  }
  engine::TrialOptions opt = TrialOptionsFor(c.options);
  opt.max_duration_ns = bound + 1'000'000'000;
  // A trial the tester limited is run again (tests[].tester_limit_retries).
  std::optional<engine::TrialResult> kept;
  for (int attempt = 0; attempt <= std::max(0, test.tester_limit_retries); ++attempt) {
    FG_ASSIGN_OR_RETURN(engine::TrialResult r, engine::RunTrial(c.eal, c.ports, streams, opt));
    if (r.interrupted) return absl::CancelledError("interrupted");
    TrialRecord t = RecordTrial(r, r.duration_ns / 1e9, test.kind, static_cast<int>(trials.size()));
    // /metrics: the first job's last completed iteration.
    if (!r.cells.empty()) {
      for (auto it = r.cells[0].iterations.rbegin(); it != r.cells[0].iterations.rend(); ++it) {
        if (!it->completed || it->time_ns() <= 0) continue;
        t.last_iteration_ns = it->time_ns();
        t.last_busbw_bps = 8.0 * static_cast<double>(jobs[0].size_bytes) / (it->time_ns() / 1e9) * bus_factor;
        break;
      }
    }
    t.senders = static_cast<int>(nranks);
    t.label = label;
    trials.push_back(t);
    if (c.options.on_trial) c.options.on_trial(t);
    const bool limited = !t.tester_limits.empty();
    kept = std::move(r);
    if (!limited) break;
  }
  if (kept->cells.size() != jobs.size()) return absl::InternalError("the trial ran fewer cells than its jobs");
  return *std::move(kept);
}

double RankLineBps(const config::RanksSpec& ranks, const std::vector<uint32_t>& rank_ids,
                   const std::vector<port::Port*>& ports) {
  const std::vector<config::Rank> all = config::PlaceRanks(ranks);
  std::vector<uint32_t> on(ports.size(), 0);
  for (uint32_t id : rank_ids) ++on[all[id].port];
  double least = 0;
  for (size_t p = 0; p < ports.size(); ++p) {
    if (on[p] == 0) continue;
    const double each = ports[p]->capabilities().line_bps() / on[p];
    least = least == 0 ? each : std::min(least, each);
  }
  return least;
}

double Mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

std::vector<std::shared_ptr<const TestResult>> Stopped(std::shared_ptr<TestResult> r, const absl::Status& st) {
  r->complete = false;
  r->stopped_because = std::string(st.message());
  return {std::move(r)};
}

double Percentile(const std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const size_t k = static_cast<size_t>(std::ceil(q / 100 * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, k == 0 ? 0 : k - 1)];
}

std::vector<JobIteration> JobIterations(const engine::TrialResult& r, size_t cell, uint32_t warmup,
                                        int64_t compute_ns) {
  std::vector<JobIteration> out;
  const std::vector<engine::CellIteration>& its = r.cells[cell].iterations;
  for (size_t i = warmup; i < its.size(); ++i) {
    const engine::CellIteration& it = its[i];
    JobIteration j;
    j.index = static_cast<uint32_t>(i - warmup);
    j.start_unix_ns = static_cast<int64_t>(it.compute_start_ns) + r.unix_minus_host_ns;
    if (it.completed) {
      const uint64_t end = std::max(it.last_rx_ns, it.compute_start_ns + static_cast<uint64_t>(compute_ns));
      j.jct_ns = static_cast<int64_t>(end - it.compute_start_ns);
    }
    j.tester_holdup_ns = it.tester_holdup_ns;
    j.tester_held = it.tester_held;
    out.push_back(j);
  }
  return out;
}

void WriteJobIterations(report::JsonWriter& w, std::string_view key, const std::vector<JobIteration>& its) {
  w.Key(key);
  w.BeginArray();
  for (const JobIteration& it : its) {
    w.BeginObject();
    w.Field("index", it.index);
    w.Field("start_unix_ns", it.start_unix_ns);
    w.Field("jct_ns", it.jct_ns);
    w.Field("tester_holdup_ns", static_cast<int64_t>(it.tester_holdup_ns));
    w.Field("tester_held", it.tester_held);
    w.EndObject();
  }
  w.EndArray();
}

std::vector<double> JobTimesNs(const std::vector<JobIteration>& its) {
  std::vector<double> out, held;
  for (const JobIteration& it : its) {
    if (it.jct_ns > 0) (it.tester_held ? held : out).push_back(static_cast<double>(it.jct_ns));
  }
  return out.empty() ? held : out;
}

bool EveryIterationHeld(const engine::CellResult& cell, uint32_t warmup) {
  bool any = false;
  for (size_t i = warmup; i < cell.iterations.size(); ++i) {
    const engine::CellIteration& it = cell.iterations[i];
    if (!it.completed) continue;
    if (!it.tester_held) return false;
    any = true;
  }
  return any;
}

uint32_t WrongIterations(const engine::CellResult& cell, uint32_t warmup, uint32_t iterations) {
  uint32_t done = 0;
  for (size_t i = warmup; i < cell.iterations.size(); ++i) done += cell.iterations[i].completed ? 1 : 0;
  return iterations - std::min(iterations, done);
}

}  // namespace fg::methods
