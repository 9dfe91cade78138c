#include "base/units.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"

namespace fg {
namespace {

struct Split {
  double number = 0;
  std::string unit;  // trimmed, may be empty
};

// "12.5 Gbps L1" -> {12.5, "Gbps L1"}. The number must be finite and is
// returned signed so the caller can say "must be positive".
absl::StatusOr<Split> SplitNumber(std::string_view text, std::string_view what) {
  std::string s(absl::StripAsciiWhitespace(absl::string_view(text.data(), text.size())));
  if (s.empty()) return absl::InvalidArgumentError(absl::StrFormat("empty %s", what));
  const char* begin = s.c_str();
  char* end = nullptr;
  double v = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(v)) {
    return absl::InvalidArgumentError(absl::StrFormat("'%s' does not start with a number", s));
  }
  Split out;
  out.number = v;
  out.unit = std::string(absl::StripAsciiWhitespace(absl::string_view(end)));
  return out;
}

absl::Status NotPositive(std::string_view text, std::string_view what) {
  return absl::OutOfRangeError(absl::StrFormat("%s '%s' must be greater than zero", what, text));
}

}  // namespace

double Rate::ToPps(double frame_size, double line_bps) const {
  switch (kind) {
    case Kind::kPps: return value;
    case Kind::kBpsL2: return value / (8.0 * frame_size);
    case Kind::kBpsL1: return value / (8.0 * (frame_size + kEthL1Overhead));
    case Kind::kPercentLine: return value / 100.0 * line_bps / (8.0 * (frame_size + kEthL1Overhead));
    case Kind::kMax: return std::numeric_limits<double>::infinity();
  }
  return 0;
}

absl::StatusOr<Rate> ParseRate(std::string_view text) {
  static constexpr char kAllowed[] =
      "a rate such as '10 kpps', '1.5 Mpps', '25 Gbps' (L2), '25 Gbps L1', '40%' (of line rate) or 'max'";
  if (std::string(absl::StripAsciiWhitespace(absl::string_view(text.data(), text.size()))) == "max") {
    return Rate{Rate::Kind::kMax, 0};
  }
  auto split = SplitNumber(text, "rate");
  if (!split.ok()) return absl::InvalidArgumentError(absl::StrFormat("expected %s", kAllowed));
  Rate r;
  std::string unit = split->unit;
  bool l1 = false;
  if (unit.size() > 3 && (unit.ends_with(" L1") || unit.ends_with(" L2"))) {
    l1 = unit.ends_with(" L1");
    unit = std::string(absl::StripAsciiWhitespace(absl::string_view(unit).substr(0, unit.size() - 3)));
  }
  struct Scale {
    const char* name;
    double mult;
    bool bits;
  };
  static constexpr Scale kUnits[] = {
      {"pps", 1, false},   {"kpps", 1e3, false}, {"Mpps", 1e6, false}, {"Gpps", 1e9, false}, {"bps", 1, true},
      {"kbps", 1e3, true}, {"Mbps", 1e6, true},  {"Gbps", 1e9, true},  {"Tbps", 1e12, true},
  };
  if (unit == "%") {
    if (split->number > 100) {
      return absl::OutOfRangeError(absl::StrFormat("rate '%s' exceeds 100%% of line rate", text));
    }
    r.kind = Rate::Kind::kPercentLine;
    r.value = split->number;
  } else {
    const Scale* found = nullptr;
    for (const Scale& s : kUnits) {
      if (unit == s.name) found = &s;
    }
    if (found == nullptr || (!found->bits && unit != split->unit)) {
      return absl::InvalidArgumentError(absl::StrFormat("unknown rate unit in '%s'; expected %s", text, kAllowed));
    }
    r.kind = found->bits ? (l1 ? Rate::Kind::kBpsL1 : Rate::Kind::kBpsL2) : Rate::Kind::kPps;
    r.value = split->number * found->mult;
  }
  if (!(r.value > 0)) return NotPositive(text, "rate");
  if (r.kind == Rate::Kind::kPps && r.value < kMinPps) {
    return absl::OutOfRangeError(absl::StrFormat("rate '%s' is below the minimum of %g pps", text, kMinPps));
  }
  if (r.kind == Rate::Kind::kPps && r.value > kMaxPps) {
    return absl::OutOfRangeError(absl::StrFormat(
        "rate '%s' is above the maximum of %s (no port sends faster)", text, FormatPacketRate(kMaxPps)));
  }
  if (r.kind != Rate::Kind::kPps && r.kind != Rate::Kind::kPercentLine && r.value > kMaxBps) {
    return absl::OutOfRangeError(absl::StrFormat(
        "rate '%s' is above the maximum of %s (no port sends faster)", text, FormatBitRate(kMaxBps)));
  }
  return r;
}

