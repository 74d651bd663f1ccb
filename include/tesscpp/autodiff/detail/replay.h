// replay.h: array-form calls replayed from Dr.Jit recordings
// instead of traced again (docs/autodiff.md, "Replayed calls"). For
// tesscpp/autodiff_arrays.h, which includes it.
//
// Tracing a call (running the function over Dr.Jit's arrays, building and
// traversing the derivative graph, looking up the compiled kernels) costs the
// same whatever the size: 60-250 µs per call, most of a call on the GPU.
// Dr.Jit can record the kernel launches and copies of a call and replay them
// on other arrays of the same shapes (jit_freeze_*, what its Python
// `dr.freeze` is built on). A recording depends on everything but the values
// of its input arrays: the other inputs (literals of its kernels, counts of
// its loop), the shapes, the requested paths. Those make the key; a call
// whose key was recorded is replayed. Dr.Jit refuses what a replay could not
// reproduce: reading an array on the host (a branch on a value) throws while
// recording, and an array made outside the recording that is not one of its
// inputs (a host array loaded by the function) fails the recording's end.
// Such a key is then traced on every call, never replayed.
#pragma once

#include <drjit/autodiff.h>
#include <drjit/jit.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tesscpp/autodiff/detail/fields.h"
#include "tesscpp/dtype.h"
#include "tesscpp/result.h"
#include "tesscpp/tensor.h"
#include "tesscpp/value.h"

namespace tesscpp::autodiff::internal {

/// \brief Whether Dr.Jit still runs: a component destroyed after it shut
/// down (at exit) has nothing of Dr.Jit's left to free.
inline bool DrJitRunning() {
  return jit_has_backend(JitBackend::LLVM) != 0 || jit_has_backend(JitBackend::CUDA) != 0;
}

/// \brief Where a recorded call keeps its kernel parameters (ctx.Param,
/// ctx.Index): one-element arrays in memory, made before the recording starts
/// and passed to it as inputs. A parameter written into a slot is read by
/// the recorded kernels from there, so a replay launches nothing for it;
/// made opaque inside the recording, each one would be a fill (a kernel on
/// the GPU) replayed on every call. The slots keep the recorded values,
/// which is right: everything a parameter can come from is in the key.
///
/// One array per slot, read as it is, not one array of slots read by
/// gather: a kernel loads a one-element array into every lane, while a
/// gather reads nothing in the lanes past the array's end of the CPU
/// kernel's last vector and gives 0 there. An index parameter divided by
/// (`i % ctx.Index(n)`) then divided by zero in those lanes, and the CPU
/// traps (SIGFPE) on an integer division by zero, floating point or not.
template <typename Float>
class ParamSlots {
 public:
  using Values = drjit::detached_t<Float>;
  using Indices = drjit::uint32_array_t<Values>;
  /// Parameters of each kind per recording; any beyond are opaque, as in a
  /// call that is not recorded.
  static constexpr uint32_t kSlots = 8;

  ParamSlots() {
    // Each from memory of its own: zeros() would give one literal to all.
    for (uint32_t k = 0; k < kSlots; ++k) {
      values_[k] = Values::load_(&kZero, 1);
      indices_[k] = Indices::load_(&kZeroIndex, 1);
    }
  }
  ParamSlots(const ParamSlots&) = delete;
  ParamSlots& operator=(const ParamSlots&) = delete;
  ~ParamSlots() {
    if (!DrJitRunning()) {  // nothing left to free
      for (uint32_t k = 0; k < kSlots; ++k) {
        (void)values_[k].release();
        (void)indices_[k].release();
      }
    }
  }

  /// \brief The arrays the recording reads, as its inputs.
  std::array<uint32_t, 2 * kSlots> Inputs() const {
    std::array<uint32_t, 2 * kSlots> inputs{};
    for (uint32_t k = 0; k < kSlots; ++k) {
      inputs[k] = values_[k].index();
      inputs[kSlots + k] = indices_[k].index();
    }
    return inputs;
  }

