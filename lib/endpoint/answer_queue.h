// endpoint/answer_queue.h: frames an endpoint sends in answer to what it receives,
// queued as bytes until the worker puts them on the wire.
//
// The endpoint state machines (responder, notification point) run inside an
// RX analysis step on the flow's owner lcore, where no mbuf is at hand; they
// write whole frames into this fixed ring, and the worker's loop
// (lib/engine) copies them into mbufs and sends them on its own TX queue of
// the answer's port. Nothing here allocates after construction: a full ring
// refuses the frame and the caller counts it (a tester limit).
//
//   fg::endpoint::AnswerQueue q(1024);
//   if (fg::endpoint::Answer* a = q.Reserve()) { a->port = 1; a->len = Build(a->bytes); q.Commit(); }
//   while (const fg::endpoint::Answer* a = q.Front()) { Send(*a); q.Pop(); }   // the worker
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "proto/rx_kind.h"

namespace fg::endpoint {

// One answer frame without FCS; `bytes` has room for the largest answer
// (CNP over IPv6 with a VLAN tag: 98 B) plus the 32 bytes Program::Emit may
// write past a frame; and what it is, so one never sent is taken off its
// stream's counts.
struct Answer {
  static constexpr uint32_t kMaxBytes = 184;  // stream::kMaxAnswerBuffer
  uint16_t port = 0;   // plan port index
  uint16_t len = 0;
  uint16_t stream = 0;  // the stream it answers (its counters, if it is never sent)
  proto::RxKind kind = proto::RxKind::kRoceAck;  // kRoceAck, kRoceNak or kRoceCnp: what its peer receives
  uint8_t reserved = 0;
  uint8_t bytes[kMaxBytes];
};
static_assert(sizeof(Answer) == 192);

// Single-threaded FIFO of answers (the owner lcore fills it and drains it).
class AnswerQueue {
 public:
  explicit AnswerQueue(size_t capacity) : ring_(capacity) {}
  // The slot of the next answer, or nullptr when the ring is full.
  Answer* Reserve() { return size_ == ring_.size() ? nullptr : &ring_[(head_ + size_) % ring_.size()]; }
  void Commit() { ++size_; }
  const Answer* Front() const { return size_ == 0 ? nullptr : &ring_[head_]; }
  // The i-th queued answer (i < size()).
  const Answer& At(size_t i) const { return ring_[(head_ + i) % ring_.size()]; }
  void Pop(size_t n = 1) {
    head_ = (head_ + n) % ring_.size();
    size_ -= n;
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return ring_.size(); }

 private:
  std::vector<Answer> ring_;
  size_t head_ = 0, size_ = 0;
};

}  // namespace fg::endpoint
