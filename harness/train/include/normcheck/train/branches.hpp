// The two RMSNorms the branches train with.
//
// Both take the network's fp32 x and dy rounded into the run's dtype (fp32, fp16 or bf16) and
// gamma in fp32 (the master weight: the (x dtype, fp32 gamma) pair of the kernel contract), and
// hand back y and dx rounded into the dtype, dgamma in fp32.
//  - reference_rmsnorm: the oracles' reference (oracles/reference.hpp) in double: the operands'
//    values as f64, y and dx rounded once into the dtype, so it is the ideal kernel.
//  - kernel_rmsnorm: the kernel under test (nc::kernel) on its own memory. Every call is judged
//    against the exact oracle (oracles/exact.hpp) on the operands it was given: an element whose
//    |kernel − exact| exceeds the oracle's bound is a violation (the verdict's allowance).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "normcheck/kernel.hpp"
#include "normcheck/oracles/problem.hpp"
#include "normcheck/train/network.hpp"

namespace nc::train {

/// "fp32", "fp16", "bf16" → the dtype; throws std::invalid_argument naming --dtype otherwise
oracle::dtype parse_dtype(const std::string& text);
std::string dtype_name(oracle::dtype type);

/// one element outside the oracle's bound (or a row outside its domain)
struct violation {
  std::string tensor;       ///< "y", "r", "dx", "dgamma"
  std::int64_t row = 0;     ///< the element: (row, column); r has column 0, dgamma row 0
  std::int64_t column = 0;
  double got = 0, exact = 0, bound = 0;
  std::string note;         ///< why there is no bound (out of the oracle's domain), else empty
  /// |got − exact| / bound
  double error_in_bounds() const;
};

/// the largest error of each tensor of one call, in units of the oracle's bound, and its first
/// violation
struct call_check {
  double y = 0, r = 0, dx = 0, dgamma = 0;
  std::optional<violation> first;
};

/// the oracles' double reference, as a branch's RMSNorm
class reference_rmsnorm : public rmsnorm {
 public:
  reference_rmsnorm(oracle::dtype type, float epsilon) : type_(type), epsilon_(epsilon) {}
  void forward(call_kind kind, std::int64_t m, std::int64_t n, const float* x, const float* gamma, float* y) override;
  void backward(const float* dy, float* dx, float* dgamma) override;

 private:
  oracle::dtype type_;
  float epsilon_;
  std::int64_t m_ = 0, n_ = 0;
  std::vector<double> x_, gamma_;  // the last train forward's operands, as the backward needs them
};

/// the kernel under test, as a branch's RMSNorm
class kernel_rmsnorm : public rmsnorm {
 public:
  kernel_rmsnorm(const nc::kernel& k, oracle::dtype type, float epsilon);
  ~kernel_rmsnorm() override;
  kernel_rmsnorm(const kernel_rmsnorm&) = delete;
  kernel_rmsnorm& operator=(const kernel_rmsnorm&) = delete;

  void forward(call_kind kind, std::int64_t m, std::int64_t n, const float* x, const float* gamma, float* y) override;
  void backward(const float* dy, float* dx, float* dgamma) override;

  /// the calls made: forwards of training steps, their backwards, forwards of evaluations
  std::int64_t train_forwards = 0, backwards = 0, evaluate_forwards = 0;
  /// the judgement of the last forward (y, r) and of the last backward (dx, dgamma)
  call_check last_forward, last_backward;
  /// the exact y of the last forward and its bound (row-major), for the step-0 cross-check
  const std::vector<double>& exact_y() const { return exact_y_; }
  const std::vector<double>& exact_y_bound() const { return exact_y_bound_; }

 private:
  // the plugin memory of one batch height: operands in the dtype, r and dgamma fp32
  struct buffers {
    void* x = nullptr;
    void* gamma = nullptr;
    void* y = nullptr;
    void* r = nullptr;
    void* dy = nullptr;
    void* dx = nullptr;
    void* dgamma = nullptr;
    void* workspace = nullptr;
    std::size_t workspace_bytes = 0;
  };
  buffers& buffers_for(std::int64_t m, std::int64_t n);
  nc_forward_args forward_args(const buffers& b) const;
  nc_backward_args backward_args(const buffers& b) const;

  nc::kernel kernel_;
  oracle::dtype type_;
  float epsilon_;
  std::int64_t m_ = 0, n_ = 0;
  std::map<std::int64_t, buffers> by_height_;
  // host copies of the last train forward's operands and r, in the plugin's element formats
  std::vector<unsigned char> x_host_, dy_host_, out_host_;
  std::vector<float> gamma_host_, r_host_;
  std::vector<double> exact_y_, exact_y_bound_;
};

}  // namespace nc::train
