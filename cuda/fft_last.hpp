#pragma once
// The slowest transformed dimension of a centred FFT and the centring in one pass (fft_last.cu derives it).
#include <optional>
#include <vector>

#include "kernels.hpp"
#include "larmor/backend/backend.hpp"

namespace larmor::cuda {

/// What the pass fuses with the last dimension's DFT: the centring (Backend::fft) or fftGram's diagonal.
enum class LastDimUse { Centre, Gram };

/// How the fused pass sees an array: the transformed dimensions of length > 1 are x (n0, stride 1), y (n1,
/// stride n0; 1 when there is none) and the last one (n, stride low = n0 n1); `batch` transforms follow one
/// another, `plane` = low n elements apart.
struct LastDimPass {
  long long low = 0, plane = 0, batch = 0;
  int n0 = 1, n1 = 1, n = 1;
  std::vector<long long> lowerLengths;  ///< cuFFT's order (slowest first): the transform left to cuFFT
  long long lowerBatch = 0;             ///< n batch transforms of the lower dimensions
  int lastDim = 0;                      ///< the index in the shape of the last transformed dimension (n)
  int tilesX = 0;                       ///< a block's columns along x: tiles (pairs of tiles for Centre)
  long long blocks = 0;
};

/// The pass for a transform over dims [0, rank) of `shape` when it applies: every transformed length even,
/// two or three of them > 1, the last a power of two in [32, 512], x a multiple of the pass's tile (4 to 32
/// columns; for Centre the tiles pair with their partners half a period away, so n0 / 2 is what must divide) and
/// the grid within CUDA's.
std::optional<LastDimPass> lastDimPass(const Shape& shape, int rank, LastDimUse use);

/// After cuFFT has transformed the lower dimensions in place (plain DFT, direction `dir`): the plain DFT
/// along the last dimension, then every element swapped with its partner half a period away along every
/// transformed dimension and multiplied by (-1)^{its coordinate sum} N^{-1/2}: the centred unitary FFT.
void runLastDimPass(const Launch& l, float2* data, const LastDimPass& pass, FftDirection dir);

/// Between cuFFT's forward and inverse plain DFTs of the lower dimensions: along the last dimension the forward
/// DFT, d (one transform's elements, every batch) read half a period away along every dimension, 1/N, the inverse
/// DFT: fftGram's F^H diag(d) F for even lengths (fft.cu) with no pass of its own besides cuFFT's.
/// Rows [begin, end) of the last dimension: the others are taken as zero and not written (fftGramInBox).
void runLastDimGram(const Launch& l, float2* data, const LastDimPass& pass, const float2* diagonal, int begin, int end);

/// A transform of one dimension of contiguous elements (one transformed length > 1, a power of two in [32, 512]):
/// the number of rows when it applies. runRowPass then does the whole centred FFT in one pass, no cuFFT.
std::optional<long long> rowPass(const Shape& shape, int rank);
void runRowPass(const Launch& l, float2* data, const Shape& shape, long long rows, FftDirection dir);

/// For fftGramInBox on a 2D pass (x the only lower dimension): whether the row kernel takes x's plain DFT on
/// `rows` rows of the last dimension in every batch, and that DFT (unscaled) on rows [begin, begin + rows) of each
/// batch in one launch, where cuFFT would need a call a batch.
bool boxRowsFit(const LastDimPass& pass, int rows);
void runBoxRows(const Launch& l, float2* data, const LastDimPass& pass, int begin, int rows, FftDirection dir);

/// fftGramPadded's lower passes on a Gram pass's grid (3D: x n0, y n1, z n; 2D: x n0, y n, n2 = 1): the image
/// [n0, n1, n2] x batch is the grid's centred box (starting at g / 2 - n / 2 along each dimension, as resizeCentred
/// places it).
struct PaddedBox {
  int n0 = 0, n1 = 0, n2 = 0;
};
/// Whether they run: x (and in 3D y) a power of two in [32, 512], the box within the grid; 3D passes with z last,
/// 2D ones with y last.
bool paddedPassesFit(const LastDimPass& pass, const PaddedBox& box);
/// Forward: x's plain DFT of each image row zero-padded to the grid's length, into the grid's rows of the box (y
/// and z in it); nothing else written. Inverse: the inverse plain DFT of those rows, their box elements to `out`
/// ([n0, n1, n2] x batch); the grid's other rows not read. Unscaled.
void runPaddedRows(const Launch& l, float2* grid, const float2* image, float2* out, const LastDimPass& pass,
                   const PaddedBox& box, FftDirection dir);
/// 3D: y's plain DFT, in place, of the grid's columns in the box's planes: forward reads the box's rows (the others
/// taken as zero) and writes every row; inverse reads every row and writes the box's. Unscaled.
void runPaddedColumns(const Launch& l, float2* grid, const LastDimPass& pass, const PaddedBox& box, FftDirection dir);

}  // namespace larmor::cuda
