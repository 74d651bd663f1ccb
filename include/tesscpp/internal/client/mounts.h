// mounts.h: bind mounts of a container, as tesseract-core spells them
// ("source:target[:ro|rw]") (internal).
#pragma once

#include <string>
#include <vector>

#include "tesscpp/result.h"

namespace tesscpp::client {

struct Mount {
  std::string source;
  std::string target;
  std::string mode;  ///< "ro" or "rw"

  /// \brief "source:target:mode", the engine's --volume value.
  std::string Spec() const { return source + ":" + target + ":" + mode; }
};

/// \brief Reads "source:target[:ro|rw]" as tesseract-core does: read-only
/// unless rw; a source that looks like a path (has '/' or '.') must exist and
/// is made absolute, anything else names a volume of the engine. `who`
/// prefixes messages ("from_image: volumes").
Result<Mount> ParseMount(const std::string& spec, std::string_view who);

/// \brief Appends `mount` to `mounts`; kInvalidArgument when its source or
/// target is already mounted.
Status AddMount(std::vector<Mount>& mounts, Mount mount, std::string_view who);

}  // namespace tesscpp::client
