// ImmediateExecutionOps (larmor/backend/execution_ops.hpp): the queued transfers done at once, peer copies of a
// backend's own buffers, nothing recorded.
#include "larmor/backend/execution_ops.hpp"

#include "larmor/backend/backend.hpp"

namespace larmor {

namespace {
/// A transfer that happened at once.
class DoneTransfer final : public ExecutionOps::Transfer {
 public:
  void join() override {}
  void wait() override {}
};
}  // namespace

std::unique_ptr<ExecutionOps::Transfer> ImmediateExecutionOps::uploadQueued(Buffer& dst, const void* src,
                                                                           std::size_t bytes, std::size_t dstOffset) {
  be_.upload(dst, src, bytes, dstOffset);
  return std::make_unique<DoneTransfer>();
}

std::unique_ptr<ExecutionOps::Transfer> ImmediateExecutionOps::downloadQueued(void* dst, const Buffer& src,
                                                                             std::size_t bytes,
                                                                             std::size_t srcOffset) {
  be_.download(dst, src, bytes, srcOffset);
  return std::make_unique<DoneTransfer>();
}

bool ImmediateExecutionOps::copyFromPeer(Buffer& dst, std::size_t dstOffset, Backend& source, const Buffer& src,
                                         std::size_t srcOffset, std::size_t bytes) {
  if (&source != &be_) return false;
  be_.copy(dst, src, bytes, dstOffset, srcOffset);
  return true;
}

}  // namespace larmor
