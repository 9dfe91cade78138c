#include "metrics/exposition.h"

#include <cmath>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace fg::metrics {
namespace {

std::string Escape(const std::string& s, bool quote) {
  std::string out;
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (quote && c == '"') {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

std::string Number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  // The shortest text that reads back as the same double (1e-06, not 9.9999999999999995e-07).
  for (int precision = 1; precision < 17; ++precision) {
    const std::string t = absl::StrFormat("%.*g", precision, v);
    if (std::strtod(t.c_str(), nullptr) == v) return t;
  }
  return absl::StrFormat("%.17g", v);
}

void Line(std::string& out, const std::string& name, const Labels& labels, const std::string& value,
          const std::pair<std::string, std::string>* extra = nullptr) {
  out += name;
  if (!labels.empty() || extra != nullptr) {
    out += '{';
    bool first = true;
    for (const auto& [k, v] : labels) {
      absl::StrAppend(&out, first ? "" : ",", k, "=\"", Escape(v, true), "\"");
      first = false;
    }
    if (extra != nullptr) absl::StrAppend(&out, first ? "" : ",", extra->first, "=\"", extra->second, "\"");
    out += '}';
  }
  absl::StrAppend(&out, " ", value, "\n");
}

}  // namespace

std::string ToText(const std::vector<MetricFamily>& families) {
  std::string out;
  for (const MetricFamily& f : families) {
    const char* type = f.type == Type::kCounter ? "counter" : f.type == Type::kGauge ? "gauge" : "histogram";
    absl::StrAppend(&out, "# HELP ", f.name, " ", Escape(f.help, false), "\n# TYPE ", f.name, " ", type, "\n");
    for (const Sample& s : f.samples) {
      if (const auto* u = std::get_if<uint64_t>(&s.value)) {
        Line(out, f.name, s.labels, absl::StrCat(*u));
      } else if (const auto* d = std::get_if<double>(&s.value)) {
        Line(out, f.name, s.labels, Number(*d));
      } else {
        const HistogramValue& h = std::get<HistogramValue>(s.value);
        for (const auto& [le, n] : h.buckets) {
          const std::pair<std::string, std::string> bound{"le", Number(le)};
          Line(out, f.name + "_bucket", s.labels, absl::StrCat(n), &bound);
        }
        const std::pair<std::string, std::string> inf{"le", "+Inf"};
        Line(out, f.name + "_bucket", s.labels, absl::StrCat(h.count), &inf);
        Line(out, f.name + "_sum", s.labels, Number(h.sum));
        Line(out, f.name + "_count", s.labels, absl::StrCat(h.count));
      }
    }
  }
  return out;
}

}  // namespace fg::metrics
