#include "config/location.h"

#include "absl/strings/str_format.h"

namespace fg::config {

std::string FormatLocation(const std::string& file, const Location& at) {
  if (at.line <= 0) return file;
  return absl::StrFormat("%s:%d:%d", file, at.line, at.column);
}

const Written* WrittenValues::Find(std::string_view path) const {
  while (!path.empty()) {
    if (auto it = values_.find(path); it != values_.end()) return &it->second;
    const size_t cut = path.find_last_of(".[");
    if (cut == std::string_view::npos) break;
    path = path.substr(0, cut);
  }
  return nullptr;
}

std::string WrittenValues::Text(std::string_view path) const {
  auto it = values_.find(path);
  return it == values_.end() ? std::string() : it->second.text;
}

}  // namespace fg::config
