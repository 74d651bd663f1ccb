// oscillator: a simulation that tracks its runs (tesscpp/run_log.h). A
// harmonic oscillator x'' = -omega² x, integrated by symplectic Euler; apply
// logs the step size, the step count and the integrator as parameters, the
// energy after every step and the position every tenth step as metrics, and
// the trajectory as a CSV artifact. tests/fixtures/python/oscillator is its
// Python twin, logging the same through tesseract-core.
#include <stdlib.h>  // mkdtemp
#include <unistd.h>

#include <cstdio>
#include <string>

#include "tesscpp/component.h"

using namespace tesscpp;  // NOLINT(google-build-using-namespace): an example reads better without prefixes

namespace {

Value Float64(double v) {
  auto t = *NewTensor<double>({});
  t.second[0] = v;
  return Value(t.first);
}

// A file in a directory of its own under $TMPDIR, removed with the directory.
class ScratchFile {
 public:
  explicit ScratchFile(const std::string& name) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp != nullptr ? tmp : "/tmp") + "/oscillator-XXXXXX";
    if (::mkdtemp(pattern.data()) != nullptr) dir_ = pattern;
    path_ = dir_ + "/" + name;
  }
  ~ScratchFile() {
    std::remove(path_.c_str());
    if (!dir_.empty()) ::rmdir(dir_.c_str());
  }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string dir_;
  std::string path_;
};

Component MakeOscillator() {
  Component c("oscillator", "0.1.0", "A harmonic oscillator that logs its runs.\n");
  auto x0 = c.inputs().Scalar<double>("x0", {.doc = "Initial position.", .default_value = 1.0});
  auto v0 = c.inputs().Scalar<double>("v0", {.doc = "Initial velocity.", .default_value = 0.0});
  auto omega = c.inputs().Scalar<double>("omega", {.doc = "Angular frequency.", .default_value = 1.0});
  auto dt = c.inputs().Scalar<double>("dt", {.doc = "Time step.", .default_value = 0.01});
  auto steps = c.inputs().Scalar<int64_t>("steps", {.doc = "Number of steps.", .default_value = 100});
  auto x_out = c.outputs().Scalar<double>("x", {.doc = "Final position."});
  auto v_out = c.outputs().Scalar<double>("v", {.doc = "Final velocity."});

  c.Apply(
      [=](const ModelView& in, Record& out) -> Status {
        const double w2 = in[omega] * in[omega];
        const double h = in[dt];
        TESS_RETURN_IF_ERROR(LogParameter("dt", h));
        TESS_RETURN_IF_ERROR(LogParameter("steps", in[steps]));
        TESS_RETURN_IF_ERROR(LogParameter("integrator", "symplectic-euler"));
        ScratchFile trajectory("trajectory.csv");
        std::FILE* csv = std::fopen(trajectory.path().c_str(), "w");
        if (csv == nullptr) return Status::IoError("cannot write ", trajectory.path());
        std::fprintf(csv, "step,x,v\n");
        double x = in[x0];
        double v = in[v0];
        for (int64_t i = 0; i < in[steps]; ++i) {
          v -= w2 * x * h;
          x += v * h;
          std::fprintf(csv, "%lld,%.6f,%.6f\n", static_cast<long long>(i), x, v);
          TESS_RETURN_IF_ERROR(LogMetric("energy", 0.5 * (v * v + w2 * x * x)));
          if (i % 10 == 0) TESS_RETURN_IF_ERROR(LogMetric("position", x, i));
        }
        std::fclose(csv);
        TESS_RETURN_IF_ERROR(LogArtifact(trajectory.path()));
        out.Set(x_out, Float64(x));
        out.Set(v_out, Float64(v));
        return Status::OK();
      },
      "Integrates the oscillator, logging parameters, energies and the trajectory.");
  return c;
}

}  // namespace

TESSCPP_COMPONENT(MakeOscillator)
