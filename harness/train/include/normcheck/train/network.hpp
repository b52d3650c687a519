// The document's small network, written out: Linear → RMSNorm → SiLU → Linear, the MSE loss
// and Adam, on synthetic data. Host loops in fp32 (dot products accumulate in double and round
// once, so the host part adds as little rounding as it can and RMSNorm's differences stand out).
// RMSNorm is whatever a branch plugs in (class rmsnorm): the oracles' reference or a kernel.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace nc::train {

/// the layer widths: inputs → hidden (RMSNorm's N) → outputs
struct shape {
  int inputs = 16;
  int hidden = 257;
  int outputs = 4;
};

/// The trainable tensors, fp32 (the master weights whatever dtype RMSNorm runs in). Row-major,
/// laid out as PyTorch's nn.Linear stores them: weight[out][in].
struct parameters {
  std::vector<float> w1;     ///< hidden × inputs
  std::vector<float> b1;     ///< hidden
  std::vector<float> gamma;  ///< hidden: RMSNorm's scale
  std::vector<float> w2;     ///< outputs × hidden
  std::vector<float> b2;     ///< outputs

  /// zeros of the network's shape (gradients, Adam's moments)
  static parameters zeros(const shape& s);
  /// the tensors with their names, in checkpoint order
  std::vector<std::pair<std::string_view, std::vector<float>*>> tensors();
  std::vector<std::pair<std::string_view, const std::vector<float>*>> tensors() const;
};

/// A seeded stream of random numbers (splitmix64). Written out rather than std::normal_distribution,
/// whose values the C++ standard leaves to each library: the same seed gives the same data and
/// weights with any compiler.
class random_stream {
 public:
  random_stream(std::uint64_t seed, std::uint64_t stream);
  std::uint64_t next();
  double uniform();  ///< in [0, 1)
  double normal();   ///< standard normal (Box–Muller)

 private:
  std::uint64_t state_;
};

/// PyTorch's default initialization: weights and biases uniform in ±1/sqrt(fan_in), gamma ones
parameters initial_parameters(const shape& s, std::uint64_t seed);

/// examples: count rows of inputs and of targets
struct dataset {
  int count = 0;
  std::vector<float> inputs;   ///< count × shape.inputs
  std::vector<float> targets;  ///< count × shape.outputs
};

struct splits {
  dataset train, validation, test;
};

/// Synthetic regression data: targets of a fixed random teacher (a tanh layer of 32 units) plus
/// Gaussian noise of standard deviation 0.5, so a perfect model's MSE is 0.25. The three splits
/// are drawn independently from the same distribution.
splits synthetic_splits(const shape& s, std::uint64_t seed, int train_count, int validation_count, int test_count);

/// what the network sees of RMSNorm
enum class call_kind { train, evaluate };

/// RMSNorm as a branch computes it. The network hands it fp32 activations and gradients; the
/// branch rounds them into its dtype, computes, and hands the results back as fp32 values.
class rmsnorm {
 public:
  virtual ~rmsnorm() = default;
  /// y = x · r · gamma, r = 1/sqrt(mean(x²) + ε), for m rows of n; a call_kind::train forward
  /// is followed by backward() on the same operands
  virtual void forward(call_kind kind, std::int64_t m, std::int64_t n, const float* x, const float* gamma,
                       float* y) = 0;
  /// dx and dgamma of the last train forward for the upstream gradient dy
  virtual void backward(const float* dy, float* dx, float* dgamma) = 0;
};

/// the activations of one forward pass over m examples
struct activations {
  int m = 0;
  std::vector<float> h;  ///< m × hidden: the first Linear's output, RMSNorm's x
  std::vector<float> z;  ///< m × hidden: RMSNorm's y
  std::vector<float> a;  ///< m × hidden: SiLU(z)
  std::vector<float> p;  ///< m × outputs: the predictions
};

/// out[i][o] = b[o] + Σ_j in[i][j] · w[o][j] (PyTorch's Linear), for m rows
void linear(const float* in, int m, int in_width, const float* w, const float* b, int out_width, float* out);
float silu(float z);
/// d silu / d z = σ(z) · (1 + z · (1 − σ(z)))
float silu_derivative(float z);
/// mean over every element of (p − t)², as nn.MSELoss(reduction="mean")
double mse(const float* p, const float* t, std::size_t count);

/// the whole forward pass; the loss is mse(act.p, targets)
void forward_pass(const parameters& w, const shape& s, const float* inputs, int m, rmsnorm& norm, call_kind kind,
                  activations& act);

/// what the backward pass hands RMSNorm's backward and gets from it (for the branch comparisons)
struct rmsnorm_gradients {
  std::vector<float> dy;      ///< m × hidden: the gradient reaching RMSNorm's output
  std::vector<float> dx;      ///< m × hidden: the gradient RMSNorm sends to x
  std::vector<float> dgamma;  ///< hidden: the gradient reaching gamma
};

/// gradients of the MSE loss of the last train forward_pass with respect to every parameter
void backward_pass(const parameters& w, const shape& s, const float* inputs, const float* targets,
                   const activations& act, rmsnorm& norm, parameters& grads, rmsnorm_gradients& norm_grads);

/// Adam (Kingma & Ba, as torch.optim.Adam with no weight decay): per element
///   m ← β1·m + (1−β1)·g,  v ← β2·v + (1−β2)·g²,  θ ← θ − lr · (m/(1−β1^t)) / (sqrt(v/(1−β2^t)) + ε)
/// in fp32, t counting from 1.
class adam {
 public:
  explicit adam(const shape& s, float lr = 1e-3f, float beta1 = 0.9f, float beta2 = 0.999f, float eps = 1e-8f);
  void step(parameters& w, const parameters& grads);
  float lr, beta1, beta2, eps;
  int t = 0;

 private:
  parameters m_, v_;
};

/// the MSE of the network over a whole split, one forward of every example (call_kind::evaluate)
double evaluate(const parameters& w, const shape& s, const dataset& data, rmsnorm& norm);

}  // namespace nc::train
