// client_benchmark: no-op applies through tesscpp's client against a served
// noop Tesseract (tesscpp serve or tesseract-runtime serve), one encoding and
// a range of sizes per run. Prints one JSON object per size; bench/client_bench.py
// runs it next to tesseract-core's SDK on the same servers and makes the table.
//
//   client_benchmark --url http://127.0.0.1:8000 --format json+base64 --min-exp 2 --max-exp 7
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>

#include "tesscpp/client.h"

namespace {

using Clock = std::chrono::steady_clock;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string url, format = "json+base64", compression, dtype = "float64";
  tesscpp::ClientOptions options;
  int min_exp = 2, max_exp = 7;
  int64_t elements = 0;
  double budget_s = 2.0;
  // --name value pairs (and the --pool flag); CLI11 stays in the CLI's one TU.
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--pool") {
      options.binref_pool = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s needs a value\n", arg.c_str());
      return 2;
    }
    const std::string value = argv[++i];
    if (arg == "--url") {
      url = value;
    } else if (arg == "--format") {
      format = value;
    } else if (arg == "--compression") {
      compression = value;
    } else if (arg == "--dtype") {
      dtype = value;
    } else if (arg == "--server-output-path") {
      options.server_output_path = value;
    } else if (arg == "--server-input-path") {
      options.server_input_path = value;
    } else if (arg == "--min-exp") {
      min_exp = std::stoi(value);
    } else if (arg == "--max-exp") {
      max_exp = std::stoi(value);
    } else if (arg == "--elements") {
      elements = std::stoll(value);
    } else if (arg == "--budget") {
      budget_s = std::stod(value);
    } else {
      std::fprintf(stderr, "unknown option %s\n", arg.c_str());
      return 2;
    }
  }
  if (url.empty() || (dtype != "float64" && dtype != "float32")) {
    std::fprintf(
        stderr,
        "usage: client_benchmark --url URL [--format F] [--compression lz4] [--dtype float64|float32] "
        "[--server-output-path D] [--server-input-path D] [--pool] [--min-exp N --max-exp M | --elements N] "
        "[--budget S]\n");
    return 2;
  }

  options.encoding.output_format = format;
  if (!compression.empty()) options.encoding.compression = compression;
  auto tesseract = tesscpp::Tesseract::FromUrl(url, options);
  if (!tesseract.ok()) {
    std::fprintf(stderr, "%s\n", tesseract.status().ToString().c_str());
    return 1;
  }
  std::vector<int64_t> sizes;
  if (elements > 0) {
    sizes.push_back(elements);
  } else {
    for (int e = min_exp; e <= max_exp; ++e) sizes.push_back(static_cast<int64_t>(std::pow(10, e)));
  }
  const tesscpp::Dtype type = dtype == "float32" ? tesscpp::Dtype::kFloat32 : tesscpp::Dtype::kFloat64;
  std::mt19937_64 rng(0);
  int run = 0;
  for (const int64_t n : sizes) {
    auto x = tesscpp::Tensor::Allocate(type, *tesscpp::Shape::Make({n}));
    for (auto& byte : x->bytes()) byte = static_cast<uint8_t>(rng() & 0x3F);  // finite values of either dtype
    const tesscpp::Value inputs = tesscpp::Value::Dict{{"x", *x}};
    std::vector<double> samples;
    const auto start = Clock::now();
    for (int i = 0;
         i < 2000 && (samples.size() < 4 || Clock::now() - start < std::chrono::duration<double>(budget_s));
         ++i) {
      const std::string run_id = "bench-" + std::to_string(run++);
      const auto t0 = Clock::now();
      auto out = tesseract->Apply(inputs, run_id);
      const double s = std::chrono::duration<double>(Clock::now() - t0).count();
      if (!out.ok() || !out->as_dict().at("x").as_tensor().Equals(*x)) {
        std::fprintf(stderr, "apply of %lld elements failed or changed the array: %s\n",
                     static_cast<long long>(n), out.ok() ? "different" : out.status().ToString().c_str());
        return 1;
      }
      if (i > 0) samples.push_back(s);            // the first call warms up
      if (!options.server_output_path.empty()) {  // binref outputs: the client's to delete (untimed)
        std::error_code ignored;
        std::filesystem::remove_all(std::filesystem::path(options.server_output_path) / ("run_" + run_id),
                                    ignored);
      }
    }
    std::printf("{\"n\": %lld, \"p50_s\": %.9f, \"min_s\": %.9f, \"calls\": %zu}\n",
                static_cast<long long>(n), Median(samples), *std::min_element(samples.begin(), samples.end()),
                samples.size());
    std::fflush(stdout);
  }
  return 0;
}
