// value.cc: Value accessors, ValueDict and deep equality.
#include "tesscpp/value.h"

#include <cstdio>
#include <cstdlib>

namespace tesscpp {
namespace {

[[noreturn]] void WrongKind(Value::Kind actual, std::string_view wanted) {
  std::fprintf(stderr, "tesscpp: Value of kind %s accessed as %.*s\n",
               std::string(Value::KindName(actual)).c_str(), static_cast<int>(wanted.size()), wanted.data());
  std::abort();
}

template <typename T, typename V>
auto& Get(V& data, Value::Kind actual, std::string_view wanted) {
  auto* p = std::get_if<T>(&data);
  if (p == nullptr) WrongKind(actual, wanted);
  return *p;
}

}  // namespace

ValueDict::ValueDict(std::initializer_list<Item> items) {
  for (const Item& item : items) set(item.first, item.second);
}

const Value* ValueDict::find(std::string_view key) const {
  if (!index_.empty()) {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].second;
  }
  for (const Item& item : items_) {
    if (item.first == key) return &item.second;
  }
  return nullptr;
}

Value* ValueDict::find(std::string_view key) {
  return const_cast<Value*>(static_cast<const ValueDict*>(this)->find(key));
}

const Value& ValueDict::at(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) {
    std::fprintf(stderr, "tesscpp: ValueDict has no key '%.*s'\n", static_cast<int>(key.size()), key.data());
    std::abort();
  }
  return *v;
}

Value& ValueDict::at(std::string_view key) {
  return const_cast<Value&>(static_cast<const ValueDict*>(this)->at(key));
}

Value& ValueDict::set(std::string key, Value value) {
  if (Value* existing = find(key)) {
    *existing = std::move(value);
    return *existing;
  }
  items_.emplace_back(std::move(key), std::move(value));
  if (!index_.empty()) {
    index_.emplace(items_.back().first, items_.size() - 1);
  } else if (items_.size() >= kIndexFrom) {
    for (size_t i = 0; i < items_.size(); ++i) index_.emplace(items_[i].first, i);
  }
  return items_.back().second;
}

bool ValueDict::erase(std::string_view key) {
  for (auto it = items_.begin(); it != items_.end(); ++it) {
    if (it->first == key) {
      items_.erase(it);
      // Positions after the erased item shift; rebuilding is simplest and erase is rare.
      index_.clear();
      if (items_.size() >= kIndexFrom) {
        for (size_t i = 0; i < items_.size(); ++i) index_.emplace(items_[i].first, i);
      }
      return true;
    }
  }
  return false;
}

bool operator==(const ValueDict& a, const ValueDict& b) { return a.items_ == b.items_; }

Value::Kind Value::kind() const {
  switch (data_.index()) {
    case 0: return Kind::kNull;
    case 1: return Kind::kBool;
    case 2:
    case 3: return Kind::kInt;
    case 4: return Kind::kFloat;
    case 5: return Kind::kString;
    case 6: return Kind::kList;
    case 7: return Kind::kDict;
    default: return Kind::kTensor;
  }
}

std::string_view Value::KindName(Kind kind) {
  switch (kind) {
    case Kind::kNull: return "null";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "string";
    case Kind::kList: return "list";
    case Kind::kDict: return "dict";
    case Kind::kTensor: return "tensor";
  }
  return "unknown";
}

bool Value::as_bool() const { return Get<bool>(data_, kind(), "bool"); }
int64_t Value::as_int() const { return Get<int64_t>(data_, kind(), "int64"); }

uint64_t Value::as_uint() const {
  if (const auto* u = std::get_if<uint64_t>(&data_)) return *u;
  const int64_t i = Get<int64_t>(data_, kind(), "uint64");
  if (i < 0) WrongKind(kind(), "non-negative int");
  return static_cast<uint64_t>(i);
}

double Value::as_number() const {
  if (const auto* f = std::get_if<double>(&data_)) return *f;
  if (const auto* u = std::get_if<uint64_t>(&data_)) return static_cast<double>(*u);
  return static_cast<double>(Get<int64_t>(data_, kind(), "number"));
}

const std::string& Value::as_string() const { return Get<std::string>(data_, kind(), "string"); }
const Value::List& Value::as_list() const { return Get<List>(data_, kind(), "list"); }
Value::List& Value::as_list() { return Get<List>(data_, kind(), "list"); }
const Value::Dict& Value::as_dict() const { return Get<Dict>(data_, kind(), "dict"); }
Value::Dict& Value::as_dict() { return Get<Dict>(data_, kind(), "dict"); }
const Tensor& Value::as_tensor() const { return Get<Tensor>(data_, kind(), "tensor"); }

bool operator==(const Value& a, const Value& b) {
  if (a.data_.index() != b.data_.index()) return false;
  if (a.is_tensor()) return a.as_tensor().Equals(b.as_tensor());
  return std::visit(
      [&b](const auto& x) -> bool {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, Tensor>) {
          return false;  // handled above
        } else {
          return x == std::get<T>(b.data_);
        }
      },
      a.data_);
}

}  // namespace tesscpp
