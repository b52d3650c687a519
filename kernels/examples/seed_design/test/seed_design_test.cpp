// The seed-design plugin (SEED_DESIGN_KERNEL) and its divide-by-BLOCK variant
// (SEED_DESIGN_VARIANT), call by call: the document's worked numbers, the exercise's
// predictions at N = 257 and 256, a double-precision loop over odd and even sizes, and the
// contract — invalid calls and unserved calls rejected before anything is written.
// Exits 77 (skipped) when the plugin's device is absent.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "normcheck/kernel.hpp"
#include "simt/runtime.hpp"  // the exact host fp16 conversions

namespace {

nc::kernel load_from(const char* variable) {
  const char* path = std::getenv(variable);
  if (path == nullptr || *path == '\0') throw std::runtime_error(std::string(variable) + " is not set");
  return nc::kernel::load(path);
}

const nc::kernel& correct() {
  static const nc::kernel k = load_from("SEED_DESIGN_KERNEL");
  return k;
}
const nc::kernel& variant() {
  static const nc::kernel k = load_from("SEED_DESIGN_VARIANT");
  return k;
}

// plugin memory holding host values of one dtype
class buffer {
 public:
  buffer(const nc::kernel& k, nc_dtype t, std::size_t count) : k_(k), t_(t), count_(count) {
    data_ = k.alloc(std::max<std::size_t>(bytes(), 16));
  }
  ~buffer() { k_.release(data_); }
  buffer(const buffer&) = delete;
  buffer& operator=(const buffer&) = delete;

  void* data() const { return data_; }
  std::size_t bytes() const { return count_ * (t_ == NC_F32 ? 4 : 2); }

  void set(const std::vector<double>& values) {
    std::vector<unsigned char> host(bytes());
    for (std::size_t i = 0; i < count_; ++i) {
      if (t_ == NC_F32) {
        const float f = static_cast<float>(values[i]);
        std::memcpy(host.data() + 4 * i, &f, 4);
      } else {
        const __half h = __float2half_rn(static_cast<float>(values[i]));
        std::memcpy(host.data() + 2 * i, &h, 2);
      }
    }
    k_.upload(data_, host.data(), bytes());
  }
  std::vector<double> get() const {
    std::vector<unsigned char> host(bytes());
    k_.download(host.data(), data_, bytes());
    std::vector<double> values(count_);
    for (std::size_t i = 0; i < count_; ++i) {
      if (t_ == NC_F32) {
        float f;
        std::memcpy(&f, host.data() + 4 * i, 4);
        values[i] = f;
      } else {
        __half h;
        std::memcpy(&h, host.data() + 2 * i, 2);
        values[i] = __half2float(h);
      }
    }
    return values;
  }
  // a NaN pattern in every byte: an output the call must overwrite, or must leave alone
  void poison() {
    const std::vector<unsigned char> host(bytes(), 0xff);
    k_.upload(data_, host.data(), bytes());
  }
  bool poisoned() const {
    std::vector<unsigned char> host(bytes());
    k_.download(host.data(), data_, bytes());
    for (unsigned char b : host)
      if (b != 0xff) return false;
    return true;
  }

 private:
  const nc::kernel& k_;
  nc_dtype t_;
  std::size_t count_;
  void* data_;
};

// one dense forward + backward pair and its results
struct call {
  std::int64_t m, n;
  nc_dtype type = NC_F32;
  float epsilon = 1e-6f;
  std::vector<double> x, gamma, dy;
  std::vector<double> y, r, dx, dgamma;

