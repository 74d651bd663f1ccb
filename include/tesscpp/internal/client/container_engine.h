// container_engine.h: the container engine's command line (docker, podman),
// as tesseract-core drives it (internal).
#pragma once

#include <string>
#include <vector>

#include "tesscpp/internal/platform/subprocess.h"
#include "tesscpp/result.h"
#include "tesscpp/value.h"

namespace tesscpp::client {

/// \brief The engine command: $TESSERACT_DOCKER_EXECUTABLE split into words,
/// as tesseract-core splits it ("podman", "sudo docker"), default "docker".
/// It reaches the engine $DOCKER_HOST names, like every docker client.
/// The CLI rather than the Engine API over its socket: the CLI is what knows
/// DOCKER_HOST's forms (unix, tcp with TLS, ssh), contexts and podman.
class ContainerEngine {
 public:
  static ContainerEngine FromEnvironment();

  /// \brief The engine command followed by `args`.
  std::vector<std::string> Command(const std::vector<std::string>& args) const;

  /// \brief Runs the engine with `args`, output captured.
  Result<platform::Finished> Run(const std::vector<std::string>& args) const;

  /// \brief Runs the engine with `args`; its stdout, or an error naming the
  /// command and what the engine said: kUnavailable when no engine answers,
  /// kNotFound when it names no such object, kInternal otherwise.
  Result<std::string> RunOk(const std::vector<std::string>& args) const;

  /// \brief The first document of `inspect` output for `args` (e.g. {"image",
  /// "inspect", tag}), parsed.
  Result<Value> Inspect(const std::vector<std::string>& args) const;

  /// \brief OK when the engine has `image` and it is a Tesseract image (its
  /// Config.Env has TESSERACT_NAME, tesseract-core's test); kNotFound,
  /// kInvalidArgument or the engine's error otherwise. `who` prefixes messages.
  Status RequireTesseractImage(const std::string& image, std::string_view who) const;

  /// \brief "docker (DOCKER_HOST=...)", for messages.
  std::string Describe() const;

 private:
  std::vector<std::string> command_;
};

/// \brief "uid:gid" of this process: the user containers run as unless told
/// otherwise, as tesseract-core runs them (files they write are the caller's).
std::string CurrentUser();

/// \brief The engine's --gpus value for `gpus`: "all", or "device=0,1" quoted
/// as its CSV syntax needs.
std::string GpuRequest(const std::vector<std::string>& gpus);

/// \brief The error an engine failure means, from its stderr (see RunOk).
Status EngineError(const std::string& command_line, int exit_code, const std::string& stderr_text);

}  // namespace tesscpp::client
