// The last transformed dimension of a centred FFT fused with the centring. fft.cu's even-length form is
// C = S D F N^{-1/2} (S the half-period swap along every transformed dimension, D = diag((-1)^{|k|}), F the
// plain DFT); F is separable, F = F_last F_lower, so cuFFT transforms the lower dimensions (one or two, batched
// over the last one) and this one pass does the rest: the plain DFT along the last dimension, then D, S and
// N^{-1/2}. Against cuFFT's whole transform followed by fft.cu's swap pass, the swap's read and write of the
// array replace cuFFT's own pass over the last dimension: the centred FFT costs what cuFFT alone does
// (128^3 1.45x -> 1.00x, 256^3 1.36x -> 1.01x on an H200).
//
// The DFT of length N = A B along the last dimension, Cooley-Tukey in two steps (n = B n1 + n2, k = k1 + A k2):
//   X[k1 + A k2] = sum_{n2} W_B^{n2 k2} ( W_N^{n2 k1} sum_{n1} x[B n1 + n2] W_A^{n1 k1} ),  W_M = e^{s 2 pi i / M},
// s = -1 forward, +1 inverse (cuFFT's exponent). Thread n2 (B per column) loads its A elements straight from
// global memory, does the A-point DFT in registers (radix 2, twiddles from a table of W_N^j in shared memory,
// sincospif: ~1 ulp), multiplies by W_N^{n2 k1} and stores to shared memory; after a barrier thread j does the
// B-point DFTs of the rows k1 = j, j + B, ... and writes each result to its final place.
//
// In place without a race: a block owns a tile of TX neighbouring columns along x (x0 a multiple of TX, below
// n0/2) and the partner tile half a period away along x and y; it reads both, and after the barrier writes only
// into them (column c's results go to its partner's column). Each half-warp reads or writes TX consecutive
// elements of one row: 128 bytes for TX = 16, 64 for TX = 8, 32 for TX = 4.
#include "fft_last.hpp"

#include <cmath>
#include <type_traits>
#include <utility>
#include <string>

#include "check.hpp"
#include "device_math.hpp"