  void run(const nc::kernel& k) {
    buffer bx(k, type, m * n), bg(k, type, n), by(k, type, m * n), br(k, NC_F32, m);
    buffer bdy(k, type, m * n), bdx(k, type, m * n), bdg(k, type, n);
    bx.set(x), bg.set(gamma), bdy.set(dy);
    by.poison(), br.poison(), bdx.poison(), bdg.poison();
    const nc_forward_args f{m, n, epsilon, {bx.data(), type, 0, n, 1}, {bg.data(), type, 0, 1},
                            {by.data(), type, 0, n, 1}, {br.data(), NC_F32, 0, 1}, nullptr};
    k.forward(f);
    nc_backward_args b{m, n, f.x, f.gamma, {bdy.data(), type, 0, n, 1}, f.r, {bdx.data(), type, 0, n, 1},
                       {bdg.data(), type, 0, 1}, nullptr, 0, nullptr};
    b.workspace_bytes = k.workspace_size(b);
    EXPECT_EQ(b.workspace_bytes, static_cast<std::size_t>(m * n * 4)) << "the M×N fp32 partial table";
    void* workspace = k.alloc(std::max<std::size_t>(b.workspace_bytes, 16));
    b.workspace = workspace;
    k.backward(b);
    k.synchronize();
    k.release(workspace);
    y = by.get(), r = br.get(), dx = bdx.get(), dgamma = bdg.get();
  }
};

// the document's formulas in double
struct reference {
  std::vector<double> y, r, dx, dgamma;
  explicit reference(const call& c) : y(c.m * c.n), r(c.m), dx(c.m * c.n), dgamma(c.n, 0.0) {
    for (std::int64_t i = 0; i < c.m; ++i) {
      double squares = 0, dot = 0;
      for (std::int64_t j = 0; j < c.n; ++j) {
        squares += c.x[i * c.n + j] * c.x[i * c.n + j];
        dot += c.dy[i * c.n + j] * c.gamma[j] * c.x[i * c.n + j];
      }
      r[i] = 1 / std::sqrt(squares / c.n + c.epsilon);
      for (std::int64_t j = 0; j < c.n; ++j) {
        const double x = c.x[i * c.n + j], u = c.dy[i * c.n + j] * c.gamma[j];
        y[i * c.n + j] = x * r[i] * c.gamma[j];
        dx[i * c.n + j] = r[i] * u - x * r[i] * r[i] * r[i] * dot / c.n;
        dgamma[j] += c.dy[i * c.n + j] * x * r[i];
      }
    }
  }
};

// the document's tolerance rule, |value − ref| <= atol + rtol·|ref|, with its fixed table
void expect_close(const std::vector<double>& got, const std::vector<double>& want, nc_dtype t, const char* what) {
  const double atol = t == NC_F32 ? 1e-5 : 3e-3, rtol = t == NC_F32 ? 1e-4 : 3e-3;
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_LE(std::fabs(got[i] - want[i]), atol + rtol * std::fabs(want[i]))
        << what << "[" << i << "] = " << got[i] << ", reference " << want[i];
}

call ones(std::int64_t m, std::int64_t n) {
  call c{m, n};
  c.x.assign(m * n, 1.0), c.gamma.assign(n, 1.0), c.dy.assign(m * n, 1.0);
  return c;
}

TEST(seed_design, declares_the_documents_contract) {
  const nc_plugin& t = correct().table();
  EXPECT_EQ(t.abi_version, NORMCHECK_ABI_VERSION);
  ASSERT_NE(t.caps, nullptr);
  EXPECT_EQ(t.caps->dtype_pairs, NC_PAIR_F32 | NC_PAIR_F16);
  EXPECT_EQ(t.caps->layouts, 0u);
  EXPECT_EQ(t.caps->flags, 0u);
  EXPECT_EQ(t.caps->epsilon_count, 0u);
  EXPECT_EQ(t.caps->max_n, 4096);
  EXPECT_EQ(t.caps->max_elements, 4096 * 4096);
  EXPECT_EQ(correct().abi_version(), NORMCHECK_ABI_VERSION);
  EXPECT_EQ(std::string(variant().name()).find("divide-by-block") != std::string::npos, true) << variant().name();
}

TEST(seed_design, gives_the_worked_numbers) {
  call c{1, 2};
  c.x = {3, 4}, c.gamma = {1, 1}, c.dy = {1, 2};
  c.run(correct());
  EXPECT_NEAR(c.r[0], 0.282843, 1e-6);
  EXPECT_NEAR(c.y[0], 0.848528, 1e-6);
  EXPECT_NEAR(c.y[1], 1.131371, 1e-6);
  EXPECT_NEAR(c.dx[0], -0.090510, 1e-6);
  EXPECT_NEAR(c.dx[1], 0.067882, 1e-6);
  c.gamma = {2, 0.5};
  c.run(correct());
  EXPECT_NEAR(c.y[0], 1.697056, 1e-6);
  EXPECT_NEAR(c.y[1], 0.565685, 1e-6);
}

TEST(seed_design, dgamma_is_a_sum_over_rows_not_a_mean) {
  // x = [1, 1] gives r = 1/sqrt(1 + ε), so the contributions dy·x·r are dy itself to 1e-6
  call c{2, 2};
  c.x = {1, 1, 1, 1}, c.gamma = {1, 1}, c.dy = {1, 2, 3, 4};
  c.run(correct());
  EXPECT_NEAR(c.dgamma[0], 4, 1e-5);
  EXPECT_NEAR(c.dgamma[1], 6, 1e-5);
}

TEST(seed_design, a_row_of_257_ones_gives_0_9999995_and_dividing_by_block_gives_1_411458) {
  call good = ones(2, 257), bad = ones(2, 257);
  good.run(correct());
  bad.run(variant());
  for (double v : good.y) ASSERT_NEAR(v, 0.9999995, 1e-7);
  // BLOCK = 512: mean 257/512 = 0.501953125, 1/sqrt(0.501954125) = 1.411458
  for (double v : bad.y) ASSERT_NEAR(v, 1.411458, 1e-6);
  EXPECT_NEAR(bad.r[0], 1.411458, 1e-6);
}

TEST(seed_design, a_row_of_256_ones_hides_the_divide_by_block_bug) {
  call good = ones(2, 256), bad = ones(2, 256);
  good.run(correct());
  bad.run(variant());
  EXPECT_EQ(good.y, bad.y);
  EXPECT_EQ(good.r, bad.r);
  EXPECT_EQ(good.dx, bad.dx);
  EXPECT_EQ(good.dgamma, bad.dgamma);
}

TEST(seed_design, matches_a_double_loop_at_odd_and_even_sizes) {
  std::mt19937_64 rng(20261203);
  std::normal_distribution<double> normal(0, 1);
  for (nc_dtype t : {NC_F32, NC_F16})
    for (std::int64_t m : {1, 2, 17})
      for (std::int64_t n : {1, 2, 3, 31, 32, 33, 255, 256, 257, 1000, 4095, 4096}) {
        SCOPED_TRACE((t == NC_F32 ? "fp32 " : "fp16 ") + std::to_string(m) + "x" + std::to_string(n));
        call c{m, n, t};
        // values rounded to the dtype first, so the reference sees what the kernel sees
        auto draw = [&](double v) { return t == NC_F32 ? double(float(v)) : double(__half2float(__float2half_rn(float(v)))); };
        for (std::int64_t i = 0; i < m * n; ++i) c.x.push_back(draw(normal(rng))), c.dy.push_back(draw(normal(rng)));
        for (std::int64_t j = 0; j < n; ++j) c.gamma.push_back(draw(1 + 0.5 * normal(rng)));
        c.run(correct());
        const reference want(c);
        expect_close(c.y, want.y, t, "y");
        expect_close(c.r, want.r, NC_F32, "r");
        expect_close(c.dx, want.dx, t, "dx");
        // an fp16 dgamma of 17 rows: the tolerance of the result's own dtype
        expect_close(c.dgamma, want.dgamma, t, "dgamma");
      }
}

TEST(seed_design, zero_rows_give_a_zero_dgamma) {
  call c = ones(0, 5);
  c.run(correct());
  EXPECT_EQ(c.dgamma, std::vector<double>(5, 0.0));
}

// ---- the contract ----

// a forward of 3×8 fp32 over real buffers, every output poisoned
struct forward_fixture {
  const nc::kernel& k = correct();
  buffer x{k, NC_F32, 64}, gamma{k, NC_F32, 8}, y{k, NC_F32, 64}, r{k, NC_F32, 3};
  nc_forward_args args{3, 8, 1e-6f, {x.data(), NC_F32, 0, 8, 1}, {gamma.data(), NC_F32, 0, 1},
                       {y.data(), NC_F32, 0, 8, 1}, {r.data(), NC_F32, 0, 1}, nullptr};
  forward_fixture() { y.poison(), r.poison(); }

