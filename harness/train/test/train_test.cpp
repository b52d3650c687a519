// Tests of the training integration: the network's pieces against hand values and finite
// differences, Adam against its formula, the two RMSNorms on the document's worked numbers, the
// checkpoint file (round trip, truncated, corrupted, foreign), and a short run on simt.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "normcheck/train/checkpoint.hpp"
#include "normcheck/train/train.hpp"

namespace nc::train {
namespace {

TEST(network, silu_has_its_known_values) {
  EXPECT_FLOAT_EQ(silu(0.0f), 0.0f);
  EXPECT_NEAR(silu(1.0f), 0.7310586f, 1e-7);
  EXPECT_NEAR(silu(-2.0f), -0.2384058f, 1e-7);
  EXPECT_FLOAT_EQ(silu_derivative(0.0f), 0.5f);
  // the derivative against a central difference
  for (float z : {-3.0f, -0.5f, 0.7f, 2.5f}) {
    const double h = 1e-3;
    const double fd = (double(silu(float(z + h))) - double(silu(float(z - h)))) / (2 * h);
    EXPECT_NEAR(silu_derivative(z), fd, 1e-4) << "z = " << z;
  }
}

TEST(network, linear_is_bias_plus_weight_times_input) {
  const float in[] = {1, 2, 3, 4, 5, 6};  // 2 rows of 3
  const float w[] = {1, 0, -1, 0.5f, 0.5f, 0.5f};  // 2 outputs
  const float b[] = {10, -1};
  float out[4];
  linear(in, 2, 3, w, b, 2, out);
  EXPECT_FLOAT_EQ(out[0], 10 + 1 - 3);
  EXPECT_FLOAT_EQ(out[1], -1 + 3);
  EXPECT_FLOAT_EQ(out[2], 10 + 4 - 6);
  EXPECT_FLOAT_EQ(out[3], -1 + 7.5f);
  const float p[] = {1, 2}, t[] = {0, 4};
  EXPECT_DOUBLE_EQ(mse(p, t, 2), 2.5);
}

TEST(reference_branch, gives_the_documents_worked_numbers) {
  reference_rmsnorm norm(oracle::dtype::f32, 1e-6f);
  const float x[] = {3, 4}, gamma[] = {1, 1}, dy[] = {1, 2};
  float y[2], dx[2], dgamma[2];
  norm.forward(call_kind::train, 1, 2, x, gamma, y);
  EXPECT_NEAR(y[0], 0.848528, 1e-6);
  EXPECT_NEAR(y[1], 1.131371, 1e-6);
  norm.backward(dy, dx, dgamma);
  EXPECT_NEAR(dx[0], -0.090510, 1e-6);
  EXPECT_NEAR(dx[1], 0.067882, 1e-6);
  // dgamma = dy·x·r per column, summed over the rows
  EXPECT_NEAR(dgamma[0], 1 * 3 * 0.2828427, 1e-6);
  EXPECT_NEAR(dgamma[1], 2 * 4 * 0.2828427, 1e-6);
}

TEST(kernel_branch, the_shipped_simt_kernel_gives_the_worked_numbers_within_bounds) {
  const nc::kernel k = nc::kernel::shipped("simt");
  kernel_rmsnorm norm(k, oracle::dtype::f32, 1e-6f);
  // two rows: the worked example and its double, so dgamma sums two rows
  const float x[] = {3, 4, 6, 8}, gamma[] = {1, 1}, dy[] = {1, 2, 1, 2};
  float y[4], dx[4], dgamma[2];
  norm.forward(call_kind::train, 2, 2, x, gamma, y);
  EXPECT_NEAR(y[0], 0.848528, 1e-6);
  EXPECT_NEAR(y[3], 1.131371, 1e-6);
  norm.backward(dy, dx, dgamma);
  EXPECT_NEAR(dx[0], -0.090510, 1e-6);
  EXPECT_NEAR(dgamma[0], 2 * 3 * 0.2828427, 1e-5);
  EXPECT_FALSE(norm.last_forward.first.has_value());
  EXPECT_FALSE(norm.last_backward.first.has_value());
  EXPECT_LE(norm.last_forward.y, 1.0);
  EXPECT_LE(norm.last_backward.dgamma, 1.0);
  EXPECT_EQ(norm.train_forwards, 1);
  EXPECT_EQ(norm.backwards, 1);
}

// the loss as a function of one weight, for the finite-difference check
double loss_of(const parameters& w, const shape& s, const dataset& d, int m) {
  reference_rmsnorm norm(oracle::dtype::f32, 1e-6f);
  activations act;
  forward_pass(w, s, d.inputs.data(), m, norm, call_kind::evaluate, act);
  return mse(act.p.data(), d.targets.data(), act.p.size());
}

TEST(network, backward_pass_matches_central_differences_of_the_loss) {
  const shape s{5, 9, 3};
  const splits data = synthetic_splits(s, 7, 6, 1, 1);
  const parameters w = initial_parameters(s, 7);
  reference_rmsnorm norm(oracle::dtype::f32, 1e-6f);
  activations act;
  forward_pass(w, s, data.train.inputs.data(), 6, norm, call_kind::train, act);
  parameters g = parameters::zeros(s);
  rmsnorm_gradients ng;
  backward_pass(w, s, data.train.inputs.data(), data.train.targets.data(), act, norm, g, ng);
  auto weights = w.tensors();
  auto grads = g.tensors();
  for (std::size_t t = 0; t < weights.size(); ++t) {
    const std::vector<float>& values = *weights[t].second;
    for (std::size_t e = 0; e < values.size(); e += 7) {
      // fp32 weights: a step of 1e-2 keeps the difference well above the loss's rounding
      const float h = 1e-2f;
      parameters plus = w, minus = w;
      (*plus.tensors()[t].second)[e] += h;
      (*minus.tensors()[t].second)[e] -= h;
      const double fd = (loss_of(plus, s, data.train, 6) - loss_of(minus, s, data.train, 6)) / (2.0 * h);
      const double analytic = (*grads[t].second)[e];
      EXPECT_NEAR(analytic, fd, 2e-3 + 2e-2 * std::fabs(fd)) << weights[t].first << "[" << e << "]";
    }
  }
}

TEST(adam, follows_its_formula_for_two_steps) {
  const shape s{1, 1, 1};
  parameters w = parameters::zeros(s), g = parameters::zeros(s);
  w.w1[0] = 1.0f;
  adam opt(s, 0.1f);
  g.w1[0] = 2.0f;
  opt.step(w, g);
  // step 1: m̂ = g, v̂ = g², so θ moves by lr·g/(|g| + ε) ≈ lr
  EXPECT_NEAR(w.w1[0], 1.0f - 0.1f * 2.0f / (2.0f + 1e-8f), 1e-7);
  g.w1[0] = -1.0f;
  opt.step(w, g);
  const double m = 0.9 * (0.1 * 2.0) + 0.1 * -1.0, v = 0.999 * (0.001 * 4.0) + 0.001 * 1.0;
  const double m_hat = m / (1 - 0.81), v_hat = v / (1 - 0.998001);
  EXPECT_NEAR(w.w1[0], 0.9 - 0.1 * m_hat / (std::sqrt(v_hat) + 1e-8), 1e-6);
  // a zero gradient leaves a weight where it is at the first step
  EXPECT_FLOAT_EQ(w.b1[0], 0.0f);
}

TEST(data, splits_and_weights_are_reproducible_from_the_seed) {
  const shape s{4, 7, 2};
  const splits a = synthetic_splits(s, 3, 10, 5, 5), b = synthetic_splits(s, 3, 10, 5, 5), c = synthetic_splits(s, 4, 10, 5, 5);
  EXPECT_EQ(a.train.inputs, b.train.inputs);
  EXPECT_EQ(a.test.targets, b.test.targets);
  EXPECT_NE(a.train.inputs, c.train.inputs);
  EXPECT_NE(a.train.inputs, a.test.inputs);
  EXPECT_EQ(initial_parameters(s, 3).w1, initial_parameters(s, 3).w1);
}

// ---- the checkpoint ----

class checkpoint_file : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = std::filesystem::temp_directory_path() /
          ("normcheck_train_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir);
    w = initial_parameters(s, 11);
    w.gamma[3] = -0.0f;  // a signed zero must come back as one
    info = {s, oracle::dtype::bf16, 100, 11};
    path = (dir / "model.ckpt").string();
    save_checkpoint(path, w, info);
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    bytes = text.str();
  }
  void TearDown() override { std::filesystem::remove_all(dir); }

