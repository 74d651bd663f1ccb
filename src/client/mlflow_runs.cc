#include "tesscpp/internal/client/mlflow_runs.h"

#include <curl/curl.h>
#include <pwd.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>

#include "client/http_connection.h"
#include "codec/base64.h"
#include "runtime/file_run_logger.h"
#include "runtime/py_text.h"
#include "tesscpp/internal/codec/json.h"
#include "tesscpp/internal/runtime/failure_details.h"

// MLflow's REST API (version 2.0) spoken directly, as mlflow's fluent client
// speaks it for tesseract-runtime: runs/create, log-metric, log-parameter,
// update, the experiments a run goes into, and artifact uploads through the
// server's proxied artifact store. No MLflow library exists for C++.
namespace tesscpp::client {
namespace {

constexpr std::string_view kApi = "/api/2.0/mlflow/";
constexpr std::string_view kArtifactsApi = "/api/2.0/mlflow-artifacts/artifacts/";

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A failure tesseract-runtime reports as a RuntimeError (the tracking server's
// reachability, its answers).
Status AsRuntimeError(const Status& status) {
  return status.WithDetail(std::make_shared<runtime::ExceptionDetail>("RuntimeError", "RuntimeError"));
}

// An answer as text, for messages.
std::string WriteJsonText(const Value& answer) {
  auto text = WriteJson(answer);
  return text.ok() ? std::string(text->string_view()) : "(unprintable)";
}

// The value at `keys` of an MLflow answer, of `kind`; a RuntimeError naming
// the keys when the answer is not shaped so (a proxy's, another server's).
Result<const Value*> AnswerAt(const Value& answer, std::initializer_list<const char*> keys,
                              Value::Kind kind) {
  const Value* v = &answer;
  std::string path;
  for (const char* key : keys) {
    path += std::string(path.empty() ? "" : ".") + key;
    v = v->is_dict() ? v->as_dict().find(key) : nullptr;
    if (v == nullptr) break;
  }
  if (v == nullptr || v->kind() != kind) {
    return AsRuntimeError(Status::Unavailable("MLflow answered without ", path, ": ", WriteJsonText(answer)));
  }
  return v;
}

// URL-encoded `text`, by libcurl.
std::string UrlEncode(const std::string& text) {
  char* escaped = curl_easy_escape(nullptr, text.c_str(), static_cast<int>(text.size()));
  if (escaped == nullptr) return text;
  std::string out(escaped);
  curl_free(escaped);
  return out;
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

// Python's literal spellings of a dict (ast.literal_eval's True, False, None
// outside strings) as JSON, for the reader. Single-quoted strings stay
// unsupported: the reader then names the position.
std::string PythonLiteralAsJson(std::string_view text) {
  std::string out;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) {
        out += text[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') in_string = true;
    bool replaced = false;
    for (const auto& [python, json] : {std::pair{"True", "true"}, {"False", "false"}, {"None", "null"}}) {
      const std::string_view word(python);
      const bool boundary_before = i == 0 || !std::isalnum(static_cast<unsigned char>(text[i - 1]));
      const size_t end = i + word.size();
      const bool boundary_after = end >= text.size() || !std::isalnum(static_cast<unsigned char>(text[end]));
      if (boundary_before && boundary_after && text.substr(i, word.size()) == word) {
        out += json;
        i = end - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += c;
  }
  return out;
}

// urlparse's scheme of `uri`, lowercased: letters, digits, "+", "-", "."
// before the first ":", starting with a letter; empty when there is none
// ("127.0.0.1:5000" has none, "localhost:5000" has "localhost").
std::string UrlScheme(std::string_view uri) {
  const size_t colon = uri.find(':');
  if (colon == std::string_view::npos || colon == 0 || !std::isalpha(static_cast<unsigned char>(uri[0])))
    return "";
  std::string scheme;
  for (const char c : uri.substr(0, colon)) {
    const auto u = static_cast<unsigned char>(c);
    if (!std::isalnum(u) && c != '+' && c != '-' && c != '.') return "";
    scheme += static_cast<char>(std::tolower(u));
  }
  return scheme;
}

// mlflow.start_run's keyword arguments that a run of ours honours.
struct RunArguments {
  std::string experiment_id;  // empty: from the environment, else "0"
  std::string run_id;         // resume this run on every call
  std::string run_name;
  std::string parent_run_id;
  std::string description;
  std::vector<std::pair<std::string, std::string>> tags;  // str() of each value
};

Result<RunArguments> ParseRunArguments(const std::string& text) {
  RunArguments args;
  if (text.empty()) return args;
  auto parsed = ReadJson(PythonLiteralAsJson(text));
  if (!parsed.ok() || !parsed->is_dict()) {
    return Status::InvalidArgument("TESSERACT_MLFLOW_RUN_EXTRA_ARGS is not a dict literal (",
                                   parsed.ok() ? "not a dict" : parsed.status().message(), "): ", text);
  }
  for (const auto& [key, value] : parsed->as_dict()) {
    std::string* field = key == "experiment_id"   ? &args.experiment_id
                         : key == "run_id"        ? &args.run_id
                         : key == "run_name"      ? &args.run_name
                         : key == "parent_run_id" ? &args.parent_run_id
                         : key == "description"   ? &args.description
                                                  : nullptr;
    if (value.is_null()) {
      // mlflow.start_run's default for every argument: as if not given.
    } else if (field != nullptr) {
      *field = runtime::PyStr(value);
    } else if (key == "tags" && value.is_dict()) {
      for (const auto& [tag, tag_value] : value.as_dict())
        args.tags.emplace_back(tag, runtime::PyStr(tag_value));
    } else if (key == "nested" && value.is_bool()) {
      // No run is active around an endpoint's: nested or not, a run starts.
    } else if (key == "log_system_metrics" && (value.is_null() || (value.is_bool() && !value.as_bool()))) {
    } else {
      return Status::InvalidArgument(
          "TESSERACT_MLFLOW_RUN_EXTRA_ARGS: '", key,
          "' is not supported by tesscpp (supported: experiment_id, run_id, run_name, "
          "parent_run_id, description, tags, nested, log_system_metrics=False)");
    }
  }
  return args;
}

// getpass.getuser(), which mlflow records as the run's user.
std::string UserName() {
  for (const char* name : {"LOGNAME", "USER", "LNAME", "USERNAME"}) {
    if (std::string v = Env(name); !v.empty()) return v;
  }
  const passwd* pw = ::getpwuid(::getuid());
  return pw != nullptr ? pw->pw_name : "";
}

std::string ProgramPath() {
  std::error_code ec;
  auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "tesscpp" : path.string();
}

class MlflowRun;

// The tracking server, shared by every run of the process.
class MlflowServer : public std::enable_shared_from_this<MlflowServer> {
 public:
  static Result<std::shared_ptr<MlflowServer>> Make(const RuntimeConfig& config) {
    auto server = std::make_shared<MlflowServer>();
    std::string uri = config.mlflow_tracking_uri;
    // As tesseract-runtime: a URI without a scheme is https.
    std::string scheme = UrlScheme(uri);
    if (scheme.empty()) {
      uri = "https://" + uri;
      scheme = "https";
    }
    if (scheme != "http" && scheme != "https") {
      return Status::InvalidArgument(
          "Tesseract only supports accessing MLflow server via HTTP/HTTPS (got URI scheme: ", scheme, ")");
    }
    uri = scheme + uri.substr(scheme.size());  // lowercased, as urlparse reports it
    while (uri.size() > scheme.size() + 3 && uri.back() == '/') uri.pop_back();
    if (!Env("MLFLOW_RUN_ID").empty()) {
      return Status::InvalidArgument(
          "MLFLOW_RUN_ID is not supported by tesscpp: resume a run with "
          "TESSERACT_MLFLOW_RUN_EXTRA_ARGS='{\"run_id\": "
          "\"...\"}'");
    }
    server->uri_ = uri;
    const std::string user = Env("MLFLOW_TRACKING_USERNAME");
    const std::string password = Env("MLFLOW_TRACKING_PASSWORD");
    if (user.empty() != password.empty()) {
      return Status::InvalidArgument(
          "If one of MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD is defined, both must be "
          "defined.");
    }
    std::vector<std::string> auth;
    if (!user.empty()) {
      const std::string pair = user + ":" + password;
      auth.push_back("Authorization: Basic " +
                     codec::Base64String({reinterpret_cast<const uint8_t*>(pair.data()), pair.size()}));
    } else if (std::string token = Env("MLFLOW_TRACKING_TOKEN"); !token.empty()) {
      auth.push_back("Authorization: Bearer " + token);
    }
    TESS_ASSIGN_OR_RETURN(server->args_, ParseRunArguments(config.mlflow_run_extra_args));
    // requests' 5 s for the reachability check; MLflow's own calls wait longer.
    TESS_ASSIGN_OR_RETURN(server->http_, HttpConnection::Open(uri, {5, 120}, 4, std::move(auth)));
    return server;
  }

  Result<std::unique_ptr<component::RunLogger>> StartRun();

  // One call of the JSON API; MLflow's error answer as the message otherwise.
  Result<Value> Call(std::string_view method, const std::string& api, const Value* body) {
    std::optional<Buffer> sent;
    if (body != nullptr) {
      TESS_ASSIGN_OR_RETURN(sent, WriteJson(*body));
    }
    auto response = http_->Send(method, std::string(kApi) + api, {"Content-Type: application/json"},
                                sent ? &*sent : nullptr);
    if (!response.ok()) return AsRuntimeError(response.status());
    Result<Value> answer = ReadJson(response->body);
    if (response->status == 200 && answer.ok()) return answer;
    std::string error = std::string(response->body.string_view());
    if (answer.ok() && answer->is_dict()) {
      const Value* code = answer->as_dict().find("error_code");
      const Value* message = answer->as_dict().find("message");
      if (code != nullptr && message != nullptr && code->is_string() && message->is_string()) {
        error = code->as_string() + ": " + message->as_string();
      }
    }
    const StatusCode code = response->status == 404  ? StatusCode::kNotFound
                            : response->status < 500 ? StatusCode::kInvalidArgument
                                                     : StatusCode::kUnavailable;
    return AsRuntimeError(
        Status(code, "MLflow " + api + " answered " + std::to_string(response->status) + ": " + error));
  }

  // An artifact into the run's artifact store: the server's proxied store
  // (mlflow-artifacts:), or a directory this host reaches.
  Status Upload(const std::string& artifact_uri, const std::string& local_path) {
    const std::filesystem::path source(local_path);
    constexpr std::string_view kProxied = "mlflow-artifacts:";
    if (artifact_uri.rfind(kProxied, 0) == 0) {
      std::string path = artifact_uri.substr(kProxied.size());
      if (path.rfind("//", 0) == 0) {
        return Status::Unimplemented("artifact store '", artifact_uri,
                                     "' names another host; tesscpp uploads to the tracking server only");
      }
      while (!path.empty() && path.front() == '/') path.erase(0, 1);
      std::ifstream in(local_path, std::ios::binary);
      std::ostringstream bytes;
      bytes << in.rdbuf();
      if (!in) return Status::IoError("cannot read artifact '", local_path, "'");
      const Buffer body = Buffer::FromString(bytes.str());
      TESS_ASSIGN_OR_RETURN(
          HttpResponse r,
          http_->Send("PUT", std::string(kArtifactsApi) + path + "/" + UrlEncode(source.filename().string()),
                      {"Content-Type: application/octet-stream"}, &body));
      if (r.status != 200) {
        return AsRuntimeError(Status::Unavailable("MLflow artifact upload of '", local_path, "' answered ",
                                                  r.status, ": ", r.body.string_view()));
      }
      return Status::OK();
    }
    std::string directory = artifact_uri;
    if (directory.rfind("file://", 0) == 0) directory.erase(0, 7);
    if (directory.empty() || directory.front() != '/') {
      return Status::Unimplemented("artifact store '", artifact_uri,
                                   "' is not supported by tesscpp (use the server's proxied artifacts, "
                                   "mlflow server --serve-artifacts, or a local directory)");
    }
    std::error_code ec;
    std::filesystem::create_directories(directory, ec);
    std::filesystem::copy_file(source, std::filesystem::path(directory) / source.filename(),
                               std::filesystem::copy_options::overwrite_existing, ec);
    if (ec)
      return Status::IoError("cannot copy artifact '", local_path, "' to '", directory, "': ", ec.message());
    return Status::OK();
  }

 private:
  // tesseract-runtime's check, before every run, with its messages.
  Status EnsureReachable() {
    auto response = http_->Send("GET", "", {}, nullptr);
    if (!response.ok()) {
      return AsRuntimeError(Status::Unavailable(
          "Failed to connect to MLflow tracking server at ", uri_,
          ". Please make sure an MLflow server is running at this address and TESSERACT_MLFLOW_TRACKING_URI "
          "is set "
          "correctly. To switch to file-based logging instead, set TESSERACT_MLFLOW_TRACKING_URI to an empty "
          "string."));
    }
    if (response->status >= 400) {
      return AsRuntimeError(Status::Unavailable(
          "MLflow tracking server at ", uri_, " returned an error response: ", response->status, " ",
          response->reason,
          ". Please check that the server is configured correctly. If your MLflow server has authentication "
          "enabled, please make sure that MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD are set "
          "correctly. "
          "To switch to file-based logging instead, set TESSERACT_MLFLOW_TRACKING_URI to an empty string."));
    }
    return Status::OK();
  }

  // The experiment of new runs, found once: the extra arguments', else
  // MLFLOW_EXPERIMENT_NAME's (made when missing) or MLFLOW_EXPERIMENT_ID's,
  // else the default experiment, as mlflow.start_run chooses.
  Result<std::string> ExperimentId() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!experiment_id_.empty()) return experiment_id_;
    std::string id = args_.experiment_id;
    if (id.empty()) {
      if (const std::string name = Env("MLFLOW_EXPERIMENT_NAME"); !name.empty()) {
        const Value request(Value::Dict{{"name", Value(name)}});
        auto got = Call("GET", "experiments/get-by-name?experiment_name=" + UrlEncode(name), nullptr);
        if (got.ok()) {
          TESS_ASSIGN_OR_RETURN(const Value* found,
                                AnswerAt(*got, {"experiment", "experiment_id"}, Value::Kind::kString));
          id = found->as_string();
        } else if (got.status().code() == StatusCode::kNotFound) {
          TESS_ASSIGN_OR_RETURN(Value made, Call("POST", "experiments/create", &request));
          TESS_ASSIGN_OR_RETURN(const Value* made_id,
                                AnswerAt(made, {"experiment_id"}, Value::Kind::kString));
          id = made_id->as_string();
        } else {
          return got.status();
        }
      } else {
        id = Env("MLFLOW_EXPERIMENT_ID");
      }
    }
    experiment_id_ = id.empty() ? "0" : id;
    return experiment_id_;
  }

  friend class MlflowRun;
  std::string uri_;
  RunArguments args_;
  std::unique_ptr<HttpConnection> http_;
  std::mutex mutex_;
  std::string experiment_id_;  // once found
};

// One endpoint call's run.
class MlflowRun final : public component::RunLogger {
 public:
  MlflowRun(std::shared_ptr<MlflowServer> server, std::string run_id, std::string artifact_uri)
      : server_(std::move(server)), run_id_(std::move(run_id)), artifact_uri_(std::move(artifact_uri)) {}

  Status LogMetric(std::string_view key, double value, std::optional<int64_t> step) override {
    // protobuf's JSON spells the values JSON has no number for.
    const Value number = std::isnan(value)   ? Value("NaN")
                         : std::isinf(value) ? Value(value > 0 ? "Infinity" : "-Infinity")
                                             : Value(value);
    const Value body(Value::Dict{{"run_id", Value(run_id_)},
                                 {"key", Value(key)},
                                 {"value", number},
                                 {"timestamp", Value(NowMs())},
                                 {"step", Value(step.value_or(0))}});
    return server_->Call("POST", "runs/log-metric", &body).status();
  }

  Status LogParameter(std::string_view key, const Value& value) override {
    if (runtime::HoldsArray(value)) {
      return Status::InvalidArgument("parameter '", key, "' holds an array: log arrays as artifacts");
    }
    const Value body(Value::Dict{
        {"run_id", Value(run_id_)}, {"key", Value(key)}, {"value", Value(runtime::PyStr(value))}});
    return server_->Call("POST", "runs/log-parameter", &body).status();
  }

  Status LogArtifact(const std::string& local_path) override {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(local_path, ec)) {
      return Status::NotFound("Artifact file not found: ", local_path);
    }
    return server_->Upload(artifact_uri_, local_path);
  }

  Status End() override {
    const Value body(
        Value::Dict{{"run_id", Value(run_id_)}, {"status", Value("FINISHED")}, {"end_time", Value(NowMs())}});
    return server_->Call("POST", "runs/update", &body).status();
  }

 private:
  std::shared_ptr<MlflowServer> server_;
  std::string run_id_;
  std::string artifact_uri_;
};

Result<std::unique_ptr<component::RunLogger>> MlflowServer::StartRun() {
  TESS_RETURN_IF_ERROR(EnsureReachable());
  const RunArguments& a = args_;
  Value::List tags;
  auto tag = [&tags](const std::string& key, const std::string& value) {
    tags.emplace_back(Value::Dict{{"key", Value(key)}, {"value", Value(value)}});
  };
  for (const auto& [key, value] : a.tags) tag(key, value);
  if (!a.description.empty()) tag("mlflow.note.content", a.description);
  Value::Dict info;
  if (!a.run_id.empty()) {
    // Resumed: RUNNING again, the tags added (mlflow.start_run(run_id=...)).
    Value::Dict resume{{"run_id", Value(a.run_id)}, {"status", Value("RUNNING")}};
    if (!a.run_name.empty()) resume.set("run_name", Value(a.run_name));
    const Value body(std::move(resume));
    TESS_ASSIGN_OR_RETURN(Value updated, Call("POST", "runs/update", &body));
    if (!tags.empty()) {
      const Value batch(Value::Dict{{"run_id", Value(a.run_id)}, {"tags", Value(tags)}});
      TESS_RETURN_IF_ERROR(Call("POST", "runs/log-batch", &batch).status());
    }
    TESS_ASSIGN_OR_RETURN(const Value* resumed, AnswerAt(updated, {"run_info"}, Value::Kind::kDict));
    info = resumed->as_dict();
  } else {
    if (!a.parent_run_id.empty()) tag("mlflow.parentRunId", a.parent_run_id);
    if (!a.run_name.empty()) tag("mlflow.runName", a.run_name);
    // The tags mlflow's context providers add for a local run.
    const std::string user = UserName();
    tag("mlflow.user", user);
    tag("mlflow.source.name", ProgramPath());
    tag("mlflow.source.type", "LOCAL");
    TESS_ASSIGN_OR_RETURN(std::string experiment, ExperimentId());
    Value::Dict create{{"experiment_id", Value(experiment)},
                       {"user_id", Value(user)},
                       {"start_time", Value(NowMs())},
                       {"tags", Value(tags)}};
    if (!a.run_name.empty()) create.set("run_name", Value(a.run_name));
    const Value body(create);
    TESS_ASSIGN_OR_RETURN(Value made, Call("POST", "runs/create", &body));
    TESS_ASSIGN_OR_RETURN(const Value* created, AnswerAt(made, {"run", "info"}, Value::Kind::kDict));
    info = created->as_dict();
  }
  const Value* run_id = info.find("run_id");
  const Value* artifact_uri = info.find("artifact_uri");
  if (run_id == nullptr || !run_id->is_string()) {
    return AsRuntimeError(Status::Unavailable("MLflow answered a run without a run_id"));
  }
  return std::make_unique<MlflowRun>(
      shared_from_this(), run_id->as_string(),
      artifact_uri != nullptr && artifact_uri->is_string() ? artifact_uri->as_string() : "");
}

}  // namespace

Result<component::RunLoggerFactory> MlflowRunLoggers(const RuntimeConfig& config) {
  if (config.mlflow_tracking_uri.empty()) return component::RunLoggerFactory();
  TESS_ASSIGN_OR_RETURN(std::shared_ptr<MlflowServer> server, MlflowServer::Make(config));
  return component::RunLoggerFactory(
      [server](const std::string& /*run_dir*/) -> Result<std::unique_ptr<component::RunLogger>> {
        return server->StartRun();
      });
}

}  // namespace tesscpp::client
