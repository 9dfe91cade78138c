// engine/closed_loop.cc: LiveRun's closed-loop wiring, before its lcores
// start: each worker's responder for the flows it owns of responding ports
// (answers on its own TX queue of that port), and the feedback sink that
// takes a CNP, ACK or NAK from a flow's FlowTable slot to the TX task and
// shard flow that send it (DCQCN's reaction point, go-back-N), and how far
// each flow's sender has got (what RX may count of it).
#include "absl/strings/str_format.h"
#include "engine/engine.h"
#include "engine/worker.h"

namespace fg::engine {

bool ReplaysCapture(const port::Port& p) {
  return p.capabilities().driver == "net_pcap" && p.options().kernel_iface.empty();  // rx_pcap: a file
}

absl::Status LiveRun::SetUpResponders(const std::vector<unsigned>& workers, int tag_off) {
  const std::vector<port::Port*>& ports = ports_;
  const std::vector<stream::CompiledStream>& streams = streams_;
  auto& work = work_;
  const uint32_t nw = static_cast<uint32_t>(work.size());
  // Responders: the owner of every flow a responding port receives answers
  // for it (endpoint/responder.h) and sends the answers on its own TX queue
  // of that port.
  std::vector<const stream::Answers*> answers(streams.size(), nullptr);
  for (const auto& s : streams) answers[s.index] = s.answers.get();
  for (uint32_t w = 0; w < nw; ++w) {
    const std::vector<rx::OwnedFlow>& owned = tables_[w]->owned();
    std::vector<endpoint::Responder::Flow> flows;
    flows.reserve(owned.size());
    bool mine = false;
    for (const rx::OwnedFlow& o : owned) {
      flows.push_back({o.stream, o.flow});
      if (answers[o.stream] == nullptr) continue;
      mine = true;
      const port::Port* p = ports[streams[o.stream].rx_port];
      if (w >= p->options().tx_queues) {
        return absl::FailedPreconditionError(absl::StrFormat(
            "port %s responds, but worker %d (lcore %d), which owns flows of stream %s, has no TX queue there "
            "(tx_queues: %d): give the port tx_queues: auto",
            p->name(), w, workers[w], streams[o.stream].name, p->options().tx_queues));
      }
    }
    if (!mine) continue;
    answer_queues_.push_back(std::make_unique<endpoint::AnswerQueue>(kAnswerQueue));
    responders_.push_back(std::make_unique<endpoint::Responder>(answers, flows, answer_queues_.back().get()));
    tables_[w]->SetResponder(responders_.back().get());
    work[w].responder = responders_.back().get();
    work[w].answers = answer_queues_.back().get();
    work[w].tag_off = tag_off;
    work[w].answer_ports = std::vector<AnswerPort>(ports.size());
    for (size_t pi = 0; pi < ports.size(); ++pi) {
      AnswerPort& ap = work[w].answer_ports[pi];
      ap.port_id = ports[pi]->id();
      ap.queue = static_cast<uint16_t>(w);
      ap.pool = ports[pi]->pool();
      ap.has_queue = w < ports[pi]->options().tx_queues;
    }
  }

  return absl::OkStatus();
}

void LiveRun::SetUpFeedback() {
  auto& work = work_;
  const Placement& pl = placement_;
  const uint32_t nw = static_cast<uint32_t>(work.size());
  // A FlowTable slot's sender: the TX task and shard flow.
  struct Target {
    tx::TxTask* task = nullptr;
    uint32_t shard = 0, flow = 0;
  };
  // Feedback to the senders: on each worker, a CNP for a DCQCN flow, and an
  // ACK or NAK for an RC requester that goes back, goes from its FlowTable
  // slot to the TX task and shard flow that send it.
  struct ToSender : endpoint::FeedbackSink {
    std::vector<Target> by_slot;
    void OnFeedback(uint32_t slot, const endpoint::Feedback& f) override {
      const Target& t = by_slot[slot];
      if (t.task != nullptr) t.task->OnFeedback(t.shard, t.flow, f);
    }
  };
  for (uint32_t w = 0; w < nw; ++w) {
    auto sink = std::make_unique<ToSender>();
    bool any = false;
    for (tx::TxTask* t : work[w].tx) {
      for (size_t i = 0; i < t->num_streams(); ++i) {
        const stream::CompiledStream& s = t->stream(i);
        if (!s.dcqcn && !t->retransmits(i)) continue;
        if (!any) sink->by_slot.assign(tables_[w]->size(), {});
        any = true;
        const std::vector<uint32_t>& fl = t->flows(i);
        for (uint32_t f = 0; f < fl.size(); ++f) {
          sink->by_slot[pl.slot[s.flow_id + fl[f]]] = {t, static_cast<uint32_t>(i), f};
        }
      }
    }
    if (!any) continue;
    tables_[w]->SetFeedbackSink(sink.get());
    feedback_.push_back(std::move(sink));
  }
  // READ: a request the responder executed, from its slot (the request
  // flow's) to the shard flow of the same worker that sends its responses.
  struct ToResponses : endpoint::ReadSink {
    std::vector<Target> by_slot;
    void OnRead(uint32_t slot, uint32_t seq) override {
      const Target& t = by_slot[slot];
      if (t.task != nullptr) t.task->OnRead(t.shard, t.flow, seq);
    }
  };
  for (uint32_t w = 0; w < nw; ++w) {
    if (work[w].responder == nullptr) continue;
    auto sink = std::make_unique<ToResponses>();
    for (tx::TxTask* t : work[w].tx) {
      for (size_t i = 0; i < t->num_streams(); ++i) {
        if (!t->responds(i)) continue;
        const stream::CompiledStream& requests = streams_[t->stream(i).read_requests];
        if (sink->by_slot.empty()) sink->by_slot.assign(tables_[w]->size(), {});
        const std::vector<uint32_t>& fl = t->flows(i);
        for (uint32_t f = 0; f < fl.size(); ++f) {
          sink->by_slot[pl.slot[requests.flow_id + fl[f]]] = {t, static_cast<uint32_t>(i), f};
        }
      }
    }
    if (sink->by_slot.empty()) continue;
    work[w].responder->SetReadSink(sink.get());
    read_sinks_.push_back(std::move(sink));
  }
  // How far each flow's sender has got, for the analysis of its frames on
  // the same worker (rx::FlowTable): a frame, or a READ request, beyond it
  // was never sent. A flow no TX task sends (a shard with nothing to send)
  // has sent nothing. A stream received on a port that replays a capture
  // (net_pcap's RX times are its records') gets the capture's frames, not
  // its sender's: any sequence counts.
  struct FromSenders : rx::SentSource {
    std::vector<Target> by_slot;
    std::vector<uint8_t> replayed;  // by slot
    rx::SentBound Sent(uint32_t slot) const override {
      if (replayed[slot]) return rx::SentBound{0, false, true};
      const Target& t = by_slot[slot];
      if (t.task == nullptr) return {};
      const tx::TxTask::Stamped s = t.task->FlowStamped(t.shard, t.flow);
      return rx::SentBound{s.next, s.wrapped, false};
    }
  };
  for (uint32_t w = 0; w < nw; ++w) {
    auto source = std::make_unique<FromSenders>();
    source->by_slot.assign(tables_[w]->size(), {});
    source->replayed.assign(tables_[w]->size(), 0);
    const std::vector<rx::OwnedFlow>& owned = tables_[w]->owned();
    for (size_t slot = 0; slot < owned.size(); ++slot) {
      source->replayed[slot] = ReplaysCapture(*ports_[streams_[owned[slot].stream].rx_port]);
    }
    for (tx::TxTask* t : work[w].tx) {
      for (size_t i = 0; i < t->num_streams(); ++i) {
        const stream::CompiledStream& s = t->stream(i);
        const std::vector<uint32_t>& fl = t->flows(i);
        for (uint32_t f = 0; f < fl.size(); ++f) {
          source->by_slot[pl.slot[s.flow_id + fl[f]]] = {t, static_cast<uint32_t>(i), f};
        }
      }
    }
    tables_[w]->SetSentSource(source.get());
    sent_sources_.push_back(std::move(source));
  }
}

}  // namespace fg::engine