absl::StatusOr<int64_t> ParseDuration(std::string_view text) {
  auto split = SplitNumber(text, "duration");
  if (!split.ok()) {
    return absl::InvalidArgumentError("expected a duration such as '500 ms', '10 s' or '2 min'");
  }
  struct Scale {
    const char* name;
    double ns;
  };
  static constexpr Scale kUnits[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"min", 60e9}, {"h", 3600e9}};
  for (const Scale& s : kUnits) {
    if (split->unit == s.name) {
      double ns = split->number * s.ns;
      if (!(ns > 0)) return NotPositive(text, "duration");
      if (ns > 9.2e18) return absl::OutOfRangeError(absl::StrFormat("duration '%s' is too long", text));
      const int64_t rounded = static_cast<int64_t>(std::llround(ns));
      if (rounded == 0) {
        return absl::OutOfRangeError(
            absl::StrFormat("duration '%s' rounds to 0 ns; durations are whole nanoseconds, at least 1 ns", text));
      }
      return rounded;
    }
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("unknown or missing duration unit in '%s'; expected ns, us, ms, s, min or h", text));
}

absl::StatusOr<uint64_t> ParseBytes(std::string_view text) {
  auto split = SplitNumber(text, "size");
  if (!split.ok()) return absl::InvalidArgumentError("expected a size such as '64 B', '4 KiB' or '1 MB'");
  struct Scale {
    const char* name;
    double mult;
  };
  static constexpr Scale kUnits[] = {{"", 1},     {"B", 1},        {"KB", 1e3},        {"MB", 1e6},
                                     {"GB", 1e9}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}};
  for (const Scale& s : kUnits) {
    if (split->unit == s.name) {
      double b = split->number * s.mult;
      if (b < 0) return absl::OutOfRangeError(absl::StrFormat("size '%s' is negative", text));
      if (b != std::floor(b)) {
        return absl::InvalidArgumentError(absl::StrFormat("size '%s' is not a whole number of bytes", text));
      }
      if (b > 1.8e19) return absl::OutOfRangeError(absl::StrFormat("size '%s' is too large", text));
      return static_cast<uint64_t>(b);
    }
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("unknown size unit in '%s'; expected B, KB, MB, GB, KiB, MiB or GiB", text));
}

namespace {
std::string WithPrefix(double v, const char* unit) {
  // Past a thousand tera, three significant digits: a number no plan meant
  // (a sum of bounded rates over millions of flows) stays short.
  if (std::fabs(v) >= 1e15) return absl::StrFormat("%.3g %s", v, unit);
  static constexpr struct {
    double div;
    const char* p;
  } kPrefixes[] = {{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}};
  for (const auto& p : kPrefixes) {
    if (std::fabs(v) >= p.div) return absl::StrFormat("%.3f %s%s", v / p.div, p.p, unit);
  }
  return absl::StrFormat("%.3f %s", v, unit);
}
}  // namespace

std::string FormatBitRate(double bps) { return WithPrefix(bps, "bit/s"); }
std::string FormatPacketRate(double pps) { return WithPrefix(pps, "pps"); }

std::string FormatRate(const Rate& r) {
  switch (r.kind) {
    case Rate::Kind::kPps: return FormatPacketRate(r.value);
    case Rate::Kind::kBpsL2: return FormatBitRate(r.value) + " (L2)";
    case Rate::Kind::kBpsL1: return FormatBitRate(r.value) + " (L1)";
    case Rate::Kind::kPercentLine: return absl::StrFormat("%.3f %% of line rate", r.value);
    case Rate::Kind::kMax: return "max (unpaced)";
  }
  return "?";
}

std::string FormatDuration(int64_t ns) {
  double a = std::fabs(static_cast<double>(ns));
  if (a >= 1e9) return absl::StrFormat("%.3f s", ns / 1e9);
  if (a >= 1e6) return absl::StrFormat("%.3f ms", ns / 1e6);
  if (a >= 1e3) return absl::StrFormat("%.3f us", ns / 1e3);
  return absl::StrFormat("%d ns", ns);
}

std::string FormatCount(uint64_t n) {
  std::string digits = absl::StrFormat("%d", n);
  std::string out;
  int lead = static_cast<int>(digits.size() % 3);
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (static_cast<int>(i) - lead) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

}  // namespace fg
