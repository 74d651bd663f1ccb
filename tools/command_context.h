// command_context.h: what the tesscpp commands share (cli.cc parses their
// options and calls them): the options every component command takes, the
// component they open, where its name and payload come from, and how a
// failure is reported.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "cli.h"
#include "tesscpp/internal/runtime/runtime.h"
#include "tesscpp/result.h"
#include "tesscpp/status.h"
#include "tesscpp/value.h"

namespace tesscpp::cli {

struct CommonOptions {
  std::string library;
  std::optional<std::string> output_format;
  std::optional<std::string> output_path;
  std::optional<std::string> input_path;
  std::optional<std::string> output_file;
  std::optional<std::string> gpu_transport;
  bool debug = false;
  bool one_shot = false;  // a one-shot endpoint command (RuntimeConfig::one_shot)
};

/// \brief Prints "tesscpp: <status>" on stderr and returns exit status 1.
int Fail(const Status& status);

// What a command serves: its runtime, the component's name, and whatever
// keeps the component alive (its library).
struct Opened {
  std::string name;
  std::unique_ptr<tesscpp::Runtime> runtime;
  Status forkable;  // ServedComponent::Forkable of what is served
};

// The process's argv, for handing a Python module's command to Python, and
// the Python host when this process is one.
struct Process {
  int argc = 0;
  char** argv = nullptr;
  const PythonHost* host = nullptr;
};
Process& ThisProcess();

// The environment's TESSERACT_* settings with the command line on top, and the
// component they apply to: a library loaded here, or a tesseract_api.py opened
// by the Python host (this command is handed to one first when there is none).
Result<Opened> OpenComponent(const CommonOptions& o);

// An image names its component once, in its environment (TESSCPP_COMPONENT),
// so that `<image> serve --port 8000 ...` (as tesseract-core starts
// containers) and `<image> apply @in.json` need no path: with it set, a
// command given one positional where it takes a component and a payload
// reads that one as the payload. `payload` is null for commands without one.
Status ResolveComponent(std::string& component, std::string* payload);

// A bearer token: the first line of `file`, else $TESSERACT_API_TOKEN, else
// none. Never an argument: the command lines of processes are public (ps).
Result<std::string> ReadToken(const std::string& file);

// A payload given as JSON text or as @path.
Result<std::string> ReadPayload(const std::string& arg);

// A payload for the client: arraydicts in it become tensors, which the client
// encodes as asked.
Result<tesscpp::Value> ReadClientPayload(const std::string& arg);

}  // namespace tesscpp::cli
