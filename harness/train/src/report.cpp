// The outputs of `normcheck train`: train.json (every step), summary.md, train.svg.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <sstream>

#include "normcheck/json.hpp"
#include "normcheck/train/train.hpp"

namespace nc::train {
namespace {

// JSON has no NaN or infinity: those become null
json::value number(double v) { return std::isfinite(v) ? json::value(v) : json::value(); }

std::string fmt(const char* format, double v) {
  char text[64];
  std::snprintf(text, sizeof text, format, v);
  return text;
}

std::string verdict_word(const train_result& r) {
  if (r.agree()) return "agree";
  if (r.first_divergence || !r.kernel_failure.empty()) return "diverged";
  return "failed";
}

const char* tensor_names[] = {"w1", "b1", "gamma", "w2", "b2"};

std::string describe(const divergence& d) {
  const violation& v = d.v;
  std::string where = d.step >= 0 ? "step " + std::to_string(d.step) : d.phase;
  std::string element = v.tensor == "dgamma" ? "[" + std::to_string(v.column) + "]"
                        : v.tensor == "r"    ? "[" + std::to_string(v.row) + "]"
                                             : "[" + std::to_string(v.row) + ", " + std::to_string(v.column) + "]";
  std::string s = where + ", " + v.tensor + element + ": kernel " + fmt("%.9g", v.got) + ", exact " +
                  fmt("%.9g", v.exact) + ", |Δ| " + fmt("%.3g", std::fabs(v.got - v.exact));
  if (!v.note.empty()) return s + " (" + v.note + ")";
  return s + " against a bound of " + fmt("%.3g", v.bound) + " (" + fmt("%.3g", v.error_in_bounds()) + " bounds)";
}

}  // namespace

std::string allowance_text() {
  return "Each training step's RMSNorm calls of the kernel branch are judged on the operands that call "
         "received. The exact oracle (oracles/exact.hpp: exact_forward, exact_backward) gives every element of "
         "y, r, dx and dgamma a rigorous bound on the error of any correct fp32-accumulating kernel on those "
         "operands (any summation order, fma or not, rsqrt within 2 ulp, the final rounding into the dtype). "
         "That bound, element by element, is the step's allowance: the kernel branch diverges at the first "
         "step where |kernel - exact| exceeds it (an error above 1 bound), or where the oracle has no bound "
         "(an operand outside its domain). The evaluations' forwards are judged the same way. The branches' "
         "max |Delta| (reference branch against kernel branch) is the drift of two trainings that differ only "
         "in their RMSNorm: at step 0 their operands are identical, the reference's y is checked to lie within "
         "the same bound, so |Delta y| <= 2 bounds there; after step 0 the operands differ and the drift "
         "compounds through Adam (a gradient element near 0 may flip sign and move its weight by 2 lr), which "
         "no per-element bound covers, so the drift is recorded and plotted, not judged.";
}

std::string to_json(const train_result& r) {
  const train_options& o = r.options;
  json::value doc;
  doc.set("format", "normcheck-train");
  doc.set("version", 1);
  doc.set("started", r.started);
  doc.set("kernel", json::object{{"name", r.kernel_name}, {"backend", r.kernel_backend}, {"path", r.kernel_path}});
  doc.set("options", json::object{{"dtype", dtype_name(o.type)},
                                  {"steps", o.steps},
                                  {"batch", o.batch},
                                  {"inputs", o.widths.inputs},
                                  {"hidden", o.widths.hidden},
                                  {"outputs", o.widths.outputs},
                                  {"seed", std::to_string(o.seed)},
                                  {"epsilon", double(o.epsilon)},
                                  {"lr", double(o.lr)},
                                  {"adam", json::object{{"beta1", 0.9}, {"beta2", 0.999}, {"eps", 1e-8}}},
                                  {"train_examples", o.train_examples},
                                  {"validation_examples", o.validation_examples},
                                  {"test_examples", o.test_examples}});
  doc.set("allowance", allowance_text());
  json::array steps;
  for (const step_record& s : r.steps) {
    json::object per_tensor;
    for (std::size_t k = 0; k < s.weight_diffs.size(); ++k) per_tensor.emplace_back(tensor_names[k], number(s.weight_diffs[k]));
    steps.push_back(json::object{
        {"step", s.step},
        {"loss", json::object{{"reference", number(s.loss_reference)}, {"kernel", number(s.loss_kernel)}}},
        {"apart", json::object{{"y", number(s.y_diff)},
                               {"dgamma", number(s.dgamma_diff)},
                               {"dx", number(s.dx_diff)},
                               {"weights", number(s.weight_diff)},
                               {"weights_per_tensor", per_tensor}}},
        {"kernel_error_in_bounds",
         json::object{{"y", number(s.y_error)}, {"r", number(s.r_error)}, {"dx", number(s.dx_error)}, {"dgamma", number(s.dgamma_error)}}},
        {"seconds", s.seconds}});
  }
  doc.set("steps", steps);
  if (!r.steps.empty())
    doc.set("initial", json::object{{"y", number(r.steps[0].y_diff)},
                                    {"dx", number(r.steps[0].dx_diff)},
                                    {"dgamma", number(r.steps[0].dgamma_diff)},
                                    {"reference_y_error_in_bounds", number(r.reference_y_error_step0)}});
  doc.set("validation_mse", json::object{{"reference", number(r.validation_reference)}, {"kernel", number(r.validation_kernel)}});
  doc.set("test_mse", json::object{{"reference", number(r.test_reference)}, {"kernel", number(r.test_kernel)}});
  doc.set("calls", json::object{{"steps", o.steps},
                                {"train_forwards", r.train_forwards},
                                {"backwards", r.backwards},
                                {"evaluate_forwards", r.evaluate_forwards},
                                {"match", r.counts_match}});
  if (r.round_trip_done)
    // the checkpoints lie beside train.json: their names alone, so the file names no machine's folders
    doc.set("round_trip", json::object{{"checkpoint_kernel", std::filesystem::path(r.checkpoint_kernel).filename().string()},
                                       {"checkpoint_reference", std::filesystem::path(r.checkpoint_reference).filename().string()},
                                       {"test_mse_kernel_reloaded", number(r.test_kernel_reloaded)},
                                       {"test_mse_reference_reloaded", number(r.test_reference_reloaded)},
                                       {"weight_diff", number(r.reload_weight_diff)},
                                       {"test_mse_diff", number(r.reload_test_diff)},
                                       {"bit_identical", r.reload_identical}});
  doc.set("verdict", verdict_word(r));
  if (r.first_divergence) {
    const divergence& d = *r.first_divergence;
    doc.set("first_divergence",
            json::object{{"step", d.step}, {"phase", d.phase}, {"tensor", d.v.tensor}, {"row", d.v.row},
                         {"column", d.v.column}, {"kernel", number(d.v.got)}, {"exact", number(d.v.exact)},
                         {"bound", number(d.v.bound)}, {"abs_diff", number(std::fabs(d.v.got - d.v.exact))},
                         {"error_in_bounds", number(d.v.error_in_bounds())}, {"note", d.v.note},
                         {"text", describe(d)}});
  } else {
    doc.set("first_divergence", nullptr);
  }
  doc.set("kernel_failure", r.kernel_failure);
  doc.set("seconds", r.seconds);
  return doc.dump(1) + "\n";
}

std::string to_markdown(const train_result& r) {
  const train_options& o = r.options;
  std::ostringstream md;
  md << "# normcheck train: " << r.kernel_name << " (" << r.kernel_backend << "), " << dtype_name(o.type) << "\n\n";
  md << "Linear(" << o.widths.inputs << "→" << o.widths.hidden << ") → RMSNorm(" << o.widths.hidden
     << ", ε " << fmt("%g", o.epsilon) << ") → SiLU → Linear(" << o.widths.hidden << "→" << o.widths.outputs
     << "), MSE loss, Adam (lr " << fmt("%g", o.lr) << ", β1 0.9, β2 0.999, ε 1e-8), " << o.steps << " steps of "
     << o.batch << " examples; synthetic splits of " << o.train_examples << " / " << o.validation_examples << " / "
     << o.test_examples << " examples (train / validation / test), seed " << o.seed << ". Started " << r.started
     << ", " << fmt("%.2f", r.seconds) << " s.";
  if (o.type != oracle::dtype::f32)
    md << " RMSNorm's x, y, dy and dx are " << dtype_name(o.type) << "; gamma, the other weights, Linear, SiLU, "
       << "the loss and Adam stay fp32 (master weights).";
  md << "\n\nKernel: `" << r.kernel_path << "`.\n\n";
  md << "**Verdict: " << verdict_word(r) << ".** ";
  if (r.first_divergence) md << "First divergence: " << describe(*r.first_divergence) << ". ";
  if (!r.kernel_failure.empty()) md << "The kernel failed: " << r.kernel_failure << ". ";
  if (r.agree()) md << "Every RMSNorm call of the kernel branch lies within the exact oracle's bound. ";
  md << "\n\n| quantity | reference branch | kernel branch |\n|---|---|---|\n";
  if (!r.steps.empty()) {
    md << "| loss, step 0 | " << fmt("%.8g", r.steps.front().loss_reference) << " | "
       << fmt("%.8g", r.steps.front().loss_kernel) << " |\n";
    md << "| loss, last step | " << fmt("%.8g", r.steps.back().loss_reference) << " | "
       << fmt("%.8g", r.steps.back().loss_kernel) << " |\n";
  }
  md << "| validation MSE | " << fmt("%.8g", r.validation_reference) << " | " << fmt("%.8g", r.validation_kernel) << " |\n";
  md << "| test MSE | " << fmt("%.8g", r.test_reference) << " | " << fmt("%.8g", r.test_kernel) << " |\n";
  if (r.round_trip_done)
    md << "| test MSE after save → reload | " << fmt("%.8g", r.test_reference_reloaded) << " | "
       << fmt("%.8g", r.test_kernel_reloaded) << " |\n";
  md << "\n| check | value |\n|---|---|\n";
  if (!r.steps.empty()) {
    md << "| initial output difference (max \\|Δy\\|, step 0) | " << fmt("%.3g", r.steps[0].y_diff) << " |\n";
    md << "| initial gradient difference, dx (step 0) | " << fmt("%.3g", r.steps[0].dx_diff) << " |\n";
    md << "| initial gradient difference, dgamma (step 0) | " << fmt("%.3g", r.steps[0].dgamma_diff) << " |\n";
    md << "| the reference's y at step 0, in exact-oracle bounds | " << fmt("%.3g", r.reference_y_error_step0) << " |\n";
    double worst[4] = {0, 0, 0, 0};
    for (const step_record& s : r.steps) {
      worst[0] = std::max(worst[0], s.y_error);
      worst[1] = std::max(worst[1], s.r_error);
      worst[2] = std::max(worst[2], s.dx_error);
      worst[3] = std::max(worst[3], s.dgamma_error);
    }
    md << "| kernel's largest error in bounds over the training: y / r / dx / dgamma | " << fmt("%.3g", worst[0])
       << " / " << fmt("%.3g", worst[1]) << " / " << fmt("%.3g", worst[2]) << " / " << fmt("%.3g", worst[3]) << " |\n";
    md << "| branches apart after the last step: weights | " << fmt("%.3g", r.steps.back().weight_diff) << " |\n";
  }
  md << "| kernel calls: training forwards / backwards (must be " << o.steps << " each) | " << r.train_forwards
     << " / " << r.backwards << (r.counts_match ? " (match)" : " (MISMATCH)") << " |\n";
  md << "| kernel calls: evaluation forwards | " << r.evaluate_forwards << " |\n";
  if (r.round_trip_done)
    md << "| reload difference: weights / test MSE | " << fmt("%.3g", r.reload_weight_diff) << " / "
       << fmt("%.3g", r.reload_test_diff) << (r.reload_identical ? " (bit-identical)" : " (NOT bit-identical)")
       << " |\n";
  md << "\n## The allowance\n\n" << allowance_text() << "\n\n";
  md << "## Steps (every tenth; all of them in train.json)\n\n";
  md << "| step | loss reference | loss kernel | apart: y | dgamma | dx | weights | kernel error (bounds): y | r | dx | dgamma |\n";
  md << "|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const step_record& s : r.steps)
    if (s.step % 10 == 0 || s.step + 1 == int(r.steps.size()))
      md << "| " << s.step << " | " << fmt("%.7g", s.loss_reference) << " | " << fmt("%.7g", s.loss_kernel) << " | "
         << fmt("%.2e", s.y_diff) << " | " << fmt("%.2e", s.dgamma_diff) << " | " << fmt("%.2e", s.dx_diff) << " | "
         << fmt("%.2e", s.weight_diff) << " | " << fmt("%.3g", s.y_error) << " | " << fmt("%.3g", s.r_error) << " | "
         << fmt("%.3g", s.dx_error) << " | " << fmt("%.3g", s.dgamma_error) << " |\n";
  md << "\nThe plot: `train.svg` (loss curves, the branches apart and the kernel's error in bounds, log scales).\n";
  return md.str();
}

// ---- the plot ----

namespace {

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// a tick spacing of 1, 2 or 5 × 10^k giving about `count` ticks over span
double nice_step(double span, int count) {
  const double raw = span / count;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double f : {1.0, 2.0, 5.0, 10.0})
    if (f * power >= raw) return f * power;
  return 10 * power;
}

struct series {
  std::string label, color;
  bool dashed;
  std::function<double(const step_record&)> value;
};

// one panel: axes, ticks, a line per series, a legend
class panel {
 public:
  panel(double x, double y, double w, double h, std::string title, bool log)
      : x_(x), y_(y), w_(w), h_(h), title_(std::move(title)), log_(log) {}

