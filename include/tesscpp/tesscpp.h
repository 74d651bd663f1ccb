// tesscpp.h: the whole public API in one include.
#pragma once

#include "tesscpp/buffer.h"            // IWYU pragma: export
#include "tesscpp/buffer_pool.h"       // IWYU pragma: export
#include "tesscpp/device.h"            // IWYU pragma: export
#include "tesscpp/dtype.h"             // IWYU pragma: export
#include "tesscpp/encoding.h"          // IWYU pragma: export
#include "tesscpp/json.h"              // IWYU pragma: export
#include "tesscpp/path.h"              // IWYU pragma: export
#include "tesscpp/result.h"            // IWYU pragma: export
#include "tesscpp/schema.h"            // IWYU pragma: export
#include "tesscpp/shape.h"             // IWYU pragma: export
#include "tesscpp/status.h"            // IWYU pragma: export
#include "tesscpp/tensor.h"            // IWYU pragma: export
#include "tesscpp/type_fwd.h"          // IWYU pragma: export
#include "tesscpp/validate.h"          // IWYU pragma: export
#include "tesscpp/validation_issue.h"  // IWYU pragma: export
#include "tesscpp/value.h"             // IWYU pragma: export
