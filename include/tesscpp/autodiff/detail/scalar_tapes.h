// scalar_tapes.h: a scalar-form call's inputs as doubles, and its ADOL-C
// tapes: recorded, kept for the next call at the same point, and evaluated
// (internal to tesscpp/autodiff.h).
#pragma once

// Sacado's own headers, without the Trilinos configuration that would pull in
// Kokkos, Teuchos and MPI.
#ifndef TRILINOS_NO_CONFIG_H
#define TRILINOS_NO_CONFIG_H
#endif
#include <adolc/adolc.h>
#include <Sacado_No_Kokkos.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tesscpp/autodiff/context.h"
#include "tesscpp/autodiff/detail/fields.h"
#include "tesscpp/autodiff/detail/tape.h"
#include "tesscpp/component.h"
#include "tesscpp/model.h"
#include "tesscpp/schema.h"

// ADOL-C's base names of its four tape files (taping.c, not in its installed
// headers): "<dir>/ADOLC-Operations_" and the like, to which it appends a
// tag's number when that tag's tape is first made.
extern "C" char* tapeBaseNames[4];  // NOLINT: ADOL-C's name

namespace tesscpp::autodiff::internal {

using Arrays = std::map<std::string, Context<double>::Array>;

// The differentiable inputs of `model`, as doubles (optional fields left out
// are absent).
inline Result<Arrays> ReadInputs(const Value& model, const std::map<std::string, Dtype>& fields) {
  Arrays inputs;
  for (const auto& [name, dtype] : fields) {
    const Value* value = model.as_dict().find(name);
    if (value == nullptr || !value->is_tensor()) continue;
    const Tensor& tensor = value->as_tensor();
    Context<double>::Array array;
    array.dims.assign(tensor.shape().dims().begin(), tensor.shape().dims().end());
    TESS_ASSIGN_OR_RETURN(array.values, ReadValues(tensor));
    inputs.emplace(name, std::move(array));
  }
  return inputs;
}

// `arrays` as numbers of type T, each field's made by make(name, values).
template <typename T, typename Make>
std::map<std::string, typename Context<T>::Array> Convert(const Arrays& arrays, Make make) {
  std::map<std::string, typename Context<T>::Array> converted;
  for (const auto& [name, array] : arrays) converted[name] = {array.dims, make(name, array.values)};
  return converted;
}

// Every taping and sweep holds the process's tape lock (tape.h).
inline std::mutex& TapeLock() { return ProcessTapeSlot().lock; }
// The tag of the process's tape (a sweep reads the last one recorded).
inline short TapeTag() { return ProcessTapeSlot().tag; }

// ADOL-C writes a tape that outgrows its buffers to files named after its tag,
// by default in the working directory: processes started in one directory (a
// server's workers, two servers) would write the same files and sweep each
// other's tapes, which crashed a worker or gave wrong derivatives. Before any
// use of the tape (the caller holds TapeLock()), the first in a process points
// those names at the process's own directory (ProcessTapeDirectory). Without
// one (no writable temporary directory), the tapes stay where ADOL-C puts
// them, said once on stderr: a VJP is not refused for it.
inline void UseProcessTapeFiles() {
  if (!ClaimTapeSlot(ProcessTapeSlot())) return;
  const Result<std::string> dir = ProcessTapeDirectory();
  std::string failed = dir.ok() ? "" : "no directory of its own: " + dir.status().message();
  for (char*& base : tapeBaseNames) {
    if (!failed.empty()) break;
    char* moved = base == nullptr
                      ? nullptr
                      : ::strdup((*dir + "/" + std::filesystem::path(base).filename().string()).c_str());
    if (moved == nullptr) {
      failed = "its file names could not be moved";
      continue;
    }
    std::free(base);  // ADOL-C's own, made with calloc
    base = moved;
  }
  if (!failed.empty())
    std::fprintf(stderr, "tesscpp: ADOL-C's tapes of this process go to the working directory: %s\n",
                 failed.c_str());
}

// The tape lock, held, with the tape's files this process's (every use of
// the tape goes through here).
inline std::unique_lock<std::mutex> LockedTape() {
  std::unique_lock<std::mutex> lock(TapeLock());
  UseProcessTapeFiles();
  return lock;
}

// Recording keeps the values for a reverse sweep right after, and leaves the
// files of a tape that spilled to its directory's removal: ADOL-C's own
// clean-up at exit would remove a forked parent's files from a child that
// exits normally.
inline void StartRecording() {
  trace_on(TapeTag(), 1, OBUFSIZE, LBUFSIZE, VBUFSIZE, TBUFSIZE, /*skipFileCleanup=*/1);
}

// Numbers the functions Derive registers, for the tapes this library keeps.
inline uint64_t NextFunctionId() {
  static std::atomic<uint64_t> next{0};
  return ++next;
}

// What recording a call on the tape leaves: the independents (input name,
// element) in tape order, the point they were recorded at, the shapes of the
// outputs made dependent and how many elements they hold, and their values
// at the point of the last pass.
struct Taped {
  std::vector<std::pair<std::string, int64_t>> independents;
  std::vector<double> point;
  std::map<std::string, std::vector<int64_t>> output_dims;
  int64_t dependents = 0;
  std::vector<double> values;
};

// Records `fn` on the tape with every differentiable input independent and
// the outputs in `wanted` dependent (in that order, elements row-major).
// The caller holds TapeLock().
template <typename Fn>
Result<Taped> Tape(const Fn& fn, const ModelView& in, const std::map<std::string, Dtype>& input_fields,
                   const std::map<std::string, Dtype>& output_fields, const PathSet& wanted) {
  TESS_ASSIGN_OR_RETURN(const Arrays arrays, ReadInputs(in.value(), input_fields));
  Taped taped;
  StartRecording();
  auto inputs = Convert<adouble>(arrays, [&](const std::string& name, const std::vector<double>& values) {
    std::vector<adouble> independent(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      independent[i] <<= values[i];
      taped.independents.emplace_back(name, static_cast<int64_t>(i));
      taped.point.push_back(values[i]);
    }
    return independent;
  });
  Context<adouble> ctx(in, std::move(inputs), output_fields);
  const Status status = fn(ctx);
  for (const std::string& name : wanted) {
    auto found = ctx.outputs().find(name);
    if (found == ctx.outputs().end()) continue;
    taped.output_dims[name] = found->second.dims;
    for (adouble& y : found->second.values) {
      double value = 0;
      y >>= value;
      taped.values.push_back(value);
      ++taped.dependents;
    }
  }
  trace_off();
  if (!status.ok()) return status;
  return taped;
}

// What a tape holds fixed: the inputs that are not differentiable (recorded
// as constants), the differentiable ones' shapes, and the outputs made
// dependent. A tape recorded under equal constants can be swept again at new
// values of the differentiable inputs.
struct TapeConstants {
  uint64_t function = 0;  // which Derive call: tapes of two components never mix
  Value fixed;
  std::map<std::string, std::vector<int64_t>> shapes;
  PathSet wanted;

