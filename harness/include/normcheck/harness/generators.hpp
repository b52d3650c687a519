// The case generators: RapidCheck generators of norm_case biased to where RMSNorm kernels
// break, shrinking toward small, readable cases.
//
// Sizes. N comes from a list of sizes that catch bugs (1, 2, 3, 31, 32, 33, 2^k ± 1, 257,
// vector width ± 1, threads-per-block multiples ± 1, the vector-count thresholds where the
// shipped kernel switches path, ± one vector and ± 1) or uniformly; M from 0, 1, 2, 17, the
// H200's 132 SMs ± 1, the simt grid's 16 blocks / 64 warps ± 1, ... or uniformly; M·N stays
// within the profile's element budget (most cases 4096, some 64, a few 66,000: the simt
// backend emulates every GPU thread); a long-row class puts N past 4096, where the kernel's
// long-row paths are; a tall class (where a profile asks for it) draws 4096–16384 rows of a
// few columns, more rows than the cuda backward grid has slots. RapidCheck's size parameter is not used (its max_size
// stays at 100, see upstream issue #289): the profile sets the scale.
// Layouts. A layout plan per case (all contiguous; aligned but row-padded; one operand
// perturbed; every operand perturbed), then per operand: element offset 1–15 (breaking the
// 16-byte alignment), row padding 1–17, column stride 2–3, column-major storage.
// Values. Each row of x and dy (and gamma, one row) is of a kind drawn from the profile's
// mix — N(0,1), constant, one-hot, zeros, ±0, powers of two, a huge dynamic range, squares
// that overflow an fp16 sum, squares beyond fp32, subnormals, a grid whose sums are exact,
// rows with NaN/±Inf — built from bit patterns (RapidCheck's float generators give none of
// these, nor fp16/bf16). An element's value depends only on the operand's seed, its row and
// its column, so removing rows or columns while shrinking leaves the others unchanged.
// Shrinking order: the size class (toward tiny), the dtypes (toward fp32), N (toward smaller N
// with the same residue modulo 8, the widest vector width, so an aligned shape stays aligned
// and a ragged one ragged), M (toward 1), layouts (toward contiguous), ε (toward 1e-6), gamma's
// values, then the rows: removing halves, quarters, ... single rows of x and dy together (any
// rows, not only the last), then the values of x and of dy. Values shrink by: everything to
// ±1, everything to powers of two, halves/quarters/... to ±1, then (operands of at most 512
// elements) each element toward 0, ±1, a power of two, fewer mantissa bits.
#pragma once

#include <array>
#include <cstdint>
#include <ostream>
#include <utility>
#include <vector>

#include <rapidcheck.h>

#include "normcheck/harness/case.hpp"
#include "normcheck/kernel.hpp"

namespace nc::harness {

/// what a row of an operand holds
enum class row_kind : std::uint8_t {
  normal,               ///< N(0,1) rounded to the dtype
  ones,                 ///< every element 1
  near_one,             ///< 1 + N(0, 0.25), a typical gamma
  constant,             ///< one N(0,1) value repeated
  one_hot,              ///< zeros and one nonzero element
  zero,                 ///< every element +0
  signed_zero,          ///< +0 and -0 mixed with N(0,1) values
  powers_of_two,        ///< ±2^e, |e| ≤ 6
  wide_range,           ///< exponents spread over [-40, 40] (the format's range for fp16)
  sumsq_overflows_fp16, ///< |x| in [256, 65504]: Σx² overflows if accumulated in fp16
  sumsq_beyond_fp32,    ///< |x| in [2^64, 2^100]: x² overflows fp32 (outside the kernels' domain)
  subnormal,            ///< subnormals of the dtype
  grid,                 ///< multiples of 1/16 small enough that a sum of two is exact
  non_finite,           ///< N(0,1) with one to three elements NaN, +Inf or -Inf
};
constexpr std::size_t row_kind_count = 14;

/// relative weights of the row kinds, indexed by row_kind
using value_mix = std::array<int, row_kind_count>;

/// a mix of a single kind
value_mix only(row_kind kind);

/// what a property draws: the element budget, the value mixes, the ε choices
struct case_profile {
  std::int64_t tiny_elements = 64;     ///< M·N of the tiny size class: readable by eye
  std::int64_t small_elements = 4096;  ///< M·N of most cases
  std::int64_t large_elements = 66000; ///< M·N of the large size class
  int tiny_percent = 15;               ///< share of the tiny size class
  int large_percent = 8;               ///< share of the large size class
  int long_percent = 8;                ///< share of long rows (N > 4096, within large_elements)
  int empty_percent = 2;               ///< share of M = 0
  /// share of tall batches: M in [tall_rows, 4·tall_rows], N within tall_elements. More rows
  /// than a GPU's persistent backward grid has row slots (H200: thousands), so slots handle
  /// several rows and the grid's row loops run
  int tall_percent = 0;
  std::int64_t tall_rows = 4096;
  std::int64_t tall_elements = std::int64_t(1) << 16;
  std::int64_t min_rows = 0;           ///< M is at least this (when it is not 0)
  /// weights of the layout plans: all contiguous, aligned but row-padded, one operand
  /// perturbed, every operand perturbed
  std::array<int, 4> layout_plans = {40, 15, 30, 15};
  value_mix x, dy, gamma;
  /// (weight, ε) pairs; the first is where ε shrinks to
  std::vector<std::pair<int, float>> epsilons;
  /// the operation (abi.h "Variants"): false, the plain one; true, any the kernel declares
  /// (gen_operation), shrinking toward the plain one
  bool variants = false;
  /// with variants: quantized outputs too (abi.h "Variants"; forward only, y holds codes)
  bool quantized = false;
  /// the cases run the backward too: a residual add only under the rounded contract (the fp32
  /// sum is stored nowhere, so no backward can differentiate at it)
  bool backward = false;

