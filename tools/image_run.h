// image_run.h: `tesscpp run`, one command of an image in a container of its
// own (tesseract-core's `tesseract run`).
#pragma once

#include <string>
#include <vector>

#include "tesscpp/result.h"

namespace tesscpp::cli {

struct ImageRunOptions {
  std::string image;
  /// The command and its arguments, e.g. {"apply", "@in.json"}. An argument
  /// "@<file>" naming a file here is mounted read-only and renamed to its
  /// path in the container.
  std::vector<std::string> command;
  std::vector<std::string> volumes;  ///< "source:target[:ro|rw]"
  std::string input_path;            ///< mounted read-only at /tesseract/input_data
  std::string output_path;           ///< mounted at /tesseract/output_data (created)
  std::vector<std::string> env;      ///< "KEY=value"
  std::vector<std::string> gpus;     ///< "all" or device ids
  std::string user;                  ///< default: this process's uid:gid
  std::string network;
};

/// \brief Runs the command in a container removed when it ends, its output
/// on ours; returns its exit status. The engine is as for FromImage.
Result<int> RunImage(const ImageRunOptions& options);

}  // namespace tesscpp::cli
