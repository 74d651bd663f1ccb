#include "tesscpp/internal/component/run_logger.h"

namespace tesscpp::component {
namespace {
// Per thread, as tesseract-core keeps its backend in a ContextVar: concurrent
// calls on the server's threads each log into their own run.
thread_local RunLogger* current = nullptr;
thread_local std::string current_directory;
}  // namespace

RunLogger* CurrentRunLogger() { return current; }
const std::string& CurrentOutputDirectory() { return current_directory; }

ScopedRunLogger::ScopedRunLogger(RunLogger* logger, std::string output_directory)
    : previous_(current), previous_directory_(std::move(current_directory)) {
  current = logger;
  current_directory = std::move(output_directory);
}
ScopedRunLogger::~ScopedRunLogger() {
  current = previous_;
  current_directory = std::move(previous_directory_);
}

}  // namespace tesscpp::component
