// device_arrays.h: the codec's seam to GPU transports (internal).
#pragma once

#include <string>
#include <string_view>

#include "tesscpp/result.h"
#include "tesscpp/shape.h"
#include "tesscpp/tensor.h"

namespace tesscpp {

/// \brief How the codec reads device arrays. A GPU transport's arrays carry
/// the transport's wire encoding ("cuda_ipc") and a `data.buffer` string only
/// the transport understands: the codec links no device runtime, and the
/// transport (src/gpu_transport/, one object per message) implements this.
class DeviceArrayReader {
 public:
  virtual ~DeviceArrayReader() = default;
  /// \brief Whether arraydicts of wire encoding `encoding` are read here.
  virtual bool Reads(std::string_view encoding) const = 0;
  /// \brief The `dtype`/`shape` tensor that `descriptor` names: a copy the
  /// reader owns, or the peer's memory read in place. kValidationError when
  /// the descriptor is malformed (the peers' request model refuses it);
  /// another code when it names nothing this process can read.
  virtual Result<Tensor> Import(std::string_view encoding, std::string_view descriptor, Dtype dtype,
                                const Shape& shape) = 0;
};

/// \brief How the codec writes device arrays: the tensors a GPU transport
/// carries go out as its descriptors.
class DeviceArrayWriter {
 public:
  virtual ~DeviceArrayWriter() = default;
  /// \brief The wire encoding the descriptors are written with.
  virtual std::string_view encoding() const = 0;
  /// \brief Whether `tensor` goes through the transport (the others are
  /// written with the host encoding).
  virtual bool Carries(const Tensor& tensor) const = 0;
  /// \brief The `data.buffer` string naming `tensor`, which the transport
  /// keeps readable and unchanged until the message's owner lets it go.
  virtual Result<std::string> Export(const Tensor& tensor) = 0;
};

}  // namespace tesscpp