  /// \brief `value` in the next free slot, read from there (nullopt when
  /// all are taken). Only while recording.
  std::optional<Values> Take(double value) { return Write(values_, used_values_, value); }
  std::optional<Indices> Take(uint32_t value) { return Write(indices_, used_indices_, value); }

  /// \brief The slots of the recording this thread makes now (null when it
  /// makes none).
  static ParamSlots* Current() { return current(); }

  /// \brief Makes `slots` Current() for its lifetime.
  class Scope {
   public:
    explicit Scope(ParamSlots* slots) : previous_(std::exchange(current(), slots)) {}
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    ~Scope() { current() = previous_; }

   private:
    ParamSlots* previous_;
  };

 private:
  template <typename Array, typename T>
  static std::optional<Array> Write(std::array<Array, kSlots>& slots, uint32_t& used, T value) {
    if (used == kSlots) return std::nullopt;
    Array& slot = slots[used++];
    // Written past the recording (a replay finds the value in place), and
    // synchronously: the kernels that read it come later in the stream.
    Paused paused;
    jit_memcpy(drjit::backend_v<Float>, slot.data(), &value, sizeof value);
    return slot;
  }

  // The recording paused for its lifetime (resumed also when a copy throws).
  class Paused {
   public:
    Paused() : was_paused_(jit_freeze_pause(drjit::backend_v<Float>) != 0) {}
    Paused(const Paused&) = delete;
    Paused& operator=(const Paused&) = delete;
    ~Paused() {
      if (!was_paused_) jit_freeze_resume(drjit::backend_v<Float>);
    }

   private:
    bool was_paused_;
  };

  static ParamSlots*& current() {
    static thread_local ParamSlots* slots = nullptr;
    return slots;
  }

  static constexpr double kZero = 0.0;
  static constexpr uint32_t kZeroIndex = 0;

