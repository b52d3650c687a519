// `normcheck train`: the source document's training integration as a differential test.
//
// Two branches train the same network (network.hpp) from the same seeded weights on the same
// batches: the reference branch with the oracles' double reference as its RMSNorm, the kernel
// branch with the kernel under test. Every step records both losses and how far the branches
// are apart (max |Δ| of RMSNorm's y, of the gradients reaching gamma and x, of the weights after
// Adam's update), and judges the kernel's calls against the exact oracle's per-element bounds.
// Then validation and test MSE, the call counts, and a checkpoint save → reload → re-evaluate.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "normcheck/kernel.hpp"
#include "normcheck/oracles/dtype.hpp"
#include "normcheck/train/branches.hpp"
#include "normcheck/train/network.hpp"

namespace nc::train {

struct train_options {
  oracle::dtype type = oracle::dtype::f32;
  int steps = 100;
  int batch = 32;
  shape widths;  ///< hidden defaults to 257, the document's odd size
  std::uint64_t seed = 1;
  float epsilon = 1e-6f;
  float lr = 1e-3f;
  int train_examples = 2048;
  int validation_examples = 512;
  int test_examples = 512;
  std::string out_dir;  ///< where the checkpoints are written ("" : none, no round trip)
  bool quiet = false;   ///< no progress lines
};

/// one step of both branches
struct step_record {
  int step = 0;  ///< from 0
  double loss_reference = 0, loss_kernel = 0;
  // the branches apart: max |Δ| over every element
  double y_diff = 0;       ///< RMSNorm's output
  double dgamma_diff = 0;  ///< the gradient reaching gamma
  double dx_diff = 0;      ///< the gradient reaching x (RMSNorm's input)
  double weight_diff = 0;  ///< every weight after the update
  std::vector<double> weight_diffs;  ///< per tensor, in parameters::tensors() order
  // the kernel's calls of this step against the exact oracle, in units of its bound
  double y_error = 0, r_error = 0, dx_error = 0, dgamma_error = 0;
  double seconds = 0;  ///< wall time of the step, both branches and the judgement
};

/// where the kernel branch first left the oracle's allowance
struct divergence {
  int step = -1;      ///< the training step, or -1 for an evaluation
  std::string phase;  ///< "training", "validation", "test", "test after reload"
  violation v;
};

struct train_result {
  train_options options;
  std::string kernel_name, kernel_backend, kernel_path;
  std::string started;  ///< UTC
  std::vector<step_record> steps;
  double validation_reference = 0, validation_kernel = 0;
  double test_reference = 0, test_kernel = 0;
  std::int64_t train_forwards = 0, backwards = 0, evaluate_forwards = 0;
  bool counts_match = false;  ///< train_forwards == backwards == steps
  /// the step-0 cross-check of the oracles: the reference's y within the exact bound
  double reference_y_error_step0 = 0;
  // the round trip, per branch (kernel, reference): max |Δ| of the reloaded weights and of the
  // reloaded test MSE, and whether both are bit-identical
  bool round_trip_done = false;
  double reload_weight_diff = 0, reload_test_diff = 0;
  bool reload_identical = false;
  double test_kernel_reloaded = 0, test_reference_reloaded = 0;
  std::string checkpoint_kernel, checkpoint_reference;
  std::optional<divergence> first_divergence;
  std::string kernel_failure;  ///< a call the kernel failed or rejected (training stops there)
  double seconds = 0;

  /// the verdict: the branches agree within the oracle's allowance, the counts match and the
  /// round trip is bit-identical
  bool agree() const {
    return !first_divergence && kernel_failure.empty() && counts_match && (!round_trip_done || reload_identical);
  }
};

/// runs both branches; throws only for harness failures (kernel failures land in the result)
train_result run_training(const nc::kernel& k, const train_options& options);

/// the outputs (train.json, summary.md, train.svg)
std::string to_json(const train_result& r);
std::string to_markdown(const train_result& r);
std::string to_svg(const train_result& r);
/// a paragraph: how the verdict's allowance is derived
std::string allowance_text();

/// `normcheck train ...` (argv[0] is "train"): returns the exit code
int run_main(int argc, char** argv);

}  // namespace nc::train
