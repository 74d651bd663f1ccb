// codec_benchmark: base64, lz4, JSON scan and whole-array encode/decode, each
// next to memcpy of the same bytes in the same run (bench/README.md explains how
// to read the numbers; `make bench` compares them with the Python stack).
#include <benchmark/benchmark.h>
#include <simdjson.h>

#include <unistd.h>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>

#include "codec/base64.h"
#include "codec/lz4.h"
#include "tesscpp/internal/codec/json.h"
#include "tesscpp/internal/core/buffer_pool.h"

namespace tesscpp {
namespace {

constexpr int64_t kCache = int64_t{1} << 20;   // fits in L2
constexpr int64_t kDram = int64_t{256} << 20;  // far beyond the LLC

// A pooled buffer whose pages are already touched: the benchmarks measure the
// steady state, not first-touch page faults (which the pool exists to avoid).
Buffer WarmBuffer(int64_t n) {
  Buffer b = *BufferPool::Default()->Allocate(n);
  std::memset(b.data(), 0, static_cast<size_t>(n));
  return b;
}

Buffer RandomBytes(int64_t n, uint32_t seed = 1) {
  Buffer b = *BufferPool::Default()->Allocate(n);
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i + 8 <= n; i += 8) {
    const uint64_t v = rng();
    std::memcpy(b.data() + i, &v, 8);
  }
  return b;
}

// Random normal float32, or (quantized) U(0,1) rounded to 2 decimals: the two
// data kinds: incompressible, and 100 distinct values.
Tensor Float32Tensor(int64_t bytes, bool quantized = false) {
  Tensor t = *Tensor::Allocate(Dtype::kFloat32, *Shape::Make({bytes / 4}));
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  std::uniform_real_distribution<float> uniform;
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    t.data_as<float>()[i] = quantized ? std::round(uniform(rng) * 100) / 100 : normal(rng);
  }
  return t;
}

void SetBytes(benchmark::State& state, int64_t bytes) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * bytes);
}

// Fresh large mappings per iteration in steady state: the point of the pool is
// that this stays 0.
void CountFreshBlocks(benchmark::State& state, int64_t before) {
  state.counters["fresh_blocks_per_iter"] =
      benchmark::Counter(static_cast<double>(BufferPool::Default()->stats().fresh_blocks - before) /
                         static_cast<double>(state.iterations()));
}

void BM_Memcpy(benchmark::State& state) {
  const int64_t n = state.range(0);
  Buffer src = RandomBytes(n), dst = WarmBuffer(n);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), static_cast<size_t>(n));
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  SetBytes(state, n);
}
BENCHMARK(BM_Memcpy)->Arg(kCache)->Arg(kDram)->Unit(benchmark::kMillisecond);

const codec::Base64Codec& Codec(int64_t which) {
  if (which == 1 && codec::Avx2Base64() != nullptr) return *codec::Avx2Base64();
  return codec::ScalarBase64();
}

// Arguments: bytes, codec (0 scalar, 1 avx2). Throughput is of binary bytes.
void BM_Base64Encode(benchmark::State& state) {
  const int64_t n = state.range(0);
  const codec::Base64Codec& codec = Codec(state.range(1));
  state.SetLabel(std::string(codec.name));
  Buffer src = RandomBytes(n);
  Buffer dst = WarmBuffer(static_cast<int64_t>(codec::Base64EncodedSize(n)));
  for (auto _ : state) {
    codec.encode(src.span(), reinterpret_cast<char*>(dst.data()));
    benchmark::ClobberMemory();
  }
  SetBytes(state, n);
}

void BM_Base64Decode(benchmark::State& state) {
  const int64_t n = state.range(0);
  const codec::Base64Codec& codec = Codec(state.range(1));
  state.SetLabel(std::string(codec.name));
  Buffer src = RandomBytes(n);
  std::string text(codec::Base64EncodedSize(n), '\0');
  codec.encode(src.span(), text.data());
  Buffer dst = WarmBuffer(n);
  for (auto _ : state) {
    if (!codec.decode(text, dst.data()).ok()) state.SkipWithError("decode failed");
    benchmark::ClobberMemory();
  }
  SetBytes(state, n);
}
BENCHMARK(BM_Base64Encode)->ArgsProduct({{kCache, kDram}, {0, 1}})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Base64Decode)->ArgsProduct({{kCache, kDram}, {0, 1}})->Unit(benchmark::kMillisecond);

// Arguments: bytes, data (0 random float32, 1 float32 rounded to 2 decimals).
void BM_Lz4Compress(benchmark::State& state) {
  const Tensor t = Float32Tensor(state.range(0), state.range(1) == 1);
  state.SetLabel(state.range(1) == 1 ? "quantized" : "random");
  const int64_t before = BufferPool::Default()->stats().fresh_blocks;
  int64_t compressed = 0;
  for (auto _ : state) {
    auto frame = codec::Lz4FrameCompress(t.bytes());
    compressed = frame->size();
    benchmark::DoNotOptimize(frame->data());
  }
  SetBytes(state, t.nbytes());
  state.counters["ratio"] = static_cast<double>(t.nbytes()) / static_cast<double>(compressed);
  CountFreshBlocks(state, before);
}

