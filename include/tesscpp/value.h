// value.h: Value, the JSON-like tree that carries endpoint inputs and outputs.
//
// A Value is null, bool, int, float, string, list, dict (keys keep insertion
// order, as Python dicts and the wire do) or tensor. Decoded requests are Values
// whose array leaves are Tensors; responses are built as Values and encoded.
//
//   Value inputs = Value::Dict{{"a", Value(tensor_a)}, {"scale", Value(2.0)}};
//   const Tensor& a = inputs.as_dict().at("a").as_tensor();
#pragma once

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "tesscpp/tensor.h"

namespace tesscpp {

class Value;

/// \brief An insertion-ordered string-keyed map of Values. Small dicts (the
/// usual case) are searched linearly; from kIndexFrom keys on a hash index keeps
/// lookups O(1), so a request with a huge object cannot make parsing quadratic.
class ValueDict {
 public:
  using Item = std::pair<std::string, Value>;

  ValueDict() = default;
  ValueDict(std::initializer_list<Item> items);

  size_t size() const;
  bool empty() const;

  /// \brief The value for `key`, or nullptr.
  const Value* find(std::string_view key) const;
  Value* find(std::string_view key);
  bool contains(std::string_view key) const { return find(key) != nullptr; }

  /// \brief The value for `key`; aborts when absent (a programming error: use find()).
  const Value& at(std::string_view key) const;
  Value& at(std::string_view key);

  /// \brief Sets `key`, keeping its position when it exists, appending otherwise.
  Value& set(std::string key, Value value);

  /// \brief Removes `key`; returns whether it was present.
  bool erase(std::string_view key);

  // Members that touch items_ are defined after Value, which must be complete.
  using const_iterator = std::vector<Item>::const_iterator;
  using iterator = std::vector<Item>::iterator;
  const_iterator begin() const;
  const_iterator end() const;
  iterator begin();
  iterator end();

  friend bool operator==(const ValueDict& a, const ValueDict& b);

  static constexpr size_t kIndexFrom = 16;

 private:
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view key) const { return std::hash<std::string_view>{}(key); }
  };

  std::vector<Item> items_;
  // key -> position in items_; empty while items_ is shorter than kIndexFrom.
  std::unordered_map<std::string, size_t, KeyHash, std::equal_to<>> index_;
};

/// \brief One node of a JSON-like tree whose leaves may be tensors.
class Value {
 public:
  enum class Kind : uint8_t { kNull, kBool, kInt, kFloat, kString, kList, kDict, kTensor };
  using List = std::vector<Value>;
  using Dict = ValueDict;

  Value() = default;           ///< null
  Value(std::nullptr_t) {}     // NOLINT(google-explicit-constructor)
  Value(bool b) : data_(b) {}  // NOLINT(google-explicit-constructor)
  /// \brief Any integer type. Values above INT64_MAX (from uint64) are kept exactly.
  template <std::integral T>
  requires(!std::same_as<T, bool>) Value(T i) {  // NOLINT(google-explicit-constructor)
    if constexpr (std::is_unsigned_v<T>) {
      if (static_cast<uint64_t>(i) > static_cast<uint64_t>(INT64_MAX)) {
        data_ = static_cast<uint64_t>(i);
        return;
      }
    }
    data_ = static_cast<int64_t>(i);
  }
  Value(double f) : data_(f) {}                         // NOLINT(google-explicit-constructor)
  Value(std::string s) : data_(std::move(s)) {}         // NOLINT(google-explicit-constructor)
  Value(std::string_view s) : data_(std::string(s)) {}  // NOLINT(google-explicit-constructor)
  Value(const char* s) : data_(std::string(s)) {}       // NOLINT(google-explicit-constructor)
  Value(List list) : data_(std::move(list)) {}          // NOLINT(google-explicit-constructor)
  Value(Dict dict) : data_(std::move(dict)) {}          // NOLINT(google-explicit-constructor)
  Value(Tensor tensor) : data_(std::move(tensor)) {}    // NOLINT(google-explicit-constructor)

  Kind kind() const;
  bool is_null() const { return kind() == Kind::kNull; }
  bool is_bool() const { return kind() == Kind::kBool; }
  bool is_int() const { return kind() == Kind::kInt; }
  bool is_float() const { return kind() == Kind::kFloat; }
  bool is_number() const { return is_int() || is_float(); }
  bool is_string() const { return kind() == Kind::kString; }
  bool is_list() const { return kind() == Kind::kList; }
  bool is_dict() const { return kind() == Kind::kDict; }
  bool is_tensor() const { return kind() == Kind::kTensor; }

  /// \name Typed access. Precondition (checked, aborts): the kind matches.
  /// @{
  bool as_bool() const;
  /// \brief An int that fits int64 (is_int() and !is_big_uint()).
  int64_t as_int() const;
  /// \brief True for an int above INT64_MAX, readable with as_uint().
  bool is_big_uint() const { return std::holds_alternative<uint64_t>(data_); }
  /// \brief Any non-negative int as uint64.
  uint64_t as_uint() const;
  /// \brief A float, or an int converted to double.
  double as_number() const;
  const std::string& as_string() const;
  const List& as_list() const;
  List& as_list();
  const Dict& as_dict() const;
  Dict& as_dict();
  const Tensor& as_tensor() const;
  /// @}

  /// \brief The kind's lowercase name: "null", "bool", "int", "float", ...
  static std::string_view KindName(Kind kind);

  /// \brief Deep equality; tensors compare with Tensor::Equals, ints by value.
  friend bool operator==(const Value& a, const Value& b);

 private:
  std::variant<std::monostate, bool, int64_t, uint64_t, double, std::string, List, Dict, Tensor> data_;
};

inline size_t ValueDict::size() const { return items_.size(); }
inline bool ValueDict::empty() const { return items_.empty(); }
inline ValueDict::const_iterator ValueDict::begin() const { return items_.begin(); }
inline ValueDict::const_iterator ValueDict::end() const { return items_.end(); }
inline ValueDict::iterator ValueDict::begin() { return items_.begin(); }
inline ValueDict::iterator ValueDict::end() { return items_.end(); }

}  // namespace tesscpp
