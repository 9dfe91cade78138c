#include "config/reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <map>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "yaml-cpp/eventhandler.h"

namespace fg::config {
namespace {

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1] ? 1 : 0)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

const char* KindName(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Null: return "nothing";
    case YAML::NodeType::Scalar: return "a scalar";
    default: return "an undefined node";
  }
}

// Limits of the document walk: a plan is a few hundred nodes; anchors can
// make a short text expand (or refer to itself), so the walk is bounded.
constexpr int kMaxDepth = 64;
constexpr size_t kMaxNodes = 100'000;

// "file:line:col: field: message"; yaml-cpp marks are 0-based, and a null
// mark (-1) means "no position".
absl::Status LocatedError(const std::string& file, const YAML::Mark& m, absl::string_view field,
                          absl::string_view message) {
  if (m.line < 0) return absl::InvalidArgumentError(absl::StrFormat("%s: %s: %s", file, field, message));
  return absl::InvalidArgumentError(
      absl::StrFormat("%s:%d:%d: %s: %s", file, m.line + 1, m.column + 1, field, message));
}

// What yaml-cpp accepts and a plan must not hold, anywhere: keys that are not
// text (a list or map as a key), a key given twice in one map (yaml-cpp keeps
// both and lookups would see only the first), and nesting past kMaxDepth.
absl::Status CheckTree(const std::string& file, const YAML::Node& n, const std::string& path, int depth,
                       size_t& nodes) {
  if (++nodes > kMaxNodes) {
    return LocatedError(file, n.Mark(), path.empty() ? "plan" : path,
                        absl::StrFormat("more than %d YAML nodes (anchors expanded); a plan is smaller", kMaxNodes));
  }
  if (depth > kMaxDepth) {
    return LocatedError(file, n.Mark(), path,
                        absl::StrFormat("nested deeper than %d levels (an anchor that refers to itself?)", kMaxDepth));
  }
  if (n.IsSequence()) {
    for (size_t i = 0; i < n.size(); ++i) {
      if (auto s = CheckTree(file, n[i], absl::StrFormat("%s[%d]", path, i), depth + 1, nodes); !s.ok()) return s;
    }
  } else if (n.IsMap()) {
    std::map<std::string, YAML::Mark> seen;
    for (const auto& kv : n) {
      if (!kv.first.IsScalar()) {
        return LocatedError(file, kv.first.Mark(), path.empty() ? "plan" : path,
                            absl::StrFormat("a key must be plain text, found %s as a key", KindName(kv.first)));
      }
      const std::string key = kv.first.Scalar();
      const std::string field = path.empty() ? key : path + "." + key;
      auto [it, fresh] = seen.emplace(key, kv.first.Mark());
      if (!fresh) {
        return LocatedError(file, kv.first.Mark(), field,
                            absl::StrFormat("'%s' is given twice in this map (lines %d and %d); give it once", key,
                                            it->second.line + 1, kv.first.Mark().line + 1));
      }
      if (auto s = CheckTree(file, kv.second, field, depth + 1, nodes); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

// Where a second document starts, if there is one. YAML::LoadAll would say,
// but it loops forever on some malformed text (",1": the parser starts a
// document again at the same place); this stops at the second start.
class DocumentStarts : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> starts;
  void OnDocumentStart(const YAML::Mark& m) override { starts.push_back(m); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

std::optional<YAML::Mark> SecondDocument(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentStarts h;
  while (h.starts.size() < 2 && parser.HandleNextDocument(h)) {
  }
  if (h.starts.size() < 2 || h.starts[1].pos == h.starts[0].pos) return std::nullopt;  // no progress: yaml-cpp's loop
  return h.starts[1];
}

template <typename List>
std::string JoinViews(const List& items) {
  std::string out;
  for (std::string_view v : items) {
    if (!out.empty()) out += ", ";
    out += v;
  }
  return out;
}

// Node::Record's walk (the tree passed CheckTree: bounded, keys are text).
// A long list (per-flow rates) keeps its first kRecordedItems items; a value
// after them is found at the list's own place (WrittenValues::Find). The
// values are copied with every copy of their stream (a matrix cell's plan).
constexpr size_t kRecordedItems = 64;
void RecordTree(const YAML::Node& n, const std::string& path, WrittenValues& out, int depth) {
  if (!path.empty()) {
    const YAML::Mark m = n.Mark();
    out.Add(path, Written{m.line < 0 ? Location{} : Location{m.line + 1, m.column + 1},
                          n.IsScalar() ? n.Scalar() : std::string()});
  }
  if (depth > kMaxDepth) return;
  if (n.IsSequence()) {
    for (size_t i = 0; i < n.size() && i < kRecordedItems; ++i) {
      RecordTree(n[i], absl::StrFormat("%s[%d]", path, i), out, depth + 1);
    }
  } else if (n.IsMap()) {
    for (const auto& kv : n) {
      if (!kv.first.IsScalar()) continue;
      const std::string key = kv.first.Scalar();
      RecordTree(kv.second, path.empty() ? key : path + "." + key, out, depth + 1);
    }
  }
}

// What a file that is not a regular file is, for the message.
const char* FileKind(mode_t mode) {
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a file";
}

}  // namespace

absl::Status Node::Error(absl::string_view message) const { return LocatedError(*file_, node_.Mark(), path_, message); }

void Node::Record(WrittenValues& out) const { RecordTree(node_, "", out, 0); }

absl::Status Node::ExpectMap() const {
  if (!node_.IsMap()) return Error(absl::StrFormat("expected a map of fields, found %s", KindName(node_)));
  return absl::OkStatus();
}

absl::Status Node::CheckKeys(const std::vector<std::string_view>& allowed) const {
  if (auto s = ExpectMap(); !s.ok()) return s;
  for (const auto& kv : node_) {
    std::string key = kv.first.Scalar();
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    std::string hint;
    size_t best = 3;
    for (std::string_view a : allowed) {
      size_t d = EditDistance(key, a);
      if (d < best) {
        best = d;
        hint = " (did you mean '" + std::string(a) + "'?)";
      }
    }
    std::string field = path_.empty() ? key : path_ + "." + key;
    return Child(kv.first, field)
        .Error(absl::StrFormat("unknown field '%s'%s; allowed here: %s", key, hint, JoinViews(allowed)));
  }
  return absl::OkStatus();
}

std::optional<Node> Node::Optional(std::string_view key) const {
  if (!node_.IsMap()) return std::nullopt;
  for (const auto& kv : node_) {
    if (kv.first.Scalar() == key) {
      std::string field = path_.empty() ? std::string(key) : path_ + "." + std::string(key);
      return Child(kv.second, field);
    }
  }
  return std::nullopt;
}

absl::StatusOr<Node> Node::Required(std::string_view key) const {
  if (auto s = ExpectMap(); !s.ok()) return s;
  if (auto n = Optional(key)) return *n;
  std::string field = path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  return Error(absl::StrFormat("missing required field '%s'", field));
}

absl::StatusOr<std::vector<Node>> Node::Items() const {
  if (!node_.IsSequence()) return Error(absl::StrFormat("expected a list, found %s", KindName(node_)));
  std::vector<Node> out;
  for (size_t i = 0; i < node_.size(); ++i) {
    out.push_back(Child(node_[i], absl::StrFormat("%s[%d]", path_, i)));
  }
  return out;
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> Node::StringPairs() const {
  if (auto s = ExpectMap(); !s.ok()) return s;
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& kv : node_) {
    const std::string key = kv.first.Scalar();  // LoadYamlString refused keys that are not text
    const Node value = Child(kv.second, path_.empty() ? key : path_ + "." + key);
    auto v = value.Scalar("a text value (key: value pairs describe it)");
    if (!v.ok()) return v.status();
    out.emplace_back(key, *v);
  }
  return out;
}

absl::StatusOr<std::string> Node::Scalar(std::string_view expected) const {
  if (!node_.IsScalar()) return Error(absl::StrFormat("expected %s, found %s", expected, KindName(node_)));
  return node_.Scalar();
}

absl::StatusOr<std::string> Node::String() const { return Scalar("a string"); }

absl::StatusOr<int64_t> Node::Int(int64_t min, int64_t max) const {
  auto text = Scalar("an integer");
  if (!text.ok()) return text.status();
  int64_t v = 0;
  const bool hex = text->size() > 2 && (*text)[0] == '0' && ((*text)[1] == 'x' || (*text)[1] == 'X');
  if (hex ? !absl::SimpleHexAtoi(absl::string_view(*text).substr(2), &v) : !absl::SimpleAtoi(*text, &v)) {
    return Error(absl::StrFormat("'%s' is not an integer; expected an integer in [%d, %d]", *text, min, max));
  }
  if (v < min || v > max) {
    return Error(absl::StrFormat("%d is out of range; expected an integer in [%d, %d]", v, min, max));
  }
  return v;
}

absl::StatusOr<bool> Node::Bool() const {
  auto text = Scalar("true or false");
  if (!text.ok()) return text.status();
  if (*text == "true") return true;
  if (*text == "false") return false;
  return Error(absl::StrFormat("'%s' is not a boolean; expected true or false", *text));
}

absl::StatusOr<Rate> Node::RateValue() const {
  auto text = Scalar("a rate");
  if (!text.ok()) return text.status();
  auto r = ParseRate(*text);
  if (!r.ok()) return Error(r.status().message());
  return r;
}

absl::StatusOr<int64_t> Node::Duration() const {
  auto text = Scalar("a duration");
  if (!text.ok()) return text.status();
  auto d = ParseDuration(*text);
  if (!d.ok()) return Error(d.status().message());
  return d;
}

absl::StatusOr<uint64_t> Node::Bytes(uint64_t min, uint64_t max) const {
  auto text = Scalar("a size in bytes");
  if (!text.ok()) return text.status();
  auto b = ParseBytes(*text);
  if (!b.ok()) return Error(b.status().message());
  if (*b < min || *b > max) {
    return Error(absl::StrFormat("%d B is out of range; expected %d B to %d B", *b, min, max));
  }
  return b;
}

absl::StatusOr<double> Node::Percent(double min, double max) const {
  auto text = Scalar("a percentage such as 0.5 %");
  if (!text.ok()) return text.status();
  std::string t = *text;
  const size_t pct = t.find('%');
  if (pct == std::string::npos || pct + 1 != t.size()) {
    return Error(
        absl::StrFormat("'%s' needs a %% sign (e.g. '0.5 %%'), so a ratio is never mistaken for a percentage", *text));
  }
  t.erase(pct);
  while (!t.empty() && t.back() == ' ') t.pop_back();
  double v = 0;
  if (t.empty() || !absl::SimpleAtod(t, &v) || !std::isfinite(v)) {
    return Error(absl::StrFormat("'%s' is not a percentage; expected a finite number and a %% sign", *text));
  }
  if (v < min || v > max) {
    return Error(absl::StrFormat("%s is out of range; expected %g %% to %g %%", *text, min, max));
  }
  return v / 100;
}

absl::StatusOr<double> Node::Number(double min, double max) const {
  auto text = Scalar("a number such as 0.5 or 1/256");
  if (!text.ok()) return text.status();
  double v = 0;
  const size_t slash = text->find('/');
  bool ok = false;
  if (slash == std::string::npos) {
    ok = absl::SimpleAtod(*text, &v);
  } else {
    double a = 0, b = 0;
    ok = absl::SimpleAtod(text->substr(0, slash), &a) && absl::SimpleAtod(text->substr(slash + 1), &b) && b != 0;
    v = ok ? a / b : 0;
  }
  if (!ok || !std::isfinite(v)) return Error(absl::StrFormat("'%s' is not a number (e.g. 0.5 or 1/256)", *text));
  if (v < min || v > max) return Error(absl::StrFormat("%s is out of range; expected %g to %g", *text, min, max));
  return v;
}

absl::StatusOr<std::string> Node::OneOf(std::initializer_list<std::string_view> allowed) const {
  auto text = Scalar("a string");
  if (!text.ok()) return text.status();
  if (std::find(allowed.begin(), allowed.end(), *text) == allowed.end()) {
    return Error(absl::StrFormat("'%s' is not allowed; expected one of: %s", *text, JoinViews(allowed)));
  }
  return text;
}

absl::StatusOr<Node> LoadYamlString(const std::string* file, const std::string& text) {
  if (text.size() > kMaxPlanBytes) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: the plan is larger than %d MiB (%d B); a plan is a few KiB",
                                                      *file, kMaxPlanBytes >> 20, text.size()));
  }
  try {
    // Load reads the first document and ignores the rest: refuse a second.
    if (auto second = SecondDocument(text)) {
      return LocatedError(*file, *second, "plan",
                          "a second YAML document starts here; a plan is one document (remove the '---' and what "
                          "follows, or give it a file of its own)");
    }
    YAML::Node root = YAML::Load(text);
    if (!root.IsMap()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s:1:1: plan: expected a map of fields at the top level (ports, streams, ...)", *file));
    }
    size_t nodes = 0;
    if (auto s = CheckTree(*file, root, "", 0, nodes); !s.ok()) return s;
    return Node(file, root, "");
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s:%d:%d: YAML syntax error: %s", *file, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
}

absl::StatusOr<Node> LoadYamlFile(const std::string* file) {
  // Non-blocking: opening a FIFO without a writer must not wait; what is not
  // a regular file is refused below before anything is read from it.
  const int fd = ::open(file->c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    return absl::NotFoundError(absl::StrFormat("%s: cannot open plan: %s", *file, std::strerror(errno)));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: cannot read plan: %s", *file, std::strerror(errno)));
  }
  if (S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: is a directory; a plan is a YAML file (e.g. configs/quickstart.yaml)", *file));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: is not a regular file (%s); a plan is read from a regular file", *file, FileKind(st.st_mode)));
  }
  const auto too_large = [&](uint64_t bytes) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: is larger than %d MiB (%d B); a plan is a few KiB", *file,
                                                      kMaxPlanBytes >> 20, bytes));
  };
  if (static_cast<uint64_t>(st.st_size) > kMaxPlanBytes) return too_large(static_cast<uint64_t>(st.st_size));
  // At most one byte past the bound: a file that grows while it is read is
  // refused as well, never read without end.
  std::string text;
  char buf[65536];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::InvalidArgumentError(absl::StrFormat("%s: cannot read plan: %s", *file, std::strerror(errno)));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxPlanBytes) return too_large(text.size());
  }
  return LoadYamlString(file, text);
}

}  // namespace fg::config
