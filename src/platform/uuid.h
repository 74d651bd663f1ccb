// uuid.h: random (version 4) UUIDs, for run ids and binref file names.
#pragma once

#include <string>

namespace tesscpp::platform {

/// \brief A random RFC 4122 version-4 UUID in its 36-character lowercase form,
/// as Python's str(uuid.uuid4()).
std::string NewUuid4();

}  // namespace tesscpp::platform
