// The shipped kernels against the exact oracle, on the backend named by
// NORMCHECK_TEST_BACKEND: the document's worked numbers, odd and even sizes, every
// dtype pair, strided and offset views, and one test per rejection rule. Every call runs in
// the harness's testbed (harness/arena.hpp: one arena, guard bands, stride-gap NaNs, poisoned
// outputs, frozen inputs) and is judged by the properties' judges, so kernel_test and the
// properties share one memory rule and one verdict.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <tuple>

#include "normcheck/harness/execute.hpp"
#include "normcheck/harness/failure.hpp"
#include "normcheck/harness/property.hpp"
#include "normcheck/kernel.hpp"

namespace nc::test {
namespace {

using harness::value_of;

// the backend under test: NORMCHECK_TEST_BACKEND, set per registered test
const kernel& plugin() {
  static const kernel k = [] {
    const char* b = std::getenv("NORMCHECK_TEST_BACKEND");
    const char* path = std::getenv("NORMCHECK_TEST_PLUGIN");
    return path && *path ? kernel::load(path) : kernel::shipped(b && *b ? b : "simt");
  }();
  return k;
}

struct dtypes {
  nc_dtype x, gamma;
};

std::string name_of(nc_dtype t) { return harness::dtype_name(t); }

// a matrix operand's view, as the tests write it: padding after each row instead of a stride
struct layout {
  std::int64_t offset = 0, row_pad = 0, col_stride = 1;
  harness::matrix_layout of(std::int64_t n) const { return {offset, (n - 1) * col_stride + 1 + row_pad, col_stride}; }
};

// one call through forward and backward, everything in the harness's arena (execute())
struct run {
  std::int64_t m, n;
  dtypes types;
  layout lx, ly;  // lx: x and dy; ly: y and dx
  float eps = 1e-6f;

  std::vector<double> x, g, dy;  // exactly representable in their dtypes
  std::vector<double> y, r, dx, dgamma;
  std::string forward_path, backward_path;
  harness::norm_case ran;    // the case as executed
  harness::outputs written;  // its outputs as bits

  void fill(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    auto rounded = [&](nc_dtype t, float v) { return value_of(t, harness::bits_of(t, v)); };
    x.resize(m * n), dy.resize(m * n), g.resize(n);
    for (auto& v : x) v = rounded(types.x, normal(rng));
    for (auto& v : dy) v = rounded(types.x, normal(rng));
    for (auto& v : g) v = rounded(types.gamma, 1.0f + 0.5f * normal(rng));
  }

  harness::norm_case to_case() const {
    harness::norm_case c;
    c.m = m, c.n = n, c.x_dtype = types.x, c.gamma_dtype = types.gamma, c.epsilon = eps;
    c.layout = harness::contiguous_layouts(n);
    c.layout.x = c.layout.dy = lx.of(n);
    c.layout.y = c.layout.dx = ly.of(n);
    for (double v : x) c.x.push_back(harness::bits_of(types.x, v));
    for (double v : dy) c.dy.push_back(harness::bits_of(types.x, v));
    for (double v : g) c.gamma.push_back(harness::bits_of(types.gamma, v));
    return c;
  }