  void write(const std::string& name, const std::string& content) {
    std::ofstream out(dir / name, std::ios::binary);
    out << content;
  }
  // the load must fail with a message holding `expected`, and change nothing it was given
  void expect_rejected(const std::string& name, const std::string& expected) {
    const std::string before = read(name);
    parameters target = w;
    try {
      target = load_checkpoint((dir / name).string(), s);
      ADD_FAILURE() << name << " loaded";
    } catch (const checkpoint_error& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << "the message names the file: " << e.what();
    }
    EXPECT_EQ(target.w1, w.w1);
    EXPECT_EQ(read(name), before) << "the rejected file itself is unchanged";
  }
  std::string read(const std::string& name) {
    std::ifstream in(dir / name, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }

  const shape s{6, 13, 3};
  std::filesystem::path dir;
  parameters w;
  checkpoint_info info;
  std::string path, bytes;
};

TEST_F(checkpoint_file, round_trips_every_weight_bit_for_bit) {
  checkpoint_info back_info;
  const parameters back = load_checkpoint(path, s, &back_info);
  const parameters& cw = w;
  const auto a = cw.tensors(), b = back.tensors();
  for (std::size_t t = 0; t < a.size(); ++t) {
    ASSERT_EQ(a[t].second->size(), b[t].second->size());
    EXPECT_EQ(std::memcmp(a[t].second->data(), b[t].second->data(), a[t].second->size() * 4), 0) << a[t].first;
  }
  EXPECT_TRUE(std::signbit(back.gamma[3]));
  EXPECT_EQ(back_info.type, oracle::dtype::bf16);
  EXPECT_EQ(back_info.steps, 100u);
  EXPECT_EQ(back_info.seed, 11u);
  // the documented layout: magic, version 1, then the widths
  EXPECT_EQ(bytes.substr(0, 8), std::string("NCTRAIN\n"));
  EXPECT_EQ(bytes[8], 1);
  EXPECT_EQ(bytes[16], 13);
  EXPECT_FALSE(std::filesystem::exists(path + ".partial"));
}

TEST_F(checkpoint_file, a_truncated_file_is_rejected) {
  for (std::size_t length : {std::size_t(0), std::size_t(5), std::size_t(30), std::size_t(60), bytes.size() / 2,
                             bytes.size() - 1}) {
    write("short.ckpt", bytes.substr(0, length));
    expect_rejected("short.ckpt", "truncated");
  }
}

TEST_F(checkpoint_file, a_flipped_byte_is_rejected_as_corrupted) {
  for (std::size_t at : {std::size_t(20), std::size_t(50), bytes.size() / 2, bytes.size() - 9, bytes.size() - 1}) {
    std::string bad = bytes;
    bad[at] ^= 0x10;
    write("flipped.ckpt", bad);
    expect_rejected("flipped.ckpt", "corrupted");
  }
}

TEST_F(checkpoint_file, a_foreign_file_another_version_or_another_shape_is_rejected) {
  write("foreign.ckpt", "PK\x03\x04 this is a zip file, not a checkpoint at all........................");
  expect_rejected("foreign.ckpt", "not a normcheck train checkpoint");
  std::string newer = bytes;
  newer[8] = 2;
  write("newer.ckpt", newer);
  expect_rejected("newer.ckpt", "format version 2");
  const shape other{6, 14, 3};
  save_checkpoint((dir / "other.ckpt").string(), initial_parameters(other, 1), {other, oracle::dtype::f32, 1, 1});
  expect_rejected("other.ckpt", "6→14→3");
  write("extra.ckpt", bytes + "x");
  expect_rejected("extra.ckpt", "corrupted");
  EXPECT_THROW(load_checkpoint((dir / "absent.ckpt").string(), s), checkpoint_error);
}

TEST_F(checkpoint_file, saving_replaces_the_old_file_only_when_complete) {
  parameters changed = w;
  changed.b2[0] += 1.0f;
  save_checkpoint(path, changed, info);
  EXPECT_EQ(load_checkpoint(path, s).b2[0], changed.b2[0]);
  // a save into a folder that does not exist fails and leaves nothing behind
  EXPECT_THROW(save_checkpoint((dir / "absent" / "x.ckpt").string(), w, info), std::runtime_error);
  EXPECT_EQ(load_checkpoint(path, s).b2[0], changed.b2[0]);
}

// ---- a short run ----

TEST(training, a_short_run_on_simt_agrees_counts_its_calls_and_round_trips) {
  const auto dir = std::filesystem::temp_directory_path() / "normcheck_train_test_run";
  std::filesystem::create_directories(dir);
  train_options o;
  o.steps = 6;
  o.batch = 8;
  o.widths.hidden = 33;
  o.train_examples = 32;
  o.validation_examples = 16;
  o.test_examples = 16;
  o.out_dir = dir.string();
  o.quiet = true;
  const train_result r = run_training(nc::kernel::shipped("simt"), o);
  EXPECT_TRUE(r.agree()) << to_markdown(r);
  EXPECT_EQ(r.train_forwards, 6);
  EXPECT_EQ(r.backwards, 6);
  EXPECT_EQ(r.evaluate_forwards, 3);
  EXPECT_TRUE(r.reload_identical);
  EXPECT_EQ(r.reload_weight_diff, 0.0);
  ASSERT_EQ(r.steps.size(), 6u);
  EXPECT_LE(r.steps[0].y_diff, 1e-6);
  EXPECT_LE(r.reference_y_error_step0, 1.0);
  // the outputs parse and hold every step
  const std::string json = to_json(r), svg = to_svg(r);
  EXPECT_NE(json.find("\"verdict\": \"agree\""), std::string::npos);
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  std::size_t polylines = 0;
  for (std::size_t at = svg.find("<polyline"); at != std::string::npos; at = svg.find("<polyline", at + 1)) ++polylines;
  EXPECT_EQ(polylines, 10u);
  std::filesystem::remove_all(dir);
}

TEST(training, fp16_and_bf16_keep_fp32_master_weights_and_agree_on_simt) {
  for (oracle::dtype t : {oracle::dtype::f16, oracle::dtype::bf16}) {
    train_options o;
    o.type = t;
    o.steps = 3;
    o.batch = 4;
    o.widths.hidden = 17;
    o.train_examples = 16;
    o.validation_examples = 8;
    o.test_examples = 8;
    o.quiet = true;
    const train_result r = run_training(nc::kernel::shipped("simt"), o);
    EXPECT_TRUE(r.agree()) << dtype_name(t) << "\n" << to_markdown(r);
  }
}

}  // namespace
}  // namespace nc::train
