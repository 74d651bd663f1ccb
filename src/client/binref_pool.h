// binref_pool.h: reused, pre-faulted files for json+binref inputs (the SDK's
// experimental binref pool, for a tmpfs input directory).
#pragma once

#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "tesscpp/internal/codec/binref_writer.h"

namespace tesscpp::client {

/// \brief Files in the server's input directory that requests write their
/// input arrays into. Each file is mapped shared and pre-faulted once and then
/// reused, so a request costs a memcpy instead of page-cache allocation (new
/// tmpfs files fill at ~1-2 GB/s, warm pages at memory speed). The files are
/// removed with the pool.
class BinrefPool {
 public:
  explicit BinrefPool(std::string dir);
  ~BinrefPool();
  BinrefPool(const BinrefPool&) = delete;
  BinrefPool& operator=(const BinrefPool&) = delete;

  struct Slot;

  /// \brief The sink of one request: each array takes a free slot (a new one
  /// when none is big enough), given back when the lease ends, after the
  /// server has answered.
  class Lease final : public BinrefSink {
   public:
    explicit Lease(BinrefPool* pool);
    ~Lease() override;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Result<std::string> Append(std::span<const uint8_t> bytes) override;

   private:
    BinrefPool* pool_;
    std::vector<std::unique_ptr<Slot>> slots_;
  };

 private:
  Result<std::unique_ptr<Slot>> Take(size_t size);
  void Give(std::unique_ptr<Slot> slot);

  std::string dir_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<Slot>> free_;
};

}  // namespace tesscpp::client
