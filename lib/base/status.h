// base/status.h: error propagation helpers for absl::Status / absl::StatusOr.
//
// Every function that can fail across a library boundary returns
// absl::Status or absl::StatusOr<T>; no exception leaves a library.
//
//   absl::StatusOr<int> ParsePort(std::string_view s);
//   absl::Status Open(std::string_view s) {
//     FG_ASSIGN_OR_RETURN(int port, ParsePort(s));
//     FG_RETURN_IF_ERROR(Configure(port));
//     return absl::OkStatus();
//   }
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define FG_STATUS_CONCAT_INNER_(a, b) a##b
#define FG_STATUS_CONCAT_(a, b) FG_STATUS_CONCAT_INNER_(a, b)

// Returns from the enclosing function when `expr` is not OK.
#define FG_RETURN_IF_ERROR(expr)             \
  do {                                       \
    ::absl::Status fg_status_ = (expr);      \
    if (!fg_status_.ok()) return fg_status_; \
  } while (0)

// Evaluates a StatusOr expression; on error returns its status, otherwise
// moves the value into `lhs` (which may be a declaration).
#define FG_ASSIGN_OR_RETURN(lhs, expr) FG_ASSIGN_OR_RETURN_IMPL_(FG_STATUS_CONCAT_(fg_statusor_, __LINE__), lhs, expr)

#define FG_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return std::move(tmp).status();  \
  lhs = std::move(tmp).value()
