// endpoint/frame_handler.h: the table that takes a received frame without a
// test signature to the handler of its kind.
//
// RX (lib/rx) finds each frame's test signature on its fast path; a frame
// without one leaves that path, and after the transport's feedback (CNP,
// ACK, NAK, NACK, READ requests: proto::ClassifyFeedback, routed to the
// flow's owner) it is offered to the handlers of its port queue in the
// order of HandlerKinds(). The first that takes it counts it (never as
// test traffic, loss or a tester limit) and may write an answer into the
// lcore's answer queue, which the worker sends on its own TX queue of the
// port. A frame no handler takes is counted unknown.
//
// Adding a kind of handler (docs/architecture.md "Adding an endpoint"):
// write a FrameHandler and a HandlerKind (its report.json name, its counts,
// a factory that says whether a port has one), and add one line to
// handlers.cc. Handlers run on the RX lcore, off the fast path: no locks,
// no allocation after the factory, no logging.
//
//   struct Mine : fg::endpoint::FrameHandler {
//     Taken Take(const RxFrame& f) override { ... return Taken::kYes; }
//     void ReadCounts(std::span<uint64_t> out) const override { out[0] = seen_.Read(); }
//   };
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "endpoint/answer_queue.h"
#include "endpoint/host.h"

namespace fg::endpoint {

struct PfcGate;  // endpoint/pfc.h

// A frame as the RX queue received it (without FCS).
struct RxFrame {
  const uint8_t* data = nullptr;
  uint32_t len = 0;
  uint64_t rx_ns = 0;  // TX timebase ns
};

enum class Taken : uint8_t {
  kNo,       // not of this handler's kind: the next handler's
  kYes,      // this handler's: counted by it (and answered, where it answers)
  kInvalid,  // shaped as this kind but not one (the port's rx_invalid_packets)
};

class FrameHandler {
 public:
  virtual ~FrameHandler() = default;
  // On the RX lcore of the port.
  virtual Taken Take(const RxFrame& f) = 0;
  // Any thread: the counts so far, in the order of the kind's `counts`.
  virtual void ReadCounts(std::span<uint64_t> out) const = 0;
};

// What the handlers of one RX queue are made from.
struct PortContext {
  uint16_t port = 0;                 // plan port index (the answers' `port`)
  const PortHosts* hosts = nullptr;  // the port's hosts (never null)
  MacAddr port_mac;                  // the port's own MAC (for hosts whose MAC is kPortMac)
  AnswerSpec answer;                 // ports[].answer
  AnswerQueue* answers = nullptr;    // the RX lcore's queue of answers to send (null: it cannot send there)
  double line_bps = 0;               // the port's line rate (a PFC quantum is 512 bit times of it)
  uint64_t pfc_storm_window_ns = 10'000'000;  // ports[].pfc.storm: a storm is pfc_storm_events intervals
  uint32_t pfc_storm_events = 10;             // between pause events within this window
  PfcGate* pfc_gate = nullptr;                // ports[].pfc.honor: the pause state its streams' TX reads
};

struct CountSpec {
  std::string_view key;   // report.json key within the kind's object
  std::string_view help;  // one sentence, with the unit
  // How a port's count is made from its RX queues': their sum; or, for a
  // time (0: none), the earliest or the latest of them.
  enum class Merge : uint8_t { kSum, kEarliest, kLatest } merge = Merge::kSum;
};

struct HandlerKind {
  std::string_view name;  // report.json ports[].<name>
  std::span<const CountSpec> counts;
  // The handler of one RX queue of a port, or nullptr when the port has
  // nothing of this kind to handle.
  std::unique_ptr<FrameHandler> (*make)(const PortContext&) = nullptr;
  // Its counts are reported by a writer of their own (PFC's ports[].pfc
  // rows), not as the object ports[].<name>.
  bool reported_apart = false;
};

// Every kind, in the order frames are offered (handlers.cc).
std::span<const HandlerKind> HandlerKinds();

// The handlers of one RX queue.
class FrameHandlers {
 public:
  explicit FrameHandlers(const PortContext& c);
  bool empty() const { return list_.empty(); }
  Taken Take(const RxFrame& f) {
    for (const Entry& e : list_) {
      const Taken t = e.handler->Take(f);
      if (t != Taken::kNo) return t;
    }
    return Taken::kNo;
  }
  // Adds this queue's counts to `sums[kind][count]` (indexed as HandlerKinds()).
  void AddCounts(std::vector<std::vector<uint64_t>>& sums) const;

 private:
  struct Entry {
    size_t kind;
    std::unique_ptr<FrameHandler> handler;
  };
  std::vector<Entry> list_;
};

// Empty sums shaped as HandlerKinds(): one vector of counts per kind.
std::vector<std::vector<uint64_t>> EmptyHandlerCounts();

}  // namespace fg::endpoint