  std::array<Values, kSlots> values_;
  std::array<Indices, kSlots> indices_;
  uint32_t used_values_ = 0, used_indices_ = 0;
};

/// \brief Arrays a call produces, by name, in the order it produced them.
template <typename Float>
using NamedArrays = std::vector<std::pair<std::string, Field<Float>>>;

/// Arrays of more bytes than this among the inputs that are not
/// differentiable keep a call from being recorded (they would be compared,
/// and kept, whole).
inline constexpr int64_t kMaxKeyArrayBytes = 64 * 1024;

/// \brief `value` as part of a key; nullopt where it holds an array on a
/// device or one of more than kMaxKeyArrayBytes. A key looked up shares the
/// request's arrays (Tensor equality compares their bytes); `own` copies
/// them, for a key that is kept (the request's may be borrowed memory).
inline std::optional<Value> KeyValue(const Value& value, bool own = false) {
  if (value.is_tensor()) {
    const Tensor& tensor = value.as_tensor();
    if (!tensor.device().host_accessible() || tensor.nbytes() > kMaxKeyArrayBytes) return std::nullopt;
    if (!own) return value;
    auto copy = Tensor::Allocate(tensor.dtype(), tensor.shape());
    if (!copy.ok()) return std::nullopt;
    if (tensor.nbytes() > 0) std::memcpy(copy->data(), tensor.data(), static_cast<size_t>(tensor.nbytes()));
    return Value(*std::move(copy));
  }
  if (value.is_list()) {
    Value::List items;
    for (const Value& item : value.as_list()) {
      std::optional<Value> key = KeyValue(item, own);
      if (!key) return std::nullopt;
      items.push_back(*std::move(key));
    }
    return Value(std::move(items));
  }
  if (value.is_dict()) {
    Value::Dict items;
    for (const auto& [name, item] : value.as_dict()) {
      std::optional<Value> key = KeyValue(item, own);
      if (!key) return std::nullopt;
      items.set(name, *std::move(key));
    }
    return Value(std::move(items));
  }
  if (value.is_float()) {
    // By its bits: 0.0 and -0.0 compare equal but bake different kernels
    // (1 / dt), and a NaN equals nothing but would bake the same.
    const double number = value.as_number();
    uint64_t bits = 0;
    std::memcpy(&bits, &number, sizeof bits);
    return Value::List{Value("float64 bits"), Value(bits)};
  }
  return value;
}

/// \brief What a recording depends on of a tensor: its shape, dtype and device.
inline Value LayoutKey(const Tensor& tensor) {
  Value::List dims;
  for (const int64_t d : tensor.shape().dims()) dims.emplace_back(d);
  return Value::Dict{{"dims", Value(std::move(dims))},
                     {"dtype", Value(DtypeName(tensor.dtype()))},
                     {"device", Value(tensor.device().ToString())}};
}

/// \brief The key part of an input model: the differentiable arrays (`fields`)
/// by layout, everything else by value (KeyValue).
inline std::optional<Value> ModelKey(const Value& model, const std::map<std::string, Dtype>& fields) {
  Value::Dict key;
  for (const auto& [name, value] : model.as_dict()) {
    if (value.is_tensor() && fields.contains(name)) {
      key.set(name, LayoutKey(value.as_tensor()));
    } else {
      std::optional<Value> part = KeyValue(value);
      if (!part) return std::nullopt;
      key.set(name, *std::move(part));
    }
  }
  return Value(std::move(key));
}

/// \brief ModelKey with the requested paths and the layouts of the tangents
/// or cotangents of a derivative call.
inline std::optional<Value> DerivativeKey(const Value& model, const std::map<std::string, Dtype>& fields,
                                          const PathSet& wrt, const PathSet& of, const TensorMap& vectors) {
  std::optional<Value> inputs = ModelKey(model, fields);
  if (!inputs) return std::nullopt;
  Value::List from(wrt.begin(), wrt.end()), to(of.begin(), of.end());
  Value::Dict layouts;
  for (const auto& [name, tensor] : vectors) layouts.set(name, LayoutKey(tensor));
  return Value::Dict{{"inputs", *std::move(inputs)},
                     {"wrt", Value(std::move(from))},
                     {"of", Value(std::move(to))},
                     {"vectors", Value(std::move(layouts))}};
}

/// \brief Whether the call running on this thread read what no replay key
/// covers: the bytes of a differentiable input through ctx.inputs() (a time
/// step from `max|u|`), which a recording would keep as the first call's
/// constant. RunOn notes it; a recording of such a call is thrown away and
/// its key traced on every call, so no replay can answer differently from a
/// fresh trace.
class UncoveredReads {
 public:
  static void Note() { flag() = true; }
  /// \brief Whether one was noted since the last Take (and forgets it).
  static bool Take() { return std::exchange(flag(), false); }

 private:
  static bool& flag() {
    thread_local bool noted = false;
    return noted;
  }
};

/// \brief The recordings of one derived endpoint, the most recently used first.
class Replays {
 public:
  /// Recordings kept per endpoint (a new key beyond them drops the oldest).
  static constexpr size_t kKept = 8;

  /// \brief TESSCPP_DRJIT_REPLAY=0 traces every call (for comparison, and a
  /// way out should a recording ever misbehave).
  static bool Enabled() {
    static const bool enabled = [] {
      const char* value = std::getenv("TESSCPP_DRJIT_REPLAY");
      return value == nullptr || std::string_view(value) != "0";
    }();
    return enabled;
  }

  struct DestroyRecording {
    void operator()(Recording* recording) const {
      if (DrJitRunning()) jit_freeze_destroy(recording);
    }
  };
  using RecordingPtr = std::unique_ptr<Recording, DestroyRecording>;

  struct Entry {
    Value key;               // owns its arrays (KeyValue with `own`)
    RecordingPtr recording;  // null: this key is traced on every call
    std::vector<std::pair<std::string, std::vector<int64_t>>> outputs;
    // The ParamSlots<Float> the recording reads its parameters from (its
    // inputs after the call's own).
    std::shared_ptr<void> params;
  };

