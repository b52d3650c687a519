// The training loop of both branches, the evaluations and the checkpoint round trip.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>

#include "normcheck/harness/report.hpp"
#include "normcheck/train/checkpoint.hpp"
#include "normcheck/train/train.hpp"

namespace nc::train {
namespace {

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0;
  for (std::size_t k = 0; k < a.size(); ++k) {
    const double d = std::fabs(double(a[k]) - double(b[k]));
    // a NaN on one side is as far apart as the branches can be
    if (std::isnan(d)) return std::numeric_limits<double>::infinity();
    worst = std::max(worst, d);
  }
  return worst;
}

bool bit_identical(const parameters& a, const parameters& b) {
  const auto ta = a.tensors(), tb = b.tensors();
  for (std::size_t k = 0; k < ta.size(); ++k)
    if (ta[k].second->size() != tb[k].second->size() ||
        std::memcmp(ta[k].second->data(), tb[k].second->data(), ta[k].second->size() * sizeof(float)) != 0)
      return false;
  return true;
}

double weights_apart(const parameters& a, const parameters& b, std::vector<double>* per_tensor) {
  const auto ta = a.tensors(), tb = b.tensors();
  double worst = 0;
  if (per_tensor) per_tensor->clear();
  for (std::size_t k = 0; k < ta.size(); ++k) {
    const double d = max_abs_diff(*ta[k].second, *tb[k].second);
    if (per_tensor) per_tensor->push_back(d);
    worst = std::max(worst, d);
  }
  return worst;
}

// the kernel's first violation, if this is the first one of the run
void note(train_result& r, const call_check& c, int step, const char* phase) {
  if (c.first && !r.first_divergence) r.first_divergence = divergence{step, phase, *c.first};
}

// a path inside the working folder is written relative to it, so reports of runs from the
// repository root name build/... rather than this machine's folders
std::string shown_path(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::weakly_canonical(path, ec);
  const std::filesystem::path here = std::filesystem::current_path(ec);
  if (ec) return path;
  const std::filesystem::path relative = absolute.lexically_relative(here);
  if (relative.empty() || *relative.begin() == "..") return path;
  return relative.string();
}


}  // namespace

