// gradcheck: validates an analytic RMSNorm backward (dx and dgamma) against central finite
// differences of the exact forward, all in 50-digit arithmetic.
//
// Small cases (m·n ≤ full_jacobian_limit) compare the whole Jacobians ∂y/∂x and ∂y/∂γ, entry
// by entry, relative to the largest entry. Larger ones compare random projections vᵀ·J·u
// (PyTorch's fast mode), relative to the |·|-shadow Σ|v·(J·u)|. The step is h = 10^-17 in units
// of the row's own scale 1/r = sqrt(mean(x²) + ε): truncation (~h²) and rounding (~10^-50/h) both
// stay near 10^-33, far below the 10^-20 tolerance, while any wrong formula is off by far more.
#pragma once

#include <boost/multiprecision/cpp_bin_float.hpp>

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace nc::oracle {

/// the numbers the gradcheck computes in: 50 decimal digits
using gradcheck_real =
    boost::multiprecision::number<boost::multiprecision::cpp_bin_float<50>, boost::multiprecision::et_off>;

/// a backward under test: from row-major m×n x and dy, n gamma and ε, it writes dx (m×n) and dgamma (n)
using backward_formula = std::function<void(std::int64_t m, std::int64_t n, std::span<const gradcheck_real> x,
                                            std::span<const gradcheck_real> gamma,
                                            std::span<const gradcheck_real> dy, const gradcheck_real& epsilon,
                                            std::span<gradcheck_real> dx, std::span<gradcheck_real> dgamma)>;

/// the exact oracle's analytic backward (the formulas exact_backward_mp evaluates)
backward_formula exact_backward_formula();

/// the reference's manual_backward, evaluated at 50 digits instead of the argument dtype
backward_formula reference_backward_formula();

/// the document's backward with deliberate mistakes (every one false: the correct formula): the
/// gradcheck's negative controls, each of which it must catch
struct backward_mistakes {
  bool r_squared = false;            ///< r² in place of r³
  bool mean_over_block = false;      ///< mean(u·x) over BLOCK = the next power of two ≥ N
  bool dgamma_averaged = false;      ///< dgamma averaged over the rows instead of summed
  bool epsilon_dropped = false;      ///< r = 1/sqrt(mean(x²)) in the backward
  bool second_term_flipped = false;  ///< dx = r·u + x·r³·mean(u·x)
};
backward_formula mistaken_backward_formula(backward_mistakes wrong);

/// a correct formula agrees with the finite differences to this; a wrong one must miss by more
/// than gradcheck_caught (the truncation and rounding of the differences stay near 1e-33)
inline constexpr double gradcheck_tolerance = 1e-20;
inline constexpr double gradcheck_caught = 1e-6;

/// a case: shape, ε and values (any doubles; exact in 50 digits)
struct gradcheck_case {
  std::string name;
  std::int64_t m = 1;
  std::int64_t n = 1;
  double epsilon = 1e-6;
  std::vector<double> x;      ///< row-major m×n
  std::vector<double> gamma;  ///< n
  std::vector<double> dy;     ///< row-major m×n: the first projection's cotangent v (unused by the full Jacobian)
};

enum class gradcheck_mode { full_jacobian, projections };

struct gradcheck_options {
  std::int64_t full_jacobian_limit = 64;  ///< m·n at or below which the whole Jacobians are compared
  int projections = 3;                    ///< random vᵀ·J·u comparisons per case otherwise
  std::uint64_t seed = 1;                 ///< for the projections' random u, v, w
};

/// the worst relative disagreement of one case
struct gradcheck_report {
  std::string name;
  std::int64_t m = 0;
  std::int64_t n = 0;
  gradcheck_mode mode = gradcheck_mode::full_jacobian;
  double dx_disagreement = 0;
  double dgamma_disagreement = 0;

  double worst() const { return dx_disagreement > dgamma_disagreement ? dx_disagreement : dgamma_disagreement; }
};

/// formula's dx and dgamma against finite differences of the exact forward, on one case
gradcheck_report gradcheck(const gradcheck_case& c, const backward_formula& formula,
                           const gradcheck_options& options = {});

/// the standard cases: N = 1, 2, 3, 7, 16, 257, 1000; M = 1, 2, 3, 17; rows where ε dominates,
/// ε = 0, the document's [3, 4]; values from seed
std::vector<gradcheck_case> gradcheck_cases(std::uint64_t seed);

// ---- the variants (abi.h "Variants") ----
// A variant's forward has two outputs, y = rmsnorm(h)·(offset + γ) and residual_out = h, with
// h = x + residual; its backward takes the cotangents of both (dy, and g: the residual
// stream's gradient) and gives dx = d_residual and dgamma. The check is of the loss
// L = Σ dy·y + Σ g·h: its directional derivatives along x, the residual and γ, by central
// differences of the 50-digit forward, against the analytic gradient's inner products
// (unit directions for small cases, random ones beside them), relative to the |·| shadow.

/// a variant's backward under test: from x, residual (m×n, or empty without a residual add), γ,
/// dy and g (m×n, or empty), ε and the weight offset, it writes dx (= d_residual) and dgamma
using variant_backward_formula = std::function<void(
    std::int64_t m, std::int64_t n, std::span<const gradcheck_real> x, std::span<const gradcheck_real> residual,
    std::span<const gradcheck_real> gamma, std::span<const gradcheck_real> dy, std::span<const gradcheck_real> g,
    const gradcheck_real& epsilon, const gradcheck_real& weight_offset, std::span<gradcheck_real> dx,
    std::span<gradcheck_real> dgamma)>;

/// mistakes of the published classes, each the gradcheck must catch (every one false: the
/// exact oracle's variant backward, oracles/variant.hpp's formulas)
struct variant_mistakes {
  bool residual_gradient_dropped = false;  ///< dx = d_residual without g
  bool offset_dropped = false;             ///< u = dy·γ, not dy·(offset + γ)
  bool offset_in_dgamma = false;           ///< dgamma = Σ dy·ĥ·(offset + γ), as if it were dy·y's
  bool unsummed_h = false;                 ///< the backward normalizes x, not h = x + residual
};
variant_backward_formula variant_backward(variant_mistakes wrong = {});

/// the variant of a check: a residual add or not, the weight offset
struct variant_of_check {
  bool residual = false;
  double weight_offset = 0;
};

/// formula against the loss's finite differences on one case (its x, γ and dy; the residual
/// and g drawn from options.seed)
gradcheck_report variant_gradcheck(const gradcheck_case& c, const variant_of_check& variant,
                                   const variant_backward_formula& formula, const gradcheck_options& options = {});

}  // namespace nc::oracle
