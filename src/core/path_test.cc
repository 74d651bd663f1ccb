#include "tesscpp/internal/core/path.h"
#include "core/status_matchers.h"

#include <gtest/gtest.h>

namespace tesscpp {
namespace {

using Kind = PathSegment::Kind;

TEST(Path, ParsesEverySegmentKind) {
  Path p = *Path::Parse("a.b.[0].{key}.[].{}");
  ASSERT_EQ(p.segments().size(), 6u);
  EXPECT_EQ(p.segments()[0], PathSegment::Field("a"));
  EXPECT_EQ(p.segments()[2], PathSegment::Index(0));
  EXPECT_EQ(p.segments()[3], PathSegment::Key("key"));
  EXPECT_EQ(p.segments()[4].kind, Kind::kAnyIndex);
  EXPECT_EQ(p.segments()[5].kind, Kind::kAnyKey);
  EXPECT_TRUE(p.is_pattern());
}

TEST(Path, DotsAndEscapesInsideKeys) {
  Path p = *Path::Parse("cell_data.{a.b}.{x\\}y}.{back\\\\}");
  ASSERT_EQ(p.segments().size(), 4u);
  EXPECT_EQ(p.segments()[1].name, "a.b");
  EXPECT_EQ(p.segments()[2].name, "x}y");
  EXPECT_EQ(p.segments()[3].name, "back\\");
}

TEST(Path, PrintsWhatItParses) {
  for (const char* text : {"mesh.points", "layers.[0].weight", "cell_data.{temperature}", "cell_data.{}",
                           "layers.[].w", "d.{a.b}", "d.{x\\}y}", "d.{k\\\\}", "a.[-1]"}) {
    Path p = *Path::Parse(text);
    EXPECT_EQ(p.ToString(), text);
    EXPECT_EQ(*Path::Parse(p.ToString()), p);
  }
  Path built = Path().Child(PathSegment::Field("d")).Child(PathSegment::Key("{weird}"));
  EXPECT_EQ(built.ToString(), "d.{\\{weird\\}}");
  EXPECT_EQ(Path::Parse(built.ToString())->segments()[1].name, "{weird}");
}

TEST(Path, RejectsMalformed) {
  for (const char* text :
       {"", "a..b", ".a", "a.", "1abc", "a-b", "[x]", "[1", "{a", "a.{b}c", "a.{b", "[+1]", "[1.5]", "a b"}) {
    auto r = Path::Parse(text);
    EXPECT_FALSE(r.ok()) << text;
    if (!r.ok()) {
      EXPECT_STATUS(r, StatusCode::kInvalidArgument) << text;
    }
  }
}

TEST(Path, PatternsMatchConcretePaths) {
  Path pattern = *Path::Parse("layers.[].{}");
  EXPECT_TRUE(pattern.Matches(*Path::Parse("layers.[3].{w}")));
  EXPECT_FALSE(pattern.Matches(*Path::Parse("layers.[3].w")));
  EXPECT_FALSE(pattern.Matches(*Path::Parse("layers.[3]")));
  EXPECT_TRUE(Path::Parse("a.b")->Matches(*Path::Parse("a.b")));
}

TEST(Path, FindsWhatItAddresses) {
  Value root(Value::Dict{{"mesh", Value(Value::Dict{{"points", Value(Value::List{Value(1), Value(2)})}})},
                         {"d", Value(Value::Dict{{"a.b", Value(3)}})}});
  EXPECT_EQ(Path::Parse("mesh.points.[1]")->Find(root)->as_int(), 2);
  EXPECT_EQ(Path::Parse("mesh.points.[-2]")->Find(root)->as_int(), 1);
  EXPECT_EQ(Path::Parse("d.{a.b}")->Find(root)->as_int(), 3);
  EXPECT_EQ(Path::Parse("mesh.points.[2]")->Find(root), nullptr);
  EXPECT_EQ(Path::Parse("mesh.absent")->Find(root), nullptr);
  EXPECT_EQ(Path::Parse("mesh.points.[]")->Find(root), nullptr);  // a pattern addresses nothing
  *Path::Parse("mesh.points.[0]")->Find(root) = Value(7);
  EXPECT_EQ(Path::Parse("mesh.points.[0]")->Find(root)->as_int(), 7);
}

}  // namespace
}  // namespace tesscpp
