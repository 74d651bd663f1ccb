#include "init_project.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>

namespace tesscpp::cli {
namespace {

namespace fs = std::filesystem;

// @NAME@ is the component's name, @IDENT@ the same as a C++ identifier,
// @VERSION@ the SDK's major.minor the project asks for.
constexpr std::string_view kCMakeLists = R"tpl(# @NAME@: a Tesseract component built against the tesscpp SDK.
cmake_minimum_required(VERSION 3.20)
project(@NAME@ LANGUAGES CXX)

# Found through CMAKE_PREFIX_PATH: the install prefix of tesscpp, or
# $(python -m tesscpp --cmake-dir) for the pip package.
find_package(tesscpp @VERSION@ CONFIG REQUIRED)
tesscpp_add_component(@NAME@ SOURCES @NAME@.cc)
)tpl";

// The derived template's addition: tesscpp::autodiff exists where ADOL-C and
// Sacado are installed.
constexpr std::string_view kCMakeAutodiff = R"tpl(if(NOT TARGET tesscpp::autodiff)
  message(FATAL_ERROR "@NAME@ derives its derivatives with tesscpp::autodiff, which needs ADOL-C and "
                      "Sacado (Debian, Ubuntu: apt install libadolc-dev libtrilinos-sacado-dev). Or write "
                      "them by hand: tesscpp init @NAME@ --template explicit")
endif()
target_link_libraries(@NAME@ PRIVATE tesscpp::autodiff)
)tpl";

// The array template's addition: tesscpp::autodiff_arrays exists where
// Dr.Jit is installed.
constexpr std::string_view kCMakeAutodiffArrays = R"tpl(if(NOT TARGET tesscpp::autodiff_arrays)
  message(FATAL_ERROR "@NAME@ derives its derivatives from array code with tesscpp::autodiff_arrays, which "
                      "needs Dr.Jit's C++ package and nanobind's headers (pip install drjit==1.5.0 nanobind, "
                      "found through the python3 on PATH or -Ddrjit_DIR=<site-packages>/drjit/cmake/drjit) and, "
                      "at run time, an LLVM shared library (Debian, Ubuntu: apt install libllvm15)")
endif()
target_link_libraries(@NAME@ PRIVATE tesscpp::autodiff_arrays)
)tpl";

constexpr std::string_view kDerivedSource =
    R"tpl(// @NAME@: y = scale * x^2, element by element, written once for any number
// type; tesscpp derives the jacobian, JVP and VJP endpoints from it
// (tesscpp/autodiff.h). Replace the function with your model: loops and
// branches are fine; `tesscpp check-gradients` compares the derivatives with
// finite differences (README.md).
#include "tesscpp/autodiff.h"

using namespace tesscpp;  // NOLINT(google-build-using-namespace)

namespace {

Component Make@IDENT@() {
  Component c("@NAME@", "0.1.0", "y = scale * x^2, element by element.\n");
  c.inputs().Array<double>("x", {kAnyDim}, {.differentiable = true, .doc = "The values."});
  auto scale = c.inputs().Scalar<double>("scale", {.doc = "Factor on x^2.", .default_value = 1.0});
  c.outputs().Array<double>("y", {kAnyDim}, {.differentiable = true, .doc = "scale * x^2."});

  // ctx.Input gives the differentiable inputs in the number type being
  // derived with; the others are read as validated, through ctx.inputs().
  autodiff::Derive(
      c,
      [=](auto& ctx) -> Status {
        const auto x = ctx.Input("x");
        const double k = ctx.inputs()[scale];
        TESS_ASSIGN_OR_RETURN(auto y, ctx.Output("y", {static_cast<int64_t>(x.size())}));
        for (size_t i = 0; i < x.size(); ++i) y[i] = k * x[i] * x[i];
        return Status::OK();
      },
      "y = scale * x^2, element by element.");
  return c;
}

}  // namespace

TESSCPP_COMPONENT(Make@IDENT@)
)tpl";

constexpr std::string_view kArraySource =
    R"tpl(// @NAME@: y = scale * x^2, written once over whole arrays with Dr.Jit;
