// buffer.cc: Buffer slicing.
#include "tesscpp/buffer.h"

#include <cstdio>
#include <cstdlib>

namespace tesscpp {

Buffer Buffer::FromString(std::string text) {
  auto owner = std::make_shared<std::string>(std::move(text));
  return Wrap(owner->data(), static_cast<int64_t>(owner->size()), owner);
}

Buffer Buffer::Slice(int64_t offset, int64_t length) const {
  if (offset < 0 || length < 0 || offset > size_ || length > size_ - offset) {
    std::fprintf(stderr, "tesscpp: Buffer::Slice(%lld, %lld) outside a buffer of %lld bytes\n",
                 static_cast<long long>(offset), static_cast<long long>(length),
                 static_cast<long long>(size_));
    std::abort();
  }
  Buffer slice = *this;
  slice.data_ = data_ + offset;
  slice.size_ = length;
  // Everything between the slice's end and the parent's readable end stays readable.
  slice.readable_tail_ = readable_tail_ + (size_ - offset - length);
  return slice;
}

}  // namespace tesscpp
