// EventTag's layout: kind, detail and id round-trip, sit where the header says, and the detail
// keeps its low 30 bits.
#include "simulator/core/event_tag.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace twinscale::sim {
namespace {

enum class Kind : uint8_t { kZero = 0, kOne = 1, kTwo = 2, kThree = 3 };
using Tag = EventTag<Kind>;

TEST(EventTagTest, PacksKindDetailAndIdWhereTheLayoutSays) {
  struct Case {
    std::string name;
    Tag tag;
    uint64_t want;
  };
  const std::vector<Case> cases = {
      {"nothing but the zero kind", {Kind::kZero, 0, 0}, 0},
      {"an id alone: the low 32 bits", {Kind::kZero, 0xdeadbeefu, 0}, 0xdeadbeefULL},
      {"a kind alone: the top two bits", {Kind::kTwo, 0, 0}, 2ULL << 62},
      {"the largest kind", {Kind::kThree, 0, 0}, 3ULL << 62},
      {"a detail: bits 32 up", {Kind::kZero, 0, 5}, 5ULL << 32},
      {"all three", {Kind::kOne, 7, 3}, (1ULL << 62) | (3ULL << 32) | 7},
      {"the widest id and detail",
       {Kind::kThree, 0xffffffffu, (1u << 30) - 1},
       0xffffffffffffffffULL},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(c.tag.Pack(), c.want);
    EXPECT_EQ(Tag::Unpack(c.want), c.tag);
  }
}

TEST(EventTagTest, ADetailKeepsItsLowThirtyBits) {
  // An epoch past 2^30 wraps, on both sides of a comparison that masks it the same way.
  const Tag tag{Kind::kOne, 4, (1u << 30) + 9};
  EXPECT_EQ(Tag::Unpack(tag.Pack()).detail, 9u);
  EXPECT_EQ(Tag::Unpack(tag.Pack()).id, 4u);
  EXPECT_EQ(Tag::Unpack(tag.Pack()).kind, Kind::kOne);
}

TEST(EventTagTest, IsUsableAtCompileTime) {
  static_assert(Tag{Kind::kTwo}.Pack() == 2ULL << 62);
  static_assert(Tag::Unpack((1ULL << 62) | (6ULL << 32) | 11) == Tag{Kind::kOne, 11, 6});
}

TEST(EventTagDeathTest, AKindThatDoesNotFitIsAModelBug) {
  enum class Wide : uint8_t { kFour = 4 };
  EXPECT_DEATH(EventTag<Wide>{Wide::kFour}.Pack(), "");
}

}  // namespace
}  // namespace twinscale::sim
