// engine/control.cc: LiveRun's live control of a run's streams (the CLI's
// rate, pause, resume, stop, a flow's rate), each applied by the owner lcores
// of the stream's shards on their next poll, and the state they report.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "absl/strings/str_format.h"
#include "base/status.h"
#include "engine/engine.h"
#include "engine/worker.h"

namespace fg::engine {

std::vector<LiveRun::ShardRef> LiveRun::TxOf(size_t stream) const {
  std::vector<ShardRef> out;
  for (const auto& t : txs_) {
    for (size_t i = 0; i < t->num_streams(); ++i) {
      const stream::CompiledStream& s = t->stream(i);
      if (s.index != stream) continue;
      out.push_back({t.get(), i, s.FlowShare(t->flows(i))});
    }
  }
  return out;
}

absl::Status LiveRun::SetRate(size_t stream, double pps) {
  const std::vector<ShardRef> shards = TxOf(stream);
  if (shards.empty()) return absl::NotFoundError(absl::StrFormat("no stream %d in this run", stream));
  if (streams_[stream].dcqcn) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "stream %s: its QPs' rates are DCQCN's (frame.roce.dcqcn); set its rate in the plan", streams_[stream].name));
  }
  FG_RETURN_IF_ERROR(FollowsRequests(stream, "set the rate of"));
  if (!(pps > 0)) return absl::InvalidArgumentError("a rate must be > 0");
  // Shards with per-flow rates keep their flows' current proportions (set
  // live flow by flow); the others their share of the stream's flows.
  double now_sum = 0;
  bool per_flow = false;
  for (const ShardRef& sh : shards) {
    now_sum += sh.task->rate(sh.index);
    per_flow = per_flow || sh.task->per_flow_rates(sh.index);
  }
  for (const ShardRef& sh : shards) {
    const double share = per_flow && now_sum > 0 ? sh.task->rate(sh.index) / now_sum : sh.share;
    sh.task->SetRate(sh.index, pps * share);
  }
  return absl::OkStatus();
}

absl::StatusOr<LiveRun::FlowRateChange> LiveRun::SetFlowRate(size_t stream, uint32_t flow, double pps) {
  if (!(pps > 0) || !std::isfinite(pps)) return absl::InvalidArgumentError("a flow's rate must be > 0 and finite");
  FG_RETURN_IF_ERROR(FollowsRequests(stream, "set the rates of"));
  if (stream < streams_.size() && streams_[stream].read_request()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "stream %s is a READ: its rate is its data's; set the whole stream's (rate %s RATE)", streams_[stream].name,
        streams_[stream].name));
  }
  for (const ShardRef& sh : TxOf(stream)) {
    const std::vector<uint32_t>& flows = sh.task->flows(sh.index);
    const auto it = std::lower_bound(flows.begin(), flows.end(), flow);
    if (it == flows.end() || *it != flow) continue;
    if (streams_[stream].dcqcn) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "stream %s: its QPs' rates are DCQCN's (frame.roce.dcqcn); set their maximum in the plan",
          streams_[stream].name));
    }
    if (!sh.task->per_flow_rates(sh.index)) {
      return absl::FailedPreconditionError(
          absl::StrFormat("stream %s paces its flows together; give it flows: {count: N, rates: [RATE]} (one rate "
                          "for every flow, each paced on its own) to set one flow's rate",
                          streams_[stream].name));
    }
    if (sh.task->stopped(sh.index)) {
      return absl::FailedPreconditionError(
          absl::StrFormat("stream %s has ended: its flows' rates no longer change", streams_[stream].name));
    }
    // The owner's loop counts its polls: a count that stands still while
    // this thread runs is the lcore held up (descheduled, stolen).
    const Counter* polls = nullptr;
    for (const LcoreWork& w : work_) {
      if (std::find(w.tx.begin(), w.tx.end(), sh.task) != w.tx.end()) polls = &w.polls;
    }
    using Clock = std::chrono::steady_clock;
    auto ns = [](Clock::duration d) { return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count(); };
    const auto t0 = Clock::now();
    if (!sh.task->SetFlowRate(sh.index, static_cast<uint32_t>(it - flows.begin()), pps)) {
      return absl::UnavailableError("the owner lcore has not taken the previous rate changes yet");
    }
    FlowRateChange change;
    uint64_t seen_polls = polls != nullptr ? polls->Read() : 0;
    auto last = t0, polled = t0;
    while (!sh.task->FlowRatesApplied(sh.index)) {
      const auto now = Clock::now();
      if (now - t0 > std::chrono::seconds(1)) {
        return absl::DeadlineExceededError("the owner lcore did not apply the rate within 1 s");
      }
      change.held_up_ns = std::max(change.held_up_ns, ns(now - last));  // this thread's own gap
      if (polls != nullptr) {
        if (const uint64_t p = polls->Read(); p != seen_polls) {
          seen_polls = p;
          polled = now;
        } else {
          change.held_up_ns = std::max(change.held_up_ns, ns(now - polled));
        }
      }
      last = now;
      std::this_thread::yield();
    }
    change.ns = ns(Clock::now() - t0);
    change.held_up_ns = std::max(change.held_up_ns, ns(Clock::now() - last));
    return change;
  }
  return absl::NotFoundError(absl::StrFormat("no flow %d in stream %d of this run", flow, stream));
}

