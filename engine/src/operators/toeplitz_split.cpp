// The Toeplitz operator by parity classes over devices: the derivation is in ops/toeplitz_split.hpp.
#include "larmor/ops/toeplitz_split.hpp"

#include <cmath>
#include <complex>
#include <condition_variable>
#include <mutex>
#include <string>

#include "larmor/ops/toeplitz.hpp"

namespace larmor::ops {

namespace {

/// phi(u) = exp(-i pi u / N) at index n (u = n - N/2) along one axis: class bit 1 (bit 0: 1).
std::complex<double> phase(index_t n, index_t len) {
  const double u = static_cast<double>(n - len / 2);
  return std::polar(1.0, -M_PI * u / static_cast<double>(len));
}

/// The peer copy, or through the host where the backends cannot reach each other.
void copyBetween(Backend& to, Buffer& dst, Backend& from, const Buffer& src, std::size_t bytes) {
  if (to.copyFromPeer(dst, 0, from, src, 0, bytes)) return;
  std::vector<cfloat> host(bytes / sizeof(cfloat));
  from.download(host.data(), src, bytes);
  to.upload(dst, host.data(), bytes);
}

}  // namespace

/// A reusable barrier of the replicas' threads that an abort releases (with an Error) instead of leaving them waiting.
struct SplitToeplitzOperator::Rendezvous {
  explicit Rendezvous(int n) : parties(n) {}
  void wait() {
    std::unique_lock lock(mutex);
    require(!aborted, "split Toeplitz: another device's solve stopped");
    const unsigned long generation = round;
    if (++arrived == parties) {
      arrived = 0;
      ++round;
      changed.notify_all();
      return;
    }
    changed.wait(lock, [&] { return round != generation || aborted; });
    require(round != generation, "split Toeplitz: another device's solve stopped");
  }
  void abort() {
    std::lock_guard lock(mutex);
    aborted = true;
    changed.notify_all();
  }
  void reset() {
    std::lock_guard lock(mutex);
    aborted = false;
    arrived = 0;
  }
  int parties, arrived = 0;
  unsigned long round = 0;
  bool aborted = false;
  std::mutex mutex;
  std::condition_variable changed;
};

class SplitToeplitzOperator::Replica final : public FourierGram {
 public:
  Replica(SplitToeplitzOperator& op, int device) : op_(op), device_(device) {}
  index_t voxels() const override { return op_.voxels(); }
  const Shape& imageShape() const override { return op_.imageShape(); }
  void apply(const Buffer& x, Buffer& y, index_t batch) override { op_.applyReplica(device_, x, y, batch); }
  double diagonal() const override { return op_.diagonal(); }