namespace larmor::cuda {

namespace {

struct LastDimView {
  long long low, plane;
  int n0, n1, half0, tilesX;
  float scale;  ///< N^{-1/2}, N the elements of one whole transform
  float sign;   ///< the exponent's sign: -1 forward, +1 inverse
  int begin = 0, end = 0;  ///< Gram: the rows of the last dimension read (others zero) and written
};

LARMOR_HD constexpr int log2Of(int n) { return n <= 1 ? 0 : 1 + log2Of(n / 2); }
LARMOR_HD constexpr int bitReverse(int i, int bits) {
  int r = 0;
  for (int b = 0; b < bits; ++b)
    if (i & (1 << b)) r |= 1 << (bits - 1 - b);
  return r;
}

/// The radix-2 butterflies of span LEN and up, in registers; tw[j] = W_N^j (its conjugate where CONJ).
template <int M, int N, int LEN, bool CONJ>
__device__ __forceinline__ void butterflies(float2 (&v)[M], const float2* tw) {
  if constexpr (LEN <= M) {
#pragma unroll
    for (int i = 0; i < M; i += LEN) {
#pragma unroll
      for (int j = 0; j < LEN / 2; ++j) {
        float2 b = v[i + j + LEN / 2];
        if (j != 0) {
          const float2 w = tw[j * (N / LEN)];
          b = cmul(b, float2{w.x, CONJ ? -w.y : w.y});
        }
        const float2 a = v[i + j];
        v[i + j] = float2{a.x + b.x, a.y + b.y};
        v[i + j + LEN / 2] = float2{a.x - b.x, a.y - b.y};
      }
    }
    butterflies<M, N, 2 * LEN, CONJ>(v, tw);
  }
}

/// v <- the M-point DFT of v (M a power of two dividing N), of the opposite exponent where CONJ. The bit
/// reversal by an index sequence: a constant index for every element, so the array stays in registers.
template <int M, int N, bool CONJ = false>
__device__ __forceinline__ void registerDft(float2 (&v)[M], const float2* tw) {
  float2 w[M];
  [&]<int... I>(std::integer_sequence<int, I...>) {
    ((w[I] = v[bitReverse(I, log2Of(M))]), ...);
  }(std::make_integer_sequence<int, M>{});
  butterflies<M, N, 2, CONJ>(w, tw);
#pragma unroll
  for (int i = 0; i < M; ++i) v[i] = w[i];
}

/// tw[j] = e^{sign 2 pi i j / N}, j < N, filled by the whole block (a barrier before its first use).
template <int N>
__device__ __forceinline__ void fillTwiddles(float2* tw, float sign) {
  for (int j = threadIdx.x; j < N; j += blockDim.x) {
    float s, c;
    sincospif(2.f * static_cast<float>(j) / static_cast<float>(N), &s, &c);
    tw[j] = float2{c, sign * s};
  }
}

/// The split's first step on the A elements n = B n1 + t a thread holds: their A-point DFT times W_N^{t k1},
/// stored to rows[slot(k1)] for the second step.
template <int A, int B, class Slot>
__device__ __forceinline__ void firstStep(float2 (&v)[A], const float2* tw, int t, float2* rows, Slot slot) {
  constexpr int N = A * B;
  registerDft<A, N>(v, tw);
#pragma unroll
  for (int k1 = 1; k1 < A; ++k1) v[k1] = cmul(v[k1], tw[(t * k1) % N]);
#pragma unroll
  for (int k1 = 0; k1 < A; ++k1) rows[slot(k1)] = v[k1];
}

/// The second step of one row k1: u[k2] = X[k1 + A k2], the B-point DFT of rows[slot(n2)], n2 < B.
template <int A, int B, class Slot>
__device__ __forceinline__ void secondStep(float2 (&u)[B], const float2* tw, const float2* rows, Slot slot) {
#pragma unroll
  for (int n2 = 0; n2 < B; ++n2) u[n2] = rows[slot(n2)];
  registerDft<B, A * B>(u, tw);
}

/// f(k1) for the rows k1 = t, t + B, ... (A / B of them) that thread t takes in the second step, unrolled by hand:
/// a loop over them left the rows' registers in local memory (lastDimKernel).
template <int A, int B, class F>
__device__ __forceinline__ void forEachRow(int t, F&& f) {
  static_assert(A % B == 0 && A / B <= 4, "A / B rows a thread, at most four");
  f(t);
  if constexpr (A / B > 1) f(t + B);
  if constexpr (A / B > 2) {
    f(t + 2 * B);
    f(t + 3 * B);
  }
}

/// One block: TX columns and their partners, B threads per column (the file comment).
template <int A, int B, int TX>
__global__ void __launch_bounds__(2 * TX * B) lastDimKernel(float2* data, LastDimView p) {
  constexpr int N = A * B;
  static_assert(A % B == 0, "the second step gives each thread A / B rows");
  __shared__ float2 tw[N];
  __shared__ float2 rows[2 * N * TX];
  fillTwiddles<N>(tw, p.sign);
  const int tid = static_cast<int>(threadIdx.x), xi = tid % TX, t = (tid / TX) % B, side = tid / (TX * B);
  long long bi = blockIdx.x;
  const int tile = static_cast<int>(bi % p.tilesX);
  bi /= p.tilesX;
  const int y = static_cast<int>(bi % p.n1);
  const long long batch = bi / p.n1;
  const int yp = y + p.n1 / 2 < p.n1 ? y + p.n1 / 2 : y - p.n1 / 2;  // n1 even or 1
  const int x0 = tile * TX;
  // This thread's source column (side 0: the representative tile, 1: its partner) and where it goes.
  const int xs = x0 + side * p.half0 + xi, ys = side ? yp : y;
  const int xd = x0 + (1 - side) * p.half0 + xi, yd = side ? y : yp;
  const long long base = batch * p.plane;
  const float2* src = data + base + xs + static_cast<long long>(p.n0) * ys;

  float2 v[A];
#pragma unroll
  for (int n1 = 0; n1 < A; ++n1) v[n1] = src[static_cast<long long>(B * n1 + t) * p.low];
  __syncthreads();  // the twiddle table
  float2* mine = rows + side * N * TX;
  auto slot = [&](int row, int element) { return (row * B + element) * TX + xi; };  // element n2 of row k1
  firstStep<A, B>(v, tw, t, mine, [&](int k1) { return slot(k1, t); });
  __syncthreads();  // every read of both tiles is done: the writes below may land on them

  float2* dst = data + base + xd + static_cast<long long>(p.n0) * yd;
  const int parity = (xs + ys) & 1;
  auto row = [&](int k1) {
    float2 u[B];
    secondStep<A, B>(u, tw, mine, [&](int n2) { return slot(k1, n2); });
#pragma unroll
    for (int k2 = 0; k2 < B; ++k2) {
      const int k = k1 + A * k2, to = k < N / 2 ? k + N / 2 : k - N / 2;
      const float s = ((parity + k) & 1) ? -p.scale : p.scale;
      dst[static_cast<long long>(to) * p.low] = float2{s * u[k2].x, s * u[k2].y};
    }
  };
  // Unrolled by hand: a loop over them left u in local memory.
  row(t);
  if constexpr (A / B > 1) row(t + B);
  if constexpr (A / B > 2) {
    row(t + 2 * B);
    row(t + 3 * B);
  }
  static_assert(A / B <= 4, "at most four rows a thread");
}

/// fftGram's middle (fft.cu: F^H M F = F0^H (S M S) F0 / N for even lengths) along the last dimension, after
/// cuFFT's forward plain DFT of the lower ones and before their inverse: each column's forward DFT as in
/// lastDimKernel, times d half a period away along every dimension and 1/N, then the inverse DFT by the same two
/// steps mirrored (k = k1 + A k2, n = m1 + B m2: B-point inverse DFTs over k2 in the registers that hold them,
/// twiddles W_N^{-m1 k1}, a transpose through shared memory, A-point inverse DFTs over k1), so thread n2 ends with
/// the elements n = n2 + B m2 it loaded and writes them back: columns are independent, no partner tile.
template <int A, int B, int TX>
__device__ __forceinline__ void gramColumns(float2* data, const float2* __restrict__ diagonal, const LastDimView& p) {
  constexpr int N = A * B;
  __shared__ float2 tw[N];
  __shared__ float2 rows[N * TX];
  fillTwiddles<N>(tw, -1.f);  // the forward exponent
  const int tid = static_cast<int>(threadIdx.x), xi = tid % TX, t = tid / TX;
  long long bi = blockIdx.x;
  const int tile = static_cast<int>(bi % p.tilesX);
  bi /= p.tilesX;
  const int y = static_cast<int>(bi % p.n1);
  const long long batch = bi / p.n1;
  const int x = tile * TX + xi;
  float2* column = data + batch * p.plane + x + static_cast<long long>(p.n0) * y;  // this column's first row
  auto element = [&](int n) { return column + static_cast<long long>(n) * p.low; };  // row n of this column
  const int xs = x < p.half0 ? x + p.half0 : x - p.half0;
  const int ys = y + p.n1 / 2 < p.n1 ? y + p.n1 / 2 : y - p.n1 / 2;
  const long long dLow = p.low;
  const float2* d = diagonal + xs + static_cast<long long>(p.n0) * ys;

  float2 v[A];
#pragma unroll
  for (int n1 = 0; n1 < A; ++n1) {
    const int n = B * n1 + t;
    v[n1] = n >= p.begin && n < p.end ? *element(n) : float2{0.f, 0.f};
  }
  __syncthreads();  // the twiddle table
  auto slot = [&](int row, int element) { return (row * B + element) * TX + xi; };  // element n2 of row k1
  firstStep<A, B>(v, tw, t, rows, [&](int k1) { return slot(k1, t); });
  __syncthreads();
  // Row k1 = t + B i: forward B-point DFT (X[k1 + A k2]), the diagonal, inverse B-point DFT and twiddle; kept in
  // v[i B ..] until every thread has read its rows.
  auto row = [&](int i) {
    const int k1 = t + B * i;
    float2 u[B];
    secondStep<A, B>(u, tw, rows, [&](int n2) { return slot(k1, n2); });
#pragma unroll
    for (int k2 = 0; k2 < B; ++k2) {
      const int k = k1 + A * k2, ks = k < N / 2 ? k + N / 2 : k - N / 2;
      const float2 f = d[static_cast<long long>(ks) * dLow];
      u[k2] = cmul(u[k2], float2{p.scale * f.x, p.scale * f.y});
    }
    registerDft<B, N, true>(u, tw);
#pragma unroll
    for (int m1 = 1; m1 < B; ++m1) u[m1] = cmulConj(tw[(m1 * k1) % N], u[m1]);
#pragma unroll
    for (int m1 = 0; m1 < B; ++m1) v[i * B + m1] = u[m1];
  };
  row(0);  // unrolled by hand (lastDimKernel)
  if constexpr (A / B > 1) row(1);
  if constexpr (A / B > 2) {
    row(2);
    row(3);
  }
  static_assert(A % B == 0 && A / B <= 4, "A / B rows a thread, at most four");
  __syncthreads();  // every row read: the transpose may overwrite them
#pragma unroll
  for (int i = 0; i < A / B; ++i)
#pragma unroll
    for (int m1 = 0; m1 < B; ++m1) rows[(m1 * A + t + B * i) * TX + xi] = v[i * B + m1];
  __syncthreads();
#pragma unroll
  for (int k1 = 0; k1 < A; ++k1) v[k1] = rows[(t * A + k1) * TX + xi];
  registerDft<A, N, true>(v, tw);
#pragma unroll
  for (int m2 = 0; m2 < A; ++m2) {
    const int n = t + B * m2;
    if (n >= p.begin && n < p.end) *element(n) = v[m2];
  }
}

template <int A, int B, int TX>
__global__ void __launch_bounds__(TX * B, 2) lastDimGramKernel(float2* data, const float2* __restrict__ diagonal,
                                                                 LastDimView p) {
  gramColumns<A, B, TX>(data, diagonal, p);
}

/// One row's DFT of length N = A B by B threads (thread t of the row, r the row's place in the block): element n =
/// B n1 + t loaded by load(n) (zero for a row that is not live), the two steps through the row's span of shared
/// memory, Y[k1, n2] at n2 (A + 1) + k1 (an odd stride: both the stores, n2 = thread, and the loads, k1 = thread, of a
/// half-warp fall on distinct banks), and X[k] given to store(k, value) for a live row. tw: the block's twiddles,
/// filled before the call (the barrier after the loads covers it). Every thread of the block calls it (barriers).
template <int A, int B, class Load, class Store>
__device__ __forceinline__ void rowDft(const float2* tw, float2* span, int t, int r, bool live, Load load, Store store) {
  float2* mine = span + r * B * (A + 1);
  float2 v[A];
#pragma unroll
  for (int n1 = 0; n1 < A; ++n1) v[n1] = load(B * n1 + t);
  __syncthreads();  // the twiddle table
  firstStep<A, B>(v, tw, t, mine, [&](int k1) { return t * (A + 1) + k1; });
  __syncthreads();  // the row's every element is read below before any is written back
  forEachRow<A, B>(t, [&](int k1) {
    float2 u[B];
    secondStep<A, B>(u, tw, mine, [&](int n2) { return n2 * (A + 1) + k1; });
    if (!live) return;
#pragma unroll
    for (int k2 = 0; k2 < B; ++k2) store(k1 + A * k2, u[k2]);
  });
}

/// Rows of N contiguous elements: row r < count is at g * groupStride + first + j * N, g = r / perGroup and
/// j = r mod perGroup (a whole batch of rows: perGroup = count, first = 0; the rows of a box, group by group).
struct RowSet {
  long long count = 0, perGroup = 1, groupStride = 0, first = 0;
};

/// A transform of one dimension whose elements are contiguous (rank 1, or every other transformed length 1): no
/// cuFFT at all. R rows a block, B threads a row; thread n2 loads n = B n1 + n2 (B consecutive elements a row per
/// group of B threads), the two steps as in lastDimKernel with the transpose inside each row's span of shared
/// memory, and k = k1 + A k2 goes straight to (k + N/2) mod N times (-1)^k N^{-1/2} (CENTRED: the swap stays in the
/// row, so no partner), or to k unscaled (the plain DFT fftGram's box needs along x).
template <int A, int B, int R, bool CENTRED>
__global__ void __launch_bounds__(R * B) rowKernel(float2* data, RowSet set, float scale, float sign) {
  constexpr int N = A * B;
  __shared__ float2 tw[N];
  __shared__ float2 span[R * B * (A + 1)];
  fillTwiddles<N>(tw, sign);
  const int t = static_cast<int>(threadIdx.x) % B, r = static_cast<int>(threadIdx.x) / B;
  const long long row = static_cast<long long>(blockIdx.x) * R + r;
  const bool live = row < set.count;
  const long long group = live ? row / set.perGroup : 0;
  float2* x = data + (live ? group * set.groupStride + set.first + (row - group * set.perGroup) * N : 0);
  rowDft<A, B>(
      tw, span, t, r, live, [&](int n) { return live ? x[n] : float2{0.f, 0.f}; },
      [&](int k, float2 u) {
        if constexpr (CENTRED) {
          const float f = (k & 1) ? -scale : scale;
          x[k < N / 2 ? k + N / 2 : k - N / 2] = float2{f * u.x, f * u.y};
        } else {
          x[k] = u;
        }
      });
}

template <int A, int B, int R, bool CENTRED>
void launchRows(const Launch& l, float2* data, const RowSet& set, float scale, float sign) {
  const long long blocks = (set.count + R - 1) / R;
  rowKernel<A, B, R, CENTRED><<<static_cast<unsigned>(blocks), R * B, 0, l.stream>>>(data, set, scale, sign);
  LARMOR_CUDA_CHECK_LAUNCH();
}

/// fftGramPadded's passes along x and y (FftEngine::gramPadded): the image [n0, n1, n2] x batch sits in the grid
/// [g0, g1, g2] x batch from (bx, by, bz); the x pass holds its results in the grid's rows y in [by, by + n1) of
/// the planes z in [bz, bz + n2) only, the y pass in those planes only: nothing else of the grid is read or written.
struct PaddedView {
  long long gridPlane = 0, gridVolume = 0;  ///< g0 g1 and g0 g1 g2
  long long rows = 0;                       ///< n1 n2 batch: the image's rows along x
  int g0 = 0, n0 = 0, n1 = 0, n2 = 0, bx = 0, by = 0, bz = 0, tilesX = 0;
};

/// x's plain DFT, R rows a block, B threads a row (rowKernel's two steps). Forward: image row (y, z, b) zero-padded
/// to g0 (its elements at bx..bx + n0) into the grid's row (by + y, bz + z, b). Inverse: that grid row back, and
/// only its elements bx..bx + n0 to the image row of `out`. Unscaled both ways (the z pass scales).
template <int A, int B, int R, bool INVERSE>
__global__ void __launch_bounds__(R * B) paddedRowKernel(float2* grid, const float2* image, float2* out, PaddedView p) {
  constexpr int N = A * B;
  __shared__ float2 tw[N];
  __shared__ float2 span[R * B * (A + 1)];
  fillTwiddles<N>(tw, INVERSE ? 1.f : -1.f);
  const int t = static_cast<int>(threadIdx.x) % B, r = static_cast<int>(threadIdx.x) / B;
  const long long row = static_cast<long long>(blockIdx.x) * R + r;
  const bool live = row < p.rows;
  const long long y = live ? row % p.n1 : 0, zb = live ? row / p.n1 : 0, z = zb % p.n2, b = zb / p.n2;
  float2* g = grid + b * p.gridVolume + (p.bz + z) * p.gridPlane + (p.by + y) * p.g0;
  const long long at = row * p.n0;  // the image's rows are contiguous
  rowDft<A, B>(
      tw, span, t, r, live,
      [&](int n) {
        const int i = n - p.bx;
        if constexpr (INVERSE) return live ? g[n] : float2{0.f, 0.f};
        else return live && i >= 0 && i < p.n0 ? image[at + i] : float2{0.f, 0.f};
      },
      [&](int k, float2 u) {
        if constexpr (INVERSE) {
          if (k >= p.bx && k < p.bx + p.n0) out[at + k - p.bx] = u;
        } else {
          g[k] = u;
        }
      });
}

/// y's plain DFT of the grid's columns (x, z, b), z in the box's planes, in place: TX columns a block, B threads a
/// column (gramColumns' two steps). Forward: rows [by, by + n1) read (the others are zero), every row written.
/// Inverse: every row read, rows [by, by + n1) written. Unscaled.
template <int A, int B, int TX, bool INVERSE>
__global__ void __launch_bounds__(TX * B, 2) paddedColumnKernel(float2* grid, PaddedView p) {
  constexpr int N = A * B;
  __shared__ float2 tw[N];
  __shared__ float2 rows[N * TX];
  fillTwiddles<N>(tw, INVERSE ? 1.f : -1.f);
  const int tid = static_cast<int>(threadIdx.x), xi = tid % TX, t = tid / TX;
  long long bi = blockIdx.x;
  const int tile = static_cast<int>(bi % p.tilesX);
  bi /= p.tilesX;
  const long long z = bi % p.n2, b = bi / p.n2;
  float2* column = grid + b * p.gridVolume + (p.bz + z) * p.gridPlane + tile * TX + xi;
  const int begin = p.by, end = p.by + p.n1;
  float2 v[A];
#pragma unroll
  for (int n1 = 0; n1 < A; ++n1) {
    const int n = B * n1 + t;
    v[n1] = INVERSE || (n >= begin && n < end) ? column[static_cast<long long>(n) * p.g0] : float2{0.f, 0.f};
  }
  __syncthreads();  // the twiddle table
  auto slot = [&](int row, int element) { return (row * B + element) * TX + xi; };  // element n2 of row k1
  firstStep<A, B>(v, tw, t, rows, [&](int k1) { return slot(k1, t); });
  __syncthreads();  // every element of the block's columns is read: the writes below may land on them
  auto put = [&](int k1) {
    float2 u[B];
    secondStep<A, B>(u, tw, rows, [&](int n2) { return slot(k1, n2); });
#pragma unroll
    for (int k2 = 0; k2 < B; ++k2) {
      const int k = k1 + A * k2;
      if (!INVERSE || (k >= begin && k < end)) column[static_cast<long long>(k) * p.g0] = u[k2];
    }
  };
  forEachRow<A, B>(t, put);
}

/// Calls f(A, B) (std::integral_constants) with the split N = A B of a supported length n (32..512, a power of
/// two): the one table of splits the three kernels share.
template <class F>
void withSplit(int n, const char* what, F&& f) {
  using std::integral_constant;
  switch (n) {
    case 32: f(integral_constant<int, 8>{}, integral_constant<int, 4>{}); break;
    case 64: f(integral_constant<int, 8>{}, integral_constant<int, 8>{}); break;
    case 128: f(integral_constant<int, 16>{}, integral_constant<int, 8>{}); break;
    case 256: f(integral_constant<int, 16>{}, integral_constant<int, 16>{}); break;
    case 512: f(integral_constant<int, 32>{}, integral_constant<int, 16>{}); break;
    default: throw Error(std::string("cuda fft: no ") + what + " for a length of " + std::to_string(n));
  }
}

/// Rows a block of the row kernel takes for a length n: 256 threads (128 at 512, where the rows fill ~37 KiB).
constexpr int rowsPerBlock(int n) { return n == 512 ? 8 : 256 / (n <= 32 ? 4 : n <= 128 ? 8 : 16); }

/// Columns along x a block takes for a last length n: the centring kernel's tiles come in pairs, the Gram's alone;
/// both keep a block's rows in ~32 KiB of shared memory.
constexpr int tileWidth(LastDimUse use, int n) {
  if (use == LastDimUse::Centre) return n <= 128 ? 16 : n == 256 ? 8 : 4;
  return n <= 128 ? 32 : n == 256 ? 16 : 8;
}

template <bool CENTRED>
void runRows(const Launch& l, float2* data, int n, const RowSet& set, float scale, float sign) {
  withSplit(n, "row pass", [&](auto a, auto b) {
    constexpr int A = decltype(a)::value, B = decltype(b)::value;
    launchRows<A, B, rowsPerBlock(A * B), CENTRED>(l, data, set, scale, sign);
  });
}

/// Whether rows of length n fit the row kernel, and its blocks the grid.
bool rowLengthFits(int n, long long rows) {
  if (n < 32 || n > 512 || (n & (n - 1))) return false;
  return (rows + rowsPerBlock(n) - 1) / rowsPerBlock(n) <= 0x7fffffffLL;
}

LastDimView viewOf(const LastDimPass& pass, float scale, float sign) {
  LastDimView v;
  v.low = pass.low;
  v.plane = pass.plane;
  v.n0 = pass.n0;
  v.n1 = pass.n1;
  v.half0 = pass.n0 / 2;
  v.tilesX = pass.tilesX;
  v.scale = scale;
  v.sign = sign;
  return v;
}

template <int A, int B, int TX>
void launchCentre(const Launch& l, float2* data, const LastDimView& v, long long blocks) {
  lastDimKernel<A, B, TX><<<static_cast<unsigned>(blocks), 2 * TX * B, 0, l.stream>>>(data, v);
  LARMOR_CUDA_CHECK_LAUNCH();
}

template <int A, int B, int TX>
void launchGram(const Launch& l, float2* data, const float2* d, const LastDimView& v, long long blocks) {
  lastDimGramKernel<A, B, TX><<<static_cast<unsigned>(blocks), TX * B, 0, l.stream>>>(data, d, v);
  LARMOR_CUDA_CHECK_LAUNCH();
}


}  // namespace

std::optional<LastDimPass> lastDimPass(const Shape& shape, int rank, LastDimUse use) {
  int lengths[3], count = 0, last = 0;
  long long plane = 1;
  for (int d = 0; d < rank; ++d) {
    const index_t n = shape[d];
    if (n % 2 && n > 1) return std::nullopt;
    plane *= n;
    if (n > 1) {
      if (count == 3) return std::nullopt;
      lengths[count++] = static_cast<int>(n);
      last = d;
    }
  }
  if (count < 2) return std::nullopt;
  LastDimPass p;
  p.n = lengths[count - 1];
  p.lastDim = last;
  if (p.n < 32 || p.n > 512 || (p.n & (p.n - 1))) return std::nullopt;
  p.n0 = lengths[0];
  p.n1 = count == 3 ? lengths[1] : 1;
  const int tile = tileWidth(use, p.n), columns = use == LastDimUse::Centre ? p.n0 / 2 : p.n0;
  if (columns % tile != 0) return std::nullopt;
  p.tilesX = columns / tile;
  p.low = static_cast<long long>(p.n0) * p.n1;
  p.plane = plane;
  p.batch = static_cast<long long>(shape.size()) / plane;
  p.blocks = static_cast<long long>(p.tilesX) * p.n1 * p.batch;
  if (p.blocks > 0x7fffffffLL) return std::nullopt;
  for (int i = count - 2; i >= 0; --i) p.lowerLengths.push_back(lengths[i]);
  p.lowerBatch = static_cast<long long>(p.n) * p.batch;
  return p;
}

void runLastDimPass(const Launch& l, float2* data, const LastDimPass& pass, FftDirection dir) {
  const LastDimView v = viewOf(pass, static_cast<float>(1.0 / std::sqrt(static_cast<double>(pass.plane))),
                               dir == FftDirection::Forward ? -1.f : 1.f);
  withSplit(pass.n, "fused pass", [&](auto a, auto b) {
    constexpr int A = decltype(a)::value, B = decltype(b)::value;
    launchCentre<A, B, tileWidth(LastDimUse::Centre, A * B)>(l, data, v, pass.blocks);
  });
}

void runLastDimGram(const Launch& l, float2* data, const LastDimPass& pass, const float2* diagonal, int begin,
                    int end) {
  LastDimView v = viewOf(pass, static_cast<float>(1.0 / static_cast<double>(pass.plane)), -1.f);
  v.begin = begin;
  v.end = end;
  withSplit(pass.n, "fused Gram pass", [&](auto a, auto b) {
    constexpr int A = decltype(a)::value, B = decltype(b)::value;
    launchGram<A, B, tileWidth(LastDimUse::Gram, A * B)>(l, data, diagonal, v, pass.blocks);
  });
}

std::optional<long long> rowPass(const Shape& shape, int rank) {
  int n = 1, count = 0;
  for (int d = 0; d < rank; ++d)
    if (shape[static_cast<std::size_t>(d)] > 1) {
      n = static_cast<int>(shape[static_cast<std::size_t>(d)]);
      ++count;
    }
  const long long rows = static_cast<long long>(shape.size()) / n;
  if (count != 1 || !rowLengthFits(n, rows)) return std::nullopt;
  return rows;
}

void runRowPass(const Launch& l, float2* data, const Shape& shape, long long rows, FftDirection dir) {
  const int n = static_cast<int>(static_cast<long long>(shape.size()) / rows);
  RowSet set;
  set.count = set.perGroup = rows;
  runRows<true>(l, data, n, set, static_cast<float>(1.0 / std::sqrt(static_cast<double>(n))),
                dir == FftDirection::Forward ? -1.f : 1.f);
}

bool boxRowsFit(const LastDimPass& pass, int rows) {
  return pass.lowerLengths.size() == 1 && rowLengthFits(pass.n0, rows * pass.batch);
}

void runBoxRows(const Launch& l, float2* data, const LastDimPass& pass, int begin, int rows, FftDirection dir) {
  RowSet set;
  set.count = static_cast<long long>(rows) * pass.batch;
  set.perGroup = rows;
  set.groupStride = pass.plane;
  set.first = static_cast<long long>(begin) * pass.low;
  runRows<false>(l, data, pass.n0, set, 1.f, dir == FftDirection::Forward ? -1.f : 1.f);
}

namespace {

/// A 2D pass (x, then y as the last dimension) has no z: one plane, y the pass's last length.
bool flat(const LastDimPass& pass) { return pass.lowerLengths.size() == 1; }

PaddedView paddedView(const LastDimPass& pass, const PaddedBox& box) {
  PaddedView v;
  v.gridVolume = pass.plane;
  v.rows = static_cast<long long>(box.n1) * box.n2 * pass.batch;
  v.g0 = pass.n0;
  v.n0 = box.n0;
  v.n1 = box.n1;
  v.n2 = box.n2;
  v.bx = pass.n0 / 2 - box.n0 / 2;
  if (flat(pass)) {  // z = 0 always
    v.by = pass.n / 2 - box.n1 / 2;
    return v;
  }
  v.gridPlane = pass.low;
  v.by = pass.n1 / 2 - box.n1 / 2;
  v.bz = pass.n / 2 - box.n2 / 2;
  v.tilesX = pass.n0 / tileWidth(LastDimUse::Gram, pass.n1);
  return v;
}

bool powerOfTwoIn(int n, int lo, int hi) { return n >= lo && n <= hi && (n & (n - 1)) == 0; }

}  // namespace

bool paddedPassesFit(const LastDimPass& pass, const PaddedBox& box) {
  if (flat(pass))  // 2D: the rows only (y is the Gram pass's)
    return pass.lastDim == 1 && box.n0 >= 1 && box.n1 >= 1 && box.n2 == 1 && box.n0 <= pass.n0 && box.n1 <= pass.n &&
           powerOfTwoIn(pass.n0, 32, 512) && rowLengthFits(pass.n0, static_cast<long long>(box.n1) * pass.batch);
  if (pass.lastDim != 2 || pass.lowerLengths.size() != 2) return false;
  if (box.n0 < 1 || box.n1 < 1 || box.n2 < 1 || box.n0 > pass.n0 || box.n1 > pass.n1 || box.n2 > pass.n) return false;
  if (!powerOfTwoIn(pass.n0, 32, 512) || !powerOfTwoIn(pass.n1, 32, 512)) return false;
  if (pass.n0 % tileWidth(LastDimUse::Gram, pass.n1) != 0) return false;
  const long long rows = static_cast<long long>(box.n1) * box.n2 * pass.batch;
  const long long columnBlocks = static_cast<long long>(pass.n0 / tileWidth(LastDimUse::Gram, pass.n1)) * box.n2 * pass.batch;
  return rowLengthFits(pass.n0, rows) && columnBlocks <= 0x7fffffffLL;
}

void runPaddedRows(const Launch& l, float2* grid, const float2* image, float2* out, const LastDimPass& pass,
                   const PaddedBox& box, FftDirection dir) {
  const PaddedView v = paddedView(pass, box);
  withSplit(pass.n0, "padded row pass", [&](auto a, auto b) {
    constexpr int A = decltype(a)::value, B = decltype(b)::value, R = rowsPerBlock(A * B);
    const auto blocks = static_cast<unsigned>((v.rows + R - 1) / R);
    if (dir == FftDirection::Forward) paddedRowKernel<A, B, R, false><<<blocks, R * B, 0, l.stream>>>(grid, image, out, v);
    else paddedRowKernel<A, B, R, true><<<blocks, R * B, 0, l.stream>>>(grid, image, out, v);
    LARMOR_CUDA_CHECK_LAUNCH();
  });
}

void runPaddedColumns(const Launch& l, float2* grid, const LastDimPass& pass, const PaddedBox& box, FftDirection dir) {
  const PaddedView v = paddedView(pass, box);
  const auto blocks = static_cast<unsigned>(static_cast<long long>(v.tilesX) * box.n2 * pass.batch);
  withSplit(pass.n1, "padded column pass", [&](auto a, auto b) {
    constexpr int A = decltype(a)::value, B = decltype(b)::value, TX = tileWidth(LastDimUse::Gram, A * B);
    if (dir == FftDirection::Forward) paddedColumnKernel<A, B, TX, false><<<blocks, TX * B, 0, l.stream>>>(grid, v);
    else paddedColumnKernel<A, B, TX, true><<<blocks, TX * B, 0, l.stream>>>(grid, v);
    LARMOR_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace larmor::cuda
