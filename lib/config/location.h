// config/location.h: where a value is written in a plan, and as what text.
//
// The parser keeps, with every stream, port and test it reads, the place and
// the source text of each value under it, so a check made after parsing
// (stream::Compile, a test's cells, the memory estimate) names the line and
// column the user wrote and quotes what they wrote, not a value fabricgen
// derived from it:
//   plan.yaml:7:31: streams[0].rate: '10 Gbps' of 64.0 B frames is 13.125 Gbit/s at L1, above ...
//
//   const fg::config::Written* w = stream.written.Find("frame.roce.retransmit.timeout");
//   // w: the timeout's own place, or the nearest enclosing one written (frame.roce.retransmit, ...)
//   std::string at = fg::config::FormatLocation(plan.file, w ? w->at : stream.at);   // "plan.yaml:7:31"
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace fg::config {

// Where a value is written in the plan file (1-based; 0: not from the file).
struct Location {
  int line = 0;
  int column = 0;
};
// "plan.yaml:12:7" (or "plan.yaml" without a location).
std::string FormatLocation(const std::string& file, const Location& at);

// A value as the plan writes it: where, and its text (a scalar's; empty for
// a map or a list).
struct Written {
  Location at;
  std::string text;
};

// The values written under one plan entry (a stream, a port, a test's
// section), by their path relative to it: "rate", "frame.roce.message",
// "flows.rates[0]".
class WrittenValues {
 public:
  void Add(std::string path, Written w) { values_[std::move(path)] = std::move(w); }
  // The value at `path` or, when it is not written (a default), the nearest
  // enclosing one that is ("frame.roce.dest_qp" -> "frame.roce" -> "frame");
  // null when none is.
  const Written* Find(std::string_view path) const;
  // The text written at exactly `path` ("" when absent, a map or a list).
  std::string Text(std::string_view path) const;
  bool empty() const { return values_.empty(); }

 private:
  std::map<std::string, Written, std::less<>> values_;
};

}  // namespace fg::config
