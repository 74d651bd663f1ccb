// serve_command.h: `tesscpp serve`, the component served over HTTP by the
// server of tesscpp/internal/http/http_server.h.
#pragma once

#include "command_context.h"
#include "tesscpp/internal/http/http_server.h"

namespace tesscpp::cli {

/// \brief Serves until the server is stopped; the exit status.
int Serve(const CommonOptions& o, tesscpp::http::HttpServerOptions server_options);

}  // namespace tesscpp::cli
