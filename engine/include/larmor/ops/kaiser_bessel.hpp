#pragma once
// Kaiser-Bessel gridding kernel and its Fourier transform, shared by the CPU and CUDA NUFFTs (host and
// device code), so both deapodize identically (TRON's analytic deapodization).
//   kernel  C(u) = I0(beta sqrt(1 - (2u/W)^2)) for |u| <= W/2, u in oversampled-grid units (Jackson 1991)
//   FT      c(x) = int C(u) exp(-2 pi i u x) du = W sinh(sqrt(beta^2 - (pi W x)^2)) / sqrt(beta^2 - (pi W x)^2)
//           (sin/sqrt with the argument's sign flipped where pi W x > beta), x in cycles per grid point.
// beta: NufftOptions::beta() (Beatty et al. 2005).
#include <cmath>

#if defined(__CUDACC__)
#define LARMOR_HD __host__ __device__
#else
#define LARMOR_HD
#endif

namespace larmor::kb {

/// Modified Bessel function I0 by its power series (converges for the beta range used, < 40).
LARMOR_HD inline double besselI0(double x) {
  const double q = 0.25 * x * x;
  double term = 1.0, sum = 1.0;
  for (int k = 1; k < 64; ++k) {
    term *= q / (double(k) * double(k));
    sum += term;
    if (term < 1e-17 * sum) break;
  }
  return sum;
}

LARMOR_HD inline double kernel(double u, double width, double beta) {
  const double t = 2.0 * u / width;
  const double r = 1.0 - t * t;
  return r < 0.0 ? 0.0 : besselI0(beta * sqrt(r));
}

LARMOR_HD inline double transform(double x, double width, double beta) {
  const double a = M_PI * width * x;
  const double d = beta * beta - a * a;
  if (d > 1e-12) {
    const double s = sqrt(d);
    return width * sinh(s) / s;
  }
  if (d < -1e-12) {
    const double s = sqrt(-d);
    return width * sin(s) / s;
  }
  return width;
}

}  // namespace larmor::kb
