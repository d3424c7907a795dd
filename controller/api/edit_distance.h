// How far a mistyped name is from a known one, for "did you mean" in messages: the number of
// single-character insertions, deletions and substitutions between two names, letters compared
// case-insensitively (ASCII). Used by the schema engine's messages and by `twinscale plan`'s
// review files. Quadratic in the lengths: callers bound them. Pure; thread-safe.
#ifndef TWINSCALE_CONTROLLER_API_EDIT_DISTANCE_H_
#define TWINSCALE_CONTROLLER_API_EDIT_DISTANCE_H_

#include <cstddef>
#include <string_view>

namespace twinscale::api {

size_t EditDistance(std::string_view a, std::string_view b);

}  // namespace twinscale::api

#endif  // TWINSCALE_CONTROLLER_API_EDIT_DISTANCE_H_
