// per_process.h: an object made once per process, on first use.
#pragma once

#include <unistd.h>

#include <memory>
#include <mutex>

namespace tesscpp::runtime {

/// \brief One T per process, made by the first Get of each process: a process
/// forked from one that had one (a server's worker, or a data-loader worker
/// of an in-process client) makes its own. The inherited one is dropped in
/// the child, so T's destructor must leave a parent's resources alone there
/// (the pools do: PoolDirectory::Owned).
template <typename T>
class PerProcess {
 public:
  /// \brief This process's T: `make()` (a std::unique_ptr<T>, null where it
  /// could not be made, and then not tried again in this process).
  template <typename Make>
  T* Get(Make make) {
    std::lock_guard lock(mutex_);
    if (pid_ != ::getpid()) {
      pid_ = ::getpid();
      value_.reset();
      value_ = make();
    }
    return value_.get();
  }

 private:
  std::mutex mutex_;
  pid_t pid_ = 0;  // the process value_ was made (or failed) in
  std::unique_ptr<T> value_;
};

}  // namespace tesscpp::runtime
