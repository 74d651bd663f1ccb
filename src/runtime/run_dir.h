// run_dir.h: the run directory of one endpoint call and the capture of what
// the endpoint prints.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "tesscpp/internal/platform/file.h"
#include "tesscpp/result.h"

namespace tesscpp::runtime {

/// \brief Makes the output directory, parents included, as tesseract-runtime
/// does, and proves it can hold run directories (a file is made and removed
/// in it). kInvalidArgument naming TESSERACT_OUTPUT_PATH and the path where it
/// cannot: better refused at start-up than a 500 on every call.
Status PrepareOutputDirectory(const std::string& path);

/// \brief Creates `<dir>/logs/` with an empty tesseract.log and, when runs
/// are tracked in files (`tracked_in_files`, no MLflow server), metrics.csv
/// (its header row) and artifacts/, as tesseract-core's backends do; returns
/// tesseract.log open for appending.
Result<platform::Fd> CreateRunDirectory(const std::string& dir, bool tracked_in_files = true);

/// \brief While alive, file descriptors 1 and 2 of the process write to
/// `log` (a run's tesseract.log), and are restored afterwards. Redirection is
/// process-wide, so captures are serialised by a lock held for the capture's
/// lifetime: endpoint calls with capture run one at a time, as they do in one
/// tesseract-core worker.
class StdioCapture {
 public:
  static Result<std::unique_ptr<StdioCapture>> Start(platform::Fd log);
  ~StdioCapture();
  StdioCapture(const StdioCapture&) = delete;
  StdioCapture& operator=(const StdioCapture&) = delete;

 private:
  StdioCapture() = default;
  std::unique_lock<std::mutex> lock_;
  int saved_stdout_ = -1;
  int saved_stderr_ = -1;
};

}  // namespace tesscpp::runtime