  void execute() {
    ran = to_case();
    try {
      written = harness::execute(plugin(), ran, harness::calls::forward_and_backward);
    } catch (const harness::property_failure& e) {
      FAIL() << e.what();  // a memory violation: a guard band, a gap, an input or an unwritten output
    }
    forward_path = written.forward_path, backward_path = written.backward_path;
    const auto decoded = [](nc_dtype t, const std::vector<std::uint32_t>& bits) {
      std::vector<double> v;
      for (std::uint32_t b : bits) v.push_back(value_of(t, b));
      return v;
    };
    y = decoded(types.x, written.y), dx = decoded(types.x, written.dx);
    r = decoded(NC_F32, written.r), dgamma = decoded(types.gamma, written.dgamma);
  }
};

// the properties' judges (property::judge) on what the call pair wrote: the exact oracle's
// per-element bound, and the fixed table where every correct kernel meets it, for y and r, dx
// and dgamma, the verdict every property, fuzz target and the bench reach
void check_against_reference(run& c) {
  if (::testing::Test::HasFatalFailure()) return;
  for (const char* name : {"y_and_r_match_the_exact_oracle", "dx_matches_the_exact_oracle", "dgamma_matches_the_exact_oracle"}) {
    const harness::property* p = harness::find_property(name);
    ASSERT_NE(p, nullptr) << "no property named " << name;
    harness::observation o;
    try {
      p->judge(plugin(), c.ran, c.written, o);
    } catch (const harness::property_failure& e) {
      ADD_FAILURE() << name << ": " << e.summary() << "\n" << harness::format_mismatches(e.first());
    }
  }
}

const dtypes all_dtypes[] = {{NC_F32, NC_F32}, {NC_F16, NC_F16}, {NC_F16, NC_F32}, {NC_BF16, NC_BF16},
                             {NC_BF16, NC_F32}};

TEST(worked_numbers, forward_of_three_four_matches_the_document) {
  run c{1, 2, {NC_F32, NC_F32}, {}, {}};
  c.x = {3, 4}, c.g = {1, 1}, c.dy = {1, 2};
  c.execute();
  EXPECT_NEAR(c.y[0], 0.848528, 5e-7);
  EXPECT_NEAR(c.y[1], 1.131371, 5e-7);
  EXPECT_NEAR(c.r[0], 0.282843, 5e-7);
  EXPECT_NEAR(c.dx[0], -0.090510, 5e-7);
  EXPECT_NEAR(c.dx[1], 0.067882, 5e-7);
}

TEST(worked_numbers, gamma_two_and_a_half_scales_the_output) {
  run c{1, 2, {NC_F32, NC_F32}, {}, {}};
  c.x = {3, 4}, c.g = {2, 0.5}, c.dy = {0, 0};
  c.execute();
  EXPECT_NEAR(c.y[0], 1.697056, 5e-7);
  EXPECT_NEAR(c.y[1], 0.565685, 5e-7);
}

TEST(worked_numbers, dgamma_is_the_sum_over_rows_not_the_mean) {
  // x rows of ones give r ~ 1, so dy's rows are the per-row contributions [[1,2],[3,4]]
  run c{2, 2, {NC_F32, NC_F32}, {}, {}, 0.0f};
  c.x = {1, 1, 1, 1}, c.g = {1, 1}, c.dy = {1, 2, 3, 4};
  c.execute();
  EXPECT_DOUBLE_EQ(c.dgamma[0], 4.0);
  EXPECT_DOUBLE_EQ(c.dgamma[1], 6.0);
}

TEST(worked_numbers, a_row_of_257_ones_divides_by_n_not_by_the_block) {
  for (std::int64_t n : {257, 256}) {
    run c{1, n, {NC_F32, NC_F32}, {}, {}};
    c.x.assign(n, 1.0), c.g.assign(n, 1.0), c.dy.assign(n, 1.0);
    c.execute();
    for (double v : c.y) ASSERT_NEAR(v, 0.9999995, 1e-7) << "n = " << n;
  }
}

// sizes x rows x dtype pairs x layouts (0 contiguous, 1 offset and padded rows, 2 column
// strides); M*N stays within 4 million elements so the simt backend stays fast, which
// leaves out 300 x 65536 only
class sizes : public ::testing::TestWithParam<std::tuple<std::int64_t, std::int64_t, int>> {};

TEST_P(sizes, every_dtype_pair_matches_the_exact_oracle) {
  const auto [n, m, layout_kind] = GetParam();
  for (const dtypes& t : all_dtypes) {
    SCOPED_TRACE("x " + name_of(t.x) + " gamma " + name_of(t.gamma));
    run c{m, n, t, {}, {}};
    if (layout_kind == 1) c.lx = {3, 5, 1}, c.ly = {1, 9, 1};  // offset and padded: breaks 16-byte alignment
    if (layout_kind == 2) c.lx = {2, 1, 2}, c.ly = {0, 0, 3};  // column strides
    c.fill(std::uint64_t(n * 1000 + m));
    c.execute();
    check_against_reference(c);
    if (layout_kind != 0) {
      EXPECT_EQ(c.forward_path.rfind("strided", 0), 0u) << c.forward_path;
      EXPECT_EQ(c.backward_path.rfind("strided", 0), 0u) << c.backward_path;
    }
  }
}

std::vector<std::tuple<std::int64_t, std::int64_t, int>> size_grid() {
  std::vector<std::tuple<std::int64_t, std::int64_t, int>> grid;
  for (std::int64_t n : {1, 2, 3, 255, 256, 257, 1000, 4097, 65536})
    for (std::int64_t m : {0, 1, 17, 300})
      for (int layout_kind : {0, 1, 2})
        if (m * n <= 4'000'000) grid.emplace_back(n, m, layout_kind);
  return grid;
}

INSTANTIATE_TEST_SUITE_P(kernels, sizes, ::testing::ValuesIn(size_grid()),
                         [](const auto& info) {
                           return "n" + std::to_string(std::get<0>(info.param)) + "_m" +
                                  std::to_string(std::get<1>(info.param)) + "_layout" +
                                  std::to_string(std::get<2>(info.param));
                         });

TEST(paths, aligned_contiguous_rows_take_every_vector_path) {
  std::set<std::string> forward, backward;
  for (std::int64_t n : {64, 1024, 2048, 4096, 16384, 40960}) {
    for (const dtypes& t : {dtypes{NC_F32, NC_F32}, dtypes{NC_BF16, NC_F32}}) {
      run c{3, n, t, {}, {}};
      c.fill(std::uint64_t(n));
      c.execute();
      check_against_reference(c);
      forward.insert(c.forward_path), backward.insert(c.backward_path);
    }
  }
  for (const char* p : {"vector-warp", "vector-block128", "vector-block512", "vector-block1024", "vector-reload"})
    EXPECT_TRUE(forward.count(p)) << "forward path " << p << " never taken";
  for (const char* p : {"vector-warp", "vector-block128", "vector-block256", "vector-block512", "strided-block"})
    EXPECT_TRUE(backward.count(p)) << "backward path " << p << " never taken";
}

TEST(determinism, two_runs_give_bit_identical_outputs) {
  run a{300, 1000, {NC_BF16, NC_F32}, {}, {}}, b = a;
  a.fill(7), b.fill(7);
  a.execute(), b.execute();
  EXPECT_EQ(a.y, b.y);
  EXPECT_EQ(a.dx, b.dx);
  EXPECT_EQ(a.dgamma, b.dgamma);
}

// ---- the contract: one test per rejection rule, nothing written ----

// a valid 4 x 8 fp32 call pair in the testbed's arena (execute.hpp's case_arena) with a 64 KiB
// workspace after the operands; each test breaks one argument
// rows: 4 makes a backward of one launch without workspace; with 300 (past the one-launch
// limit of rmsnorm_dispatch.cuh) it needs a partial table
struct contract_case {
  explicit contract_case(std::int64_t rows = 4) : m(rows) {
    a.backward.workspace_needed = std::size_t(1) << 16;
    a.memory.place_workspace(a.backward);
    f = harness::forward_args(a.forward, a.memory);
    b = harness::backward_args(a.backward, a.memory);
    a.memory.upload();
  }

