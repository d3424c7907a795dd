// An observed input as the policy must treat it: a Value; NoEvents (a fresh scrape that saw no
// requests — a valid low-load observation, e.g. at night); or Stale (the scrape failed or is older
// than staleAfter). Only Stale blocks scale-in (docs/architecture.md "Policy inputs").
#ifndef TWINSCALE_CONTROLLER_STATE_INPUT_H_
#define TWINSCALE_CONTROLLER_STATE_INPUT_H_

#include <string>
#include <utility>

namespace twinscale::state {

template <typename T>
class Input {
 public:
  enum class Kind { kValue, kNoEvents, kStale };

  static Input Value(T v) { return Input(Kind::kValue, std::move(v), ""); }
  // `zero` is the value a NoEvents input stands for (no arrivals: rate 0).
  static Input NoEvents(T zero = T{}) { return Input(Kind::kNoEvents, std::move(zero), ""); }
  static Input Stale(std::string why) { return Input(Kind::kStale, T{}, std::move(why)); }

  Kind kind() const { return kind_; }
  bool stale() const { return kind_ == Kind::kStale; }
  bool usable() const { return kind_ != Kind::kStale; }
  // The value, or the NoEvents stand-in. Precondition: usable().
  const T& value() const { return value_; }
  const std::string& why_stale() const { return why_; }

 private:
  Input(Kind k, T v, std::string why) : kind_(k), value_(std::move(v)), why_(std::move(why)) {}
  Kind kind_ = Kind::kStale;
  T value_{};
  std::string why_;
};

}  // namespace twinscale::state

#endif  // TWINSCALE_CONTROLLER_STATE_INPUT_H_