 private:
  SplitToeplitzOperator& op_;
  int device_;
};

struct SplitToeplitzOperator::Part {
  Backend* backend = nullptr;
  std::unique_ptr<ToeplitzOperator> gram;
  std::unique_ptr<Buffer> phase;  ///< phi_c over the split axes (null for class 0)
  index_t period = 0;             ///< its elements: the product of the split axes' lengths
  std::unique_ptr<Buffer> work;   ///< x, then Phi_c^H T_c Phi_c x, on this device (classes > 0)
  std::unique_ptr<Buffer> own, received;  ///< the replica's class result and another device's (replicated use)
  index_t replicaBatch = 0;
};

int SplitToeplitzOperator::classes(const NufftGeometry& g, int available) {
  int axes = 0;
  while (axes < g.dims && (2 << axes) <= available && g.image[axes] % 2 == 0 && g.image[axes] >= 2) ++axes;
  return 1 << axes;
}

CArray SplitToeplitzOperator::foldedPsf(const CArray& psf, const Shape& image, int axes, int c) {
  const index_t n[3] = {image[0], image[1], image[2]};
  Shape from{psf.shape()[0], psf.shape()[1], psf.shape()[2]};
  CArray cur = psf;
  cur.reshape(from);
  for (int d = 0; d < axes; ++d) {
    const index_t len = n[d], big = 2 * len;
    require(from[static_cast<std::size_t>(d)] == big, "split Toeplitz: Q's grid " + from.str() + " is not 2N along axis " +
                                                          std::to_string(d));
    Shape to = from;
    to = Shape{d == 0 ? len : from[0], d == 1 ? len : from[1], d == 2 ? len : from[2]};
    CArray next(to);
    const bool odd = (c >> d) & 1;
    const index_t stride = d == 0 ? 1 : d == 1 ? from[0] : from[0] * from[1];
    const index_t outer = from.size() / (stride * big), strideTo = d == 0 ? 1 : d == 1 ? to[0] : to[0] * to[1];
    for (index_t o = 0; o < outer; ++o)
      for (index_t i = 0; i < len; ++i) {
        // u = i - len/2 on the class grid; on Q's grid index u + len, its partner u -+ len.
        const index_t u = i - len / 2, at = u + len, partner = u >= 0 ? u : u + 2 * len;
        const std::complex<double> w = odd ? phase(i, len) : std::complex<double>(1.0);
        const double sign = odd ? -1.0 : 1.0;
        for (index_t s = 0; s < stride; ++s) {
          const index_t base = s + o * stride * big;
          const std::complex<double> a(cur[base + at * stride]), b(cur[base + partner * stride]);
          next[s + o * strideTo * len + i * strideTo] = cfloat(w * (a + sign * b));
        }
      }
    cur = std::move(next);
    from = to;
  }
  return cur;
}

SplitToeplitzOperator::SplitToeplitzOperator(const std::vector<Backend*>& backends, const NufftGeometry& g,
                                             const CArray& psf, double scale)
    : image_(Shape{g.image[0], g.image[1], g.dims == 3 ? g.image[2] : 1}) {
  require(!backends.empty(), "split Toeplitz: no backend");
  const Shape grid = psfShape(g);
  require(psf.size() == grid.size(), "split Toeplitz: Q has " + std::to_string(psf.size()) + " elements, the 2N grid " +
                                         grid.str() + " needs " + std::to_string(grid.size()));
  const int count = classes(g, static_cast<int>(backends.size()));
  int axes = 0;
  while ((1 << axes) < count) ++axes;
  diagonal_ = scale * static_cast<double>(psf[grid[0] / 2 + grid[0] * (grid[1] / 2 + grid[1] * (grid[2] / 2))].real());
  CArray q = psf;
  q.reshape(grid);
  index_t period = 1;
  for (int d = 0; d < axes; ++d) period *= g.image[d];
  for (int c = 0; c < count; ++c) {
    auto part = std::make_unique<Part>();
    part->backend = backends[static_cast<std::size_t>(c)];
    const CArray folded = foldedPsf(q, image_, axes, c);
    part->gram = std::make_unique<ToeplitzOperator>(*part->backend, image_, folded.shape(), g.dims, folded,
                                                    scale / count, diagonal_);
    if (c > 0) {
      std::vector<cfloat> phi(static_cast<std::size_t>(period));
      for (index_t i = 0; i < period; ++i) {
        std::complex<double> w(1.0);
        index_t rest = i;
        for (int d = 0; d < axes; ++d) {
          const index_t len = g.image[d], at = rest % len;
          rest /= len;
          if ((c >> d) & 1) w *= phase(at, len);
        }
        phi[static_cast<std::size_t>(i)] = cfloat(w);
      }
      part->phase = part->backend->allocate(phi.size() * sizeof(cfloat));
      part->backend->upload(*part->phase, phi.data(), phi.size() * sizeof(cfloat));
      part->period = period;
    }
    parts_.push_back(std::move(part));
  }
}

SplitToeplitzOperator::~SplitToeplitzOperator() = default;

FourierGram& SplitToeplitzOperator::replica(int device) {
  require(device >= 0 && device < devices(), "split Toeplitz: no device " + std::to_string(device));
  if (replicas_.empty()) {
    rendezvous_ = std::make_unique<Rendezvous>(devices());
    for (int d = 0; d < devices(); ++d) replicas_.push_back(std::make_unique<Replica>(*this, d));
  }
  return *replicas_[static_cast<std::size_t>(device)];
}

void SplitToeplitzOperator::resetReplicas() {
  if (rendezvous_) rendezvous_->reset();
}

void SplitToeplitzOperator::abortReplicas() {
  if (rendezvous_) rendezvous_->abort();
}

void SplitToeplitzOperator::applyReplica(int device, const Buffer& x, Buffer& y, index_t batch) {
  require(batch >= 1, "split Toeplitz: batch must be >= 1");
  Part& me = *parts_[static_cast<std::size_t>(device)];
  Backend& be = *me.backend;
  const index_t n = image_.size() * batch;
  const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(cfloat);
  if (me.replicaBatch < batch) {
    me.own = be.allocate(bytes);
    me.received = be.allocate(bytes);
    me.replicaBatch = batch;
  }
  // This device's class.
  if (me.phase) {
    be.multiply(*me.own, *me.phase, me.period, x, n, false);
    me.gram->apply(*me.own, *me.own, batch);
    be.multiply(*me.own, *me.phase, me.period, *me.own, n, true);
  } else {
    me.gram->apply(x, *me.own, batch);
  }
  rendezvous_->wait();  // every device's class queued: the copies below are ordered after it
  for (std::size_t c = 0; c < parts_.size(); ++c) {
    Part& from = *parts_[c];
    const Buffer* part = me.own.get();
    if (static_cast<int>(c) != device) {
      Buffer& to = c == 0 ? y : *me.received;
      copyBetween(be, to, *from.backend, *from.own, bytes);
      part = &to;
    }
    if (c == 0) {
      if (part != &y) be.copy(y, *part, bytes);
    } else {
      be.axpby(y, cfloat(1.f), *part, cfloat(1.f), n);
    }
  }
  rendezvous_->wait();  // every copy queued before any device's next class overwrites its result
}

void SplitToeplitzOperator::apply(const Buffer& x, Buffer& y, index_t batch) {
  require(batch >= 1, "split Toeplitz: batch must be >= 1");
  Backend& first = *parts_[0]->backend;
  const index_t n = image_.size() * batch;
  const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(cfloat);
  if (batch_ < batch) {
    received_.reset();
    for (auto& p : parts_) p->work.reset();
    for (std::size_t c = 1; c < parts_.size(); ++c) parts_[c]->work = parts_[c]->backend->allocate(bytes);
    if (parts_.size() > 1) received_ = first.allocate(bytes);
    batch_ = batch;
  }
  // The other devices' copies and classes first, so that they run while the first device does its own.
  for (std::size_t c = 1; c < parts_.size(); ++c) copyBetween(*parts_[c]->backend, *parts_[c]->work, first, x, bytes);
  for (std::size_t c = 1; c < parts_.size(); ++c) {
    Part& p = *parts_[c];
    p.backend->multiply(*p.work, *p.phase, p.period, *p.work, n, false);
    p.gram->apply(*p.work, *p.work, batch);
    p.backend->multiply(*p.work, *p.phase, p.period, *p.work, n, true);
  }
  parts_[0]->gram->apply(x, y, batch);
  for (std::size_t c = 1; c < parts_.size(); ++c) {
    copyBetween(first, *received_, *parts_[c]->backend, *parts_[c]->work, bytes);
    first.axpby(y, cfloat(1.f), *received_, cfloat(1.f), n);
  }
}

}  // namespace larmor::ops
