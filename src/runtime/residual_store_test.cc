// The residual store: found only at equal inputs, bounded in bytes and time,
// least recently used evicted first, released on request.
#include "runtime/residual_store.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

namespace tesscpp::runtime {
namespace {

component::Residual Bytes(int64_t host, int64_t device = 0) {
  return component::Residual{std::make_shared<const int>(7), "int", host, device};
}

Value At(double x) { return Value::Dict{{"x", Value(x)}}; }

TEST(ResidualStore, HandsStateBackOnlyAtTheSameInputs) {
  ResidualStore store({});
  const auto ref = store.Put(At(1.0), Bytes(100));
  ASSERT_TRUE(ref.has_value());
  auto hit = store.Find(*ref, At(1.0));
  ASSERT_NE(hit.residual, nullptr);
  EXPECT_EQ(*std::static_pointer_cast<const int>(hit.residual->state), 7);
  EXPECT_TRUE(hit.miss.empty());
  // Another point, and the same number as another type: never the wrong state.
  EXPECT_EQ(store.Find(*ref, At(2.0)).miss, "inputs differ");
  EXPECT_EQ(store.Find(*ref, Value::Dict{{"x", Value(int64_t{1})}}).miss, "inputs differ");
  EXPECT_EQ(store.Find("nodot", At(1.0)).miss, "malformed");
  const std::string other = "1-abc." + ref->substr(ref->rfind('.') + 1);
  EXPECT_EQ(store.Find(other, At(1.0)).miss, "another process");
  EXPECT_EQ(store.Find(ref->substr(0, ref->rfind('.')) + ".feed", At(1.0)).miss, "unknown");
  const ResidualStats stats = store.Stats();
  EXPECT_EQ(stats.hits, 1U);
  EXPECT_EQ(stats.misses, 5U);
  EXPECT_EQ(stats.entries, 1);
  EXPECT_GT(stats.host_bytes, 100);  // the state's, and the inputs kept with it
}

TEST(ResidualStore, EvictsLeastRecentlyUsedToStayWithinEachBudget) {
  // Each entry holds 1000 bytes of state and under a hundred of inputs.
  ResidualStore store({3400, 50, std::chrono::seconds(600)});
  const auto a = store.Put(At(1), Bytes(1000));
  const auto b = store.Put(At(2), Bytes(1000));
  const auto c = store.Put(At(3), Bytes(1000));
  ASSERT_NE(store.Find(*a, At(1)).residual, nullptr);  // a is now the most recent
  const auto d = store.Put(At(4), Bytes(1000));        // b goes
  EXPECT_EQ(store.Find(*b, At(2)).miss, "unknown");
  EXPECT_NE(store.Find(*a, At(1)).residual, nullptr);
  EXPECT_NE(store.Find(*c, At(3)).residual, nullptr);
  EXPECT_NE(store.Find(*d, At(4)).residual, nullptr);
  // Device bytes have their own budget; what exceeds a budget is refused.
  EXPECT_FALSE(store.Put(At(5), Bytes(1, 51)).has_value());
  EXPECT_FALSE(store.Put(At(6), Bytes(3401)).has_value());
  const auto e = store.Put(At(7), Bytes(0, 40));
  const auto f = store.Put(At(8), Bytes(0, 40));  // e goes for the device budget
  EXPECT_EQ(store.Find(*e, At(7)).miss, "unknown");
  EXPECT_NE(store.Find(*f, At(8)).residual, nullptr);
  const ResidualStats stats = store.Stats();
  EXPECT_LE(stats.host_bytes, 3400);
  EXPECT_LE(stats.device_bytes, 50);
  EXPECT_EQ(stats.refused, 2U);
  EXPECT_EQ(stats.evictions, 2U);
}

TEST(ResidualStore, ACallsOwnReferenceIsLeftForItToReleaseAfter) {
  ResidualStore store({1000, 1000, std::chrono::seconds(10)});
  const auto a = store.Put(At(1), Bytes(10));
  const auto b = store.Put(At(2), Bytes(10));
  EXPECT_TRUE(store.Release(*a + "," + *b, *a));  // the call refers to a: b goes now
  EXPECT_NE(store.Find(*a, At(1)).residual, nullptr);
  EXPECT_EQ(store.Find(*b, At(2)).miss, "unknown");
  EXPECT_FALSE(store.Release(*b, *a));
  EXPECT_FALSE(store.Release(*a));  // no call's own: released
  EXPECT_EQ(store.Find(*a, At(1)).miss, "unknown");
}

TEST(ResidualStore, ExpiresAndReleases) {
  ResidualStore store({1000, 1000, std::chrono::seconds(10)});
  auto now = ResidualStore::Clock::now();
  store.set_clock([&] { return now; });
  const auto a = store.Put(At(1), Bytes(10));
  const auto b = store.Put(At(2), Bytes(10));
  const auto c = store.Put(At(3), Bytes(10));
  store.Release(*a + ", " + *b + ",garbage,9-x.y");
  EXPECT_EQ(store.Find(*a, At(1)).miss, "unknown");
  EXPECT_EQ(store.Find(*b, At(2)).miss, "unknown");
  now += std::chrono::seconds(11);
  EXPECT_EQ(store.Find(*c, At(3)).miss, "unknown");
  const ResidualStats stats = store.Stats();
  EXPECT_EQ(stats.released, 2U);
  EXPECT_EQ(stats.evictions, 1U);
  EXPECT_EQ(stats.entries, 0);
  EXPECT_EQ(stats.host_bytes, 0);
}

TEST(ResidualStore, InputsAreTheSameOnlyBitForBitAndKeptApart) {
  EXPECT_TRUE(SameInputs(At(0.0), At(0.0)));
  EXPECT_FALSE(SameInputs(At(0.0), At(-0.0)));  // Value's == calls these equal
  EXPECT_TRUE(SameInputs(At(std::nan("")), At(std::nan(""))));
  EXPECT_FALSE(SameInputs(Value::List{Value(1.0)}, Value::List{Value(1.0), Value(2.0)}));
  EXPECT_FALSE(SameInputs(Value::Dict{{"x", Value(1.0)}, {"y", Value(2.0)}},
                          Value::Dict{{"x", Value(1.0)}, {"z", Value(2.0)}}));

  auto shape = Shape::Make({2});
  auto tensor = Tensor::Allocate(Dtype::kFloat64, *shape);
  ASSERT_TRUE(tensor.ok());
  tensor->data_as<double>()[0] = 1;
  tensor->data_as<double>()[1] = 2;
  const Value inputs = Value::Dict{{"x", Value(*tensor)}};
  auto copy = DetachedCopy(inputs);
  ASSERT_TRUE(copy.ok());
  EXPECT_TRUE(SameInputs(*copy, inputs));
  tensor->data_as<double>()[0] = 5;  // a component changing its input in place
  EXPECT_FALSE(SameInputs(*copy, inputs));
}

}  // namespace
}  // namespace tesscpp::runtime
