#include "report/json.h"

#include <cmath>

#include "absl/strings/str_format.h"

namespace fg::report {

std::string JsonQuote(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += absl::StrFormat("\\u%04x", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
  return out;
}

void JsonWriter::Newline() {
  out_ += '\n';
  out_.append(counts_.size() * 2, ' ');
}

void JsonWriter::BeforeValue() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!counts_.empty()) {
    if (counts_.back()++ > 0) out_ += ',';
    Newline();
  }
}

void JsonWriter::BeginObject() {
  BeforeValue();
  out_ += '{';
  counts_.push_back(0);
}

void JsonWriter::EndObject() {
  const bool empty = counts_.back() == 0;
  counts_.pop_back();
  if (!empty) Newline();
  out_ += '}';
}

void JsonWriter::BeginArray() {
  BeforeValue();
  out_ += '[';
  counts_.push_back(0);
}

void JsonWriter::EndArray() { EndObject(), out_.back() = ']'; }

void JsonWriter::Key(std::string_view key) {
  BeforeValue();
  out_ += JsonQuote(key);
  out_ += ": ";
  after_key_ = true;
}

void JsonWriter::String(std::string_view v) {
  BeforeValue();
  out_ += JsonQuote(v);
}
void JsonWriter::Int(int64_t v) {
  BeforeValue();
  out_ += absl::StrFormat("%d", v);
}
void JsonWriter::Uint(uint64_t v) {
  BeforeValue();
  out_ += absl::StrFormat("%d", v);
}
void JsonWriter::Double(double v) {
  BeforeValue();
  if (!std::isfinite(v)) {
    out_ += "null";
  } else {
    out_ += absl::StrFormat("%.17g", v);
  }
}
void JsonWriter::Bool(bool v) {
  BeforeValue();
  out_ += v ? "true" : "false";
}
void JsonWriter::Null() {
  BeforeValue();
  out_ += "null";
}

std::string JsonWriter::Take() {
  out_ += '\n';
  return std::move(out_);
}

}  // namespace fg::report
