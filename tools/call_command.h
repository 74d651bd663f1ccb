// call_command.h: `tesscpp call`, any endpoint of any served Tesseract
// (tesscpp or tesseract-core) through the client.
#pragma once

#include <optional>
#include <string>

#include "tesscpp/client.h"

namespace tesscpp::cli {

struct CallOptions {
  std::string url;
  std::string endpoint;
  std::string payload;
  tesscpp::ClientOptions client;
  std::optional<std::string> run_id;
  std::string print_arrays = "auto";
};

// The names `tesscpp call` takes: the endpoints and "openapi".
std::string CallableEndpoints();

int Call(const CallOptions& o);

}  // namespace tesscpp::cli
