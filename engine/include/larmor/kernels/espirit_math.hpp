#pragma once
// ESPIRiT's pointwise eigenproblem, written once for the CPU (engine/src/cpu/espirit.cpp) and CUDA
// (cuda/espirit.cu) so that both compute the same numbers from the same lines (LARMOR_HD, kernel_math.hpp).
//
// At each voxel M is Hermitian positive semidefinite, C x C (C coils), with eigenvalues in [0, ~1]; the
// sensitivities are the eigenvector of the eigenvalue ~1 (Uecker et al. 2014, eq. 13). Power iteration
// converges like (lambda_2 / lambda_1)^k, slow where lambda_2 is close; so M is first squared kSquarings
// times (P = M^16, renormalised by its trace after each product so nothing under- or overflows), the start
// vector is P's column with the largest diagonal (the coil where the dominant eigenvector is largest: never
// orthogonal to it), and kIterations power steps with P follow (M^128 overall: (0.9)^128 ~ 1e-6). The
// eigenvalue is the Rayleigh quotient s^H M s with the original M. Fixed trip counts, no data-dependent
// branches beyond zero guards: deterministic, and the same order of operations on both backends.
#include "larmor/kernels/kernel_math.hpp"

namespace larmor::kernels {

constexpr int kEspiritSquarings = 4;   ///< P = M^(2^4)
constexpr int kEspiritIterations = 8;  ///< power steps with P

/// Complex numbers as interleaved floats (re, im) so that the same code serves float2 and std::complex.
/// a, b: scratch of 2 C C floats each; v, w: scratch of 2 C floats. cov(l) returns M's packed entry l
/// (lower triangle, l = i (i + 1) / 2 + j, i >= j) as re/im through two references. On return v holds the
/// unit eigenvector and the result is its eigenvalue (0 and v = 0 for M = 0).
template <class Cov>
LARMOR_HD LARMOR_INLINE float espiritDominantEigen(int C, const Cov& cov, float* a, float* b, float* v, float* w) {
  // Unpack: a[(i + C j)] = M_ij, column-major.
  for (int i = 0; i < C; ++i)
    for (int j = 0; j <= i; ++j) {
      float re, im;
      cov(i * (i + 1) / 2 + j, re, im);
      a[2 * (i + C * j)] = re;
      a[2 * (i + C * j) + 1] = im;
      a[2 * (j + C * i)] = re;
      a[2 * (j + C * i) + 1] = -im;
    }
  for (int s = 0; s < kEspiritSquarings; ++s) {
    float trace = 0.f;
    for (int j = 0; j < C; ++j)
      for (int i = 0; i < C; ++i) {
        float re = 0.f, im = 0.f;
        for (int k = 0; k < C; ++k) {
          const float ar = a[2 * (i + C * k)], ai = a[2 * (i + C * k) + 1];
          const float br = a[2 * (k + C * j)], bi = a[2 * (k + C * j) + 1];
          re += ar * br - ai * bi;
          im += ar * bi + ai * br;
        }
        b[2 * (i + C * j)] = re;
        b[2 * (i + C * j) + 1] = im;
        if (i == j) trace += re;
      }
    const float inv = trace > 0.f ? 1.f / trace : 0.f;
    for (int e = 0; e < 2 * C * C; ++e) a[e] = b[e] * inv;
  }
  int start = 0;
  for (int j = 1; j < C; ++j)
    if (a[2 * (j + C * j)] > a[2 * (start + C * start)]) start = j;
  for (int i = 0; i < C; ++i) {
    v[2 * i] = a[2 * (i + C * start)];
    v[2 * i + 1] = a[2 * (i + C * start) + 1];
  }
  for (int it = 0; it <= kEspiritIterations; ++it) {
    float n2 = 0.f;
    for (int i = 0; i < C; ++i) n2 += v[2 * i] * v[2 * i] + v[2 * i + 1] * v[2 * i + 1];
    const float inv = n2 > 0.f ? 1.f / sqrtf(n2) : 0.f;
    for (int i = 0; i < 2 * C; ++i) v[i] *= inv;
    if (it == kEspiritIterations) break;
    for (int i = 0; i < C; ++i) {
      float re = 0.f, im = 0.f;
      for (int k = 0; k < C; ++k) {
        const float ar = a[2 * (i + C * k)], ai = a[2 * (i + C * k) + 1];
        re += ar * v[2 * k] - ai * v[2 * k + 1];
        im += ar * v[2 * k + 1] + ai * v[2 * k];
      }
      w[2 * i] = re;
      w[2 * i + 1] = im;
    }
    for (int i = 0; i < 2 * C; ++i) v[i] = w[i];
  }
  // Rayleigh quotient with the original M (re-read from cov): lambda = sum_ij conj(v_i) M_ij v_j.
  float lambda = 0.f;
  for (int i = 0; i < C; ++i) {
    float re = 0.f, im = 0.f;
    for (int j = 0; j < C; ++j) {
      float mr, mi;
      if (j <= i) {
        cov(i * (i + 1) / 2 + j, mr, mi);
      } else {
        cov(j * (j + 1) / 2 + i, mr, mi);
        mi = -mi;
      }
      re += mr * v[2 * j] - mi * v[2 * j + 1];
      im += mr * v[2 * j + 1] + mi * v[2 * j];
    }
    lambda += v[2 * i] * re + v[2 * i + 1] * im;  // Re(conj(v_i) (M v)_i)
  }
  return lambda;
}

/// The phase and crop rule of EspiritOps: v *= conj(p) / |p| with p = sum_c conj(ref_c) v_c (unchanged
/// when p = 0), then v = 0 where lambda < crop. ref: 2 C floats.
LARMOR_HD LARMOR_INLINE void espiritPhaseAndCrop(int C, float* v, const float* ref, float lambda, float crop) {
  float pr = 0.f, pi = 0.f;
  for (int c = 0; c < C; ++c) {
    pr += ref[2 * c] * v[2 * c] + ref[2 * c + 1] * v[2 * c + 1];
    pi += ref[2 * c] * v[2 * c + 1] - ref[2 * c + 1] * v[2 * c];
  }
  const float m = sqrtf(pr * pr + pi * pi);
  float cr = 1.f, ci = 0.f;
  if (m > 0.f) {
    cr = pr / m;
    ci = -pi / m;
  }
  const float keep = lambda >= crop ? 1.f : 0.f;
  for (int c = 0; c < C; ++c) {
    const float re = v[2 * c] * cr - v[2 * c + 1] * ci, im = v[2 * c] * ci + v[2 * c + 1] * cr;
    v[2 * c] = re * keep;
    v[2 * c + 1] = im * keep;
  }
}

/// Step 1 of ops/espirit.hpp: the calibration matrix's entry (row, col) is calibration sample
/// y_c(q + r) at the returned linear index of the box [b0, b1, b2, coils] (dimension 0 fastest): row is the
/// kernel position q (q0 fastest, over (b_d - k_d + 1) positions per dimension), col the kernel offset r
/// (r0 fastest) then the coil c.
LARMOR_HD LARMOR_INLINE long long espiritCalibrationSource(long long row, long long col, const long long box[3],
                                                          const long long kernel[3]) {
  const long long p0 = box[0] - kernel[0] + 1, p1 = box[1] - kernel[1] + 1;
  const long long q0 = row % p0, q1 = (row / p0) % p1, q2 = row / (p0 * p1);
  const long long r0 = col % kernel[0], r1 = (col / kernel[0]) % kernel[1];
  const long long r2 = (col / (kernel[0] * kernel[1])) % kernel[2], c = col / (kernel[0] * kernel[1] * kernel[2]);
  return (q0 + r0) + box[0] * ((q1 + r1) + box[1] * ((q2 + r2) + box[2] * c));
}

/// Step 3 of ops/espirit.hpp on the small grid: M's packed entry l = a (a + 1) / 2 + b (b <= a) at point x
/// (of S) is scale * sum_{i < kept} u_{a,i}(x) conj(u_{b,i}(x)), where u_{c,i}(x) is at u[x + S (c + C i)]
/// (interleaved re, im). Summed in double over i in order; re, im receive the entry.
LARMOR_HD LARMOR_INLINE void espiritSmallGridEntry(long long S, int C, long long kept, long long x, int a, int b,
                                                  double scale, const float* u, double& re, double& im) {
  double sr = 0.0, si = 0.0;
  for (long long i = 0; i < kept; ++i) {
    const float* ua = u + 2 * (x + S * (a + C * i));
    const float* ub = u + 2 * (x + S * (b + C * i));
    const double ar = ua[0], ai = ua[1], br = ub[0], bi = ub[1];
    sr += ar * br + ai * bi;  // u_a conj(u_b)
    si += ai * br - ar * bi;
  }
  re = scale * sr;
  im = scale * si;
}

/// Packed index l = a (a + 1) / 2 + b (b <= a) back to (a, b).
LARMOR_HD LARMOR_INLINE void espiritPackedPair(int l, int& a, int& b) {
  a = 0;
  while ((a + 1) * (a + 2) / 2 <= l) ++a;
  b = l - a * (a + 1) / 2;
}

}  // namespace larmor::kernels
