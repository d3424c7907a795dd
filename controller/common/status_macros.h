// Small status helpers that abseil 20220623 lacks: early return on error, and assign-or-return.
#ifndef TWINSCALE_CONTROLLER_COMMON_STATUS_MACROS_H_
#define TWINSCALE_CONTROLLER_COMMON_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define TS_STATUS_CONCAT_INNER_(a, b) a##b
#define TS_STATUS_CONCAT_(a, b) TS_STATUS_CONCAT_INNER_(a, b)

// Returns the status from the enclosing function if `expr` is not OK.
#define TS_RETURN_IF_ERROR(expr)              \
  do {                                        \
    const ::absl::Status ts_status_ = (expr); \
    if (!ts_status_.ok()) return ts_status_;  \
  } while (0)

// `lhs = value of expr`, or returns its error status.
#define TS_ASSIGN_OR_RETURN(lhs, expr) \
  TS_ASSIGN_OR_RETURN_IMPL_(TS_STATUS_CONCAT_(ts_statusor_, __LINE__), lhs, expr)
#define TS_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                              \
  if (!statusor.ok()) return statusor.status();        \
  lhs = std::move(statusor).value()

#endif  // TWINSCALE_CONTROLLER_COMMON_STATUS_MACROS_H_