  std::int64_t m, n = 8;
  harness::norm_case valid = [this] {
    harness::norm_case c;
    c.m = m, c.n = n, c.layout = harness::contiguous_layouts(n);
    c.x.assign(std::size_t(m * n), harness::bits_of(NC_F32, 1.5));
    c.dy.assign(std::size_t(m * n), harness::bits_of(NC_F32, -0.5));
    c.gamma.assign(std::size_t(n), harness::bits_of(NC_F32, 1.0));
    return c;
  }();
  harness::case_arena a{plugin(), valid};
  nc_forward_args f;
  nc_backward_args b;

  // rejected with a message holding `text`, and no byte of the arena (operands, gaps, guard
  // bands, the workspace) changed
  void expect_rejected(bool backward, const std::string& text) {
    a.memory.upload();
    try {
      if (backward) plugin().backward(b);
      else plugin().forward(f);
      plugin().synchronize();
      ADD_FAILURE() << "the call was accepted; expected a rejection mentioning: " << text;
    } catch (const contract_error& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << "message: " << e.what();
    }
    a.memory.download();
    const auto problem = a.memory.check(backward ? a.backward : a.forward, false);
    EXPECT_FALSE(problem) << *problem;
  }
};

TEST(contract, accepts_the_valid_base_call) {
  contract_case c;
  // every output element written, nothing else: inputs, gaps and guard bands as they were
  for (const harness::call_spec* call : {&c.a.forward, &c.a.backward}) {
    EXPECT_EQ(harness::run_call(plugin(), *call, c.a.memory).result, harness::call_result::accepted);
    const auto problem = c.a.memory.check(*call, true);
    EXPECT_FALSE(problem) << *problem;
  }
}

TEST(contract, rejects_an_unsupported_dtype) {
  contract_case c;
  c.f.x.dtype = nc_dtype(7);
  c.expect_rejected(false, "'x' has dtype code 7");
}

TEST(contract, rejects_y_in_another_dtype_than_x) {
  contract_case c;
  c.f.y.dtype = NC_BF16;
  c.expect_rejected(false, "'y' has dtype bf16: must be fp32");
}

TEST(contract, rejects_16_bit_gamma_with_fp32_x) {
  contract_case c;
  c.b.gamma.dtype = NC_F16, c.b.dgamma.dtype = NC_F16;
  c.expect_rejected(true, "'gamma' has dtype fp16 with x in fp32");
}

TEST(contract, rejects_dgamma_in_another_dtype_than_gamma) {
  contract_case c;
  c.b.dgamma.dtype = NC_BF16;
  c.expect_rejected(true, "'dgamma' has dtype bf16");
}

TEST(contract, rejects_r_that_is_not_fp32) {
  contract_case c;
  c.f.r.dtype = NC_F16;
  c.expect_rejected(false, "'r' has dtype fp16: must be fp32");
}

TEST(contract, rejects_zero_columns) {
  contract_case c;
  c.f.n = 0;
  c.expect_rejected(false, "'n' = 0: must be >= 1");
}

TEST(contract, rejects_negative_rows) {
  contract_case c;
  c.b.m = -1;
  c.expect_rejected(true, "'m' = -1: must be >= 0");
}

TEST(contract, rejects_a_row_stride_smaller_than_the_row) {
  contract_case c;
  c.f.x.row_stride = 7;
  c.expect_rejected(false, "'x' strides (row 7, col 1)");
}

TEST(contract, rejects_a_zero_column_stride) {
  contract_case c;
  c.b.dy.col_stride = 0;
  c.expect_rejected(true, "'dy.col_stride' = 0: must be >= 1");
}

TEST(contract, rejects_a_negative_offset) {
  contract_case c;
  c.f.gamma.offset = -2;
  c.expect_rejected(false, "'gamma.offset' = -2: must be >= 0");
}

TEST(contract, rejects_an_output_overlapping_an_input) {
  contract_case c;
  c.f.y.data = c.f.x.data;
  c.f.y.offset = 4;
  c.expect_rejected(false, "'y' overlaps argument 'x'");
}

TEST(contract, rejects_two_outputs_that_overlap) {
  contract_case c;
  c.b.dgamma.data = c.b.dx.data;
  c.expect_rejected(true, "'dx' overlaps argument 'dgamma'");
}

TEST(contract, rejects_the_workspace_overlapping_an_output) {
  contract_case c(300);
  c.b.workspace = c.b.dx.data;
  c.b.workspace_bytes = 1 << 16;
  c.expect_rejected(true, "overlaps argument 'workspace'");
}

TEST(contract, rejects_negative_nan_and_infinite_epsilon) {
  for (float e : {-1e-6f, NAN, INFINITY}) {
    contract_case c;
    c.f.epsilon = e;
    c.expect_rejected(false, "'epsilon' = ");
  }
}

TEST(contract, rejects_a_null_pointer_with_a_non_empty_extent) {
  contract_case c;
  c.f.x.data = nullptr;
  c.expect_rejected(false, "'x' is a null pointer");
}

TEST(contract, accepts_null_row_operands_when_m_is_zero) {
  contract_case c;
  c.b.m = 0;
  c.b.x.data = c.b.dy.data = c.b.dx.data = c.b.r.data = nullptr;
  c.b.workspace_bytes = plugin().workspace_size(c.b);
  EXPECT_NO_THROW(plugin().backward(c.b));
  plugin().synchronize();
  c.a.memory.download();
  for (std::int64_t j = 0; j < c.n; ++j)
    EXPECT_EQ(value_of(NC_F32, c.a.memory.get(c.a.backward, harness::op_dgamma, 0, j)), 0.0) << "dgamma of no rows";
}

TEST(contract, rejects_a_workspace_smaller_than_the_query) {
  contract_case c(300);
  const std::size_t need = plugin().workspace_size(c.b);
  ASSERT_GT(need, 0u);
  c.b.workspace_bytes = need - 1;
  c.expect_rejected(true, "'workspace_bytes' = " + std::to_string(need - 1) + ": must be >= " + std::to_string(need));
}

// A thread keeps the last layout it found valid (contract.hpp contract_memo): a call that differs
// from an accepted one in one field, early or late in the arguments, is checked again and
// rejected, and so is a backward whose workspace falls one byte short of the query
TEST(contract, a_call_beside_an_accepted_one_is_checked_again) {
  contract_case c(300);
  const nc_forward_args valid_forward = c.f;
  const auto accepted_then = [&](auto change, const std::string& text) {
    c.f = valid_forward;
    plugin().forward(c.f);
    plugin().forward(c.f);  // the same layout again: its verdict kept
    change(c.f);
    c.expect_rejected(false, text);
  };
  accepted_then([](nc_forward_args& f) { f.x.offset = -1; }, "'x.offset' = -1");
  accepted_then([](nc_forward_args& f) { f.epsilon = -1.0f; }, "'epsilon' = -1");
  accepted_then([](nc_forward_args& f) { f.op.residual = nc_residual(9); }, "'op.residual' = 9");

  const std::size_t need = plugin().workspace_size(c.b);
  ASSERT_GT(need, 0u);
  c.b.workspace_bytes = need;
  plugin().backward(c.b);
  plugin().backward(c.b);
  c.b.workspace_bytes = need - 1;
  c.expect_rejected(true, "'workspace_bytes' = " + std::to_string(need - 1));
}

// A thread keeps the last layout it found valid (contract.hpp contract_memo) and judges a call
// of that layout by the pointer rules alone: each of them still rejects such a call, and a call
// of the layout with other valid pointers is accepted
TEST(contract, a_held_layout_still_meets_every_pointer_rule) {
  contract_case c(300);
  const nc_forward_args valid_forward = c.f;
  const std::size_t need = plugin().workspace_size(c.b);
  ASSERT_GT(need, 0u);
  c.b.workspace_bytes = need;
  const nc_backward_args valid_backward = c.b;
  const auto forward_change = [&](auto change, const std::string& text) {
    c.f = valid_forward;
    EXPECT_NO_THROW(plugin().forward(c.f));
    change(c.f);
    c.expect_rejected(false, text);
  };
  const auto backward_change = [&](auto change, const std::string& text) {
    c.b = valid_backward;
    EXPECT_NO_THROW(plugin().backward(c.b));
    change(c.b);
    c.expect_rejected(true, text);
  };
  forward_change([](nc_forward_args& f) { f.x.data = nullptr; }, "'x' is a null pointer");
  forward_change([](nc_forward_args& f) { f.y.data = f.x.data; }, "'y' overlaps argument 'x'");
  forward_change([](nc_forward_args& f) { f.r.data = f.gamma.data; }, "'r' overlaps argument 'gamma'");
  backward_change([](nc_backward_args& b) { b.dgamma.data = b.dx.data; }, "'dx' overlaps argument 'dgamma'");
  backward_change([](nc_backward_args& b) { b.workspace = b.dx.data; }, "overlaps argument 'workspace'");
  backward_change([](nc_backward_args& b) { b.workspace = static_cast<char*>(b.workspace) + 8; }, "must be 16-byte aligned");
  backward_change([](nc_backward_args& b) { b.workspace = nullptr; }, "'workspace' is a null pointer");
  // the same layout with x and dy swapped: valid, and accepted
  c.b = valid_backward;
  std::swap(c.b.x.data, c.b.dy.data);
  EXPECT_NO_THROW(plugin().backward(c.b));
  plugin().synchronize();

  // in place (the residual is residual_out): forward rows of x into dx's memory, its own
  c.f = valid_forward;
  c.f.op.residual = NC_RESIDUAL_ROUNDED, c.f.op.in_place = 1;
  c.f.residual = c.f.residual_out = c.b.dx;
  const nc_forward_args in_place = c.f;
  EXPECT_NO_THROW(plugin().forward(c.f));
  c.f.residual_out.data = c.b.dy.data;
  c.expect_rejected(false, "'residual_out' is not the residual operand");
  c.f = in_place;
  EXPECT_NO_THROW(plugin().forward(c.f));
  plugin().synchronize();
}

TEST(contract, rejects_a_layout_that_overflows_64_bit_indexing) {
  contract_case c;
  c.f.x.row_stride = std::int64_t(1) << 62;
  c.expect_rejected(false, "'x' layout overflows 64-bit indexing");
}

// the last int64 index: the end of its element is past 64 bits (the checker once formed
// offset + 1 there, a signed overflow UBSan reports: regressions/contract_fuzzer-2026-12-07-d9ff1477)
TEST(contract, an_offset_at_the_last_64_bit_index_overflows) {
  contract_case c(1);  // r's one entry: its last index is the offset itself
  c.f.r.offset = std::numeric_limits<std::int64_t>::max();
  c.expect_rejected(false, "'r' layout overflows 64-bit indexing");
}

TEST(contract, the_workspace_is_at_most_blocks_times_n) {
  // never M x N: a million rows still need only a table of a few hundred rows
  contract_case c;
  c.b.m = 1 << 20;
  c.b.n = 4096;
  const std::size_t bytes = plugin().workspace_size(c.b);
  EXPECT_LE(bytes, std::size_t(4096) * 4 * 4096) << bytes;
  EXPECT_GT(bytes, 0u);
}

TEST(contract, a_partial_table_past_size_max_asks_for_size_max) {
  // no workspace can hold it, and the query must not wrap to a small size that one could
  contract_case c;
  c.b.m = 1 << 20;
  c.b.n = std::int64_t(1) << 61;
  EXPECT_EQ(plugin().workspace_size(c.b), SIZE_MAX);
}

TEST(contract, an_empty_backward_needs_no_workspace_whatever_n) {
  // M = 0 plans no partial table: the query and the call's own workspace rule both need 0
  // bytes, so a call broken elsewhere is rejected for what it breaks (found by the contract
  // fuzzer: the call demanded SIZE_MAX past N = 2^62 where the query answered 0)
  contract_case c;
  c.b.m = 0;
  c.b.n = std::numeric_limits<std::int64_t>::max();
  EXPECT_EQ(plugin().workspace_size(c.b), 0u);
  c.b.workspace_bytes = 0;
  c.expect_rejected(true, "'gamma'");
}

}  // namespace
}  // namespace nc::test

namespace nc::test {
namespace {

// row offsets past 2^31 elements: the 64-bit index arithmetic of every path. Needs
// about 18 GB of device memory, so only the cuda test runs it.
TEST(huge, rows_past_two_to_the_31_elements_are_addressed_in_64_bits) {
  run c{70'000, 8, {NC_BF16, NC_F32}, {0, 32'768 - 8, 1}, {0, 32'768 - 8, 1}};
  ASSERT_GT(c.m * c.lx.of(c.n).row_stride, std::int64_t(1) << 31);
  c.fill(31);
  c.execute();
  check_against_reference(c);
}

}  // namespace
}  // namespace nc::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const nc::kernel& k = nc::test::plugin();
  std::printf("kernel under test: %s (%s) from %s\n", k.name().c_str(), k.backend().c_str(), k.path().c_str());
  if (!k.available()) {
    std::printf("no device for the %s backend: skipped\n", k.backend().c_str());
    return 77;
  }
  return RUN_ALL_TESTS();
}
