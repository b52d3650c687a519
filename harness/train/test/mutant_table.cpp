// train_mutant_table TITLE RUN_DIR...: the mutants-in-training table, Markdown on stdout. Each
// RUN_DIR is the --out of one `normcheck train` run, named after its kernel (a mutant id or
// "shipped"); its train.json says whether training exposed the kernel, at which step, through
// which tensor and by how much, and how far the losses and the test MSE moved.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "normcheck/json.hpp"

namespace {

std::string fmt(const char* format, double v) {
  char text[64];
  std::snprintf(text, sizeof text, format, v);
  return text;
}

std::string num(const nc::json::value& v, const char* format) {
  return v.is_number() ? fmt(format, v.as_number()) : v.is_null() ? "–" : "?";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: train_mutant_table TITLE RUN_DIR...\n");
    return 64;
  }
  std::printf("%s\n\n", argv[1]);
  std::printf("| kernel | verdict | first divergence: step | tensor [element] | \\|Δ\\| (bounds) | tensors out of bounds at that step | losses visibly apart "
              "from step (relative Δ > 1e-3) | test MSE reference / kernel | weights apart after the last step |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  for (int a = 2; a < argc; ++a) {
    const std::filesystem::path dir(argv[a]);
    std::ifstream in(dir / "train.json");
    if (!in) {
      std::printf("| `%s` | no train.json (the run crashed?) | | | | | | | |\n", dir.filename().c_str());
      continue;
    }
    std::ostringstream text;
    text << in.rdbuf();
    const nc::json::value doc = nc::json::value::parse(text.str());
    const nc::json::value& d = doc["first_divergence"];
    std::string step = "–", tensor = "–", size = "–";
    if (d.is_object()) {
      const double s = d["step"].as_number();
      step = s >= 0 ? fmt("%.0f", s) : d.get_string("phase");
      const std::string t = d.get_string("tensor");
      tensor = t + (t == "dgamma" ? "[" + fmt("%.0f", d["column"].as_number()) + "]"
                    : t == "r"    ? "[" + fmt("%.0f", d["row"].as_number()) + "]"
                                  : "[" + fmt("%.0f", d["row"].as_number()) + ", " + fmt("%.0f", d["column"].as_number()) + "]");
      size = num(d["abs_diff"], "%.3g") + " (" + num(d["error_in_bounds"], "%.3g") + ")";
      if (!d.get_string("note").empty()) size += ": " + d.get_string("note");
    }
    // every tensor over its bound at the first divergent step: the quantities training feels first
    std::string through = "–";
    if (d.is_object() && d["step"].as_number() >= 0) {
      through.clear();
      const auto& at = doc["steps"].as_array()[std::size_t(d["step"].as_number())]["kernel_error_in_bounds"];
      for (const char* t : {"y", "r", "dx", "dgamma"})
        if (!at[t].is_number() || at[t].as_number() > 1) through += (through.empty() ? "" : ", ") + std::string(t);
    }
    std::string visible = "never";
    double last_weights = 0;
    for (const nc::json::value& s : doc["steps"].as_array()) {
      const nc::json::value& loss = s["loss"];
      const double ref = loss["reference"].is_number() ? loss["reference"].as_number() : NAN;
      const double ker = loss["kernel"].is_number() ? loss["kernel"].as_number() : NAN;
      if (visible == "never" && !(std::fabs(ker - ref) <= 1e-3 * std::fabs(ref))) visible = fmt("%.0f", s["step"].as_number());
      last_weights = s["apart"]["weights"].is_number() ? s["apart"]["weights"].as_number() : INFINITY;
    }
    std::string verdict = doc.get_string("verdict");
    if (!doc.get_string("kernel_failure").empty()) verdict += " (kernel failed: " + doc.get_string("kernel_failure") + ")";
    std::printf("| `%s` | %s | %s | %s | %s | %s | %s | %s / %s | %s |\n", dir.filename().c_str(), verdict.c_str(),
                step.c_str(), tensor.c_str(), size.c_str(), through.c_str(), visible.c_str(),
                num(doc["test_mse"]["reference"], "%.6g").c_str(), num(doc["test_mse"]["kernel"], "%.6g").c_str(),
                fmt("%.3g", last_weights).c_str());
  }
  return 0;
}
