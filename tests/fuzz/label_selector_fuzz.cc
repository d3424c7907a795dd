// Fuzzes the label and field selector parsers (controller/kube/selectors.h: the labelSelector and
// fieldSelector query parameters of the fake API server and the external metrics API, outside
// input): any bytes must parse or give a clear error, never crash or hang. A label selector that
// parses must print to a canonical string that parses again to the same string and selects the
// same labels (the String() a Scale reports).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "controller/kube/selectors.h"
#include "nlohmann/json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  using twinscale::kube::FieldSelector;
  using twinscale::kube::LabelSelector;
  const nlohmann::json labels = {{"app", "web"}, {"tier", "serve"}, {"replicas", "3"}};
  auto s = LabelSelector::Parse(text);
  if (s.ok()) {
    const std::string printed = s->String();
    auto again = LabelSelector::Parse(printed);
    if (!again.ok() || again->String() != printed) abort();  // the canonical form must round-trip
    if (again->Matches(labels) != s->Matches(labels)) abort();
  }
  auto f = FieldSelector::Parse(text);
  if (f.ok()) (void)f->Matches({{"metadata", {{"name", "web"}}}});
  return 0;
}
