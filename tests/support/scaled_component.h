// scaled_component.h: a hand-written C++ component that keeps its forward
// solve for its derivatives (tesscpp/forward_reuse.h), and counts its solves:
// the observable of the forward-reuse tests (test support), in this process
// (ScaledSolves) and to clients (apply's `solves`: this process's count, that
// apply's solve included). Served as python/tests/fixtures/kept.
//
//   y = x * s,  s = sum(x^2)   (the "solve")
#pragma once

#include "tesscpp/component.h"

namespace tesscpp::testing {

Component MakeScaled();

/// \brief Forward solves of every "scaled" component in this process so far.
int ScaledSolves();

}  // namespace tesscpp::testing