  Replays() = default;
  Replays(const Replays&) = delete;
  Replays& operator=(const Replays&) = delete;

  std::mutex& mutex() { return mutex_; }

  /// \brief The entry of `key`, now the most recent; null when there is none.
  Entry* Find(const Value& key) {
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->key == key) {
        entries_.splice(entries_.begin(), entries_, it);
        return &entries_.front();
      }
    }
    return nullptr;
  }

  /// \brief Whether a call with a key not seen before is worth recording:
  /// not after kKept new keys in a row (a time step that changes every call
  /// would record every call and evict every recording). A replay resets it.
  /// Called after CountMiss counted this call's key.
  bool RecordsNewKeys() const { return misses_in_a_row_ <= kKept; }

  /// \brief Whether a call of `key` is traced, never replayed: replays off,
  /// or a call no key covers. (A keyed call goes to Replayed, which records
  /// a new key and learns when keys change too fast to record.)
  static bool TracedAnyway(const std::optional<Value>& key) { return !key || !Enabled(); }
  void CountHit() { misses_in_a_row_ = 0; }
  void CountMiss() { ++misses_in_a_row_; }

  /// \brief Drops the entry Find returned last (a recording that failed to
  /// replay; Find made it the most recent).
  void ForgetFound() { entries_.pop_front(); }

  void Add(Entry entry) {
    entries_.push_front(std::move(entry));
    if (entries_.size() > kKept) entries_.pop_back();
  }

 private:
  std::mutex mutex_;
  std::list<Entry> entries_;
  size_t misses_in_a_row_ = 0;
};

// Evaluates `arrays` into memory, what a recording ends on: the computed
// ones in one launch, then the constants (a gradient that is zero
// everywhere), which Dr.Jit would otherwise keep as literals without memory.
template <typename Float>
void EvaluateAll(NamedArrays<Float>& arrays) {
  for (auto& [name, array] : arrays) drjit::schedule(array.values);
  drjit::eval();
  for (auto& [name, array] : arrays) drjit::make_opaque(array.values);
}

// Which earlier input each input's memory is (its own position when none):
// Dr.Jit knows recorded inputs by their memory, so a call that passed one
// array twice is recorded with one input where a later call may have two.
// The pattern is part of the key.
template <typename Float>
Value AliasKey(const std::vector<Float*>& inputs) {
  Value::List firsts;
  for (size_t i = 0; i < inputs.size(); ++i) {
    size_t first = i;
    for (size_t j = 0; j < i; ++j) {
      if (inputs[j]->data() == inputs[i]->data()) {
        first = j;
        break;
      }
    }
    firsts.emplace_back(first);
  }
  return Value(std::move(firsts));
}

