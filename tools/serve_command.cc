#include "serve_command.h"

#include <filesystem>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "tesscpp/cuda.h"

namespace tesscpp::cli {
namespace {

// Workers are forks of this process, unless the component cannot be forked
// (threads its set-up started) or the GPU transport is on (this process may
// have initialised CUDA, which a fork cannot use): then they are fresh
// processes running this same command (a worker_command), through the
// Python host's command or this executable; fails with why they cannot be
// forked when there is no such command.
Status ChooseWorkerStart(const Opened& opened, tesscpp::http::HttpServerOptions& server_options) {
  const Process& process = ThisProcess();
  if (process.host != nullptr) server_options.fork_hooks = process.host->fork_hooks;
  const bool workers = server_options.num_workers > 1 || server_options.supervise;
  const bool gpu = opened.runtime->config().gpu_transport != "none";
  if (!workers || (opened.forkable.ok() && !gpu)) return Status::OK();
  std::vector<std::string> command;
  if (process.host != nullptr) {
    command = process.host->command;
  } else {
    std::error_code ec;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) command = {self.string()};
  }
  if (command.empty()) {
    if (!opened.forkable.ok()) return opened.forkable;
    return Status::Unavailable("cannot start fresh worker processes for gpu_transport='",
                               opened.runtime->config().gpu_transport, "' (serve with --no-supervise)");
  }
  command.insert(command.end(), process.argv + 1, process.argv + process.argc);
  server_options.worker_command = std::move(command);
  return Status::OK();
}

}  // namespace

int Serve(const CommonOptions& o, tesscpp::http::HttpServerOptions server_options) {
  // Before the component is set up: its subprocesses must not see it.
  auto handoff = tesscpp::http::TakeWorkerHandoff();
  if (!handoff.ok()) return Fail(handoff.status());
  if (*handoff) {  // a worker its supervisor exec'd: serves as one process
    server_options.handoff = **handoff;
    server_options.num_workers = 1;
    server_options.supervise = false;
  }
  auto opened = OpenComponent(o);
  if (!opened.ok()) return Fail(opened.status());
  const tesscpp::Runtime& runtime = *opened->runtime;
  if (Status workers = ChooseWorkerStart(*opened, server_options); !workers.ok()) return Fail(workers);
  const std::string& transport = runtime.config().gpu_transport;
  if (transport != "none" && server_options.num_workers > 1) {
    // Exports of clients that never acknowledge are freed at the next call,
    // which is only safe when calls come one at a time.
    return Fail(Status::InvalidArgument(
        "gpu_transport='", transport,
        "' cannot be served by more than one worker (got num_workers=", server_options.num_workers, ")."));
  }
  // Where requests are served: a supervisor of fresh workers leaves CUDA to them.
  if (transport != "none" && server_options.worker_command.empty()) {
    if (Status cuda = tesscpp::cuda::CheckAvailable(); !cuda.ok()) {
      std::cerr << "tesscpp: warning: gpu_transport='" << transport
                << "' is enabled, but GPU arrays cannot be read here: " << cuda.message() << "\n";
    }
  }
  auto server = tesscpp::http::HttpServer::Start(runtime, server_options);
  if (!server.ok()) return Fail(server.status());
  // One line per server: its supervisor's. Written at once: with stdout
  // unbuffered (PYTHONUNBUFFERED, for a Python module) each `<<` is a write
  // of its own, and a client reading the log between two of them would see
  // a cut URL.
  if (!server_options.handoff) {
    const std::string line = "tesscpp: serving " + opened->name + " on http://" + server_options.host + ":" +
                             std::to_string((*server)->port()) + "\n";
    std::cout << line << std::flush;
  }
  (*server)->Run();
  return 0;
}

}  // namespace tesscpp::cli
