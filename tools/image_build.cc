// `tesscpp build`: a root filesystem holding exactly what the component needs,
// imported as an image (docs/containers.md says why `docker import`, what the
// image holds and which contract of tesseract-core it keeps). ldd, strip, tar
// and the engine are run as programs.
#include "image_build.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include "platform/file.h"
#include "tesscpp/component.h"
#include "tesscpp/component_library.h"
#include "tesscpp/json.h"

extern "C" char** environ;  // NOLINT: the process environment, passed to children

namespace tesscpp::cli {
namespace {

namespace fs = std::filesystem;

// Where things go in the image.
constexpr std::string_view kBin = "/usr/local/bin/tesscpp";
constexpr std::string_view kLibDir = "/usr/local/lib";
constexpr std::string_view kComponentDir = "/tesseract/component";
constexpr std::string_view kInputDir = "/tesseract/input_data";
constexpr std::string_view kOutputDir = "/tesseract/output_data";
constexpr int kUid = 1000;  // the image's default user (tesseract-core's --user overrides it)

struct Ran {
  int exit_code;
  std::string out;
  std::string err;
};

// Runs argv (argv[0] looked up on PATH) to completion, both streams captured.
// Hand-written over posix_spawnp: Boost.Process v1 needs Boost.Filesystem,
// which is not among our dependencies, and Boost 1.81's v2 does not build
// with std::filesystem.
Result<Ran> Run(const std::vector<std::string>& argv) {
  int out_pipe[2];
  int err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return Status::IoError("pipe: ", std::strerror(errno));
  internal::Fd out_read(out_pipe[0]);
  internal::Fd out_write(out_pipe[1]);
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) return Status::IoError("pipe: ", std::strerror(errno));
  internal::Fd err_read(err_pipe[0]);
  internal::Fd err_write(err_pipe[1]);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_write.get(), 1);
  posix_spawn_file_actions_adddup2(&actions, err_write.get(), 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));  // NOLINT: spawn's C API
  args.push_back(nullptr);
  pid_t pid = -1;
  const int spawned = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return Status::NotFound("cannot run '", argv[0], "': ", std::strerror(spawned));
  out_write = internal::Fd();
  err_write = internal::Fd();
  Ran ran{-1, {}, {}};
  // Both streams at once: a child filling one pipe while we wait on the
  // other would never finish.
  pollfd fds[2] = {{out_read.get(), POLLIN, 0}, {err_read.get(), POLLIN, 0}};
  std::string* into[2] = {&ran.out, &ran.err};
  for (int open = 2; open > 0;) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      // Never wait for a child that may block writing to pipes no one reads.
      ::kill(pid, SIGKILL);
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[65536];
      const ssize_t n = ::read(fds[i].fd, buf, sizeof(buf));
      if (n > 0) {
        into[i]->append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;
        --open;
      }
    }
  }
  out_read = internal::Fd();
  err_read = internal::Fd();
  int status = 0;
  pid_t waited = -1;
  while ((waited = ::waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  if (waited < 0) return Status::IoError("cannot wait for ", argv[0], ": ", std::strerror(errno));
  ran.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return ran;
}

Result<std::string> RunOk(const std::vector<std::string>& argv) {
  TESS_ASSIGN_OR_RETURN(Ran ran, Run(argv));
  if (ran.exit_code != 0) {
    std::string line;
    for (const std::string& a : argv) line += (line.empty() ? "" : " ") + a;
    return Status::Internal("`", line, "` exited with status ", ran.exit_code, ": ", ran.err);
  }
  return std::move(ran.out);
}

// The engine command: $TESSERACT_DOCKER_EXECUTABLE split into words (as
// tesseract-core reads it: "podman", "sudo docker"), default docker.
std::vector<std::string> Engine() {
  const char* configured = std::getenv("TESSERACT_DOCKER_EXECUTABLE");
  std::istringstream words(configured != nullptr && *configured != '\0' ? configured : "docker");
  std::vector<std::string> argv;
  for (std::string w; words >> w;) argv.push_back(w);
  return argv;
}

// name -> host path of every shared library `file` loads, and the loader.
Status Closure(const std::string& file, std::map<std::string, std::string>& libs, std::string& loader) {
  TESS_ASSIGN_OR_RETURN(std::string listing, RunOk({"ldd", file}));
  std::istringstream lines(listing);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string name;
    std::string arrow;
    std::string path;
    words >> name >> arrow >> path;
    if (arrow == "=>") {
      if (path == "not" || path.empty())
        return Status::NotFound(file, " needs ", name, ", which is not found");
      libs.emplace(name, path);
    } else if (!name.empty() && name[0] == '/') {
      loader = name;  // the interpreter, by absolute path
    }                 // else: the vDSO, which the kernel provides
  }
  return Status::OK();
}

// Copies `from` to `to` without debug information when it is an ELF file
// strip understands (the CLI and libtesscpp of a RelWithDebInfo build are
// mostly DWARF), else as it is.
Status MakeDirs(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  return ec ? Status::IoError("cannot create ", dir.string(), ": ", ec.message()) : Status::OK();
}

Status Install(const std::string& from, const fs::path& to, mode_t mode) {
  TESS_RETURN_IF_ERROR(MakeDirs(to.parent_path()));
  auto stripped = Run({"strip", "--strip-debug", "-o", to.string(), from});
  if (!stripped.ok() || stripped->exit_code != 0) {
    std::error_code ec;
    fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
    if (ec) return Status::IoError("cannot copy ", from, ": ", ec.message());
  }
  if (::chmod(to.c_str(), mode) != 0)
    return Status::IoError("chmod ", to.string(), ": ", std::strerror(errno));
  return Status::OK();
}

