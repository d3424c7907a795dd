// EventTag: the one layout of the 64-bit tag an event carries (Simulation::Schedule), for the
// handlers that say with it what the event is and which of their parts it is for. A handler names
// its events with an enum of its own (at most four values: 0..3) and packs with each a 32-bit id (a
// replica's index, a sequence's slot, a step's epoch) and a 30-bit detail (a lifecycle phase, a
// slot's epoch; the bits above 30 are dropped):
//
//   bits 62-63: kind | bits 32-61: detail | bits 0-31: id
//
// The tag only routes an event to its handler's code; it never orders events (simulation.h), so the
// layout has no bearing on a run's results. Pure and constexpr; Pack aborts on a kind above 3 (a
// model bug, caught in every build, as Simulation does for time going backwards).
#ifndef TWINSCALE_SIMULATOR_CORE_EVENT_TAG_H_
#define TWINSCALE_SIMULATOR_CORE_EVENT_TAG_H_

#include <cstdint>
#include <cstdlib>
#include <type_traits>

namespace twinscale::sim {

template <typename Kind>
struct EventTag {
  static_assert(std::is_enum_v<Kind>, "an event's kind is an enum of its handler's");
  static constexpr int kDetailBits = 30;
  static constexpr uint32_t kDetailMask = (uint32_t{1} << kDetailBits) - 1;
  static constexpr uint64_t kMaxKind = 3;

  Kind kind{};
  uint32_t id = 0;
  uint32_t detail = 0;  // the low kDetailBits are kept

  constexpr uint64_t Pack() const {
    const uint64_t k = static_cast<uint64_t>(kind);
    if (k > kMaxKind) std::abort();
    return (k << 62) | (static_cast<uint64_t>(detail & kDetailMask) << 32) | id;
  }
  static constexpr EventTag Unpack(uint64_t tag) {
    return EventTag{static_cast<Kind>(tag >> 62), static_cast<uint32_t>(tag),
                    static_cast<uint32_t>(tag >> 32) & kDetailMask};
  }
  friend constexpr bool operator==(const EventTag&, const EventTag&) = default;
};

}  // namespace twinscale::sim

#endif  // TWINSCALE_SIMULATOR_CORE_EVENT_TAG_H_
