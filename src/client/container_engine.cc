// container_engine.cc: the engine command and the meaning of its failures.
#include "tesscpp/internal/client/container_engine.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "tesscpp/internal/codec/json.h"

namespace tesscpp::client {

ContainerEngine ContainerEngine::FromEnvironment() {
  const char* configured = std::getenv("TESSERACT_DOCKER_EXECUTABLE");
  std::istringstream words(configured != nullptr && *configured != '\0' ? configured : "docker");
  ContainerEngine engine;
  for (std::string w; words >> w;) engine.command_.push_back(w);
  return engine;
}

std::vector<std::string> ContainerEngine::Command(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = command_;
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

Result<platform::Finished> ContainerEngine::Run(const std::vector<std::string>& args) const {
  auto finished = platform::RunCaptured(Command(args));
  if (!finished.ok() && finished.status().code() == StatusCode::kNotFound) {
    return Status::Unavailable("no container engine: ", finished.status().message(),
                               " (set TESSERACT_DOCKER_EXECUTABLE to the engine's command)");
  }
  return finished;
}

std::string CurrentUser() { return std::to_string(::getuid()) + ":" + std::to_string(::getgid()); }

std::string GpuRequest(const std::vector<std::string>& gpus) {
  std::string devices;
  for (const std::string& gpu : gpus) devices.append(devices.empty() ? "" : ",").append(gpu);
  return devices == "all" ? devices : "\"device=" + devices + "\"";
}

Status EngineError(const std::string& command_line, int exit_code, const std::string& stderr_text) {
  std::string said = stderr_text;
  while (!said.empty() && (said.back() == '\n' || said.back() == ' ')) said.pop_back();
  const std::string message =
      "`" + command_line + "` exited with status " + std::to_string(exit_code) + ": " + said;
  // The docker and podman CLIs' words for an engine they cannot reach and for
  // a missing object; anything else is the engine refusing the command.
  for (const char* unreachable :
       {"Cannot connect to the Docker daemon", "error during connect", "Is the docker daemon running",
        "unable to connect to Podman", "connection refused"}) {
    if (said.find(unreachable) != std::string::npos) return Status::Unavailable(message);
  }
  for (const char* missing :
       {"No such image", "No such object", "No such container", "not found", "image not known", "no such"}) {
    if (said.find(missing) != std::string::npos) return Status::NotFound(message);
  }
  return Status::Internal(message);
}

Result<std::string> ContainerEngine::RunOk(const std::vector<std::string>& args) const {
  TESS_ASSIGN_OR_RETURN(platform::Finished finished, Run(args));
  if (finished.exit_code != 0)
    return EngineError(platform::CommandLine(Command(args)), finished.exit_code, finished.err);
  return std::move(finished.out);
}

Result<Value> ContainerEngine::Inspect(const std::vector<std::string>& args) const {
  TESS_ASSIGN_OR_RETURN(std::string out, RunOk(args));
  auto parsed = ReadJson(std::string_view(out));
  if (!parsed.ok() || !parsed->is_list() || parsed->as_list().empty()) {
    return Status::DecodeError("`", platform::CommandLine(Command(args)),
                               "` printed no inspect document: ", out);
  }
  return parsed->as_list().front();
}

Status ContainerEngine::RequireTesseractImage(const std::string& image, std::string_view who) const {
  auto inspected = Inspect({"image", "inspect", image});
  if (!inspected.ok()) {
    if (inspected.status().code() == StatusCode::kNotFound) {
      return Status::NotFound(who, ": no image '", image, "' in the engine (", Describe(),
                              "); build it (tesscpp build) or load it (docker load)");
    }
    return inspected.status().WithContext(std::string(who) + ": asking the engine " + Describe() +
                                          " about the image '" + image + "'");
  }
  const Value* config = inspected->is_dict() ? inspected->as_dict().find("Config") : nullptr;
  const Value* env = config != nullptr && config->is_dict() ? config->as_dict().find("Env") : nullptr;
  const bool tesseract = env != nullptr && env->is_list() &&
                         std::any_of(env->as_list().begin(), env->as_list().end(), [](const Value& entry) {
                           return entry.is_string() && entry.as_string().rfind("TESSERACT_NAME=", 0) == 0;
                         });
  if (!tesseract) {
    return Status::InvalidArgument(who, ": '", image,
                                   "' is not a Tesseract image (its environment has no TESSERACT_NAME)");
  }
  return Status::OK();
}

std::string ContainerEngine::Describe() const {
  const char* host = std::getenv("DOCKER_HOST");
  return platform::CommandLine(command_) + " (DOCKER_HOST=" + (host != nullptr ? host : "unset") + ")";
}

}  // namespace tesscpp::client