void BM_Lz4Decompress(benchmark::State& state) {
  const Tensor t = Float32Tensor(state.range(0), state.range(1) == 1);
  state.SetLabel(state.range(1) == 1 ? "quantized" : "random");
  const Buffer frame = *codec::Lz4FrameCompress(t.bytes());
  Buffer out = WarmBuffer(t.nbytes());
  for (auto _ : state) {
    if (!codec::Lz4FrameDecompress(frame.span(), out.span()).ok()) state.SkipWithError("lz4 failed");
    benchmark::ClobberMemory();
  }
  SetBytes(state, t.nbytes());
}
constexpr int64_t kLz4Size = int64_t{64} << 20;
BENCHMARK(BM_Lz4Compress)->ArgsProduct({{kLz4Size}, {0, 1}})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Lz4Decompress)->ArgsProduct({{kLz4Size}, {0, 1}})->Unit(benchmark::kMillisecond);

// An apply-style response body: one float32 array of `bytes` as base64.
Buffer Base64Body(int64_t bytes) {
  JsonWriteOptions write;
  write.arrays.encoding = ArrayEncoding::kBase64;
  return *WriteJson(Value::Dict{{"result", Value(Float32Tensor(bytes))}}, write);
}

// The structural scan alone: find data.buffer and its length, decode nothing.
// Throughput is of body bytes.
void BM_JsonScanBase64Body(benchmark::State& state) {
  const Buffer body = Base64Body(state.range(0));
  simdjson::ondemand::parser parser;
  for (auto _ : state) {
    auto doc = parser.iterate(reinterpret_cast<const char*>(body.data()), static_cast<size_t>(body.size()),
                              static_cast<size_t>(body.size() + body.readable_tail()));
    std::string_view token = doc["result"]["data"]["buffer"].raw_json_token();
    benchmark::DoNotOptimize(token.size());
  }
  SetBytes(state, body.size());
}
BENCHMARK(BM_JsonScanBase64Body)->Arg(kDram)->Unit(benchmark::kMillisecond);

// Whole arrays through the public API, as a server decodes a request and
// encodes a response. Throughput is of array bytes. Argument: encoding
// (0 json, 1 base64, 2 base64+lz4, 3 binref on /dev/shm, 4 binref on disk).
struct EncodingCase {
  const char* label;
  ArrayEncoding encoding;
  Compression compression;
  const char* dir;
};
const EncodingCase kCases[] = {
    {"json", ArrayEncoding::kJson, Compression::kNone, nullptr},
    {"base64", ArrayEncoding::kBase64, Compression::kNone, nullptr},
    {"base64+lz4", ArrayEncoding::kBase64, Compression::kLz4, nullptr},
    {"binref /dev/shm", ArrayEncoding::kBinref, Compression::kNone, "/dev/shm"},
    {"binref tmp", ArrayEncoding::kBinref, Compression::kNone, "/var/tmp"},
};

std::string ScratchDir(const char* base) {
  const std::string dir = std::string(base) + "/tesscpp-bench-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  return dir;
}

void BM_ArrayEncode(benchmark::State& state) {
  const EncodingCase& c = kCases[state.range(1)];
  state.SetLabel(c.label);
  const Value doc = Value::Dict{{"result", Value(Float32Tensor(state.range(0)))}};
  const std::string dir = c.dir != nullptr ? ScratchDir(c.dir) : "";
  JsonWriteOptions write;
  write.arrays.encoding = c.encoding;
  write.arrays.compression = c.compression;
  auto fresh_dir = [&dir] {  // each response starts a new file, as a server run does
    if (dir.empty()) return;
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  };
  fresh_dir();
  {
    BinrefWriter warm_binref(dir);
    write.arrays.binref = &warm_binref;
    auto warm = WriteJson(doc, write);  // the pool keeps its blocks for the loop
  }
  const int64_t before = BufferPool::Default()->stats().fresh_blocks;
  for (auto _ : state) {
    state.PauseTiming();
    fresh_dir();
    BinrefWriter binref(dir);
    write.arrays.binref = &binref;
    state.ResumeTiming();
    auto body = WriteJson(doc, write);
    if (!body.ok()) state.SkipWithError(body.status().ToString().c_str());
  }
  SetBytes(state, state.range(0));
  CountFreshBlocks(state, before);
  if (!dir.empty()) std::filesystem::remove_all(dir);
}

void BM_ArrayDecode(benchmark::State& state) {
  const EncodingCase& c = kCases[state.range(1)];
  state.SetLabel(c.label);
  const std::string dir = c.dir != nullptr ? ScratchDir(c.dir) : "";
  BinrefWriter binref(dir);
  JsonWriteOptions write;
  write.arrays.encoding = c.encoding;
  write.arrays.compression = c.compression;
  write.arrays.binref = &binref;
  const Buffer body = *WriteJson(Value::Dict{{"result", Value(Float32Tensor(state.range(0)))}}, write);
  JsonReadOptions read;
  read.arrays = ArrayDetection::kTagged;
  read.array_options.binref_dir = dir;
  { auto warm = ReadJson(body, read); }
  const int64_t before = BufferPool::Default()->stats().fresh_blocks;
  for (auto _ : state) {
    auto value = ReadJson(body, read);
    if (!value.ok()) state.SkipWithError(value.status().ToString().c_str());
  }
  SetBytes(state, state.range(0));
  CountFreshBlocks(state, before);
  if (!dir.empty()) std::filesystem::remove_all(dir);
}
BENCHMARK(BM_ArrayEncode)->ArgsProduct({{kDram}, {1, 2, 3, 4}})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ArrayDecode)->ArgsProduct({{kDram}, {1, 2, 3, 4}})->Unit(benchmark::kMillisecond)->UseRealTime();
// json is ~50x slower per byte: measure it on 4 MiB.
BENCHMARK(BM_ArrayEncode)->Args({int64_t{4} << 20, 0})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ArrayDecode)->Args({int64_t{4} << 20, 0})->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace tesscpp

BENCHMARK_MAIN();