  void expect_rejected(nc_status status, const std::string& names) {
    EXPECT_EQ(k.table().forward(&args), status);
    const std::string message = k.table().last_error();
    EXPECT_NE(message.find("'" + names), std::string::npos) << message;
    EXPECT_TRUE(y.poisoned() && r.poisoned()) << "a rejected call wrote an output";
  }
};

TEST(seed_design, an_invalid_call_is_rejected_naming_the_argument) {
  {
    forward_fixture f;
    f.args.x.row_stride = 5;  // rows of 8 elements overlap
    f.expect_rejected(NC_ERR_INVALID_ARGUMENT, "x.row_stride' = 5: must be");
  }
  {
    forward_fixture f;
    f.args.n = 0;
    f.expect_rejected(NC_ERR_INVALID_ARGUMENT, "n' = 0");
  }
  {
    forward_fixture f;
    f.args.epsilon = NAN;
    f.expect_rejected(NC_ERR_INVALID_ARGUMENT, "epsilon'");
  }
  {
    forward_fixture f;
    f.args.y.data = f.args.x.data;
    f.expect_rejected(NC_ERR_INVALID_ARGUMENT, "y' overlaps argument 'x'");
  }
  {
    // invalid before unsupported: a bf16 y under an fp32 x breaks the contract
    forward_fixture f;
    f.args.y.dtype = NC_BF16;
    f.expect_rejected(NC_ERR_INVALID_ARGUMENT, "y'");
  }
}

TEST(seed_design, a_valid_call_it_does_not_serve_is_unsupported) {
  {
    forward_fixture f;
    f.args.x.dtype = f.args.y.dtype = f.args.gamma.dtype = NC_BF16;
    f.expect_rejected(NC_ERR_UNSUPPORTED, "x' has dtype bf16");
  }
  {
    forward_fixture f;
    f.args.x.dtype = f.args.y.dtype = NC_F16;  // gamma stays fp32: valid, not the document's
    f.expect_rejected(NC_ERR_UNSUPPORTED, "gamma'");
  }
  {
    forward_fixture f;
    f.args.m = 2, f.args.x.row_stride = 16;  // padded rows: valid, not dense
    f.expect_rejected(NC_ERR_UNSUPPORTED, "x.row_stride' = 16");
  }
  {
    forward_fixture f;
    f.args.m = 1, f.args.n = 8, f.args.y.col_stride = 2;  // y's 8 entries over 16 slots
    f.args.y.row_stride = 64;
    f.args.x.row_stride = 8;
    f.expect_rejected(NC_ERR_UNSUPPORTED, "y.col_stride' = 2");
  }
}

// a backward over addresses that are never touched: the rules run on the arguments alone
nc_backward_args untouched_backward(std::int64_t m, std::int64_t n) {
  auto at = [](std::uintptr_t terabyte) { return reinterpret_cast<void*>(terabyte << 40); };
  nc_backward_args b{m, n, {at(1), NC_F32, 0, n, 1}, {at(2), NC_F32, 0, 1}, {at(3), NC_F32, 0, n, 1},
                     {at(4), NC_F32, 0, 1}, {at(5), NC_F32, 0, n, 1}, {at(6), NC_F32, 0, 1}, at(7), 0, nullptr};
  b.workspace_bytes = static_cast<std::size_t>(m * n * 4);
  return b;
}

TEST(seed_design, rows_longer_than_4096_and_tables_over_64_mib_are_unsupported) {
  const nc_plugin& t = correct().table();
  nc_backward_args b = untouched_backward(2, 4097);
  EXPECT_EQ(t.backward(&b), NC_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(t.last_error()).find("'n' = 4097"), std::string::npos) << t.last_error();

  b = untouched_backward(4097, 4096);  // 4097·4096·4 bytes: 16 KiB past 64 MiB
  EXPECT_EQ(t.backward(&b), NC_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(t.last_error()).find("'m' = 4097"), std::string::npos) << t.last_error();

  b = untouched_backward(4096, 4096);
  b.workspace_bytes -= 1;
  EXPECT_EQ(t.backward(&b), NC_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(t.last_error()).find("'workspace_bytes'"), std::string::npos) << t.last_error();

  nc_forward_args f{2, 4097, 1e-6f, b.x, b.gamma, b.dx, b.dgamma, nullptr};
  f.x.row_stride = f.y.row_stride = 4097;
  EXPECT_EQ(t.forward(&f), NC_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(t.last_error()).find("'n' = 4097"), std::string::npos) << t.last_error();
}

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  if (!correct().available()) {
    std::printf("the plugin's device is absent: %s\n", correct().table().last_error());
    return 77;
  }
  return RUN_ALL_TESTS();
}