  void draw(std::ostringstream& svg, const std::vector<step_record>& steps, const std::vector<series>& lines,
            const std::vector<std::pair<double, std::string>>& hlines, int marker_step) {
    const double steps_count = std::max<double>(1, double(steps.size()));
    xmin_ = 0;
    xmax_ = std::max(1.0, steps_count - 1);
    // the value range over every series (and the horizontal lines)
    double lo = INFINITY, hi = -INFINITY;
    const auto take = [&](double v) {
      if (!std::isfinite(v) || (log_ && v <= 0)) return;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    };
    for (const series& l : lines)
      for (const step_record& s : steps) take(l.value(s));
    for (const auto& [v, text] : hlines) take(v);
    if (log_) {
      if (!(lo <= hi)) lo = 1e-10, hi = 1;
      ymin_ = std::floor(std::log10(lo));
      ymax_ = std::ceil(std::log10(hi));
      if (ymax_ <= ymin_) ymax_ = ymin_ + 1;
      // a decade above every horizontal line, so values just under it (a 16-bit kernel's error
      // sits near 1 bound) are not hidden under the line on the top edge
      for (const auto& [v, text] : hlines)
        if (v > 0) ymax_ = std::max(ymax_, std::floor(std::log10(v)) + 1);
    } else {
      if (!(lo <= hi)) lo = 0, hi = 1;
      const double pad = (hi - lo) * 0.05 + (hi == lo ? 0.5 : 0);
      ymin_ = lo - pad;
      ymax_ = hi + pad;
    }
    svg << "<g class=\"panel\">\n";
    svg << "<text x=\"" << x_ << "\" y=\"" << y_ - 10 << "\" font-size=\"15\" font-weight=\"bold\">" << xml_escape(title_)
        << "</text>\n";
    svg << "<rect x=\"" << x_ << "\" y=\"" << y_ << "\" width=\"" << w_ << "\" height=\"" << h_
        << "\" fill=\"#ffffff\" stroke=\"#444444\"/>\n";
    // y ticks and grid
    if (log_) {
      const int decades = int(ymax_ - ymin_);
      const int every = std::max(1, decades / 8 + (decades % 8 ? 1 : 0));
      for (int e = int(ymin_); e <= int(ymax_); e += every) {
        const double py = map_y_exponent(e);
        svg << "<line x1=\"" << x_ << "\" y1=\"" << py << "\" x2=\"" << x_ + w_ << "\" y2=\"" << py
            << "\" stroke=\"#dddddd\"/>\n";
        svg << "<text x=\"" << x_ - 6 << "\" y=\"" << py + 4 << "\" font-size=\"11\" text-anchor=\"end\">1e" << e
            << "</text>\n";
      }
    } else {
      const double step = nice_step(ymax_ - ymin_, 5);
      for (double v = std::ceil(ymin_ / step) * step; v <= ymax_; v += step) {
        const double py = map_y(v);
        svg << "<line x1=\"" << x_ << "\" y1=\"" << py << "\" x2=\"" << x_ + w_ << "\" y2=\"" << py
            << "\" stroke=\"#dddddd\"/>\n";
        svg << "<text x=\"" << x_ - 6 << "\" y=\"" << py + 4 << "\" font-size=\"11\" text-anchor=\"end\">"
            << fmt("%g", std::fabs(v) < step * 1e-6 ? 0.0 : v) << "</text>\n";
      }
    }
    // x ticks
    const double xstep = std::max(1.0, nice_step(xmax_ - xmin_, 10));
    for (double v = 0; v <= xmax_ + 1e-9; v += xstep) {
      const double px = map_x(v);
      svg << "<line x1=\"" << px << "\" y1=\"" << y_ + h_ << "\" x2=\"" << px << "\" y2=\"" << y_ + h_ + 5
          << "\" stroke=\"#444444\"/>\n";
      svg << "<text x=\"" << px << "\" y=\"" << y_ + h_ + 18 << "\" font-size=\"11\" text-anchor=\"middle\">"
          << fmt("%g", v) << "</text>\n";
    }
    svg << "<text x=\"" << x_ + w_ / 2 << "\" y=\"" << y_ + h_ + 34 << "\" font-size=\"12\" text-anchor=\"middle\">step</text>\n";
    for (const auto& [v, text] : hlines) {
      const double py = log_ ? map_y_exponent(std::log10(v)) : map_y(v);
      svg << "<line x1=\"" << x_ << "\" y1=\"" << py << "\" x2=\"" << x_ + w_ << "\" y2=\"" << py
          << "\" stroke=\"#cc0000\" stroke-width=\"1.5\" stroke-dasharray=\"8 4\"/>\n";
      svg << "<text x=\"" << x_ + 6 << "\" y=\"" << py - 5 << "\" font-size=\"11\" fill=\"#cc0000\">" << xml_escape(text)
          << "</text>\n";
    }
    if (marker_step >= 0) {
      const double px = map_x(marker_step);
      svg << "<line x1=\"" << px << "\" y1=\"" << y_ << "\" x2=\"" << px << "\" y2=\"" << y_ + h_
          << "\" stroke=\"#cc0000\" stroke-dasharray=\"3 3\"/>\n";
      svg << "<text x=\"" << px + 4 << "\" y=\"" << y_ + 14 << "\" font-size=\"11\" fill=\"#cc0000\">first divergence, step "
          << marker_step << "</text>\n";
    }
    // the lines
    for (const series& l : lines) {
      svg << "<polyline class=\"series\" data-label=\"" << xml_escape(l.label) << "\" fill=\"none\" stroke=\"" << l.color
          << "\" stroke-width=\"1.8\"" << (l.dashed ? " stroke-dasharray=\"6 3\"" : "") << " points=\"";
      for (const step_record& s : steps) svg << fmt("%.2f", map_x(s.step)) << "," << fmt("%.2f", value_y(l.value(s))) << " ";
      svg << "\"/>\n";
    }
    // the legend, top right, on a white card so the lines under it do not cross its text
    svg << "<rect x=\"" << x_ + w_ - 196 << "\" y=\"" << y_ + 4 << "\" width=\"190\" height=\"" << 16 * lines.size() + 6
        << "\" fill=\"#ffffff\" fill-opacity=\"0.85\" stroke=\"#cccccc\"/>\n";
    double ly = y_ + 16;
    for (const series& l : lines) {
      const double lx = x_ + w_ - 190;
      svg << "<line x1=\"" << lx << "\" y1=\"" << ly - 4 << "\" x2=\"" << lx + 24 << "\" y2=\"" << ly - 4 << "\" stroke=\""
          << l.color << "\" stroke-width=\"2\"" << (l.dashed ? " stroke-dasharray=\"6 3\"" : "") << "/>\n";
      svg << "<text x=\"" << lx + 30 << "\" y=\"" << ly << "\" font-size=\"12\">" << xml_escape(l.label) << "</text>\n";
      ly += 16;
    }
    if (log_)
      svg << "<text x=\"" << x_ + w_ - 6 << "\" y=\"" << y_ + h_ - 6
          << "\" font-size=\"10\" fill=\"#666666\" text-anchor=\"end\">0 is drawn on the bottom edge</text>\n";
    svg << "</g>\n";
  }

