// bridge_benchmark: what tesscpp.torch.apply_tesseract sends for a forward and
// backward pass on vadd64 (apply of {a, b}, then the VJP of c with respect to
// a under a cotangent of ones), made by the C++ client directly. It is the
// floor the Python bridge is measured against (bench/bridge_bench.py).
//
// --spin-us N keeps the CPU busy for N µs after each request, as the bridge's
// Python does between its requests: the control that shows what pauses between
// requests cost on this machine by themselves (an idle server thread, or a
// halted virtual CPU, takes a while to wake).
//
//   bridge_benchmark --url http://127.0.0.1:8000 --elements 1000 --budget 2 [--spin-us 100]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "tesscpp/client.h"

namespace {

using Clock = std::chrono::steady_clock;

// Busy, not asleep: a sleeping client would let its own CPU idle too.
void Spin(std::chrono::microseconds duration) {
  const auto until = Clock::now() + duration;
  while (Clock::now() < until) {
  }
}

tesscpp::Tensor Random(int64_t n, std::mt19937_64& rng) {
  tesscpp::Tensor t = *tesscpp::Tensor::Allocate(tesscpp::Dtype::kFloat64, *tesscpp::Shape::Make({n}));
  std::normal_distribution<double> normal;
  for (int64_t i = 0; i < n; ++i) t.data_as<double>()[i] = normal(rng);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  std::string url;
  int64_t n = 1000;
  double budget_s = 2.0;
  std::chrono::microseconds spin{0};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string arg = argv[i], value = argv[i + 1];
    if (arg == "--url") {
      url = value;
    } else if (arg == "--elements") {
      n = std::stoll(value);
    } else if (arg == "--budget") {
      budget_s = std::stod(value);
    } else if (arg == "--spin-us") {
      spin = std::chrono::microseconds(std::stoll(value));
    } else {
      std::fprintf(stderr, "unknown option %s\n", arg.c_str());
      return 2;
    }
  }
  if (url.empty()) {
    std::fprintf(stderr, "usage: bridge_benchmark --url URL [--elements N] [--budget S] [--spin-us N]\n");
    return 2;
  }
  auto tesseract = tesscpp::Tesseract::FromUrl(url);
  if (!tesseract.ok()) {
    std::fprintf(stderr, "%s\n", tesseract.status().ToString().c_str());
    return 1;
  }
  std::mt19937_64 rng(42);
  const tesscpp::Tensor a = Random(n, rng), b = Random(n, rng);
  tesscpp::Tensor ones = *tesscpp::Tensor::Allocate(tesscpp::Dtype::kFloat64, *tesscpp::Shape::Make({n}));
  std::fill(ones.data_as<double>(), ones.data_as<double>() + n, 1.0);
  const tesscpp::Value inputs = tesscpp::Value::Dict{{"a", a}, {"b", b}};
  const tesscpp::Value cotangent = tesscpp::Value::Dict{{"c", ones}};

  std::vector<double> samples;
  const auto start = Clock::now();
  for (int i = 0;
       i < 2000 && (samples.size() < 3 || Clock::now() - start < std::chrono::duration<double>(budget_s));
       ++i) {
    const auto t0 = Clock::now();
    auto forward = tesseract->Apply(inputs);
    Spin(spin);
    auto backward = tesseract->VectorJacobianProduct(inputs, {"a"}, {"c"}, cotangent);
    Spin(spin);
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (!forward.ok() || !backward.ok()) {
      std::fprintf(stderr, "%s\n", (forward.ok() ? backward.status() : forward.status()).ToString().c_str());
      return 1;
    }
    const tesscpp::Tensor& c = forward->as_dict().at("c").as_tensor();
    const tesscpp::Tensor& grad = backward->as_dict().at("a").as_tensor();
    if (c.data_as<double>()[n - 1] != a.data_as<double>()[n - 1] + b.data_as<double>()[n - 1] ||
        !grad.Equals(ones)) {
      std::fprintf(stderr, "wrong answer from the Tesseract\n");
      return 1;
    }
    if (i > 0) samples.push_back(s);  // the first round warms up
  }
  std::sort(samples.begin(), samples.end());
  std::printf("{\"n\": %lld, \"p50_s\": %.9f, \"min_s\": %.9f, \"rounds\": %zu}\n", static_cast<long long>(n),
              samples[samples.size() / 2], samples.front(), samples.size());
  return 0;
}
