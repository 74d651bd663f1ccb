#include "tesscpp/internal/run_logger.h"

namespace tesscpp::component {
namespace {
// Per thread, as tesseract-core keeps its backend in a ContextVar: concurrent
// calls on the server's threads each log into their own run.
thread_local RunLogger* current = nullptr;
}  // namespace

RunLogger* CurrentRunLogger() { return current; }

ScopedRunLogger::ScopedRunLogger(RunLogger* logger) : previous_(current) { current = logger; }
ScopedRunLogger::~ScopedRunLogger() { current = previous_; }

}  // namespace tesscpp::component