Status WriteFile(const fs::path& path, const std::string& text) {
  TESS_RETURN_IF_ERROR(MakeDirs(path.parent_path()));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  return out ? Status::OK() : Status::IoError("cannot write ", path.string());
}

// A Dockerfile ENV value: quoted, with the reference's "\n" for newlines
// (TESSERACT_DESCRIPTION is read back that way).
std::string Quoted(const std::string& value) {
  std::string out = "\"";
  for (char ch : value) {
    if (ch == '\n') {
      out += "\\\\n";
    } else {
      // Dockerfile values expand $VARIABLES even inside double quotes.
      if (ch == '"' || ch == '\\' || ch == '$') out += '\\';
      out += ch;
    }
  }
  return out + "\"";
}

// A temporary directory removed with everything in it.
class ScratchDir {
 public:
  static Result<ScratchDir> Make() {
    TESS_ASSIGN_OR_RETURN(std::string path, internal::MakeTempDir("tesscpp_build_"));
    return ScratchDir(path);
  }
  ScratchDir(ScratchDir&& other) noexcept : path_(std::exchange(other.path_, {})) {}
  ScratchDir& operator=(ScratchDir&&) = delete;
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  explicit ScratchDir(fs::path path) : path_(std::move(path)) {}
  fs::path path_;
};

}  // namespace

Result<std::string> BuildImage(const ImageBuildOptions& o) {
  TESS_ASSIGN_OR_RETURN(auto library, ComponentLibrary::Open(o.component));
  const Component& component = library->component();
  const std::string name = o.name.value_or(component.name());
  const std::string version = o.version.value_or(component.version());
  const std::string tag = o.tag.value_or(name + ":" + version);
  const std::string file_name = fs::path(o.component).filename().string();

  TESS_ASSIGN_OR_RETURN(ScratchDir scratch, ScratchDir::Make());
  const fs::path root = scratch.path() / "root";
  std::map<std::string, std::string> libs;
  std::string loader;
  TESS_RETURN_IF_ERROR(Closure(o.cli, libs, loader));
  TESS_RETURN_IF_ERROR(Closure(o.component, libs, loader));
  if (loader.empty()) return Status::Internal("ldd named no dynamic loader for ", o.cli);

  TESS_RETURN_IF_ERROR(Install(o.cli, root / fs::path(kBin).relative_path(), 0755));
  TESS_RETURN_IF_ERROR(
      Install(o.component, root / fs::path(kComponentDir).relative_path() / file_name, 0755));
  TESS_RETURN_IF_ERROR(Install(loader, root / fs::path(loader).relative_path(), 0755));
  for (const auto& [soname, path] : libs) {
    TESS_RETURN_IF_ERROR(Install(path, root / fs::path(kLibDir).relative_path() / soname, 0755));
  }
  TESS_RETURN_IF_ERROR(WriteFile(root / "etc/passwd",
                                 "root:x:0:0:root:/root:/sbin/nologin\n"
                                 "tesseract:x:" +
                                     std::to_string(kUid) + ":" + std::to_string(kUid) +
                                     ":tesseract:/tesseract:/sbin/nologin\n"));
  TESS_RETURN_IF_ERROR(
      WriteFile(root / "etc/group", "root:x:0:\ntesseract:x:" + std::to_string(kUid) + ":\n"));
  // Any user tesseract-core runs the container as (-u <host uid>) may write
  // results and scratch files.
  for (std::string_view dir : {std::string_view("/tmp"), kInputDir, kOutputDir}) {
    const fs::path path = root / fs::path(dir).relative_path();
    TESS_RETURN_IF_ERROR(MakeDirs(path));
    if (::chmod(path.c_str(), 01777) != 0)
      return Status::IoError("chmod ", path.string(), ": ", std::strerror(errno));
  }

  const fs::path archive = scratch.path() / "rootfs.tar";
  TESS_RETURN_IF_ERROR(RunOk({"tar", "--numeric-owner", "--owner=0", "--group=0", "-C", root.string(), "-cf",
                              archive.string(), "."})
                           .status());
  TESS_ASSIGN_OR_RETURN(Buffer metadata_json, WriteJson(Value::Dict{{"name", Value(name)},
                                                                    {"version", Value(version)},
                                                                    {"built_by", Value("tesscpp")}}));
  const std::string metadata(metadata_json.string_view());
  std::vector<std::string> argv = Engine();
  const std::vector<std::string> changes = {
      "ENV TESSERACT_NAME=" + Quoted(name),
      "ENV TESSERACT_VERSION=" + Quoted(version),
      "ENV TESSERACT_DESCRIPTION=" + Quoted(component.description()),
      "ENV TESSCPP_COMPONENT=" + Quoted(std::string(kComponentDir) + "/" + file_name),
      "ENV LD_LIBRARY_PATH=" + std::string(kLibDir),
      "ENV TESSERACT_INPUT_PATH=" + std::string(kInputDir),
      "ENV TESSERACT_OUTPUT_PATH=" + std::string(kOutputDir),
      "ENV HOME=/tmp",
      "LABEL ai.pasteurlabs.tesseract.metadata=" + Quoted(metadata),
      "WORKDIR /tesseract",
      "EXPOSE 8000",
      "USER " + std::to_string(kUid) + ":" + std::to_string(kUid),
      R"(ENTRYPOINT [")" + std::string(kBin) + R"("])",
      R"(CMD ["--help"])",
  };
  argv.emplace_back("import");
  for (const std::string& change : changes) argv.insert(argv.end(), {"--change", change});
  argv.insert(argv.end(), {archive.string(), tag});
  auto imported = RunOk(argv);
  if (!imported.ok()) return imported.status().WithContext("importing the image");
  return tag;
}

}  // namespace tesscpp::cli
