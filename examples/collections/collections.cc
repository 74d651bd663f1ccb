// collections: lists and dicts of arrays in and out — the containers a
// client must encode and decode leaf by leaf. Its apply prints two lines, the
// last without a newline, for clients that stream run logs.
#include <cmath>
#include <cstdio>

#include "tesscpp/component.h"

using namespace tesscpp;  // NOLINT(google-build-using-namespace): an example reads better without prefixes

namespace {

Component MakeCollections() {
  Component c("collections", "0.1.0", "Sums a list of vectors and scales it by named weights.\n");
  const ArrayOf<double> vector{{kAnyDim}};
  auto arrays = c.inputs().Add("arrays", ListOf<ArrayOf<double>>{vector}, {.doc = "Vectors of one length."});
  auto weights = c.inputs().Add("weights", DictOf<ArrayOf<double>>{vector}, {.doc = "Named weight vectors."});
  auto scale = c.inputs().Add("scale", Float{}, {.doc = "Factor of the sum.", .default_value = Value(1.0)});
  c.inputs().Check([=](const ModelView& in) {
    const auto list = in[arrays];
    if (list.size() == 0) return Status::InvalidArgument("arrays must not be empty");
    for (size_t i = 0; i < list.size(); ++i) {
      if (list[i].size() != list[0].size()) return Status::InvalidArgument("arrays must all have one length");
    }
    Status same = Status::OK();
    in[weights].ForEach([&](const std::string& key, const ArrayRef<double>& w) {
      if (same.ok() && w.size() != list[0].size()) {
        same = Status::InvalidArgument("weights['", key, "'] must have the length of the arrays");
      }
    });
    return same;
  });

  auto total = c.outputs().Add("total", vector, {.doc = "scale times the sum of the arrays."});
  auto weighted =
      c.outputs().Add("weighted", DictOf<ArrayOf<double>>{vector}, {.doc = "The total times each weight."});
  auto parts = c.outputs().Add("parts", ListOf<ArrayOf<double>>{vector}, {.doc = "Each array times scale."});

  c.Apply(
      [=](const ModelView& in, Record& out) -> Status {
        const auto list = in[arrays];
        const double factor = in[scale];
        const auto n = static_cast<int64_t>(list[0].size());
        std::printf("collections: summing %zu arrays of length %lld\n", list.size(),
                    static_cast<long long>(n));
        TESS_ASSIGN_OR_RETURN(auto sum, out.NewArray<double>(total, {n}));
        std::fill(sum.begin(), sum.end(), 0.0);
        Value::List scaled;
        for (size_t i = 0; i < list.size(); ++i) {
          TESS_ASSIGN_OR_RETURN(auto part, NewTensor<double>({n}));
          for (int64_t k = 0; k < n; ++k) {
            part.second[k] = factor * list[i][k];
            sum[k] += part.second[k];
          }
          scaled.emplace_back(std::move(part.first));
        }
        out.Set(parts, Value(std::move(scaled)));
        for (double v : sum) {
          if (!std::isfinite(v)) return Status::InvalidArgument("the sum of the arrays is not finite");
        }
        Value::Dict products;
        Status status = Status::OK();
        in[weights].ForEach([&](const std::string& key, const ArrayRef<double>& w) {
          auto product = NewTensor<double>({n});
          if (!product.ok()) {
            status = product.status();
            return;
          }
          for (int64_t k = 0; k < n; ++k) product->second[k] = w[k] * sum[k];
          products.set(key, Value(std::move(product->first)));
        });
        TESS_RETURN_IF_ERROR(status);
        out.Set(weighted, Value(std::move(products)));
        std::printf("collections: done");
        std::fflush(stdout);
        return Status::OK();
      },
      "Sums the arrays, scales the sum, and multiplies it by every weight.");
  return c;
}

}  // namespace

TESSCPP_COMPONENT(MakeCollections)
