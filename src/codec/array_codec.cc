// array_codec.cc: arraydict fields -> Tensor and Tensor -> arraydict, per encoding.
#include "codec/array_codec.h"

#include <optional>
#include <vector>

#include "codec/base64.h"
#include "codec/lz4.h"
#include "tesscpp/internal/core/buffer_pool.h"
#include "tesscpp/internal/core/device_values.h"

namespace tesscpp {

namespace codec {

Status WithArrayIssue(const Status& cause, std::string_view type, Value ctx, std::string msg) {
  if (cause.ok() || GetValidationDetail(cause) != nullptr) return cause;
  if (msg.empty()) msg = cause.message();
  std::vector<ValidationIssue> issues{
      ValidationIssue{std::string(type), {}, std::move(msg), Value(), std::move(ctx)}};
  return cause.WithDetail(std::make_shared<const ValidationDetail>(std::move(issues)));
}

namespace {

Status UndecodableBuffer(const Status& cause, std::string_view encoding) {
  return WithArrayIssue(
      cause, "array_decode_error", Value::Dict{{"encoding", encoding}, {"error", cause.message()}},
      "Failed to decode array buffer (" + std::string(encoding) + " encoding): " + cause.message());
}

Result<Shape> ShapeField(const Value* shape) {
  if (shape == nullptr) return Status::ValidationError("shape: field required");
  if (!shape->is_list()) return Status::ValidationError("shape: expected a list of integers");
  std::vector<int64_t> dims;
  dims.reserve(shape->as_list().size());
  for (const Value& d : shape->as_list()) {
    if (!d.is_int() || d.is_big_uint()) return Status::ValidationError("shape: expected a list of integers");
    dims.push_back(d.as_int());
  }
  auto result = Shape::Make(std::move(dims));
  if (!result.ok()) return result.status().WithContext("shape");
  return result;
}

Result<Dtype> DtypeField(const Value* dtype) {
  if (dtype == nullptr) return Status::ValidationError("dtype: field required");
  if (!dtype->is_string()) return Status::ValidationError("dtype: expected a string");
  auto result = DtypeFromName(dtype->as_string());
  if (!result.ok()) return result.status().WithContext("dtype");
  return result;
}

Result<Compression> CompressionField(const Value* compression) {
  if (compression == nullptr || compression->is_null()) return Compression::kNone;
  if (!compression->is_string()) return Status::ValidationError("data.compression: expected 'lz4' or null");
  auto result = CompressionFromName(compression->as_string());
  if (!result.ok() || *result == Compression::kNone) {
    return Status::ValidationError("data.compression: unknown compression '", compression->as_string(),
                                   "' (expected 'lz4')");
  }
  return result;
}

// Sizes are checked before the tensor is allocated, so a small request cannot
// make us reserve memory for a large shape it does not carry.
Result<Tensor> DecodeBase64(std::string_view text, Compression compression, Dtype dtype, Shape shape,
                            BufferPool* pool) {
  TESS_ASSIGN_OR_RETURN(size_t decoded_size, Base64DecodedSize(text));
  const int64_t nbytes = shape.num_elements() * ItemSize(dtype);
  if (compression == Compression::kNone) {
    if (static_cast<int64_t>(decoded_size) != nbytes) {
      return Status::DecodeError("buffer holds ", decoded_size, " bytes, but a ", DtypeName(dtype),
                                 " array of shape ", shape.ToString(), " needs ", nbytes);
    }
    TESS_ASSIGN_OR_RETURN(Tensor tensor, Tensor::Allocate(dtype, std::move(shape), pool));
    TESS_RETURN_IF_ERROR(Base64Decode(text, tensor.bytes()));
    return tensor;
  }
  TESS_ASSIGN_OR_RETURN(Buffer compressed, pool->Allocate(static_cast<int64_t>(decoded_size)));
  TESS_RETURN_IF_ERROR(Base64Decode(text, compressed.span()));
  TESS_RETURN_IF_ERROR(Lz4CheckContentSize(compressed.span(), nbytes));
  TESS_ASSIGN_OR_RETURN(Tensor tensor, Tensor::Allocate(dtype, std::move(shape), pool));
  TESS_RETURN_IF_ERROR(Lz4FrameDecompress(compressed.span(), tensor.bytes()));
  return tensor;
}

struct ArrayHeader {
  Shape shape;
  Dtype dtype;
  std::optional<ArrayEncoding> encoding;  ///< nullopt: a GPU transport's, read by options.device_arrays
  std::string_view encoding_name;
  Compression compression;
};

Result<ArrayHeader> ParseHeader(const ArrayFields& fields, const ArrayDecodeOptions& options) {
  TESS_ASSIGN_OR_RETURN(Shape shape, ShapeField(fields.shape));
  TESS_ASSIGN_OR_RETURN(Dtype dtype, DtypeField(fields.dtype));
  if (fields.encoding == nullptr) return Status::ValidationError("data.encoding: field required");
  if (!fields.encoding->is_string()) return Status::ValidationError("data.encoding: expected a string");
  const std::string& encoding_name = fields.encoding->as_string();
  const bool raw = options.accept_raw && encoding_name == "raw";
  auto host = raw ? Result<ArrayEncoding>(ArrayEncoding::kJson) : ArrayEncodingFromName(encoding_name);
  std::optional<ArrayEncoding> encoding;
  if (host.ok()) {
    encoding = *host;
  } else if (options.device_arrays == nullptr || !options.device_arrays->Reads(encoding_name)) {
    return host.status().WithContext("data.encoding");
  }
  TESS_ASSIGN_OR_RETURN(Compression compression, CompressionField(fields.compression));
  // The reference's models of json and device arrays have no compression.
  if (encoding != ArrayEncoding::kBase64 && encoding != ArrayEncoding::kBinref &&
      compression != Compression::kNone) {
    return Status::ValidationError("data.compression: ", encoding_name, " arrays cannot be compressed");
  }
  if (encoding != ArrayEncoding::kJson && !fields.buffer_text) {
    return Status::ValidationError("data.buffer: a ", encoding_name, " buffer must be a string");
  }
  if (encoding == ArrayEncoding::kJson && fields.buffer_leaves == nullptr && fields.buffer_value == nullptr &&
      !fields.buffer_text) {
    return Status::ValidationError("data.buffer: field required");
  }
  return ArrayHeader{std::move(shape), dtype, encoding, encoding_name, compression};
}

// A GPU transport's array: a malformed descriptor fails the reference's model
// as a whole (pydantic then reports the array-like fallback); one that names
// nothing readable fails its decoding.
Result<Tensor> DecodeDeviceBuffer(const ArrayFields& fields, const ArrayHeader& header,
                                  const ArrayDecodeOptions& options) {
  Result<Tensor> tensor =
      options.device_arrays->Import(header.encoding_name, *fields.buffer_text, header.dtype, header.shape);
  if (tensor.ok()) return tensor;
  if (tensor.status().code() == StatusCode::kValidationError) {
    return NonNumericArray(tensor.status().WithContext("data.buffer"));
  }
  return UndecodableBuffer(tensor.status(), header.encoding_name).WithContext("data.buffer");
}

Result<Tensor> DecodeJsonBuffer(const ArrayFields& fields, const ArrayHeader& header, BufferPool* pool) {
  Result<JsonLeaves> flattened = JsonLeaves{};
  const JsonLeaves* leaves = fields.buffer_leaves;
  if (leaves == nullptr) {
    // A string buffer is one string element (NumPy would make a 0-d str array).
    flattened =
        FlattenJsonValue(fields.buffer_value != nullptr ? *fields.buffer_value : Value(*fields.buffer_text));
    if (!flattened.ok()) return flattened.status();
    leaves = &*flattened;
  }
  return JsonLeavesToTensor(*leaves, header.dtype, header.shape, pool);
}

}  // namespace

Status NonNumericArray(const Status& cause) {
  return WithArrayIssue(cause, "array_non_numeric", Value::Dict{},
                        "Could not parse value as a numeric array (contains non-numeric data)");
}

Status JsonBufferFailure(const Status& cause) {
  const ValidationDetail* detail = GetValidationDetail(cause);
  const std::string type = detail != nullptr ? detail->issues()[0].type : "";
  if (type == "array_expected_integer" || type == "array_value_out_of_range") return cause;
  return UndecodableBuffer(Status(cause.code(), cause.message()), ArrayEncodingName(ArrayEncoding::kJson));
}

Result<Tensor> DecodeArrayFields(const ArrayFields& fields, const ArrayDecodeOptions& options) {
  BufferPool* pool = options.pool != nullptr ? options.pool : BufferPool::Default();
  auto header = ParseHeader(fields, options);
  if (!header.ok()) return NonNumericArray(header.status());
  if (!header->encoding) return DecodeDeviceBuffer(fields, *header, options);
  Result<Tensor> tensor = Status::Internal("not decoded");
  switch (*header->encoding) {
    case ArrayEncoding::kJson:
      tensor = DecodeJsonBuffer(fields, *header, pool);
      if (!tensor.ok()) return JsonBufferFailure(tensor.status()).WithContext("data.buffer");
      return tensor;
    case ArrayEncoding::kBase64:
      tensor = DecodeBase64(*fields.buffer_text, header->compression, header->dtype, header->shape, pool);
      break;
    case ArrayEncoding::kBinref:
      tensor = ReadBinref(*fields.buffer_text, header->compression, options.binref_dir, header->dtype,
                          header->shape, pool, options.borrowed_binref_files);
      break;
  }
  if (!tensor.ok())
    return UndecodableBuffer(tensor.status(), header->encoding_name).WithContext("data.buffer");
  return tensor;
}

namespace {

void WriteArrayHeader(const Tensor& tensor, bool object_type, JsonWriter& writer) {
  writer.BeginObject();
  if (object_type) {
    writer.Key("object_type");
    writer.String("array");
  }
  writer.Key("shape");
  writer.BeginArray();
  for (int64_t d : tensor.shape().dims()) writer.Int(d);
  writer.EndArray();
  writer.Key("dtype");
  writer.String(DtypeName(tensor.dtype()));
  writer.Key("data");
  writer.BeginObject();
  writer.Key("buffer");
}

Status EncodeDevice(const Tensor& tensor, DeviceArrayWriter& transport, JsonWriter& writer) {
  TESS_ASSIGN_OR_RETURN(const std::string descriptor, transport.Export(tensor));
  WriteArrayHeader(tensor, /*object_type=*/true, writer);
  writer.String(descriptor);
  writer.Key("encoding");
  writer.String(transport.encoding());
  writer.EndObject();
  writer.EndObject();
  return writer.status();
}

}  // namespace

Status EncodeArray(const Tensor& device_or_host, const ArrayEncodeOptions& options, JsonWriter& writer) {
  if (options.device_arrays != nullptr && options.device_arrays->Carries(device_or_host)) {
    return EncodeDevice(device_or_host, *options.device_arrays, writer);
  }
  std::optional<Tensor> host_copy;  // only for CUDA tensors: host ones are written as they are
  if (!device_or_host.device().host_accessible()) {
    TESS_ASSIGN_OR_RETURN(host_copy, core::ImplicitCopyToHost(device_or_host));
  }
  const Tensor& tensor = host_copy ? *host_copy : device_or_host;
  if (options.encoding == ArrayEncoding::kBinref && options.binref == nullptr) {
    return Status::InvalidArgument("binref output needs a BinrefWriter");
  }
  const bool compress = options.compression == Compression::kLz4 && options.encoding != ArrayEncoding::kJson;
  Buffer compressed;
  std::span<const uint8_t> payload = tensor.bytes();
  if (compress) {
    TESS_ASSIGN_OR_RETURN(compressed, Lz4FrameCompress(payload));
    payload = compressed.span();
  }
  std::string binref_spec;
  if (options.encoding == ArrayEncoding::kBinref) {
    TESS_ASSIGN_OR_RETURN(binref_spec, options.binref->Append(payload));
    if (compress) binref_spec += ":" + std::to_string(payload.size());
  }

  WriteArrayHeader(tensor, options.object_type, writer);
  switch (options.encoding) {
    case ArrayEncoding::kJson: WriteJsonBuffer(tensor, writer); break;
    case ArrayEncoding::kBase64: {
      const size_t n = Base64EncodedSize(payload.size());
      writer.Reserve(static_cast<int64_t>(n + 64));
      if (char* out = writer.ReserveStringBody(n)) Base64Encode(payload, out);
      break;
    }
    // No default: a new encoding must say here what it writes (-Wswitch).
    case ArrayEncoding::kBinref: writer.String(binref_spec); break;
  }
  writer.Key("encoding");
  writer.String(ArrayEncodingName(options.encoding));
  if (compress) {
    writer.Key("compression");
    writer.String("lz4");
  }
  writer.EndObject();
  writer.EndObject();
  return writer.status();
}

}  // namespace codec

Result<Tensor> DecodeArray(const Value& arraydict, const ArrayDecodeOptions& options) {
  if (!arraydict.is_dict()) return Status::ValidationError("an array must be a JSON object");
  codec::ArrayFields fields;
  for (const auto& [key, value] : arraydict.as_dict()) {
    if (key == "shape") {
      fields.shape = &value;
    } else if (key == "dtype") {
      fields.dtype = &value;
    } else if (key == "object_type") {
      if (!value.is_string() || value.as_string() != "array") {
        return Status::ValidationError("object_type: expected 'array'");
      }
    } else if (key == "data") {
      if (!value.is_dict()) return Status::ValidationError("data: expected an object");
      for (const auto& [data_key, data_value] : value.as_dict()) {
        if (data_key == "buffer") {
          if (data_value.is_string()) {
            fields.buffer_text = data_value.as_string();
          } else {
            fields.buffer_value = &data_value;
          }
        } else if (data_key == "encoding") {
          fields.encoding = &data_value;
        } else if (data_key == "compression") {
          fields.compression = &data_value;
        } else {
          return Status::ValidationError("data.", data_key, ": extra fields are not permitted");
        }
      }
    } else {
      return Status::ValidationError(key, ": extra fields are not permitted");
    }
  }
  if (arraydict.as_dict().find("data") == nullptr) return Status::ValidationError("data: field required");
  return codec::DecodeArrayFields(fields, options);
}

}  // namespace tesscpp