 private:
  double map_x(double v) const { return x_ + (v - xmin_) / (xmax_ - xmin_) * w_; }
  double map_y(double v) const { return y_ + h_ - (v - ymin_) / (ymax_ - ymin_) * h_; }
  double map_y_exponent(double e) const { return y_ + h_ - (e - ymin_) / (ymax_ - ymin_) * h_; }
  double value_y(double v) const {
    if (std::isnan(v) || v == INFINITY) return y_;  // no value, or unbounded: the top edge
    if (!log_) return map_y(std::clamp(v, ymin_, ymax_));
    if (v <= 0) return y_ + h_;
    return map_y_exponent(std::clamp(std::log10(v), ymin_, ymax_));
  }

  double x_, y_, w_, h_;
  std::string title_;
  bool log_;
  double xmin_ = 0, xmax_ = 1, ymin_ = 0, ymax_ = 1;
};

}  // namespace

std::string to_svg(const train_result& r) {
  const train_options& o = r.options;
  const double width = 960, left = 80, plot_w = 840, plot_h = 210;
  std::ostringstream svg;
  svg << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"900\" viewBox=\"0 0 " << width
      << " 900\" font-family=\"DejaVu Sans, Arial, sans-serif\">\n";
  svg << "<rect width=\"100%\" height=\"100%\" fill=\"#fafafa\"/>\n";
  const std::string title = "normcheck train: " + r.kernel_name + " (" + r.kernel_backend + "), " + dtype_name(o.type) +
                            ", N " + std::to_string(o.widths.hidden) + ", " + std::to_string(o.steps) + " steps of " +
                            std::to_string(o.batch) + ", seed " + std::to_string(o.seed) + ": " + verdict_word(r);
  svg << "<text id=\"title\" x=\"" << left << "\" y=\"26\" font-size=\"16\">" << xml_escape(title) << "</text>\n";
  const int marker = r.first_divergence && r.first_divergence->step >= 0 ? r.first_divergence->step : -1;

  panel loss(left, 70, plot_w, plot_h, "training loss (MSE of the batch)", false);
  loss.draw(svg, r.steps,
            {{"reference branch", "#1f77b4", false, [](const step_record& s) { return s.loss_reference; }},
             {"kernel branch", "#ff7f0e", true, [](const step_record& s) { return s.loss_kernel; }}},
            {}, marker);
  panel apart(left, 360, plot_w, plot_h, "branches apart: max |reference - kernel| (log)", true);
  apart.draw(svg, r.steps,
             {{"y (RMSNorm output)", "#2ca02c", false, [](const step_record& s) { return s.y_diff; }},
              {"dgamma", "#d62728", false, [](const step_record& s) { return s.dgamma_diff; }},
              {"dx", "#9467bd", false, [](const step_record& s) { return s.dx_diff; }},
              {"weights after update", "#8c564b", false, [](const step_record& s) { return s.weight_diff; }}},
             {}, marker);
  panel error(left, 650, plot_w, plot_h, "kernel error in exact-oracle bounds, per step (log)", true);
  error.draw(svg, r.steps,
             {{"y", "#2ca02c", false, [](const step_record& s) { return s.y_error; }},
              {"r", "#17becf", true, [](const step_record& s) { return s.r_error; }},
              {"dx", "#9467bd", false, [](const step_record& s) { return s.dx_error; }},
              {"dgamma", "#d62728", false, [](const step_record& s) { return s.dgamma_error; }}},
             {{1.0, "allowance: 1 bound"}}, marker);
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace nc::train