// tesscpp derives the jacobian, JVP and VJP endpoints from it
// (tesscpp/autodiff_arrays.h). Replace the function with your model: arithmetic
// and math functions on whole arrays, autodiff::Permute for periodic
// neighbours (a permutation and its inverse; drjit::gather for any other
// index), drjit::select for branches; `tesscpp check-gradients` compares the
// derivatives with finite differences (README.md).
#include "tesscpp/autodiff_arrays.h"

using namespace tesscpp;  // NOLINT(google-build-using-namespace)

namespace {

Component Make@IDENT@() {
  Component c("@NAME@", "0.1.0", "y = scale * x^2, element by element.\n");
  c.inputs().Array<double>("x", {kAnyDim}, {.differentiable = true, .doc = "The values."});
  auto scale = c.inputs().Scalar<double>("scale", {.doc = "Factor on x^2.", .default_value = 1.0});
  c.outputs().Array<double>("y", {kAnyDim}, {.differentiable = true, .doc = "scale * x^2."});

  // ctx.Input gives a differentiable input as one flat array; the other
  // inputs are read as validated, through ctx.inputs(). A value that changes
  // between calls goes through ctx.Param, so that it does not compile a new
  // kernel for each value.
  autodiff::DeriveArrays(
      c,
      [=](auto& ctx) -> Status {
        using Float = typename std::decay_t<decltype(ctx)>::Float;
        const Float& x = ctx.Input("x");
        const Float k = ctx.Param(ctx.inputs()[scale]);
        return ctx.Output("y", k * x * x, ctx.InputShape("x"));
      },
      "y = scale * x^2, element by element.");
  return c;
}

}  // namespace

TESSCPP_COMPONENT(Make@IDENT@)
)tpl";

constexpr std::string_view kExplicitSource =
    R"tpl(// @NAME@: y = scale * x^2, element by element, with its vector-Jacobian product.
// Replace apply with your model and keep the derivative in step with it;
// `tesscpp check-gradients` compares the two (README.md).
#include "tesscpp/component.h"

using namespace tesscpp;  // NOLINT(google-build-using-namespace)

namespace {

Component Make@IDENT@() {
  Component c("@NAME@", "0.1.0", "y = scale * x^2, element by element.\n");
  auto x = c.inputs().Array<double>("x", {kAnyDim}, {.differentiable = true, .doc = "The values."});
  auto scale = c.inputs().Scalar<double>("scale", {.doc = "Factor on x^2.", .default_value = 1.0});
  auto y = c.outputs().Array<double>("y", {kAnyDim}, {.differentiable = true, .doc = "scale * x^2."});

  c.Apply([=](const ModelView& in, Record& out) -> Status {
    TESS_ASSIGN_OR_RETURN(auto values, out.NewArray<double>(y, {in[x].size()}));
    for (int64_t i = 0; i < in[x].size(); ++i) values[i] = in[scale] * in[x][i] * in[x][i];
    return Status::OK();
  });

  // dy_i/dx_i = 2 * scale * x_i (and 0 across elements): the VJP scales each
  // entry of the cotangent of y.
  c.VectorJacobianProduct([=](const ModelView& in, const PathSet&, const PathSet&, const TensorMap& cotangent,
                              TensorMap& vjp) -> Status {
    const Tensor& dy = cotangent.at("y");
    TESS_ASSIGN_OR_RETURN(Tensor dx, Tensor::Allocate(Dtype::kFloat64, dy.shape()));
    for (int64_t i = 0; i < dx.num_elements(); ++i) {
      dx.data_as<double>()[i] = 2 * in[scale] * in[x][i] * dy.data_as<double>()[i];
    }
    vjp.emplace("x", std::move(dx));
    return Status::OK();
  });
  return c;
}

}  // namespace

TESSCPP_COMPONENT(Make@IDENT@)
)tpl";

constexpr std::string_view kTestSpec = R"tpl({
  "endpoint": "apply",
  "payload": {"inputs": {"x": [1.0, 2.0, -3.0], "scale": 2.0}},
  "expected_outputs": {
    "y": {"object_type": "array", "shape": [3], "dtype": "float64",
          "data": {"buffer": [2.0, 8.0, 18.0], "encoding": "json"}}
  },
  "atol": 1e-08,
  "rtol": 1e-05
}
)tpl";

