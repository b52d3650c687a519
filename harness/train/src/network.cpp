// The network, the loss, Adam and the data, as plain loops.
#include "normcheck/train/network.hpp"

#include <cmath>
#include <numbers>
#include <stdexcept>

namespace nc::train {

parameters parameters::zeros(const shape& s) {
  parameters p;
  p.w1.assign(std::size_t(s.hidden) * s.inputs, 0.0f);
  p.b1.assign(std::size_t(s.hidden), 0.0f);
  p.gamma.assign(std::size_t(s.hidden), 0.0f);
  p.w2.assign(std::size_t(s.outputs) * s.hidden, 0.0f);
  p.b2.assign(std::size_t(s.outputs), 0.0f);
  return p;
}

std::vector<std::pair<std::string_view, std::vector<float>*>> parameters::tensors() {
  return {{"w1", &w1}, {"b1", &b1}, {"gamma", &gamma}, {"w2", &w2}, {"b2", &b2}};
}

std::vector<std::pair<std::string_view, const std::vector<float>*>> parameters::tensors() const {
  return {{"w1", &w1}, {"b1", &b1}, {"gamma", &gamma}, {"w2", &w2}, {"b2", &b2}};
}

random_stream::random_stream(std::uint64_t seed, std::uint64_t stream)
    : state_(seed * 0x9e3779b97f4a7c15ULL + stream * 0xd1b54a32d192ed03ULL + 1) {}

std::uint64_t random_stream::next() {
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double random_stream::uniform() { return double(next() >> 11) * 0x1.0p-53; }

double random_stream::normal() {
  // 1 − u keeps the logarithm's argument in (0, 1]
  const double u1 = 1.0 - uniform(), u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

namespace {

// the seeds' streams: each use of randomness draws from its own, so changing one (more test
// examples, say) leaves the others as they were
enum stream : std::uint64_t { weights_stream = 1, teacher_stream, train_stream, validation_stream, test_stream };

void fill_uniform(std::vector<float>& v, random_stream& rng, double bound) {
  for (float& x : v) x = float((2.0 * rng.uniform() - 1.0) * bound);
}

}  // namespace

parameters initial_parameters(const shape& s, std::uint64_t seed) {
  random_stream rng(seed, weights_stream);
  parameters p = parameters::zeros(s);
  fill_uniform(p.w1, rng, 1.0 / std::sqrt(double(s.inputs)));
  fill_uniform(p.b1, rng, 1.0 / std::sqrt(double(s.inputs)));
  fill_uniform(p.w2, rng, 1.0 / std::sqrt(double(s.hidden)));
  fill_uniform(p.b2, rng, 1.0 / std::sqrt(double(s.hidden)));
  p.gamma.assign(p.gamma.size(), 1.0f);
  return p;
}

splits synthetic_splits(const shape& s, std::uint64_t seed, int train_count, int validation_count, int test_count) {
  constexpr int teacher_width = 32;
  constexpr double noise = 0.5;
  random_stream teacher(seed, teacher_stream);
  std::vector<double> a(std::size_t(teacher_width) * s.inputs), b(std::size_t(s.outputs) * teacher_width);
  for (double& v : a) v = teacher.normal() / std::sqrt(double(s.inputs));
  for (double& v : b) v = teacher.normal();
  const auto draw = [&](int count, std::uint64_t stream_id) {
    random_stream rng(seed, stream_id);
    dataset d;
    d.count = count;
    d.inputs.resize(std::size_t(count) * s.inputs);
    d.targets.resize(std::size_t(count) * s.outputs);
    std::vector<double> hidden(teacher_width);
    for (int i = 0; i < count; ++i) {
      float* x = &d.inputs[std::size_t(i) * s.inputs];
      for (int j = 0; j < s.inputs; ++j) x[j] = float(rng.normal());
      for (int k = 0; k < teacher_width; ++k) {
        double sum = 0;
        for (int j = 0; j < s.inputs; ++j) sum += a[std::size_t(k) * s.inputs + j] * x[j];
        hidden[k] = std::tanh(sum);
      }
      for (int o = 0; o < s.outputs; ++o) {
        double sum = 0;
        for (int k = 0; k < teacher_width; ++k) sum += b[std::size_t(o) * teacher_width + k] * hidden[k];
        // Σ of 32 unit-normal weights times tanh values (mean square about 0.4) has variance about
        // 13; divided by sqrt(32) and doubled it is about 1.6, then the noise is added
        d.targets[std::size_t(i) * s.outputs + o] = float(sum / std::sqrt(double(teacher_width)) * 2.0 + noise * rng.normal());
      }
    }
    return d;
  };
  return {draw(train_count, train_stream), draw(validation_count, validation_stream), draw(test_count, test_stream)};
}

void linear(const float* in, int m, int in_width, const float* w, const float* b, int out_width, float* out) {
  for (int i = 0; i < m; ++i)
    for (int o = 0; o < out_width; ++o) {
      double sum = b[o];
      for (int j = 0; j < in_width; ++j) sum += double(in[std::size_t(i) * in_width + j]) * w[std::size_t(o) * in_width + j];
      out[std::size_t(i) * out_width + o] = float(sum);
    }
}

float silu(float z) { return float(double(z) / (1.0 + std::exp(-double(z)))); }

float silu_derivative(float z) {
  const double sigma = 1.0 / (1.0 + std::exp(-double(z)));
  return float(sigma * (1.0 + double(z) * (1.0 - sigma)));
}

double mse(const float* p, const float* t, std::size_t count) {
  double sum = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const double d = double(p[i]) - t[i];
    sum += d * d;
  }
  return count == 0 ? 0.0 : sum / double(count);
}

void forward_pass(const parameters& w, const shape& s, const float* inputs, int m, rmsnorm& norm, call_kind kind,
                  activations& act) {
  const std::size_t wide = std::size_t(m) * s.hidden;
  act.m = m;
  act.h.resize(wide);
  act.z.resize(wide);
  act.a.resize(wide);
  act.p.resize(std::size_t(m) * s.outputs);
  linear(inputs, m, s.inputs, w.w1.data(), w.b1.data(), s.hidden, act.h.data());
  norm.forward(kind, m, s.hidden, act.h.data(), w.gamma.data(), act.z.data());
  for (std::size_t k = 0; k < wide; ++k) act.a[k] = silu(act.z[k]);
  linear(act.a.data(), m, s.hidden, w.w2.data(), w.b2.data(), s.outputs, act.p.data());
}

void backward_pass(const parameters& w, const shape& s, const float* inputs, const float* targets,
                   const activations& act, rmsnorm& norm, parameters& grads, rmsnorm_gradients& ng) {
  const int m = act.m;
  const std::size_t wide = std::size_t(m) * s.hidden;
  // d loss / d p for the mean over m·outputs squared errors
  std::vector<float> dp(std::size_t(m) * s.outputs);
  const double scale = 2.0 / double(dp.size());
  for (std::size_t k = 0; k < dp.size(); ++k) dp[k] = float(scale * (double(act.p[k]) - targets[k]));

  // the second Linear: dW2 = dpᵀ·a, db2 = Σ_rows dp, da = dp·W2
  for (int o = 0; o < s.outputs; ++o) {
    double bias = 0;
    for (int i = 0; i < m; ++i) bias += dp[std::size_t(i) * s.outputs + o];
    grads.b2[o] = float(bias);
    for (int j = 0; j < s.hidden; ++j) {
      double sum = 0;
      for (int i = 0; i < m; ++i) sum += double(dp[std::size_t(i) * s.outputs + o]) * act.a[std::size_t(i) * s.hidden + j];
      grads.w2[std::size_t(o) * s.hidden + j] = float(sum);
    }
  }
  // SiLU: dz = da · silu'(z), formed in one rounding from da's double sum
  ng.dy.resize(wide);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < s.hidden; ++j) {
      double da = 0;
      for (int o = 0; o < s.outputs; ++o) da += double(dp[std::size_t(i) * s.outputs + o]) * w.w2[std::size_t(o) * s.hidden + j];
      const std::size_t k = std::size_t(i) * s.hidden + j;
      ng.dy[k] = float(da * silu_derivative(act.z[k]));
    }
  // RMSNorm: the branch's backward
  ng.dx.resize(wide);
  ng.dgamma.resize(std::size_t(s.hidden));
  norm.backward(ng.dy.data(), ng.dx.data(), ng.dgamma.data());
  grads.gamma = ng.dgamma;
  // the first Linear: dW1 = dxᵀ·inputs, db1 = Σ_rows dx
  for (int j = 0; j < s.hidden; ++j) {
    double bias = 0;
    for (int i = 0; i < m; ++i) bias += ng.dx[std::size_t(i) * s.hidden + j];
    grads.b1[j] = float(bias);
    for (int c = 0; c < s.inputs; ++c) {
      double sum = 0;
      for (int i = 0; i < m; ++i) sum += double(ng.dx[std::size_t(i) * s.hidden + j]) * inputs[std::size_t(i) * s.inputs + c];
      grads.w1[std::size_t(j) * s.inputs + c] = float(sum);
    }
  }
}

adam::adam(const shape& s, float lr, float beta1, float beta2, float eps)
    : lr(lr), beta1(beta1), beta2(beta2), eps(eps), m_(parameters::zeros(s)), v_(parameters::zeros(s)) {}

void adam::step(parameters& w, const parameters& grads) {
  ++t;
  const float bias1 = 1.0f - std::pow(beta1, float(t));
  const float bias2 = 1.0f - std::pow(beta2, float(t));
  auto weights = w.tensors();
  const auto gradients = grads.tensors();
  auto first = m_.tensors();
  auto second = v_.tensors();
  for (std::size_t k = 0; k < weights.size(); ++k) {
    std::vector<float>& theta = *weights[k].second;
    const std::vector<float>& g = *gradients[k].second;
    std::vector<float>& m = *first[k].second;
    std::vector<float>& v = *second[k].second;
    if (g.size() != theta.size()) throw std::logic_error("adam: gradient and weight of different sizes");
    for (std::size_t e = 0; e < theta.size(); ++e) {
      m[e] = beta1 * m[e] + (1.0f - beta1) * g[e];
      v[e] = beta2 * v[e] + (1.0f - beta2) * g[e] * g[e];
      const float m_hat = m[e] / bias1;
      const float v_hat = v[e] / bias2;
      theta[e] -= lr * m_hat / (std::sqrt(v_hat) + eps);
    }
  }
}

double evaluate(const parameters& w, const shape& s, const dataset& data, rmsnorm& norm) {
  activations act;
  forward_pass(w, s, data.inputs.data(), data.count, norm, call_kind::evaluate, act);
  return mse(act.p.data(), data.targets.data(), act.p.size());
}

}  // namespace nc::train