  bool operator==(const TapeConstants&) const = default;

  // The fixed inputs as the call shares them: enough to compare with the
  // kept tape's, which holds its own copies (Owned).
  static TapeConstants Of(uint64_t function, const Value& model,
                          const std::map<std::string, Dtype>& input_fields, const PathSet& wanted) {
    TapeConstants constants{function, Value::Dict{}, {}, wanted};
    for (const auto& [name, value] : model.as_dict()) {
      if (input_fields.contains(name) && value.is_tensor()) {
        const auto dims = value.as_tensor().shape().dims();
        constants.shapes.emplace(name, std::vector<int64_t>(dims.begin(), dims.end()));
      } else {
        constants.fixed.as_dict().set(name, value);
      }
    }
    return constants;
  }

  // The same with the fixed arrays copied, for keeping: a caller's array
  // borrowed in place (an in-process numpy input) may change before the next
  // call. Copied only when a tape is recorded, not on every sweep.
  Result<TapeConstants> Owned() && {
    for (auto& [name, value] : fixed.as_dict()) {
      if (!value.is_tensor()) continue;
      const Tensor& shared = value.as_tensor();
      TESS_ASSIGN_OR_RETURN(Tensor copy, Tensor::Allocate(shared.dtype(), shared.shape()));
      std::copy(shared.bytes().begin(), shared.bytes().end(), copy.bytes().begin());
      value = Value(std::move(copy));
    }
    return std::move(*this);
  }
};

// The tape this library recorded last, what it holds fixed, and which
// recording of the process it was (guarded by TapeLock()).
struct KeptTape {
  std::optional<TapeConstants> constants;
  uint64_t recording = 0;
  Taped taped;
};
inline KeptTape& LastTape() {
  static auto* kept = new KeptTape();  // leaked: what it holds must not be freed after its pools at exit
  return *kept;
}

// A tape of `fn` at `in`'s point with the outputs in `wanted` dependent,
// ready for a reverse sweep. Recording costs several times a sweep, so the
// tape of the last call is swept forward to the new point when the constants
// are the same; ADOL-C's forward sweep checks every comparison the recording
// made, and a branch that would go the other way (it prints a warning) gets
// the call recorded again. The caller holds TapeLock(), and reads the
// answer (the kept tape, not a copy of its per-element index) under it.
template <typename Fn>
Result<const Taped*> TapeAt(uint64_t function, const Fn& fn, const ModelView& in,
                            const std::map<std::string, Dtype>& input_fields,
                            const std::map<std::string, Dtype>& output_fields, const PathSet& wanted) {
  TapeConstants constants = TapeConstants::Of(function, in.value(), input_fields, wanted);
  KeptTape& kept = LastTape();
  TapeSlot& slot = ProcessTapeSlot();
  ++slot.sweeps;  // a forward pass follows, recorded or swept
  ++slot.forward_passes;
  if (kept.constants == constants && kept.recording == slot.recordings) {
    TESS_ASSIGN_OR_RETURN(const Arrays arrays, ReadInputs(in.value(), input_fields));
    std::vector<double> point;  // in recording order: by input name, then row-major
    point.reserve(kept.taped.point.size());
    for (const auto& [name, array] : arrays)
      point.insert(point.end(), array.values.begin(), array.values.end());
    const auto n = static_cast<int>(point.size());
    const auto m = static_cast<int>(kept.taped.dependents);
    std::vector<double> values(static_cast<size_t>(m));
    if (m == 0 || n == 0 || zos_forward(TapeTag(), m, n, 1, point.data(), values.data()) >= 0) {
      kept.taped.point = std::move(point);
      kept.taped.values = std::move(values);
      return &kept.taped;
    }
  }
  kept.constants.reset();
  ++slot.recordings;  // the tape is overwritten whether or not the recording succeeds
  TESS_ASSIGN_OR_RETURN(Taped taped, Tape(fn, in, input_fields, output_fields, wanted));
  TESS_ASSIGN_OR_RETURN(TapeConstants owned, std::move(constants).Owned());
  kept = {std::move(owned), slot.recordings, std::move(taped)};
  return &kept.taped;
}

// `fn` in doubles at `in`: its outputs.
template <typename Fn>
Result<std::map<std::string, Context<double>::Array>> Evaluate(
    const Fn& fn, const ModelView& in, const std::map<std::string, Dtype>& input_fields,
    const std::map<std::string, Dtype>& output_fields) {
  TESS_ASSIGN_OR_RETURN(Arrays inputs, ReadInputs(in.value(), input_fields));
  Context<double> ctx(in, std::move(inputs), output_fields);
  ++ProcessTapeSlot().forward_passes;
  TESS_RETURN_IF_ERROR(fn(ctx));
  return std::move(ctx.outputs());
}

// What an apply asked to keep its forward leaves for the VJP at its inputs
// (tesscpp/forward_reuse.h): which recording of which function its forward
// pass ran on, and which pass over the tape that was. While no pass has run
// since, the tape still holds that forward's values and a reverse sweep is
// all the VJP needs; otherwise the VJP sweeps forward again, as without it.
struct SweptForward {
  uint64_t function = 0;
  uint64_t recording = 0;
  uint64_t sweep = 0;

  // Whether the tape is still as this forward left it, for `function`'s
  // kept tape. The caller holds TapeLock().
  bool Current(uint64_t of, const KeptTape& kept) const {
    const TapeSlot& slot = ProcessTapeSlot();
    return of == function && kept.constants && kept.constants->function == function &&
           kept.recording == recording && slot.recordings == recording && slot.sweeps == sweep;
  }
};

}  // namespace tesscpp::autodiff::internal
