// tesscpp-codec: the array codecs from the shell.
//
//   tesscpp-codec reencode [--encoding json|base64|binref] [--compression lz4]
//                          [--binref-in DIR] [--binref-out DIR] [--no-object-type] FILE
//       Reads a JSON document whose arraydicts (tagged or not) become tensors, and
//       writes it to stdout with every array in the requested encoding. The
//       conformance tests feed its output to tesseract-core's decoders.
//
//   tesscpp-codec demo [--mib N]
//       Encodes and decodes an N MiB float64 array in every encoding and prints
//       sizes and speeds (what `make demo` shows until the server exists).
//
// Exit status: 0 on success, 1 on a codec error (printed to stderr), 2 on usage.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "tesscpp/internal/codec/json.h"
#include "tesscpp/internal/core/buffer_pool.h"

namespace tesscpp::cli {
namespace {

int Usage() {
  std::cerr << "usage: tesscpp-codec reencode [--encoding json|base64|binref] [--compression lz4]\n"
               "                              [--binref-in DIR] [--binref-out DIR] [--no-object-type] FILE\n"
               "       tesscpp-codec demo [--mib N]\n";
  return 2;
}

int Fail(const Status& status) {
  std::cerr << "tesscpp-codec: " << status << "\n";
  return 1;
}

int Reencode(const std::vector<std::string>& args) {
  ArrayEncodeOptions enc;
  JsonReadOptions read;
  read.arrays = ArrayDetection::kShaped;
  std::string binref_out = ".";
  std::string file;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool has_value = i + 1 < args.size();
    if (a == "--encoding" && has_value) {
      auto e = ArrayEncodingFromName(args[++i]);
      if (!e.ok()) return Fail(e.status());
      enc.encoding = *e;
    } else if (a == "--compression" && has_value) {
      auto c = CompressionFromName(args[++i]);
      if (!c.ok()) return Fail(c.status());
      enc.compression = *c;
    } else if (a == "--binref-in" && has_value) {
      read.array_options.binref_dir = args[++i];
    } else if (a == "--binref-out" && has_value) {
      binref_out = args[++i];
    } else if (a == "--no-object-type") {
      enc.object_type = false;
    } else if (file.empty() && a.rfind("--", 0) != 0) {
      file = a;
    } else {
      return Usage();
    }
  }
  if (file.empty()) return Usage();
  std::ifstream in(file, std::ios::binary);
  if (!in) return Fail(Status::NotFound("cannot read '", file, "'"));
  std::ostringstream text;
  text << in.rdbuf();
  auto value = ReadJson(text.str(), read);
  if (!value.ok()) return Fail(value.status());
  BinrefWriter binref(binref_out);
  enc.binref = &binref;
  JsonWriteOptions write;
  write.arrays = enc;
  auto out = WriteJson(*value, write);
  if (!out.ok()) return Fail(out.status());
  std::fwrite(out->data(), 1, static_cast<size_t>(out->size()), stdout);
  return 0;
}

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct DemoCase {
  const char* name;
  ArrayEncoding encoding;
  Compression compression;
};

// Encodes and decodes `tensor` as `c` says, the best of three passes (the
// first warms the pool's blocks and simdjson's parser; steady state is what a
// server sees), and prints its row. Whether the round trip gave it back.
Result<bool> MeasureCase(const DemoCase& c, const Tensor& tensor, const std::string& dir) {
  const Value doc = Value::Dict{{"result", Value(tensor)}};
  auto encode = [&]() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    std::filesystem::create_directories(dir, ec);
    BinrefWriter binref(dir);
    JsonWriteOptions write;
    write.arrays.encoding = c.encoding;
    write.arrays.compression = c.compression;
    write.arrays.binref = &binref;
    return WriteJson(doc, write);
  };
  double encode_s = 1e9, decode_s = 1e9;
  Result<Buffer> body = Status::Internal("not encoded");
  Result<Value> decoded = Status::Internal("not decoded");
  JsonReadOptions read;
  read.arrays = ArrayDetection::kTagged;
  read.array_options.binref_dir = dir;
  for (int pass = 0; pass < 3; ++pass) {
    body = Status::Internal("released");  // let the pool reuse the previous pass's blocks
    decoded = Status::Internal("released");
    auto start = std::chrono::steady_clock::now();
    body = encode();
    encode_s = std::min(encode_s, Seconds(start));
    TESS_RETURN_IF_ERROR(body.status());
    start = std::chrono::steady_clock::now();
    decoded = ReadJson(*body, read);
    decode_s = std::min(decode_s, Seconds(start));
    TESS_RETURN_IF_ERROR(decoded.status());
  }
  const bool same = decoded->as_dict().at("result").as_tensor().Equals(tensor);
  std::error_code ec;
  int64_t wire = body->size();
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    wire += static_cast<int64_t>(entry.file_size());
  }
  const double gb = static_cast<double>(tensor.nbytes()) / 1e9;
  std::printf("%-14s %12lld %12.2f %12.2f %s\n", c.name, static_cast<long long>(wire), gb / encode_s,
              gb / decode_s, same ? "identical" : "DIFFERENT");
  return same;
}

