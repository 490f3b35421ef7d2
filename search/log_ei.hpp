// log_ei.hpp — the acquisition functions of the gp sampler in log space, stable far in the
// tail (Ament et al. 2023, "Unexpected Improvements to Expected Improvement"): log expected
// improvement for minimisation and the log probability of feasibility of a constraint.
//
// With z = (best − μ)/σ, EI = σ·h(z), h(z) = φ(z) + zΦ(z). log h is computed as
//   z > −1:            log(φ(z) + zΦ(z))
//   −1/√ε < z ≤ −1:    −z²/2 − ½log 2π + log1mexp(log(erfcx(−z/√2)·|z|) + ½log(π/2))
//   z ≤ −1/√ε:         −z²/2 − ½log 2π − 2 log|z|
// so a candidate 40 standard deviations from improving still scores finitely and in order.
#pragma once

namespace dlsweep::search::gp {

/// erfcx(x) = exp(x²)·erfc(x), for x >= 0 without overflow.
double erfcx(double x);
/// log h(z) (see the file comment).
double log_h(double z);
/// log EI of a point with posterior mean `mean` and variance `var` below `best` (minimising).
double log_ei(double mean, double var, double best);
/// log Φ(z), finite for every finite z.
double log_ndtr(double z);
/// log P(f <= threshold) under N(mean, var): a constraint's log probability of feasibility.
double log_pof(double mean, double var, double threshold);

}  // namespace dlsweep::search::gp
