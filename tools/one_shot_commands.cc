#include "one_shot_commands.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <string_view>

namespace tesscpp::cli {

int RunOnce(const CommonOptions& o, const std::string& endpoint, const std::string& payload_arg) {
  auto opened = OpenComponent(o);
  if (!opened.ok()) return Fail(opened.status());
  const auto& runtime = opened->runtime;
  tesscpp::RuntimeRequest request;
  request.target = "/" + endpoint;
  if (endpoint == "health" || endpoint == "openapi.json") {
    request.method = "GET";
    if (Status logs = runtime->MakeOneShotLogs(); !logs.ok()) return Fail(logs);
  } else {
    request.method = "POST";
    auto payload = ReadPayload(payload_arg);
    if (!payload.ok()) return Fail(payload.status());
    request.body = tesscpp::Buffer::FromString(*std::move(payload));
    request.accept = "application/" + runtime->config().output_format;
    request.content_type = "application/json";
    // As tesseract-runtime: the output directory is made, and the call's
    // logs/ go into it.
    std::error_code ec;
    std::filesystem::create_directories(runtime->config().output_path, ec);
  }
  const tesscpp::RuntimeResponse response = runtime->Handle(request);
  // tesseract-runtime streams the run's log to stderr as well.
  if (const auto log = std::filesystem::path(runtime->config().output_path) / "logs" / "tesseract.log";
      request.method == "POST" && std::filesystem::exists(log)) {
    std::ifstream text(log, std::ios::binary);
    std::cerr << text.rdbuf();
  }
  const std::string_view body = response.body.string_view();
  if (response.status != 200) {
    std::cerr << "tesscpp: " << endpoint << " failed with HTTP status " << response.status << ":\n"
              << body << "\n";
    return 2;
  }
  const std::string& file = runtime->config().output_file;
  if (!file.empty()) {
    const auto path = std::filesystem::path(runtime->config().output_path) / file;
    std::ofstream out(path, std::ios::binary);
    out.write(body.data(), static_cast<std::streamsize>(body.size()));
    if (!out) return Fail(Status::IoError("cannot write '", path.string(), "'"));
    return 0;
  }
  // The bytes alone, as tesseract-runtime writes them (no newline after).
  std::cout.write(body.data(), static_cast<std::streamsize>(body.size()));
  std::cout.flush();
  return 0;
}

int CheckComponent(const CommonOptions& o) {
  auto opened = OpenComponent(o);
  if (!opened.ok()) return Fail(opened.status());
  tesscpp::RuntimeRequest request;
  request.method = "GET";
  request.target = "/openapi.json";
  const tesscpp::RuntimeResponse response = opened->runtime->Handle(request);
  if (response.status != 200) {
    std::cerr << "tesscpp: the OpenAPI document of " << opened->name << " failed with HTTP status "
              << response.status << ":\n"
              << response.body.string_view() << "\n";
    return 1;
  }
  std::cout << "✅ Tesseract API check successful ✅" << std::endl;
  return 0;
}

}  // namespace tesscpp::cli
