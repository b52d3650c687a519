// `normcheck train`: options, the run, the outputs, the exit code.
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>

#include "normcheck/harness/campaign.hpp"
#include "normcheck/harness/exit_code.hpp"
#include "normcheck/harness/options.hpp"
#include "normcheck/harness/report.hpp"
#include "normcheck/harness/worker.hpp"
#include "normcheck/train/train.hpp"

namespace nc::train {
namespace {

using nc::usage_error;

// the statuses of every verb (normcheck/harness/exit_code.hpp), under the names train gives them
constexpr int agree = nc::exit_pass, diverged = nc::exit_property_failed, usage = nc::exit_usage,
              harness_error = nc::exit_harness_error, no_device = nc::exit_skipped;

const char* usage_text =
    "usage: normcheck train [--kernel PATH | --backend auto|cuda|simt] [--dtype fp32|fp16|bf16]\n"
    "                       [--steps 100] [--batch 32] [--hidden 257] [--seed 1] [--out DIR]\n"
    "  (the seed defaults to NORMCHECK_SEED, else 1)\n"
    "  the document's training integration: Linear → RMSNorm → SiLU → Linear with Adam, a reference\n"
    "  branch (the oracles' double reference) and a kernel branch from the same weights and batches.\n"
    "  Writes train.json, summary.md, train.svg and the checkpoints under --out\n"
    "  (default reports/out/train/<UTC time>/).\n"
    "  exit codes: 0 the branches agree, 1 they diverged or a check failed, 64 usage error,\n"
    "  70 harness error, 77 no device for the backend asked for\n";

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write '" + path.string() + "'");
}

int run(int argc, char** argv) {
  const nc::options o(argc, argv, 1, "normcheck train", {"kernel", "backend", "dtype", "steps", "batch", "hidden", "seed", "out"});
  if (o.help()) throw usage_error("");
  o.no_positional("normcheck train");
  train_options options;
  if (auto dtype = o.get("dtype")) {
    try {
      options.type = parse_dtype(*dtype);
    } catch (const std::invalid_argument& e) {
      throw usage_error(e.what());
    }
  }
  options.steps = int(o.integer("steps", 100, 1, 100000));
  options.batch = int(o.integer("batch", 32, 1, 65536));
  options.widths.hidden = int(o.integer("hidden", 257, 1, 65536));
  // the network runs in host loops and keeps a few copies of every activation: bound the batch
  if (std::int64_t(options.batch) * options.widths.hidden > (std::int64_t(1) << 24))
    throw usage_error("--batch " + std::to_string(options.batch) + " × --hidden " + std::to_string(options.widths.hidden) +
                      ": the batch may hold at most 2^24 (16777216) activations");
  if (o.get("seed")) {
    options.seed = o.integer("seed", 0, 0, ~std::uint64_t(0), "[0, 2^64 - 1]");
  } else if (const char* env = std::getenv("NORMCHECK_SEED"); env != nullptr && *env != '\0') {
    try {
      options.seed = nc::harness::seed_from_environment();
    } catch (const std::invalid_argument& e) {
      throw usage_error(e.what());
    }
  }
  const std::filesystem::path out =
      o.get("out") ? std::filesystem::path(*o.get("out")) : std::filesystem::path("reports/out/train") / harness::utc_now("%Y%m%d-%H%M%S");

  // the kernel, by the one resolver's rule; a load failure is the harness's (exit 70), like the other verbs
  std::string said;
  const std::optional<nc::kernel> k =
      nc::harness::resolve_kernel({o.get("kernel"), o.get("backend")}, nc::harness::isolation_from_environment(), &said);
  std::printf("%s\n", said.c_str());
  if (!k->available()) {
    std::fprintf(stderr, "normcheck train: no device for the %s backend\n", k->backend().c_str());
    return no_device;
  }
  std::filesystem::create_directories(out);
  options.out_dir = out.string();
  std::printf("train: kernel %s (%s), %s, hidden %d, %d steps of %d, seed %llu (--seed %llu reruns it)\n",
              k->name().c_str(), k->backend().c_str(), dtype_name(options.type).c_str(), options.widths.hidden,
              options.steps, options.batch, static_cast<unsigned long long>(options.seed),
              static_cast<unsigned long long>(options.seed));
  std::fflush(stdout);

  const train_result r = run_training(*k, options);
  write_file(out / "train.json", to_json(r));
  write_file(out / "summary.md", to_markdown(r));
  write_file(out / "train.svg", to_svg(r));

  if (!r.steps.empty())
    std::printf("initial difference: output %.3g, gradient dx %.3g, dgamma %.3g (the document: 1.19e-7, 5.96e-8)\n",
                r.steps[0].y_diff, r.steps[0].dx_diff, r.steps[0].dgamma_diff);
  std::printf("validation MSE: reference %.8g, kernel %.8g\ntest MSE:       reference %.8g, kernel %.8g\n",
              r.validation_reference, r.validation_kernel, r.test_reference, r.test_kernel);
  std::printf("kernel calls: %lld training forwards, %lld backwards (%s %d), %lld evaluation forwards\n",
              static_cast<long long>(r.train_forwards), static_cast<long long>(r.backwards),
              r.counts_match ? "both" : "NOT both", options.steps, static_cast<long long>(r.evaluate_forwards));
  if (r.round_trip_done)
    std::printf("save → reload → re-evaluate: weights %.3g apart, test MSE %.3g apart (%s)\n", r.reload_weight_diff,
                r.reload_test_diff, r.reload_identical ? "bit-identical" : "NOT bit-identical");
  std::printf("outputs: %s/{train.json,summary.md,train.svg,kernel.ckpt,reference.ckpt}; %.2f s\n", out.string().c_str(),
              r.seconds);
  if (!r.kernel_failure.empty()) std::printf("DIVERGED: the kernel failed at %s\n", r.kernel_failure.c_str());
  if (r.first_divergence) {
    const divergence& d = *r.first_divergence;
    std::printf("DIVERGED at %s, tensor %s: kernel %.9g, exact %.9g, |Δ| %.3g, bound %.3g (%.3g bounds)%s%s\n",
                d.step >= 0 ? ("step " + std::to_string(d.step)).c_str() : d.phase.c_str(), d.v.tensor.c_str(), d.v.got,
                d.v.exact, std::fabs(d.v.got - d.v.exact), d.v.bound, d.v.error_in_bounds(),
                d.v.note.empty() ? "" : ": ", d.v.note.c_str());
  }
  if (!r.counts_match) std::printf("FAILED: the kernel branch's call counts are not %d each\n", options.steps);
  if (r.round_trip_done && !r.reload_identical) std::printf("FAILED: the reloaded checkpoint is not bit-identical\n");
  if (r.agree()) std::printf("agree: every kernel call within the exact oracle's bound\n");
  return r.agree() ? agree : diverged;
}

}  // namespace

int run_main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const nc::skipped_error& e) {
    std::fprintf(stderr, "normcheck train: %s\n", e.what());
    return no_device;
  } catch (const usage_error& e) {
    if (*e.what() != '\0') std::fprintf(stderr, "normcheck train: %s\n", e.what());
    std::fputs(usage_text, *e.what() != '\0' ? stderr : stdout);
    return *e.what() != '\0' ? usage : agree;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "normcheck train: %s\n", e.what());
    return harness_error;
  }
}

}  // namespace nc::train
