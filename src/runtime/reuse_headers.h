// reuse_headers.h: the HTTP headers of tesscpp's forward-reuse extension,
// spelled once for the server (runtime.cc) and the client (docs/forward-reuse.md).
// Peers ignore headers they do not know, so neither side needs the other to
// have the extension.
#pragma once

namespace tesscpp::runtime {

/// Request (apply): "1" asks to keep what the derivative calls at these
/// inputs need.
inline constexpr char kKeepHeader[] = "Tesscpp-Keep";
/// Response (apply): the reference of what was kept (absent: nothing was).
/// Request (jacobian, JVP, VJP): the reference the call may use.
inline constexpr char kResidualsHeader[] = "Tesscpp-Residuals";
/// Response (jacobian, JVP, VJP that referred): "hit", or "recomputed: <why>".
inline constexpr char kResidualsUsedHeader[] = "Tesscpp-Residuals-Used";
/// Request (any): references the client is done with, comma-separated.
inline constexpr char kResidualsReleaseHeader[] = "Tesscpp-Residuals-Release";

}  // namespace tesscpp::runtime
