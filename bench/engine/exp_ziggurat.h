/* Exponential random numbers (rate 1) by the ziggurat method of Marsaglia and Tsang ("The
 * ziggurat method for generating random variables", J. Stat. Software 5(8), 2000), in the form
 * of Doornik ("An improved ziggurat method to generate normal random samples", 2005), which
 * takes the strip index and the uniform from separate bits of one 64-bit draw.
 *
 * The density exp(-x) is covered by 256 strips of equal area V: strip i spans [0, X[i]) in x
 * and [exp(-X[i]), exp(-X[i+1])] in height, X[1] = R > X[2] > ... > X[256] = 0; strip 0 is the
 * rectangle under exp(-R) plus the tail beyond R, of width X[0] = V / exp(-R). A draw picks a
 * strip i and x = U X[i]; when x < X[i+1] (99% of draws) it lies under the density and is
 * returned. Otherwise it is returned with probability (exp(-x) - exp(-X[i])) / (exp(-X[i+1]) -
 * exp(-X[i])) (the wedge), and from strip 0 the tail is R - log(U), the exponential beyond R
 * (memorylessness). Every accepted x is therefore exactly exponentially distributed, up to the
 * rounding of the tables and of the 52-bit uniform; it is exact, not an approximation of the
 * inverse transform -log(U). R and V are Marsaglia and Tsang's constants for 256 strips.
 *
 * Header only: the hold-model benchmark draws its increments with it, and
 * tests/engine/test_exp_ziggurat.c checks its mean, variance and quantiles. */
#ifndef DTSIM_EXP_ZIGGURAT_H
#define DTSIM_EXP_ZIGGURAT_H

#include <math.h>
#include <stdint.h>

#define ZIG_EXP_R 7.69711747013104972
#define ZIG_EXP_V 3.949659822581572e-3

typedef struct {
  double x[257];   /* strip widths, x[0] = V / exp(-R), x[1] = R, ..., x[256] = 0 */
  double f[257];   /* exp(-x[i]) */
  uint64_t state;  /* xorshift64* */
} zig_exp;

static inline void zig_exp_init(zig_exp *z, uint64_t seed)
{
  z->x[0] = ZIG_EXP_V / exp(-ZIG_EXP_R);
  z->x[1] = ZIG_EXP_R;
  for (int i = 1; i < 255; i++)
    z->x[i + 1] = -log(ZIG_EXP_V / z->x[i] + exp(-z->x[i]));
  z->x[256] = 0.0;
  for (int i = 0; i < 257; i++)
    z->f[i] = exp(-z->x[i]);
  z->state = seed ? seed : 0x9E3779B97F4A7C15ULL;
}

/* 64 random bits (xorshift64*, Vigna 2016). */
static inline uint64_t zig_exp_bits(zig_exp *z)
{
  z->state ^= z->state >> 12;
  z->state ^= z->state << 25;
  z->state ^= z->state >> 27;
  return z->state * 2685821657736338717ULL;
}

/* A uniform in [0, 1) from the high 53 bits. */
static inline double zig_exp_uniform(zig_exp *z)
{
  return (double)(zig_exp_bits(z) >> 11) * 0x1.0p-53;
}

static inline double zig_exp_draw(zig_exp *z)
{
  for (;;) {
    uint64_t bits = zig_exp_bits(z);
    unsigned i = (unsigned)(bits >> 56);                                  /* top 8 bits */
    double u = (double)((bits >> 3) & ((UINT64_C(1) << 52) - 1)) * 0x1.0p-52; /* 52 below */
    double x = u * z->x[i];
    if (x < z->x[i + 1])
      return x;
    if (i == 0)
      return ZIG_EXP_R - log(1.0 - zig_exp_uniform(z));
    if (z->f[i + 1] + (z->f[i] - z->f[i + 1]) * zig_exp_uniform(z) < exp(-x))
      return x;
  }
}

#endif
