// A pool of reusable handles (the CUDA backend's cudaEvents, issue 13 item 7): creating
// and destroying a cudaEvent per launch costs driver calls on the launching thread, so
// markers are taken from the pool and given back when the last strata event holding
// them lets go. Host-only logic, templated on how a handle is made and destroyed so that
// it is tested without a GPU (tests/exec/gpu_mapping_test.cpp).
#pragma once

#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace strata::detail::cuda {

template <class Handle, class Create, class Destroy>
class handle_pool : public std::enable_shared_from_this<handle_pool<Handle, Create, Destroy>> {
 public:
  handle_pool(Create create, Destroy destroy) : create_(std::move(create)), destroy_(destroy) {}
  ~handle_pool() {
    for (auto h : free_) destroy_(h);
  }
  handle_pool(handle_pool const&) = delete;
  handle_pool& operator=(handle_pool const&) = delete;

  /// A free handle (a new one when none is free), owned by the returned pointer: its
  /// release gives the handle back. The pool lives as long as any handle it lent.
  std::shared_ptr<void> acquire() {
    Handle h{};
    {
      std::lock_guard lock(mutex_);
      if (!free_.empty()) {
        h = free_.back();
        free_.pop_back();
      }
    }
    if (!h) h = create_();  // throws if the handle cannot be made
    auto self = this->shared_from_this();
    return std::shared_ptr<void>(static_cast<void*>(h), [self](void* p) {
      std::lock_guard lock(self->mutex_);
      self->free_.push_back(static_cast<Handle>(p));
    });
  }

  /// Handles waiting to be reused.
  std::size_t idle() const {
    std::lock_guard lock(mutex_);
    return free_.size();
  }

 private:
  Create create_;
  Destroy destroy_;
  mutable std::mutex mutex_;
  std::vector<Handle> free_;
};

template <class Handle, class Create, class Destroy>
std::shared_ptr<handle_pool<Handle, Create, Destroy>> make_handle_pool(Create create,
                                                                       Destroy destroy) {
  return std::make_shared<handle_pool<Handle, Create, Destroy>>(std::move(create),
                                                                std::move(destroy));
}

}  // namespace strata::detail::cuda
