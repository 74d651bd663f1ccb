#include "runtime_options.h"

#include <cstdlib>
#include <string>

#include "tesscpp/internal/codec/array_encoding.h"
#include "tesscpp/internal/gpu_transport/gpu_transports.h"

namespace tesscpp::cli {
namespace {

std::string OutputFormats() { return OutputFormatChoices(NameList::kPlain); }
std::string Compressions() { return CompressionChoices(NameList::kPlain); }
std::string GpuTransports() { return gpu_transport::TransportChoices(NameList::kPlain); }

// `tesseract-runtime --help`.
constexpr RuntimeSetting kSettings[] = {
    {"--name", "TESSERACT_RUNTIME_NAME", false, "The Tesseract's name (title of its documents)"},
    {"--description", "TESSERACT_RUNTIME_DESCRIPTION", false, "The Tesseract's description"},
    {"--version", "TESSERACT_RUNTIME_VERSION", false, "The Tesseract's version"},
    {"--debug", "TESSERACT_RUNTIME_DEBUG", true, "Tracebacks in 500 responses and the /test endpoint"},
    {"--debugpy-host", "TESSERACT_RUNTIME_DEBUGPY_HOST", false,
     "Accepted as tesseract-runtime's; tesscpp starts no debugpy"},
    {"--debugpy-port", "TESSERACT_RUNTIME_DEBUGPY_PORT", false,
     "Accepted as tesseract-runtime's; tesscpp starts no debugpy"},
    {"--input-path", "TESSERACT_RUNTIME_INPUT_PATH", false,
     "Directory binref inputs and InputPaths are read from"},
    {"--output-path", "TESSERACT_RUNTIME_OUTPUT_PATH", false,
     "Directory for run directories and binref outputs"},
    {"--output-format", "TESSERACT_RUNTIME_OUTPUT_FORMAT", false, "How arrays are written", &OutputFormats},
    {"--output-file", "TESSERACT_RUNTIME_OUTPUT_FILE", false,
     "One-shot commands: write the answer to this file"},
    {"--compression", "TESSERACT_RUNTIME_COMPRESSION", false, "Of base64 and binref buffers", &Compressions},
    {"--mlflow-tracking-uri", "TESSERACT_RUNTIME_MLFLOW_TRACKING_URI", false,
     "Track runs on this MLflow server"},
    {"--mlflow-run-extra-args", "TESSERACT_RUNTIME_MLFLOW_RUN_EXTRA_ARGS", false,
     "mlflow.start_run's keyword arguments, a dict"},
    {"--profiling", "TESSERACT_RUNTIME_PROFILING", true, "Timings of each call into its run log"},
    {"--tracing", "TESSERACT_RUNTIME_TRACING", true, "One line per call on stderr"},
    {"--gpu-transport", "TESSERACT_RUNTIME_GPU_TRANSPORT", false, "How CUDA arrays go in and out",
     &GpuTransports},
    {"--cuda-ipc-pool-fraction", "TESSERACT_RUNTIME_CUDA_IPC_POOL_FRACTION", false,
     "Share of GPU memory cuda_ipc keeps for reuse"},
};

}  // namespace

std::span<const RuntimeSetting> RuntimeSettings() { return kSettings; }

void ReadServeEnvironment() {
  // CLI11 reads one variable per option; --num-workers reads ours.
  if (const char* value = std::getenv("TESSERACT_RUNTIME_SERVE_NUM_WORKERS")) {
    ::setenv("TESSERACT_NUM_WORKERS", value, 1);
  }
}

}  // namespace tesscpp::cli
