// The reference branch's RMSNorm (the oracles' double reference) and the kernel branch's (the
// plugin under test, judged call by call against the exact oracle).
#include "normcheck/train/branches.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "normcheck/harness/case.hpp"
#include "normcheck/oracles/exact.hpp"
#include "normcheck/oracles/reference.hpp"

namespace nc::train {

oracle::dtype parse_dtype(const std::string& text) {
  const std::optional<nc_dtype> type = nc::parse_dtype(text);
  if (!type) throw std::invalid_argument("--dtype '" + text + "': must be fp32, fp16 or bf16");
  return harness::oracle_type(*type);
}

std::string dtype_name(oracle::dtype type) { return std::string(oracle::name_of(type)); }

double violation::error_in_bounds() const {
  const double diff = std::fabs(got - exact);
  if (diff == 0) return 0;
  if (!(bound > 0)) return std::numeric_limits<double>::infinity();
  return std::isnan(diff) ? std::numeric_limits<double>::infinity() : diff / bound;
}

namespace {

// one element against the oracle: keeps the tensor's largest error in bounds and the call's first
// violation (an error above 1 bound, a NaN, or a row the oracle has no bound for)
void judge(const char* tensor, std::int64_t row, std::int64_t column, double got, double exact, double bound,
           const oracle::row_status& status, double& largest, std::optional<violation>& first) {
  violation v{tensor, row, column, got, exact, bound, ""};
  if (!status.in_domain()) v.note = std::string(oracle::describe(status.reason));
  const double e = v.note.empty() ? v.error_in_bounds() : std::numeric_limits<double>::infinity();
  if (e > largest || std::isnan(e)) largest = std::isnan(e) ? std::numeric_limits<double>::infinity() : e;
  if (!(e <= 1.0) && !first) first = v;
}

nc_dtype abi_dtype(oracle::dtype type) {
  switch (type) {
    case oracle::dtype::f16: return NC_F16;
    case oracle::dtype::bf16: return NC_BF16;
    default: return NC_F32;
  }
}

// fp32 values rounded into typed memory
void store_all(std::vector<unsigned char>& bytes, oracle::dtype type, const float* values, std::size_t count) {
  bytes.resize(count * oracle::size_of(type));
  for (std::size_t k = 0; k < count; ++k) oracle::store(bytes.data(), type, std::int64_t(k), values[k]);
}

}  // namespace

// ---- the reference branch ----

void reference_rmsnorm::forward(call_kind kind, std::int64_t m, std::int64_t n, const float* x, const float* gamma,
                                float* y) {
  // the operands as the kernel gets them (x rounded into the dtype), held as f64 so the
  // reference computes in double
  std::vector<double> xd(std::size_t(m * n)), gd(static_cast<std::size_t>(n));
  for (std::size_t k = 0; k < xd.size(); ++k) xd[k] = oracle::round_to(type_, x[k]);
  for (std::size_t k = 0; k < gd.size(); ++k) gd[k] = gamma[k];
  oracle::forward_problem p;
  p.m = m;
  p.n = n;
  p.epsilon = epsilon_;
  p.x = {xd.data(), oracle::dtype::f64, 0, n, 1};
  p.gamma = {gd.data(), oracle::dtype::f64, 0, 1};
  p.y_type = type_;  // y rounded once from double into the dtype
  const oracle::reference_forward_result r = oracle::reference_forward(p);
  for (std::size_t k = 0; k < r.y.size(); ++k) y[k] = float(r.y[k]);
  if (kind == call_kind::train) {
    m_ = m;
    n_ = n;
    x_ = std::move(xd);
    gamma_ = std::move(gd);
  }
}

void reference_rmsnorm::backward(const float* dy, float* dx, float* dgamma) {
  std::vector<double> dyd(x_.size());
  for (std::size_t k = 0; k < dyd.size(); ++k) dyd[k] = oracle::round_to(type_, dy[k]);
  oracle::backward_problem p;
  p.m = m_;
  p.n = n_;
  p.x = {x_.data(), oracle::dtype::f64, 0, n_, 1};
  p.gamma = {gamma_.data(), oracle::dtype::f64, 0, 1};
  p.dy = {dyd.data(), oracle::dtype::f64, 0, n_, 1};
  p.epsilon = epsilon_;
  p.dx_type = type_;
  p.dgamma_type = oracle::dtype::f32;  // gamma is an fp32 master weight
  const oracle::reference_backward_result r = oracle::reference_backward(p);
  for (std::size_t k = 0; k < r.dx.size(); ++k) dx[k] = float(r.dx[k]);
  for (std::size_t k = 0; k < r.dgamma.size(); ++k) dgamma[k] = float(r.dgamma[k]);
}

// ---- the kernel branch ----

kernel_rmsnorm::kernel_rmsnorm(const nc::kernel& k, oracle::dtype type, float epsilon)
    : kernel_(k), type_(type), epsilon_(epsilon) {}

kernel_rmsnorm::~kernel_rmsnorm() {
  for (auto& [height, b] : by_height_)
    for (void* p : {b.x, b.gamma, b.y, b.r, b.dy, b.dx, b.dgamma, b.workspace})
      if (p != nullptr) kernel_.release(p);
}

nc_forward_args kernel_rmsnorm::forward_args(const buffers& b) const {
  nc_forward_args a{};
  a.m = m_;
  a.n = n_;
  a.epsilon = epsilon_;
  a.x = {b.x, abi_dtype(type_), 0, n_, 1};
  a.gamma = {b.gamma, NC_F32, 0, 1};
  a.y = {b.y, abi_dtype(type_), 0, n_, 1};
  a.r = {b.r, NC_F32, 0, 1};
  a.stream = nullptr;
  return a;
}

nc_backward_args kernel_rmsnorm::backward_args(const buffers& b) const {
  nc_backward_args a{};
  a.m = m_;
  a.n = n_;
  a.x = {b.x, abi_dtype(type_), 0, n_, 1};
  a.gamma = {b.gamma, NC_F32, 0, 1};
  a.dy = {b.dy, abi_dtype(type_), 0, n_, 1};
  a.r = {b.r, NC_F32, 0, 1};
  a.dx = {b.dx, abi_dtype(type_), 0, n_, 1};
  a.dgamma = {b.dgamma, NC_F32, 0, 1};
  a.workspace = b.workspace;
  a.workspace_bytes = b.workspace_bytes;
  a.stream = nullptr;
  return a;
}

kernel_rmsnorm::buffers& kernel_rmsnorm::buffers_for(std::int64_t m, std::int64_t n) {
  // one set per batch height, allocated once: the training batches reuse theirs every step and
  // each evaluation split has its own (evaluations come after the last backward, so they never
  // overwrite an r a backward still needs)
  m_ = m;
  n_ = n;
  auto it = by_height_.find(m);
  if (it != by_height_.end()) return it->second;
  buffers& b = by_height_[m];
  const std::size_t wide = std::size_t(m * n) * oracle::size_of(type_);
  b.x = kernel_.alloc(wide);
  b.y = kernel_.alloc(wide);
  b.dy = kernel_.alloc(wide);
  b.dx = kernel_.alloc(wide);
  b.gamma = kernel_.alloc(std::size_t(n) * sizeof(float));
  b.dgamma = kernel_.alloc(std::size_t(n) * sizeof(float));
  b.r = kernel_.alloc(std::size_t(m) * sizeof(float));
  // the backward's dgamma partial table lives in memory the caller owns
  b.workspace_bytes = kernel_.workspace_size(backward_args(b));
  if (b.workspace_bytes > 0) b.workspace = kernel_.alloc(b.workspace_bytes);
  return b;
}

void kernel_rmsnorm::forward(call_kind kind, std::int64_t m, std::int64_t n, const float* x, const float* gamma,
                             float* y) {
  buffers& b = buffers_for(m, n);
  const std::size_t count = std::size_t(m * n);
  store_all(x_host_, type_, x, count);
  gamma_host_.assign(gamma, gamma + n);
  kernel_.upload(b.x, x_host_.data(), x_host_.size());
  kernel_.upload(b.gamma, gamma_host_.data(), gamma_host_.size() * sizeof(float));
  kernel_.forward(forward_args(b));
  if (kind == call_kind::train) ++train_forwards;
  else ++evaluate_forwards;
  out_host_.resize(x_host_.size());
  r_host_.resize(std::size_t(m));
  kernel_.download(out_host_.data(), b.y, out_host_.size());
  kernel_.download(r_host_.data(), b.r, r_host_.size() * sizeof(float));
  for (std::size_t k = 0; k < count; ++k) y[k] = float(oracle::load(out_host_.data(), type_, std::int64_t(k)));

  // the judgement: the exact y and r of these very operands, with the error any correct
  // fp32-accumulating kernel may make on them
  oracle::forward_problem p;
  p.m = m;
  p.n = n;
  p.epsilon = epsilon_;
  p.x = {x_host_.data(), type_, 0, n, 1};
  p.gamma = {gamma_host_.data(), oracle::dtype::f32, 0, 1};
  p.y_type = type_;
  const oracle::forward_result e = oracle::exact_forward(p);
  last_forward = {};
  for (std::int64_t i = 0; i < m; ++i) {
    judge("r", i, 0, r_host_[i], e.r[i], e.r_bound[i], e.rows[i], last_forward.r, last_forward.first);
    for (std::int64_t j = 0; j < n; ++j) {
      const std::size_t k = std::size_t(i * n + j);
      judge("y", i, j, y[k], e.y[k], e.y_bound[k], e.rows[i], last_forward.y, last_forward.first);
    }
  }
  exact_y_ = e.y;
  exact_y_bound_ = e.y_bound;
}

void kernel_rmsnorm::backward(const float* dy, float* dx, float* dgamma) {
  buffers& b = by_height_.at(m_);
  const std::size_t count = std::size_t(m_ * n_);
  store_all(dy_host_, type_, dy, count);
  // x, gamma and r are still in the buffers from this batch's forward
  kernel_.upload(b.dy, dy_host_.data(), dy_host_.size());
  kernel_.backward(backward_args(b));
  ++backwards;
  std::vector<float> dgamma_host(static_cast<std::size_t>(n_));
  kernel_.download(out_host_.data(), b.dx, dy_host_.size());
  kernel_.download(dgamma_host.data(), b.dgamma, dgamma_host.size() * sizeof(float));
  for (std::size_t k = 0; k < count; ++k) dx[k] = float(oracle::load(out_host_.data(), type_, std::int64_t(k)));
  for (std::int64_t j = 0; j < n_; ++j) dgamma[j] = dgamma_host[j];

  oracle::backward_problem p;
  p.m = m_;
  p.n = n_;
  p.x = {x_host_.data(), type_, 0, n_, 1};
  p.gamma = {gamma_host_.data(), oracle::dtype::f32, 0, 1};
  p.dy = {dy_host_.data(), type_, 0, n_, 1};
  p.epsilon = epsilon_;
  p.dx_type = type_;
  p.dgamma_type = oracle::dtype::f32;
  const oracle::backward_result e = oracle::exact_backward(p);
  last_backward = {};
  for (std::int64_t i = 0; i < m_; ++i)
    for (std::int64_t j = 0; j < n_; ++j) {
      const std::size_t k = std::size_t(i * n_ + j);
      judge("dx", i, j, dx[k], e.dx[k], e.dx_bound[k], e.rows[i], last_backward.dx, last_backward.first);
    }
  for (std::int64_t j = 0; j < n_; ++j)
    judge("dgamma", 0, j, dgamma[j], e.dgamma[j], e.dgamma_bound[j], e.columns[j], last_backward.dgamma,
          last_backward.first);
}

}  // namespace nc::train
