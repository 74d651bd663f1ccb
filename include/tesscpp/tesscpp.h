// tesscpp.h: the installed API in one include: what a component author
// (component.h) and a client user (client.h, gradient_check.h, cuda.h) write
// against, and the types those are made of. autodiff.h stays apart: it brings
// its AD libraries to the components that include it.
#pragma once

#include "tesscpp/buffer.h"              // IWYU pragma: export
#include "tesscpp/client.h"              // IWYU pragma: export
#include "tesscpp/component.h"           // IWYU pragma: export
#include "tesscpp/component_abi.h"       // IWYU pragma: export
#include "tesscpp/cuda.h"                // IWYU pragma: export
#include "tesscpp/device.h"              // IWYU pragma: export
#include "tesscpp/dtype.h"               // IWYU pragma: export
#include "tesscpp/finite_differences.h"  // IWYU pragma: export
#include "tesscpp/forward_reuse.h"       // IWYU pragma: export
#include "tesscpp/gradient_check.h"      // IWYU pragma: export
#include "tesscpp/model.h"               // IWYU pragma: export
#include "tesscpp/result.h"              // IWYU pragma: export
#include "tesscpp/run_log.h"             // IWYU pragma: export
#include "tesscpp/schema.h"              // IWYU pragma: export
#include "tesscpp/shape.h"               // IWYU pragma: export
#include "tesscpp/status.h"              // IWYU pragma: export
#include "tesscpp/tensor.h"              // IWYU pragma: export
#include "tesscpp/validation_issue.h"    // IWYU pragma: export
#include "tesscpp/value.h"               // IWYU pragma: export
