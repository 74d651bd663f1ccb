// mounts.cc: parsing and de-duplicating bind mounts.
#include "tesscpp/internal/client/mounts.h"

#include <filesystem>

namespace tesscpp::client {

Result<Mount> ParseMount(const std::string& spec, std::string_view who) {
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    const size_t colon = spec.find(':', start);
    parts.push_back(spec.substr(start, colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  if (parts.size() < 2 || parts.size() > 3 || parts[0].empty() || parts[1].empty() ||
      (parts.size() == 3 && parts[2] != "ro" && parts[2] != "rw")) {
    return Status::InvalidArgument(who, ": '", spec,
                                   "' is not a volume (source:target or source:target:ro|rw)");
  }
  Mount mount{parts[0], parts[1], parts.size() == 3 ? parts[2] : "ro"};
  if (mount.target.front() != '/')
    return Status::InvalidArgument(who, ": the target of '", spec, "' is not an absolute path");
  if (mount.source.find_first_of("/.") != std::string::npos) {
    std::error_code ec;
    if (!std::filesystem::exists(mount.source, ec))
      return Status::NotFound(who, ": the source '", mount.source, "' of '", spec, "' does not exist");
    mount.source = std::filesystem::absolute(mount.source).lexically_normal().string();
  }
  return mount;
}

Status AddMount(std::vector<Mount>& mounts, Mount mount, std::string_view who) {
  for (const Mount& m : mounts) {
    if (m.source == mount.source)
      return Status::InvalidArgument(who, ": '", mount.source, "' is mounted twice (at ", m.target, " and ",
                                     mount.target, ")");
    if (m.target == mount.target)
      return Status::InvalidArgument(who, ": two volumes are mounted at '", mount.target, "'");
  }
  mounts.push_back(std::move(mount));
  return Status::OK();
}

}  // namespace tesscpp::client
