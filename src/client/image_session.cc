// image_session.cc: Tesseract::FromImage — run a Tesseract image in a
// container the way tesseract-core 1.15's from_image runs it (same command,
// mounts, environment and user; docs/containers.md), wait until it is
// healthy, and connect to it through the published port.
#include <unistd.h>

#include <algorithm>
#include <cctype>

#include "client/container.h"
#include "client/served_server.h"
#include "client/session.h"
#include "gpu_transport/registry.h"
#include "platform/uuid.h"
#include "tesscpp/internal/client/mounts.h"
#include "tesscpp/internal/codec/array_encoding.h"

namespace tesscpp::client {
namespace {

constexpr int kContainerPort = 8000;  // what tesseract-core's containers listen on
constexpr const char* kInputMount = "/tesseract/input_data";
constexpr const char* kOutputMount = "/tesseract/output_data";

// The host port to try, from "", "8080" or "9000-9100"; `fixed` says whether
// the caller chose it (then it is never retried).
struct PortChoice {
  int first = 0;
  int last = 0;
  bool fixed = false;
};

Result<PortChoice> ParsePort(const std::string& port) {
  if (port.empty()) return PortChoice{};
  auto number = [&](const std::string& text) -> Result<int> {
    if (text.empty() || text.size() > 5 || !std::all_of(text.begin(), text.end(), ::isdigit) ||
        std::stoi(text) < 1 || std::stoi(text) > 65535) {
      return Status::InvalidArgument("from_image: port '", port,
                                     "' is not a port (1-65535) or a range (a-b)");
    }
    return std::stoi(text);
  };
  const size_t dash = port.find('-');
  if (dash == std::string::npos) {
    TESS_ASSIGN_OR_RETURN(int p, number(port));
    return PortChoice{p, p, true};
  }
  TESS_ASSIGN_OR_RETURN(int first, number(port.substr(0, dash)));
  TESS_ASSIGN_OR_RETURN(int last, number(port.substr(dash + 1)));
  if (first > last) return Status::InvalidArgument("from_image: port range '", port, "' is empty");
  return PortChoice{first, last, false};
}

bool IsPortConflict(const Status& status) {
  const std::string& m = status.message();
  return m.find("port is already allocated") != std::string::npos ||
         m.find("address already in use") != std::string::npos ||
         m.find("Address already in use") != std::string::npos;
}

Status CheckOptions(const std::string& image, const ImageOptions& o) {
  if (image.empty()) return Status::InvalidArgument("from_image: the image name is empty");
  if (o.num_workers < 1)
    return Status::InvalidArgument("from_image: num_workers must be at least 1 (got ", o.num_workers, ")");
  if (!o.network_alias.empty() && o.network.empty())
    return Status::InvalidArgument("from_image: network_alias needs a network");
  const std::string transport =
      client::RequestedTransport(o).value_or(std::string(gpu_transport::kNoTransport));
  const Result<const gpu_transport::TransportEntry*> entry = gpu_transport::TransportNamed(transport);
  if (!entry.ok()) {
    return Status::InvalidArgument("from_image: gpu_transport '", transport, "' is not one of ",
                                   gpu_transport::TransportChoices(NameList::kQuoted));
  }
  if (*entry != nullptr && (*entry)->one_worker && o.num_workers > 1) {
    return Status::InvalidArgument("from_image: gpu_transport='", transport,
                                   "' cannot be served by more than one worker (num_workers=", o.num_workers,
                                   ")");
  }
  if (*entry != nullptr && (*entry)->needs_gpus && o.gpus.empty()) {
    return Status::InvalidArgument("from_image: gpu_transport='", transport,
                                   "' needs GPU access: pass gpus (\"all\" or device ids)");
  }
  return Status::OK();
}

// The engine's arguments for a container of `image`: everything but the
// port, which may be tried more than once. Adds the serve directories'
// mounts and settings to `mounts`.
Result<std::vector<std::string>> ContainerArguments(const ImageOptions& o,
                                                    const client::ContainerEngine& engine,
                                                    const std::string& input_path,
                                                    const std::string& output_path,
                                                    std::vector<client::Mount>& mounts) {
  std::vector<std::pair<std::string, std::string>> env = o.environment;
  for (auto& setting : client::ServeSettings(o, "none")) env.push_back(std::move(setting));
  if (!input_path.empty()) {
    TESS_RETURN_IF_ERROR(client::AddMount(mounts, {input_path, kInputMount, "ro"}, "from_image"));
    env.emplace_back("TESSERACT_INPUT_PATH", kInputMount);
  }
  TESS_RETURN_IF_ERROR(client::AddMount(mounts, {output_path, kOutputMount, "rw"}, "from_image"));
  env.emplace_back("TESSERACT_OUTPUT_PATH", kOutputMount);

  std::vector<std::string> common = {"--user", o.user.empty() ? client::CurrentUser() : o.user, "--label",
                                     "org.tesscpp.owner-pid=" + std::to_string(::getpid())};
  for (const auto& [key, value] : env) common.insert(common.end(), {"--env", key + "=" + value});
  for (const client::Mount& m : mounts) common.insert(common.end(), {"--volume", m.Spec()});
  if (!o.network.empty()) {
    if (o.network != "host" && o.network != "bridge") {
      TESS_ASSIGN_OR_RETURN(platform::Finished known, engine.Run({"network", "inspect", o.network}));
      if (known.exit_code != 0) TESS_RETURN_IF_ERROR(engine.RunOk({"network", "create", o.network}).status());
    }
    common.insert(common.end(), {"--network", o.network});
  }
  if (!o.network_alias.empty()) common.insert(common.end(), {"--network-alias", o.network_alias});
  if (!o.memory.empty()) common.insert(common.end(), {"--memory", o.memory});
  if (!o.gpus.empty()) common.insert(common.end(), {"--gpus", client::GpuRequest(o.gpus)});
  // What the transport needs of the engine (CheckOptions accepted its name).
  if (const gpu_transport::TransportEntry* entry =
          gpu_transport::FindTransport(client::RequestedTransport(o).value_or(""))) {
    common.insert(common.end(), entry->container_flags.begin(), entry->container_flags.end());
  }
  return common;
}

// Waits until the container's server answers /health (unless that check is
// skipped). false: it exited because its port was taken (host networking
// with a chosen port), so another port is worth a try; the container is
// stopped then, and on any failure.
Result<bool> WaitUntilServing(client::Container& container, const std::string& url, const std::string& what,
                              const ImageOptions& o, bool may_retry) {
  if (o.skip_health_check) return true;
  const auto deadline = client::DeadlineIn(o.startup_timeout_s);
  // The engine is asked at most 4 times a second whether it still runs.
  auto next_check = std::chrono::steady_clock::now();
  std::pair<std::string, int> state{"running", 0};
  auto alive = [&] {
    if (std::chrono::steady_clock::now() < next_check) return true;
    next_check = std::chrono::steady_clock::now() + std::chrono::milliseconds(250);
    auto now = container.State();
    state = now.ok() ? *now : std::pair<std::string, int>{"removed", -1};
    return state.first == "running" || state.first == "created" || state.first == "restarting";
  };
  Status healthy = client::WaitForHealth(url, o.client.token, alive, deadline);
  if (healthy.ok()) return true;
  const bool exited = healthy.code() == StatusCode::kUnavailable;
  const std::string logs = container.Logs();
  container.Stop();
  if (exited && may_retry && logs.find("in use") != std::string::npos) return false;
  return client::StartupFailure(what, exited, state.first + " with status " + std::to_string(state.second),
                                o.startup_timeout_s, healthy, logs);
}

}  // namespace

Result<std::shared_ptr<TesseractSession>> MakeImageSession(const std::string& image, const ImageOptions& o) {
  TESS_RETURN_IF_ERROR(CheckOptions(image, o));
  TESS_ASSIGN_OR_RETURN(PortChoice port_choice, ParsePort(o.port));
  std::vector<client::Mount> mounts;
  for (const std::string& spec : o.volumes) {
    TESS_ASSIGN_OR_RETURN(client::Mount mount, client::ParseMount(spec, "from_image: volumes"));
    TESS_RETURN_IF_ERROR(client::AddMount(mounts, std::move(mount), "from_image"));
  }
  auto server = std::make_unique<ServedServer>();
  TESS_ASSIGN_OR_RETURN(auto dirs, client::PrepareServeDirs(o, *server, "from_image"));
  const auto& [input_path, output_path] = dirs;
  const client::ContainerEngine engine = client::ContainerEngine::FromEnvironment();
  TESS_RETURN_IF_ERROR(engine.RequireTesseractImage(image, "from_image"));
  TESS_ASSIGN_OR_RETURN(const std::vector<std::string> common,
                        ContainerArguments(o, engine, input_path, output_path, mounts));

  const bool host_network = o.network == "host";
  const std::string ping_ip = o.host_ip == "0.0.0.0" ? "127.0.0.1" : o.host_ip;
  const int attempts = port_choice.fixed ? 1 : 5;
  Status last_failure;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    int port = port_choice.first;
    if (!port_choice.fixed) {
      TESS_ASSIGN_OR_RETURN(port, client::FreePort(o.host_ip, port_choice.first, port_choice.last));
    }
    std::vector<std::string> args = common;
    if (!host_network)
      args.insert(args.end(), {"--publish", o.host_ip + ":" + std::to_string(port) + ":8000"});
    args.insert(args.end(), o.docker_args.begin(), o.docker_args.end());
    args.insert(args.end(), {image, "serve", "--port", std::to_string(host_network ? port : kContainerPort)});
    if (o.num_workers > 1) args.insert(args.end(), {"--num-workers", std::to_string(o.num_workers)});
    args.insert(args.end(), {"--host", "0.0.0.0"});

    std::string hex = platform::NewUuid4();
    hex.erase(std::remove(hex.begin(), hex.end(), '-'), hex.end());
    const std::string name = "tesseract-" + hex.substr(0, 12);
    auto started = client::Container::Run(engine, name, args);
    if (!started.ok()) {
      if (!IsPortConflict(started.status())) {
        return started.status().WithContext("from_image: starting a container of '" + image + "'");
      }
      last_failure = Status::Unavailable("from_image: port ", port, " on ", o.host_ip,
                                         " is already in use: ", started.status().message());
      continue;
    }
    const std::string url = "http://" + ping_ip + ":" + std::to_string(port);
    (*started)->set_published(o.host_ip, port, url);
    TESS_ASSIGN_OR_RETURN(
        const bool serving,
        WaitUntilServing(**started, url, "from_image: the container " + name + " of '" + image + "'", o,
                         !port_choice.fixed && host_network));
    if (!serving) {
      last_failure = Status::Unavailable("from_image: port ", port, " is already in use");
      continue;  // host networking: the server's own bind found the port taken
    }
    server->process = std::move(*started);
    return client::ConnectServed(url, o, input_path, output_path, std::move(server));
  }
  return last_failure;
}

}  // namespace tesscpp::client
