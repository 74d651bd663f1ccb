#include "python_module.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace tesscpp::cli {
namespace fs = std::filesystem;

std::string PythonToRun() {
  if (const char* chosen = std::getenv("TESSCPP_PYTHON"); chosen != nullptr && *chosen != '\0') return chosen;
#ifdef TESSCPP_BUILD_PYTHON
  // The interpreter this tree was built for, while it is there (a build tree).
  std::error_code ec;
  if (fs::exists(TESSCPP_BUILD_PYTHON, ec)) return TESSCPP_BUILD_PYTHON;
#endif
  return "python3";
}

// <site-packages>/tesscpp/bin/tesscpp in a wheel, <build>/bin/tesscpp beside
// <build>/python/tesscpp in a build tree.
std::string PackageRoot() {
  std::error_code ec;
  const fs::path exe = fs::canonical("/proc/self/exe", ec);
  if (ec) return "";
  for (const fs::path& root :
       {exe.parent_path().parent_path().parent_path(), exe.parent_path().parent_path() / "python"}) {
    if (fs::exists(root / "tesscpp" / "_python_host.py", ec)) return root.string();
  }
  return "";
}

Status ExecPythonHost(int argc, char** argv) {
  if (const std::string root = PackageRoot(); !root.empty()) {
    const char* old = std::getenv("PYTHONPATH");
    const std::string path = old != nullptr && *old != '\0' ? root + ":" + old : root;
    ::setenv("PYTHONPATH", path.c_str(), 1);
  }
  std::string python = PythonToRun();
  std::string dash_m = "-m";
  std::string host = "tesscpp._python_host";
  std::vector<char*> args{python.data(), dash_m.data(), host.data()};
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  ::execvp(python.c_str(), args.data());
  return Status::Unavailable("cannot run '", python, "' to host a Python module: ", std::strerror(errno),
                             " (set TESSCPP_PYTHON to a Python that has tesseract-core and tesscpp)");
}

}  // namespace tesscpp::cli
