// `tesscpp run`: the engine's `run --rm` with tesseract-core's mounts, user
// and environment; the container's stdout and stderr are ours.
#include "image_run.h"

#include <filesystem>

#include "tesscpp/internal/client/container_engine.h"
#include "tesscpp/internal/client/mounts.h"
#include "tesscpp/internal/platform/subprocess.h"

namespace tesscpp::cli {

Result<int> RunImage(const ImageRunOptions& o) {
  constexpr std::string_view kWho = "run";
  const client::ContainerEngine engine = client::ContainerEngine::FromEnvironment();
  TESS_RETURN_IF_ERROR(engine.RequireTesseractImage(o.image, kWho));

  std::vector<client::Mount> mounts;
  for (const std::string& spec : o.volumes) {
    TESS_ASSIGN_OR_RETURN(client::Mount mount, client::ParseMount(spec, "run: --volume"));
    TESS_RETURN_IF_ERROR(client::AddMount(mounts, std::move(mount), kWho));
  }
  std::vector<std::string> env = o.env;
  if (!o.input_path.empty()) {
    TESS_ASSIGN_OR_RETURN(client::Mount mount, client::ParseMount(o.input_path + ":/tesseract/input_data:ro",
                                                                  "run: --input-path"));
    TESS_RETURN_IF_ERROR(client::AddMount(mounts, std::move(mount), kWho));
    env.emplace_back("TESSERACT_INPUT_PATH=/tesseract/input_data");
  }
  if (!o.output_path.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.output_path, ec);
    if (ec) return Status::IoError("run: cannot create --output-path '", o.output_path, "': ", ec.message());
    TESS_ASSIGN_OR_RETURN(
        client::Mount mount,
        client::ParseMount(o.output_path + ":/tesseract/output_data:rw", "run: --output-path"));
    TESS_RETURN_IF_ERROR(client::AddMount(mounts, std::move(mount), kWho));
    env.emplace_back("TESSERACT_OUTPUT_PATH=/tesseract/output_data");
  }
  // Payload files: each mounted by itself, in a folder of its own (two
  // files may share a name).
  std::vector<std::string> command = o.command;
  for (size_t i = 0; i < command.size(); ++i) {
    std::string& arg = command[i];
    if (arg.size() < 2 || arg[0] != '@' || !std::filesystem::is_regular_file(arg.substr(1))) continue;
    const std::filesystem::path file = std::filesystem::absolute(arg.substr(1)).lexically_normal();
    const std::string target = "/tesseract/payload/" + std::to_string(i) + "/" + file.filename().string();
    TESS_RETURN_IF_ERROR(client::AddMount(mounts, {file.string(), target, "ro"}, kWho));
    arg = "@" + target;
  }

  std::vector<std::string> args = {"run", "--rm", "--user", o.user.empty() ? client::CurrentUser() : o.user};
  for (const std::string& e : env) args.insert(args.end(), {"--env", e});
  for (const client::Mount& m : mounts) args.insert(args.end(), {"--volume", m.Spec()});
  if (!o.network.empty()) args.insert(args.end(), {"--network", o.network});
  if (!o.gpus.empty()) args.insert(args.end(), {"--gpus", client::GpuRequest(o.gpus)});
  args.push_back(o.image);
  args.insert(args.end(), command.begin(), command.end());
  return platform::RunAttached(engine.Command(args));
}

}  // namespace tesscpp::cli
