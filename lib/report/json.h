// report/json.h: a small streaming JSON writer (RFC 8259), pretty-printed.
//
// Keys carry their unit as a suffix where the value has one (duration_ns,
// rate_pps, line_rate_bps), so report.json never holds a bare number whose
// unit a reader must guess. Non-finite doubles are written as null.
//
//   fg::report::JsonWriter w;
//   w.BeginObject();
//   w.Key("schema_version"); w.Int(1);
//   w.Key("ports"); w.BeginArray(); w.String("p0"); w.EndArray();
//   w.EndObject();
//   std::string text = w.Take();
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fg::report {

class JsonWriter {
 public:
  void BeginObject();
  void EndObject();
  void BeginArray();
  void EndArray();
  void Key(std::string_view key);
  void String(std::string_view v);
  void Int(int64_t v);
  void Uint(uint64_t v);
  void Double(double v);
  void Bool(bool v);
  void Null();

  // Shorthands for Key + value.
  void Field(std::string_view key, std::string_view v) { Key(key), String(v); }
  void Field(std::string_view key, const char* v) { Key(key), String(v); }
  void Field(std::string_view key, uint64_t v) { Key(key), Uint(v); }
  void Field(std::string_view key, int64_t v) { Key(key), Int(v); }
  void Field(std::string_view key, uint32_t v) { Key(key), Uint(v); }
  void Field(std::string_view key, int v) { Key(key), Int(v); }
  void Field(std::string_view key, double v) { Key(key), Double(v); }
  void Field(std::string_view key, bool v) { Key(key), Bool(v); }

  // The document; valid once every Begin has its End.
  std::string Take();

 private:
  void BeforeValue();
  void Newline();
  std::string out_;
  // Per open container: number of elements written so far.
  std::vector<int> counts_;
  bool after_key_ = false;
};

// JSON string literal for `s` with escapes, including the quotes.
std::string JsonQuote(std::string_view s);

}  // namespace fg::report
