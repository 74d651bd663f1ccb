// type_fwd.h: forward declarations of the public types, for headers that only
// name them (pointers, references, function parameters).
#pragma once

#include <cstdint>

namespace tesscpp {

class Status;
template <typename T>
class Result;
enum class StatusCode : int;
enum class Dtype : uint8_t;
class Shape;
class Buffer;
class BufferPool;
struct Device;
class Tensor;
struct TensorView;
class Value;
class ValueDict;
class Path;
struct PathSegment;
enum class ArrayEncoding : uint8_t;
enum class Compression : uint8_t;
class BinrefWriter;

}  // namespace tesscpp