train_result run_training(const nc::kernel& k, const train_options& o) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  train_result r;
  r.options = o;
  r.kernel_name = k.name();
  r.kernel_backend = k.backend();
  r.kernel_path = shown_path(k.path());
  r.started = harness::utc_now();

  const shape& s = o.widths;
  const splits data = synthetic_splits(s, o.seed, o.train_examples, o.validation_examples, o.test_examples);
  // both branches start from the same weights and see the same batches
  parameters w_ref = initial_parameters(s, o.seed), w_ker = w_ref;
  adam opt_ref(s, o.lr), opt_ker(s, o.lr);
  reference_rmsnorm norm_ref(o.type, o.epsilon);
  kernel_rmsnorm norm_ker(k, o.type, o.epsilon);
  parameters g_ref = parameters::zeros(s), g_ker = parameters::zeros(s);
  activations act_ref, act_ker;
  rmsnorm_gradients ng_ref, ng_ker;

  // the batches: consecutive slices of the training split, reshuffled (seeded) every epoch
  std::vector<int> order(std::size_t(o.train_examples));
  random_stream shuffle(o.seed, 100);
  std::size_t cursor = order.size();
  std::vector<float> inputs(std::size_t(o.batch) * s.inputs), targets(std::size_t(o.batch) * s.outputs);

  for (int step = 0; step < o.steps; ++step) {
    const auto step_start = clock::now();
    for (int i = 0; i < o.batch; ++i) {
      if (cursor == order.size()) {
        for (std::size_t e = 0; e < order.size(); ++e) order[e] = int(e);
        for (std::size_t e = order.size(); e > 1; --e) std::swap(order[e - 1], order[shuffle.next() % e]);
        cursor = 0;
      }
      const int example = order[cursor++];
      std::memcpy(&inputs[std::size_t(i) * s.inputs], &data.train.inputs[std::size_t(example) * s.inputs],
                  sizeof(float) * s.inputs);
      std::memcpy(&targets[std::size_t(i) * s.outputs], &data.train.targets[std::size_t(example) * s.outputs],
                  sizeof(float) * s.outputs);
    }
    step_record rec;
    rec.step = step;
    // the reference branch
    forward_pass(w_ref, s, inputs.data(), o.batch, norm_ref, call_kind::train, act_ref);
    rec.loss_reference = mse(act_ref.p.data(), targets.data(), act_ref.p.size());
    backward_pass(w_ref, s, inputs.data(), targets.data(), act_ref, norm_ref, g_ref, ng_ref);
    opt_ref.step(w_ref, g_ref);
    // the kernel branch; a call the kernel fails ends the training (its branch has no gradient)
    try {
      forward_pass(w_ker, s, inputs.data(), o.batch, norm_ker, call_kind::train, act_ker);
      note(r, norm_ker.last_forward, step, "training");
      rec.loss_kernel = mse(act_ker.p.data(), targets.data(), act_ker.p.size());
      backward_pass(w_ker, s, inputs.data(), targets.data(), act_ker, norm_ker, g_ker, ng_ker);
      note(r, norm_ker.last_backward, step, "training");
    } catch (const nc::contract_error& e) {
      r.kernel_failure = "step " + std::to_string(step) + ": the kernel rejected the call: " + e.what();
      break;
    } catch (const nc::kernel_error& e) {
      r.kernel_failure = "step " + std::to_string(step) + ": " + e.what();
      break;
    }
    opt_ker.step(w_ker, g_ker);

    if (step == 0) {
      // the oracles cross-checked: on the step-0 operands, identical in both branches, the
      // reference's y must lie within the exact oracle's bound too (else the harness is wrong)
      const std::vector<double>& e = norm_ker.exact_y();
      const std::vector<double>& b = norm_ker.exact_y_bound();
      for (std::size_t k = 0; k < e.size(); ++k) {
        const double d = std::fabs(double(act_ref.z[k]) - e[k]);
        const double units = d == 0 ? 0.0 : d / b[k];
        r.reference_y_error_step0 = std::max(r.reference_y_error_step0, std::isnan(units) ? INFINITY : units);
      }
      if (!(r.reference_y_error_step0 <= 1.0))
        throw std::runtime_error("the oracles disagree: the double reference's y at step 0 is " +
                                 std::to_string(r.reference_y_error_step0) + " exact-oracle bounds away");
    }
    rec.y_diff = max_abs_diff(act_ref.z, act_ker.z);
    rec.dgamma_diff = max_abs_diff(ng_ref.dgamma, ng_ker.dgamma);
    rec.dx_diff = max_abs_diff(ng_ref.dx, ng_ker.dx);
    rec.weight_diff = weights_apart(w_ref, w_ker, &rec.weight_diffs);
    rec.y_error = norm_ker.last_forward.y;
    rec.r_error = norm_ker.last_forward.r;
    rec.dx_error = norm_ker.last_backward.dx;
    rec.dgamma_error = norm_ker.last_backward.dgamma;
    rec.seconds = std::chrono::duration<double>(clock::now() - step_start).count();
    r.steps.push_back(rec);
    if (!o.quiet && ((step + 1) % 10 == 0 || step == 0 || step + 1 == o.steps)) {
      std::printf("step %3d/%d  loss reference %.6f kernel %.6f  apart: y %.2e dgamma %.2e dx %.2e weights %.2e  "
                  "kernel error (bounds): y %.3g dx %.3g dgamma %.3g\n",
                  step + 1, o.steps, rec.loss_reference, rec.loss_kernel, rec.y_diff, rec.dgamma_diff, rec.dx_diff,
                  rec.weight_diff, rec.y_error, rec.dx_error, rec.dgamma_error);
      std::fflush(stdout);
    }
  }

  r.train_forwards = norm_ker.train_forwards;
  r.backwards = norm_ker.backwards;
  r.counts_match = r.train_forwards == o.steps && r.backwards == o.steps;
  if (!r.kernel_failure.empty()) {
    r.evaluate_forwards = norm_ker.evaluate_forwards;
    r.seconds = std::chrono::duration<double>(clock::now() - start).count();
    return r;
  }

  // validation and test: one forward over each whole split
  try {
    r.validation_reference = evaluate(w_ref, s, data.validation, norm_ref);
    r.validation_kernel = evaluate(w_ker, s, data.validation, norm_ker);
    note(r, norm_ker.last_forward, -1, "validation");
    r.test_reference = evaluate(w_ref, s, data.test, norm_ref);
    r.test_kernel = evaluate(w_ker, s, data.test, norm_ker);
    note(r, norm_ker.last_forward, -1, "test");

    // save → reload → re-evaluate, both branches: the weights and the test MSE must come back
    // bit for bit (the kernel is deterministic, so the same weights give the same bits)
    if (!o.out_dir.empty()) {
      r.round_trip_done = true;
      r.checkpoint_kernel = (std::filesystem::path(o.out_dir) / "kernel.ckpt").string();
      r.checkpoint_reference = (std::filesystem::path(o.out_dir) / "reference.ckpt").string();
      const checkpoint_info info{s, o.type, std::uint64_t(o.steps), o.seed};
      save_checkpoint(r.checkpoint_kernel, w_ker, info);
      save_checkpoint(r.checkpoint_reference, w_ref, info);
      const parameters back_ker = load_checkpoint(r.checkpoint_kernel, s);
      const parameters back_ref = load_checkpoint(r.checkpoint_reference, s);
      r.test_kernel_reloaded = evaluate(back_ker, s, data.test, norm_ker);
      note(r, norm_ker.last_forward, -1, "test after reload");
      r.test_reference_reloaded = evaluate(back_ref, s, data.test, norm_ref);
      r.reload_weight_diff = std::max(weights_apart(back_ker, w_ker, nullptr), weights_apart(back_ref, w_ref, nullptr));
      r.reload_test_diff = std::max(std::fabs(r.test_kernel_reloaded - r.test_kernel),
                                    std::fabs(r.test_reference_reloaded - r.test_reference));
      r.reload_identical = bit_identical(back_ker, w_ker) && bit_identical(back_ref, w_ref) &&
                           std::memcmp(&r.test_kernel_reloaded, &r.test_kernel, sizeof(double)) == 0 &&
                           std::memcmp(&r.test_reference_reloaded, &r.test_reference, sizeof(double)) == 0;
    }
  } catch (const checkpoint_error&) {
    throw;  // our own file came back unreadable: a harness failure
  } catch (const nc::contract_error& e) {
    r.kernel_failure = std::string("evaluation: ") + e.what();
  } catch (const nc::kernel_error& e) {
    r.kernel_failure = std::string("evaluation: ") + e.what();
  }
  r.evaluate_forwards = norm_ker.evaluate_forwards;
  r.seconds = std::chrono::duration<double>(clock::now() - start).count();
  return r;
}

}  // namespace nc::train