  /// the differential mix: every value kind but the non-finite one, every ε
  static case_profile differential();
  /// the source document's kind of inputs: N(0,1) x and dy, gamma near 1, ε = 1e-6
  static case_profile document();
  /// values whose scaling by 2^k stays exact and in range; ε normal or 0
  static case_profile well_scaled();
  /// rows with NaN/±Inf among well-behaved rows
  static case_profile non_finite();
};

/// The part of the contract every generator draws inside: the kernel's declared capabilities
/// (kernel.hpp), narrowed from the command line (--epsilon). A campaign sets it while a
/// property runs (scoped_domain); outside one it is the whole contract. gen_case draws dtype
/// pairs, layouts, N, M·N and ε inside it (an operand whose drawn layout the kernel does not
/// serve is dense instead); the property-specific generators consult it too.
const capabilities& drawing_domain();

/// sets drawing_domain() for its lifetime (on this thread)
class scoped_domain {
 public:
  explicit scoped_domain(capabilities domain);
  ~scoped_domain();
  scoped_domain(const scoped_domain&) = delete;
  scoped_domain& operator=(const scoped_domain&) = delete;

 private:
  capabilities domain_;
  const capabilities* previous_;
};

/// an (x, gamma) dtype pair among the NC_PAIR_* bits of `among` that drawing_domain() serves
/// (the first such pair when it serves none of them: a property's `needs` keeps it from running)
rc::Gen<std::pair<nc_dtype, nc_dtype>> gen_served_pair(std::uint32_t among);

/// the generator of cases for a profile, inside drawing_domain()
rc::Gen<norm_case> gen_case(const case_profile& profile);

/// the operations a profile draws among: drawing_domain()'s (the plain one first, where the
/// shrinking goes), only the plain one for a profile without variants, only those whose
/// backward is judged for a backward profile; empty when the kernel declares none of them
std::vector<nc_operation> drawable_operations(const case_profile& profile);
/// an operation of drawable_operations(profile): the plain one in half the cases where it is
/// declared, the others alike (the plain one when there is none: a property whose `needs`
/// reads the same list does not run then)
rc::Gen<nc_operation> gen_operation(const case_profile& profile);
/// the heads and head views of a case whose operation has per-head rows (abi.h NC_ROWS_HEADS):
/// heads a divisor of M (shrinking toward 1), each 2-D operand's drawn row pitch laid out as
/// [tokens, heads, N], q of a fused qkv, a transposed [heads, tokens, N], padded tokens or heads
/// off 16 bytes in aligned tokens (a view the kernel's layouts do not serve is the dense one);
/// heads 1 for any other
void draw_heads(norm_case& c);
/// a residual add's operands for a case whose operation has one (residual: x's value mix,
/// residual_grad: dy's; their layouts x's, y's (residual's in place) and dy's); clears them
/// for any other
void draw_residual(norm_case& c, const case_profile& profile);
/// a quantized output's scale for a case whose operation has one: its layout (dense, offset,
/// padded rows, column-major per-group scales as DeepGEMM takes them) and a static scale's value
/// (1, a power of two, any normal value, or one so small that most codes saturate)
void draw_quantization(norm_case& c);
/// the N multiple an operation needs (a per-group quantization's group; else 1)
std::int64_t columns_multiple(const nc_operation& op);

/// values of one operand: rows × cols bit patterns of a dtype, each row of a kind of the mix
rc::Gen<std::vector<std::uint32_t>> gen_values(nc_dtype type, std::int64_t rows, std::int64_t cols,
                                               const value_mix& mix);

/// a column count for x's dtype, at most max_n: a listed size (interesting_columns) or
/// uniform; shrinks toward smaller counts with the same residue modulo 8. Inside
/// drawing_domain()'s N multiple and multiple (a per-group quantization's group) (gen_columns,
/// gen_long_columns: what every generator draws N with), or whatever the count (gen_any_*)
rc::Gen<std::int64_t> gen_columns(nc_dtype x_dtype, std::int64_t max_n, std::int64_t multiple = 1);
rc::Gen<std::int64_t> gen_any_columns(nc_dtype x_dtype, std::int64_t max_n);
/// a long row for x's dtype: in (4096, max_n], at or one vector past the vector counts where the
/// shipped kernel's long-row paths switch, or a uniform multiple of the vector width; shrinks
/// like gen_columns
rc::Gen<std::int64_t> gen_long_columns(nc_dtype x_dtype, std::int64_t max_n, std::int64_t multiple = 1);
rc::Gen<std::int64_t> gen_any_long_columns(nc_dtype x_dtype, std::int64_t max_n);

/// an index in [0, weights.size()) drawn by weight, shrinking toward 0
rc::Gen<std::size_t> gen_weighted_index(std::vector<int> weights);
/// an integer uniform in [lo, hi] whatever RapidCheck's size, shrinking toward target
rc::Gen<std::int64_t> gen_uniform(std::int64_t lo, std::int64_t hi, std::int64_t target);

/// a 64-bit seed that does not shrink
rc::Gen<std::uint64_t> gen_seed();

/// the column counts the generators favour for a dtype (exposed for the tests)
std::vector<std::int64_t> interesting_columns(nc_dtype x_dtype);

/// RapidCheck's printer for a counterexample
void showValue(const norm_case& c, std::ostream& out);

}  // namespace nc::harness
