// normcheck exercise: the source document's exercise. A deliberately wrong forward divides the
// sum of squares by BLOCK (the next power of two >= N) instead of N; it must be seen failing at
// N = 257 and, as the arithmetic says, passing at N = 256. The prediction is printed before
// anything runs; then the shipped plugin and the fwd-mean-block mutant plugin run both rows
// through the C++ API and the observations are shown beside the predictions.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "normcheck/harness/options.hpp"
#include "mutants.hpp"
#include "normcheck/kernel.hpp"
#include "paths.hpp"

namespace nc::mutants {

namespace fs = std::filesystem;

namespace {

constexpr double epsilon = 1e-6;
// the document's fixed fp32 tolerance, published in advance
constexpr double atol = 1e-5, rtol = 1e-4;

std::int64_t block_of(std::int64_t n) {
  std::int64_t b = 1;
  while (b < n) b *= 2;
  return b;
}

// the arithmetic for a row of N ones (gamma = 1, dy = 1) when the forward divides by
// forward_div and the backward's mean by backward_div
struct prediction {
  double mean, r, y, dx;
};

prediction predict(std::int64_t n, std::int64_t forward_div, std::int64_t backward_div) {
  prediction p;
  const double sum_squares = double(n);  // 1^2 summed N times
  p.mean = sum_squares / double(forward_div);
  p.r = 1.0 / std::sqrt(p.mean + epsilon);
  p.y = p.r;                                // x * r * gamma with x = gamma = 1
  const double mean_ux = double(n) / double(backward_div);  // u = dy * gamma = 1, x = 1
  p.dx = p.r - p.r * p.r * p.r * mean_ux;   // dx = r*u - x*r^3*mean(u*x)
  return p;
}

struct observation {
  std::vector<float> y, dx;
  float r = 0;
  std::string forward_path;
};

observation run_row(const kernel& k, std::int64_t n) {
  const std::vector<float> ones(std::size_t(n), 1.0f);
  const std::size_t bytes = std::size_t(n) * sizeof(float);
  void* x = k.alloc(bytes);
  void* g = k.alloc(bytes);
  void* y = k.alloc(bytes);
  void* dy = k.alloc(bytes);
  void* dx = k.alloc(bytes);
  void* dg = k.alloc(bytes);
  void* r = k.alloc(sizeof(float));
  for (void* p : {x, g, dy}) k.upload(p, ones.data(), bytes);
  const nc_forward_args f{1, n, float(epsilon), {x, NC_F32, 0, n, 1}, {g, NC_F32, 0, 1}, {y, NC_F32, 0, n, 1},
                          {r, NC_F32, 0, 1}, nullptr};
  observation o;
  o.forward_path = k.forward_path(f);
  k.forward(f);
  nc_backward_args b{1, n, {x, NC_F32, 0, n, 1}, {g, NC_F32, 0, 1}, {dy, NC_F32, 0, n, 1}, {r, NC_F32, 0, 1},
                     {dx, NC_F32, 0, n, 1}, {dg, NC_F32, 0, 1}, nullptr, 0, nullptr};
  const std::size_t ws = k.workspace_size(b);
  void* w = ws ? k.alloc(ws) : nullptr;
  b.workspace = w;
  b.workspace_bytes = ws;
  k.backward(b);
  k.synchronize();
  o.y.resize(std::size_t(n));
  o.dx.resize(std::size_t(n));
  k.download(o.y.data(), y, bytes);
  k.download(o.dx.data(), dx, bytes);
  k.download(&o.r, r, sizeof(float));
  for (void* p : {x, g, y, dy, dx, dg, r}) k.free(p);
  if (w) k.free(w);
  return o;
}

bool close(double got, double want) { return std::fabs(got - want) <= atol + rtol * std::fabs(want); }

// every element of v against want; returns the element farthest from it
bool all_close(const std::vector<float>& v, double want, double& worst) {
  bool ok = true;
  worst = v.empty() ? 0 : v[0];
  for (float e : v) {
    if (std::fabs(e - want) > std::fabs(worst - want)) worst = e;
    ok = ok && close(e, want);
  }
  return ok;
}

}  // namespace

int exercise_main(int argc, char** argv) {
  const char* usage =
      "usage: normcheck exercise [--backend simt|cuda] [--plugins DIR]\n"
      "  The document's exercise: a forward that divides by BLOCK instead of N, at N = 257 and 256.\n";
  std::string backend;
  fs::path plugins;
  try {
    const nc::options o(argc, argv, 1, "normcheck exercise", {"backend", "plugins"});
    if (o.help()) return std::fputs(usage, stdout), int(nc::exit_pass);
    o.no_positional("normcheck exercise");
    backend = o.get("backend").value_or("simt");
    if (backend != "simt" && backend != "cuda") throw nc::usage_error("--backend '" + backend + "': must be simt or cuda");
    plugins = o.get("plugins") ? fs::path(*o.get("plugins")) : default_plugin_dir();
  } catch (const nc::usage_error& e) {
    std::fprintf(stderr, "normcheck exercise: %s\n%s", e.what(), usage);
    return nc::exit_usage;
  }

  std::printf(
      "The exercise (SEED.md): one row of N ones, gamma = 1, epsilon = 1e-6, fp32. The kernel's BLOCK is the\n"
      "next power of two >= N. The mutant fwd-mean-block divides the sum of squares by BLOCK instead of N.\n\n"
      "Prediction, from arithmetic alone (nothing has run yet):\n"
      "  N = 257, BLOCK = 512: the sum of squares is 257 either way.\n"
      "    correct: mean = 257/257 = 1,           r = 1/sqrt(1 + 1e-6)           = %.7f, y = %.7f\n"
      "    mutant:  mean = 257/512 = %.9f, denominator sqrt(mean + 1e-6) = %.6f, y = %.6f\n"
      "  N = 256, BLOCK = 256: N == BLOCK, so the mutant divides by the right number and gives the\n"
      "    correct y = %.7f. A test suite that only tries powers of two never sees this bug;\n"
      "    that is why odd sizes (257, 2^k +- 1) are in every generator.\n\n",
      predict(257, 257, 257).r, predict(257, 257, 257).y, 257.0 / 512.0, std::sqrt(257.0 / 512.0 + epsilon),
      predict(257, 512, 257).y, predict(256, 256, 256).y);

  struct entry {
    const char* label;
    fs::path plugin;
    bool forward_block, backward_block;
  };
  const std::vector<entry> kernels{
      {"shipped", shipped_plugin(plugins, backend), false, false},
      {"fwd-mean-block", mutant_plugin(plugins, "fwd-mean-block", backend), true, false},
      {"bwd-mean-block", mutant_plugin(plugins, "bwd-mean-block", backend), false, true},
  };

  bool all_match = true;
  std::printf("Observed (backend %s), beside the prediction; tolerance atol %.0e + rtol %.0e * |predicted|:\n",
              backend.c_str(), atol, rtol);
  std::printf("  %-15s %4s  %-16s %-13s %-13s %-13s %-13s %s\n", "kernel", "N", "forward path", "y observed",
              "y predicted", "dx observed", "dx predicted", "");
  for (const entry& e : kernels) {
    if (!fs::exists(e.plugin)) {
      std::printf("  %-15s missing plugin %s\n", e.label, e.plugin.c_str());
      if (e.backward_block) continue;  // the backward row is an illustration; the forward rows are the exercise
      all_match = false;
      continue;
    }
    kernel k = kernel::load(e.plugin.string());
    if (!k.available()) {
      std::printf("  no device for the %s backend\n", backend.c_str());
      return 1;
    }
    for (std::int64_t n : {257, 256}) {
      const std::int64_t block = block_of(n);
      const prediction p = predict(n, e.forward_block ? block : n, e.backward_block ? block : n);
      const observation o = run_row(k, n);
      double y_worst = 0, dx_worst = 0;
      const bool y_ok = all_close(o.y, p.y, y_worst) && close(o.r, p.r);
      const bool dx_ok = all_close(o.dx, p.dx, dx_worst);
      const bool ok = y_ok && dx_ok;
      all_match = all_match && ok;
      std::printf("  %-15s %4lld  %-16s %-13.7f %-13.7f %-13.6g %-13.6g %s\n", e.label, static_cast<long long>(n),
                  o.forward_path.c_str(), y_worst, p.y, dx_worst, p.dx, ok ? "as predicted" : "NOT AS PREDICTED");
    }
  }

  std::printf(
      "\nWhy the backward must use the same N: dx = r*u - x*r^3*mean(u*x) is the derivative of the forward's\n"
      "r = 1/sqrt(sum(x^2)/N + eps); the r^3/N term comes from d r/d x_i = -x_i r^3 / N. A backward whose mean\n"
      "divides by another number than the forward's differentiates a different function. For the row of ones\n"
      "the correct dx = r(1 - r^2) = eps/(1+eps)^1.5 ~ 1e-6 (in fp32 mostly rounding: r and r^3 nearly cancel);\n"
      "fwd-mean-block saves its wrong r = 1.41 and the N-based backward turns it into dx ~ -1.40; bwd-mean-block\n"
      "keeps the right r but halves mean(u*x) at N = 257 and gives dx ~ 0.50. At N = 256 all three agree, again.\n"
      "That is why the suite checks dx against the oracle at odd N too, not only y.\n\n");
  std::printf("%s\n", all_match ? "The observations match the predictions." : "The observations DO NOT match the predictions.");
  return all_match ? 0 : 1;
}

}  // namespace nc::mutants
