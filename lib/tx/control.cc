// A TxTask's control-thread side: the counters it publishes, the rate,
// pause and stop a session sets (applied by the owner lcore at its next poll,
// TxTask::Apply), and per-flow rate commands (a ring the lcore drains,
// ApplyFlowCommands). Nothing here runs on the lcore.
#include <bit>
#include <mutex>

#include "tx/tx.h"
#include "tx/tx_state.h"

namespace fg::tx {

const stream::CompiledStream& TxTask::stream(size_t i) const { return *streams_[i]->s; }

const std::vector<uint32_t>& TxTask::flows(size_t i) const { return streams_[i]->flow_index; }

void TxTask::FlowSent(size_t i, std::vector<uint64_t>& packets, std::vector<uint64_t>& bytes) const {
  const State& st = *streams_[i];
  for (size_t f = 0; f < st.flow_index.size(); ++f) {
    packets[st.flow_index[f]] += st.flow_sent[f].packets;
    bytes[st.flow_index[f]] += st.flow_sent[f].bytes;
  }
}

bool TxTask::FlowSkipped(size_t i, std::vector<uint64_t>& skipped) const {
  const State& st = *streams_[i];
  if (st.rates.pacer == nullptr) return false;
  for (size_t f = 0; f < st.flow_index.size(); ++f) skipped[st.flow_index[f]] += st.rates.pacer->skipped(f);
  return true;
}

TxCounters TxTask::counters(size_t i) const {
  const State& st = *streams_[i];
  TxCounters c;
  c.packets = st.packets.Read();
  c.bytes = st.bytes.Read();
  c.retries = st.retries.Read();
  c.alloc_failures = st.alloc_failures.Read();
  c.slots_skipped = st.slots_skipped.Read();
  c.stalls = st.stalls.Read();
  c.late_burst_frames = st.late_burst_frames.Read();
  c.stall_max_ns = clock_.ToNs(st.stall_max_ticks.Read());
  c.first_ns = st.first_ns.Read();
  c.last_ns = st.last_ns.Read();
  c.due = st.due.Read();
  c.pfc_paused_ns = clock_.ToNs(st.pfc_paused_ticks.Read());
  c.paced = st.paced.load(std::memory_order_relaxed);
  return c;
}

void TxTask::Control(size_t i, double pps, int mode) {
  State& st = *streams_[i];
  if (mode == State::kStopped && st.ctl_stop_tsc.load(std::memory_order_relaxed) == 0) {
    st.ctl_stop_tsc.store(ReadTsc(), std::memory_order_relaxed);
  }
  st.ctl_pps_bits.store(std::bit_cast<uint64_t>(pps), std::memory_order_relaxed);
  st.ctl_mode.store(mode, std::memory_order_relaxed);
  st.ctl_gen.store(st.ctl_gen.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

void TxTask::SetPfcGate(size_t i, const std::atomic<uint64_t>* until_ns) {
  State& st = *streams_[i];
  if (st.is_cell || st.reads.enabled()) return;  // not gated (tx.h)
  st.pfc_until = until_ns;
}

void TxTask::SetRate(size_t i, double pps) {
  const int mode = streams_[i]->ctl_mode.load(std::memory_order_relaxed);
  Control(i, pps, mode);
}

// A pause or stop keeps the control rate last set (not the flows' current
// sum, which per-flow changes and DCQCN move: the lcore would take the
// difference for a new stream rate).
void TxTask::SetPaused(size_t i, bool paused) {
  if (streams_[i]->ctl_mode.load(std::memory_order_relaxed) == State::kStopped) return;
  Control(i, std::bit_cast<double>(streams_[i]->ctl_pps_bits.load(std::memory_order_relaxed)),
          paused ? State::kPaused : State::kRunning);
}

void TxTask::Stop(size_t i) {
  Control(i, std::bit_cast<double>(streams_[i]->ctl_pps_bits.load(std::memory_order_relaxed)), State::kStopped);
}

double TxTask::rate(size_t i) const {
  if (streams_[i]->rates.pacer != nullptr) {
    return std::bit_cast<double>(streams_[i]->rates.pps_bits.load(std::memory_order_relaxed));
  }
  return std::bit_cast<double>(streams_[i]->ctl_pps_bits.load(std::memory_order_relaxed));
}

bool TxTask::stopped(size_t i) const { return streams_[i]->done.load(std::memory_order_acquire); }

bool TxTask::paused(size_t i) const { return streams_[i]->ctl_mode.load(std::memory_order_relaxed) == State::kPaused; }

bool TxTask::SetFlowRate(size_t i, uint32_t flow, double pps) {
  State& st = *streams_[i];
  if (st.rates.pacer == nullptr || flow >= st.flow_index.size()) return false;
  if (st.done.load(std::memory_order_acquire)) return false;
  std::lock_guard<std::mutex> lock(st.rates.cmd_mu);
  const State::FlowRates::Cmd c{flow, pps};
  if (st.rates.cmds->Push(&c, 1) == 0) return false;  // 1,024 not yet applied: the lcore is not polling
  st.rates.view[flow] = pps;
  st.rates.cmd_seq.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool TxTask::FlowRatesApplied(size_t i) const {
  const State& st = *streams_[i];
  return st.rates.cmd_done.load(std::memory_order_acquire) == st.rates.cmd_seq.load(std::memory_order_relaxed);
}

double TxTask::flow_rate(size_t i, uint32_t flow) const {
  const State& st = *streams_[i];
  if (st.rates.pacer == nullptr) return rate(i) / static_cast<double>(st.flow_index.size());
  std::lock_guard<std::mutex> lock(const_cast<State&>(st).rates.cmd_mu);
  return st.rates.view[flow];
}

bool TxTask::per_flow_rates(size_t i) const { return streams_[i]->rates.pacer != nullptr; }

bool TxTask::responds(size_t i) const { return streams_[i]->reads.enabled(); }

uint64_t TxTask::resent(size_t i) const { return streams_[i]->resent_live.Read(); }

}  // namespace fg::tx