constexpr std::string_view kReadme = R"tpl(# @NAME@

A Tesseract component in C++, built against the tesscpp SDK.

    cmake -S . -B build -DCMAKE_PREFIX_PATH="$(python -m tesscpp --cmake-dir)"   # or tesscpp's install prefix
    cmake --build build
    tesscpp test build/lib@NAME@.so @test_apply.json                 # the TestSpec: {"status":"passed",...}
    tesscpp apply build/lib@NAME@.so '{"inputs": {"x": [1, 2], "scale": 3}}'
    tesscpp check-gradients build/lib@NAME@.so '{"inputs": {"x": [1, 2, 3]}}'   # derivatives vs finite differences
    tesscpp serve build/lib@NAME@.so --port 8000                     # any Tesseract client can call it

From Python: `tesscpp.Tesseract.from_library("build/lib@NAME@.so")` (in-process) or
`tesseract_core.Tesseract.from_url("http://127.0.0.1:8000")` while it is served.
A component is bound to the tesscpp release it was built with: rebuild it after upgrading
tesscpp (the loader refuses a mismatched build, naming both).
)tpl";

constexpr std::string_view kGitignore = "build/\n";

std::string Fill(std::string_view text, const std::string& name, const std::string& ident,
                 const std::string& version) {
  std::string out(text);
  const std::pair<std::string_view, const std::string*> tokens[] = {
      {"@NAME@", &name}, {"@IDENT@", &ident}, {"@VERSION@", &version}};
  for (const auto& [token, value] : tokens) {
    for (size_t at = out.find(token); at != std::string::npos; at = out.find(token, at + value->size())) {
      out.replace(at, token.size(), *value);
    }
  }
  return out;
}

bool ValidName(std::string_view name) {
  if (name.empty() || name.size() > 64 || !(std::isalpha(static_cast<unsigned char>(name[0])) != 0))
    return false;
  for (char ch : name) {
    if (std::isalnum(static_cast<unsigned char>(ch)) == 0 && ch != '_' && ch != '-') return false;
  }
  return true;
}

}  // namespace

Result<ProjectTemplate> ProjectTemplateFromName(std::string_view name) {
  if (name == "derived") return ProjectTemplate::kDerived;
  if (name == "explicit") return ProjectTemplate::kExplicit;
  if (name == "array") return ProjectTemplate::kArray;
  return Status::InvalidArgument("template '", name, "': expected 'derived', 'array' or 'explicit'");
}

Status InitProject(const std::string& name, const std::string& dir, bool force, ProjectTemplate kind) {
  if (!ValidName(name)) {
    return Status::InvalidArgument(
        "name '", name, "': use a letter, then letters, digits, '_' or '-' (at most 64 characters)");
  }
  std::error_code ec;
  if (fs::exists(dir, ec) && !force) {
    return Status::InvalidArgument("'", dir, "' exists: choose another --dir, or --force to write into it");
  }
  fs::create_directories(dir, ec);
  if (ec) return Status::IoError("cannot create '", dir, "': ", ec.message());
  std::string ident = name;
  for (char& ch : ident) ch = ch == '-' ? '_' : ch;
  ident[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(ident[0])));
  const std::string version = TESSCPP_SDK_VERSION;  // major.minor of this tesscpp
  std::string cmake(kCMakeLists);
  std::string_view source = kExplicitSource;
  if (kind == ProjectTemplate::kDerived) {
    cmake += kCMakeAutodiff;
    source = kDerivedSource;
  } else if (kind == ProjectTemplate::kArray) {
    cmake += kCMakeAutodiffArrays;
    source = kArraySource;
  }
  const std::pair<std::string, std::string_view> files[] = {{"CMakeLists.txt", cmake},
                                                            {name + ".cc", source},
                                                            {"test_apply.json", kTestSpec},
                                                            {"README.md", kReadme},
                                                            {".gitignore", kGitignore}};
  for (const auto& [file, text] : files) {
    const fs::path path = fs::path(dir) / file;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << Fill(text, name, ident, version);
    if (!out) return Status::IoError("cannot write '", path.string(), "'");
  }
  return Status::OK();
}

}  // namespace tesscpp::cli