int Demo(const std::vector<std::string>& args) {
  int64_t mib = 64;
  if (args.size() == 2 && args[0] == "--mib") {
    mib = std::atoll(args[1].c_str());
  } else if (!args.empty()) {
    return Usage();
  }
  if (mib <= 0) return Usage();
  const int64_t n = mib * (1 << 20) / 8;
  auto tensor = Tensor::Allocate(Dtype::kFloat64, *Shape::Make({n}));
  if (!tensor.ok()) return Fail(tensor.status());
  // A smooth signal rounded to 3 decimals: realistic values that lz4 can shrink a little.
  for (int64_t i = 0; i < n; ++i) {
    tensor->data_as<double>()[i] = std::round(1000 * std::sin(0.001 * static_cast<double>(i))) / 1000;
  }
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("tesscpp-demo-" + std::to_string(getpid()))).string();
  std::filesystem::create_directories(dir);

  std::printf("tesscpp codec demo: one float64 array of %lld elements (%lld MiB)\n",
              static_cast<long long>(n), static_cast<long long>(mib));
  std::printf("%-14s %12s %12s %12s %s\n", "encoding", "wire bytes", "encode GB/s", "decode GB/s",
              "round trip");
  const DemoCase cases[] = {{"json", ArrayEncoding::kJson, Compression::kNone},
                            {"base64", ArrayEncoding::kBase64, Compression::kNone},
                            {"base64+lz4", ArrayEncoding::kBase64, Compression::kLz4},
                            {"binref", ArrayEncoding::kBinref, Compression::kNone},
                            {"binref+lz4", ArrayEncoding::kBinref, Compression::kLz4}};
  for (const DemoCase& c : cases) {
    Result<bool> same = MeasureCase(c, *tensor, dir);
    if (!same.ok()) return Fail(same.status());
    if (!*same) return 1;
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  const BufferPoolStats stats = BufferPool::Default()->stats();
  std::printf("buffer pool: %lld blocks mapped, %lld allocations served from kept blocks\n",
              static_cast<long long>(stats.fresh_blocks), static_cast<long long>(stats.reused_blocks));
  return 0;
}

}  // namespace
}  // namespace tesscpp::cli

int main(int argc, char** argv) {
  if (argc < 2) return tesscpp::cli::Usage();
  try {
    const std::string command = argv[1];
    const std::vector<std::string> args(argv + 2, argv + argc);
    if (command == "reencode") return tesscpp::cli::Reencode(args);
    if (command == "demo") return tesscpp::cli::Demo(args);
  } catch (const std::exception& e) {  // std::bad_alloc, filesystem errors
    std::cerr << "tesscpp-codec: " << e.what() << "\n";
    return 1;
  }
  return tesscpp::cli::Usage();
}
