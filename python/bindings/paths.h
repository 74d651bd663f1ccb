// paths.h: the protocol's path grammar for the Python package.
#pragma once

#include <nanobind/nanobind.h>

namespace tesscpp::bindings {

/// \brief Registers parse_path and format_path: tesscpp::Path's parser and
/// spelling, so that the torch bridge (tesscpp/torch/_paths.py) reads the
/// schema's differentiable paths and writes wire names exactly as the C++
/// runtime does.
void BindPaths(nanobind::module_& m);

}  // namespace tesscpp::bindings