absl::StatusOr<double> LiveRun::FlowRate(size_t stream, uint32_t flow) const {
  for (const ShardRef& sh : TxOf(stream)) {
    const std::vector<uint32_t>& flows = sh.task->flows(sh.index);
    const auto it = std::lower_bound(flows.begin(), flows.end(), flow);
    if (it != flows.end() && *it == flow)
      return sh.task->flow_rate(sh.index, static_cast<uint32_t>(it - flows.begin()));
  }
  return absl::NotFoundError(absl::StrFormat("no flow %d in stream %d of this run", flow, stream));
}

// A READ's responses follow its requests: pausing or stopping them alone
// would leave requests executed and unanswered (the tester's shortfall). A
// collective's QPs follow their ranks' barriers (unpaced; the cell ends them):
// a rate, a pause or a stop of one group would stall the whole cell.
absl::Status LiveRun::FollowsRequests(size_t stream, const char* what) const {
  if (stream < streams_.size() && streams_[stream].cell != nullptr) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "stream %s is a collective's QPs: they send as the ranks' barriers release their data; cannot %s it",
        streams_[stream].name, what));
  }
  if (stream >= streams_.size() || !streams_[stream].read_response()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrFormat("stream %s: a READ's responses go as their requests come; %s "
                                                       "stream %s",
                                                       streams_[stream].name, what,
                                                       streams_[streams_[stream].read_requests].name));
}

absl::Status LiveRun::SetPaused(size_t stream, bool paused) {
  FG_RETURN_IF_ERROR(FollowsRequests(stream, paused ? "pause" : "resume"));
  const std::vector<ShardRef> shards = TxOf(stream);
  if (shards.empty()) return absl::NotFoundError(absl::StrFormat("no stream %d in this run", stream));
  for (const ShardRef& sh : shards) sh.task->SetPaused(sh.index, paused);
  return absl::OkStatus();
}

absl::Status LiveRun::StopStream(size_t stream) {
  FG_RETURN_IF_ERROR(FollowsRequests(stream, "stop"));
  const std::vector<ShardRef> shards = TxOf(stream);
  if (shards.empty()) return absl::NotFoundError(absl::StrFormat("no stream %d in this run", stream));
  for (const ShardRef& sh : shards) sh.task->Stop(sh.index);
  return absl::OkStatus();
}

LiveRun::StreamState LiveRun::state(size_t stream) const {
  if (stream < streams_.size() && streams_[stream].read_response()) {
    // A READ's responses go as their requests do, at k times their rate.
    StreamState s = state(static_cast<size_t>(streams_[stream].read_requests));
    s.pps *= streams_[stream].read_packets;
    return s;
  }
  StreamState s;
  const std::vector<ShardRef> shards = TxOf(stream);
  if (shards.empty()) return s;
  s.done = true;
  for (const ShardRef& sh : shards) {
    s.pps += sh.task->rate(sh.index);
    s.paused = sh.task->paused(sh.index);
    s.done = s.done && sh.task->stopped(sh.index);
  }
  return s;
}

}  // namespace fg::engine
