// runtime_options.h: tesseract-runtime's own command line, accepted as it is.
//
// tesseract-runtime takes its settings before the command
// (`tesseract-runtime --output-path out --debug serve --port 8001`), each
// also from TESSERACT_RUNTIME_<SETTING>, and its serve command reads
// TESSERACT_RUNTIME_SERVE_HOST/PORT/NUM_WORKERS. tesscpp takes the same
// options in the same place (cli.cc registers this table): a given option
// becomes TESSERACT_RUNTIME_<X> in this process's environment before the
// command runs, which is where RuntimeConfig::FromEnvironment reads it (and
// where the Python host a module is handed to, and its workers, find it).
// No CLI11 here: its header stays in cli.cc.
#pragma once

#include <span>
#include <string>

namespace tesscpp::cli {

struct RuntimeSetting {
  const char* flag;      ///< "--output-path"
  const char* variable;  ///< "TESSERACT_RUNTIME_OUTPUT_PATH"
  bool is_switch;        ///< a boolean flag, which takes no value
  const char* help;
  std::string (*choices)() = nullptr;  ///< the values it takes, from their table (encoding.h)
};

/// \brief tesseract-runtime 1.15's global options, in its order.
std::span<const RuntimeSetting> RuntimeSettings();

/// \brief Before parsing: TESSERACT_RUNTIME_SERVE_NUM_WORKERS, where set, is
/// what `serve` reads for --num-workers (over TESSERACT_NUM_WORKERS).
void ReadServeEnvironment();

}  // namespace tesscpp::cli