// The first call of `key`: `traced()` recorded, the recording kept for the
// calls after it. What Dr.Jit refuses to record leaves the key traced.
template <typename Float, typename Traced>
Result<NamedArrays<Float>> Recorded(Replays& replays, const Value& key, const std::vector<uint32_t>& indices,
                                    const Traced& traced) {
  constexpr JitBackend kBackend = drjit::backend_v<Float>;
  auto params = std::make_shared<ParamSlots<Float>>();
  Replays::Entry entry{*KeyValue(key, /*own=*/true), nullptr, {}, params};
  std::vector<uint32_t> inputs = indices;
  const auto slots = params->Inputs();
  inputs.insert(inputs.end(), slots.begin(), slots.end());
  Result<NamedArrays<Float>> arrays = Status::Internal("not run");
  jit_freeze_start(kBackend, inputs.data(), static_cast<uint32_t>(inputs.size()));
  (void)UncoveredReads::Take();
  try {
    typename ParamSlots<Float>::Scope in_slots(params.get());
    arrays = traced();
  } catch (...) {
    // Most likely an array read on the host: never recorded, traced from now
    // on (an exception of the function's own comes again, to the runtime).
    jit_freeze_abort(kBackend);
    entry.params.reset();  // nothing will read them
    replays.Add(std::move(entry));
    return traced();
  }
  if (!arrays.ok()) {  // a refusal is the call's answer, not recorded
    jit_freeze_abort(kBackend);
    return arrays;
  }
  if (UncoveredReads::Take()) {
    // The function read a differentiable input's bytes on the host: traced
    // from now on, this call too (outside the recording that is dropped).
    jit_freeze_abort(kBackend);
    entry.params.reset();
    replays.Add(std::move(entry));
    return traced();
  }
  std::vector<uint32_t> produced;
  for (const auto& [name, array] : *arrays) {
    produced.push_back(static_cast<uint32_t>(array.values.index()));
    entry.outputs.emplace_back(name, array.dims);
  }
  try {
    entry.recording.reset(jit_freeze_stop(kBackend, produced.data(), static_cast<uint32_t>(produced.size())));
  } catch (...) {
    // An array from outside that is not an input. Aborting makes sure this
    // thread has left recording mode, which every later recording and replay
    // on it needs (drjit 1.5.0 has already left it; abort then does nothing).
    // This call's arrays are right (the work was done); the key is traced
    // from now on.
    jit_freeze_abort(kBackend);
    entry.params.reset();
  }
  replays.Add(std::move(entry));
  return arrays;
}

/// \brief `body()` (the Dr.Jit work of a call: from `inputs`, the arrays it
/// reads, to the arrays it returns), recorded the first time `key` is seen
/// and replayed on later calls with that key. Calls without a key, and keys
/// whose recording Dr.Jit refused, run `body` as it is. One call of an
/// endpoint at a time runs here (a recording is not replayed concurrently).
template <typename Float, typename Body>
Result<NamedArrays<Float>> Replayed(Replays& replays, std::optional<Value> key,
                                    const std::vector<Float*>& inputs, const Body& body) {
  auto traced = [&]() -> Result<NamedArrays<Float>> {
    TESS_ASSIGN_OR_RETURN(NamedArrays<Float> arrays, body());
    EvaluateAll(arrays);
    return arrays;
  };
  if (!key || !Replays::Enabled()) return traced();
  // A recording starts from evaluated variables (a float32 input is a
  // conversion until then).
  std::vector<uint32_t> indices;
  for (Float* input : inputs) {
    drjit::eval(*input);
    indices.push_back(static_cast<uint32_t>(input->index()));
  }
  key = Value::List{*std::move(key), AliasKey(inputs)};
  std::lock_guard lock(replays.mutex());
  if (Replays::Entry* entry = replays.Find(*key)) {
    if (entry->recording == nullptr) return traced();
    replays.CountHit();
    std::vector<uint32_t> produced(entry->outputs.size());
    // The call's inputs, then the recording's parameter slots (taken off
    // again should the key be recorded anew).
    const size_t own = indices.size();
    const auto slots = static_cast<ParamSlots<Float>*>(entry->params.get())->Inputs();
    indices.insert(indices.end(), slots.begin(), slots.end());
    try {
      // The dry run says whether the recording still fits (Dr.Jit's kernel
      // cache, the widths); Dr.Jit's own frozen functions check it first too.
      if (jit_freeze_dry_run(entry->recording.get(), indices.data()) != 0) {
        jit_freeze_replay(entry->recording.get(), indices.data(), produced.data());
        NamedArrays<Float> arrays;
        for (size_t i = 0; i < produced.size(); ++i) {
          arrays.emplace_back(entry->outputs[i].first,
                              Field<Float>{entry->outputs[i].second, Float::steal(produced[i])});
        }
        return arrays;
      }
    } catch (const std::exception&) {
      // Recorded again below.
    }
    indices.resize(own);
    replays.ForgetFound();
  } else {
    replays.CountMiss();
    if (!replays.RecordsNewKeys()) return traced();
  }
  return Recorded<Float>(replays, *key, indices, traced);
}

}  // namespace tesscpp::autodiff::internal
