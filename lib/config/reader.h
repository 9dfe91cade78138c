// config/reader.h: typed, located access to a YAML document (the plan parser and each test kind's section).
//
// Every accessor either returns a value or an error that names the file,
// line, column and dotted field path, and says what is allowed:
//   quickstart.yaml:12:11: streams[0].rate: rate '-5 kpps' must be greater than zero
// yaml-cpp exceptions never leave this file.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "base/units.h"
#include "config/location.h"
#include "yaml-cpp/yaml.h"

namespace fg::config {

// The largest plan file read (a plan is a few KiB; a bound so that a device
// such as /dev/zero, or a file that never ends, is refused, not read).
inline constexpr uint64_t kMaxPlanBytes = uint64_t{16} << 20;

class Node {
 public:
  Node(const std::string* file, YAML::Node node, std::string path)
      : file_(file), node_(std::move(node)), path_(std::move(path)) {}
  Node(const Node&) = default;
  Node(Node&&) = default;
  // No assignment: a YAML::Node's assignment writes through to the node it
  // refers to, so `a = b` would rewrite the plan's tree where `a` was read.
  Node& operator=(const Node&) = delete;
  Node& operator=(Node&&) = delete;

  const std::string& path() const { return path_; }
  int line() const { return node_.Mark().line + 1; }
  int column() const { return node_.Mark().column + 1; }
  Location where() const { return Location{line(), column()}; }
  // The value as written: a scalar's text ("" for a map, a list or nothing).
  std::string text() const { return node_.IsScalar() ? node_.Scalar() : std::string(); }
  // Every value under this node, by its path relative to this node ("rate",
  // "frame.roce.message", "flows.rates[0]"), into `out`: what checks after
  // parsing quote and locate.
  void Record(WrittenValues& out) const;

  // An error located at this node.
  absl::Status Error(absl::string_view message) const;

  // Map access. CheckKeys rejects any key not listed (with a suggestion).
  absl::Status ExpectMap() const;
  absl::Status CheckKeys(std::initializer_list<std::string_view> allowed) const {
    return CheckKeys(std::vector<std::string_view>(allowed));
  }
  absl::Status CheckKeys(const std::vector<std::string_view>& allowed) const;
  absl::StatusOr<Node> Required(std::string_view key) const;
  std::optional<Node> Optional(std::string_view key) const;
  // The node of `key` when present, else this map: where an error about the
  // key belongs even when the value came from a default.
  Node At(std::string_view key) const { return Optional(key).value_or(*this); }

  // Sequence access.
  absl::StatusOr<std::vector<Node>> Items() const;
  // A map of scalars, in file order (free-form descriptions).
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> StringPairs() const;

  // Scalars.
  absl::StatusOr<std::string> String() const;
  absl::StatusOr<int64_t> Int(int64_t min, int64_t max) const;
  absl::StatusOr<bool> Bool() const;
  absl::StatusOr<Rate> RateValue() const;
  absl::StatusOr<int64_t> Duration() const;  // ns
  absl::StatusOr<uint64_t> Bytes(uint64_t min, uint64_t max) const;
  absl::StatusOr<std::string> OneOf(std::initializer_list<std::string_view> allowed) const;
  // "0.5 %" -> 0.005; the % sign is required. min/max in percent.
  absl::StatusOr<double> Percent(double min, double max) const;
  // A finite number, or a fraction "a/b" (e.g. 1/256), within [min, max].
  absl::StatusOr<double> Number(double min, double max) const;

 private:
  absl::StatusOr<std::string> Scalar(std::string_view expected) const;
  Node Child(const YAML::Node& n, std::string path) const { return Node(file_, n, std::move(path)); }

  const std::string* file_;
  YAML::Node node_;
  std::string path_;
};

// Reads map[key] into `out` with `read` (a Node -> StatusOr<V> callable) when
// the key is present; leaves `out` (its default) otherwise.
template <typename T, typename Read>
absl::Status Opt(const Node& map, std::string_view key, T& out, Read read) {
  if (auto n = map.Optional(key)) {
    auto v = read(*n);
    if (!v.ok()) return v.status();
    out = static_cast<T>(*v);
  }
  return absl::OkStatus();
}

// Readers for Opt.
inline auto IntIn(int64_t lo, int64_t hi) {
  return [lo, hi](const Node& n) { return n.Int(lo, hi); };
}
inline auto BytesIn(uint64_t lo, uint64_t hi) {
  return [lo, hi](const Node& n) { return n.Bytes(lo, hi); };
}
inline auto PercentIn(double lo, double hi) {
  return [lo, hi](const Node& n) { return n.Percent(lo, hi); };
}
inline auto DurationIn() {
  return [](const Node& n) { return n.Duration(); };
}

// Loads `file` and returns its root node; errors name the file (and the line
// for YAML syntax errors). `*file` keeps the file name the nodes refer to.
// Only a regular file of at most kMaxPlanBytes is read: a directory, a device,
// a FIFO or a socket is refused by name, before anything is read from it.
absl::StatusOr<Node> LoadYamlFile(const std::string* file);
absl::StatusOr<Node> LoadYamlString(const std::string* file, const std::string& text);

}  // namespace fg::config
