#include "normcheck/harness/campaign.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <optional>
#include <random>
#include <sstream>

#include <rapidcheck/detail/Configuration.h>
#include <rapidcheck/detail/TestListener.h>

#include "normcheck/environment.hpp"

#include "normcheck/harness/case_file.hpp"
#include "normcheck/harness/failure.hpp"
#include "normcheck/harness/generators.hpp"

namespace nc::harness {

namespace {

using clock = std::chrono::steady_clock;

// the state of one property run, shared by the RapidCheck property body and the listener
struct run_state {
  const property& p;
  const kernel& k;
  const campaign_options& options;
  clock::time_point start = clock::now();
  std::int64_t planned = 0;
  std::int64_t cases = 0, shrinks = 0;
  std::optional<observation> pending;  // the last case's observation, until RapidCheck says it passed
  double max_units = 0;
  std::int64_t table_misses = 0;
  std::map<std::pair<std::string, std::string>, std::int64_t> counts;
  // the last failing case: after shrinking, the minimal one
  std::optional<norm_case> failing;
  std::string failing_message;
  std::optional<clock::time_point> first_failure;
  bool shrink_cut = false;  // the shrink budget ran out

  double seconds() const { return std::chrono::duration<double>(clock::now() - start).count(); }
  void report() const {
    if (options.on_progress) options.on_progress({&p, cases, planned, shrinks, seconds()});
  }
};

class listener final : public rc::detail::TestListener {
 public:
  explicit listener(run_state& s) : s_(s) {}

  void onTestCaseFinished(const rc::detail::CaseDescription& d) override {
    if (d.result.type != rc::detail::CaseResult::Type::Success || !s_.pending) return;
    ++s_.cases;
    s_.max_units = std::max(s_.max_units, s_.pending->max_error_in_bounds);
    s_.table_misses += s_.pending->fixed_table_misses;
    for (const auto& [dimension, cls] : s_.pending->tags) ++s_.counts[{dimension, cls}];
    s_.pending.reset();
    s_.report();
  }

  void onShrinkTried(const rc::detail::CaseDescription&, bool accepted) override {
    s_.shrinks += accepted;
    s_.report();
  }

  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}

 private:
  run_state& s_;
};

std::string seed_text(std::uint64_t seed) { return std::to_string(seed); }

// whether an intended class can occur on this kernel, drawn inside this domain: the shares
// were set for the whole contract and the shipped kernels' paths
bool intent_applies(const intended_share& i, const kernel& k, const capabilities& domain) {
  if (i.needs && !i.needs(domain).empty()) return false;
  const std::string& d = i.dimension;
  if (d == "dtype") {
    for (std::uint32_t b = 1; b <= NC_PAIR_BF16_GAMMA_F32; b <<= 1)
      if (i.cls == pair_name(b)) return (domain.dtype_pairs & b) != 0;
    return true;
  }
  // the layout mix shifts when the kernel serves only some layouts
  if (d == "alignment") return domain.layouts == NC_LAYOUTS_ALL;
  if (d == "size") {
    if (domain.max_elements > 0 && (i.cls == "large" || i.cls == "tall")) return false;
    return !(i.cls == "large" && domain.max_n > 0 && domain.max_n < 4096);
  }
  if (d == "forward path") return k.lists_forward_path(i.cls);
  if (d == "backward path") return k.lists_backward_path(i.cls);
  // whether a strided view changes the path: a statement about the shipped kernels' dispatch
  if (d == "paths") return k.lists_forward_path("vector-warp") && k.lists_forward_path("strided-warp");
  // a backward table with fewer row slots than rows is a design (the shipped kernels' persistent
  // grid), not a rule: a kernel with a slot per row (the document's M×N table) never loops
  if (d == "backward slots") return k.lists_backward_path("vector-block128");
  if (d == "epsilon") return domain.any_epsilon() || domain.takes_epsilon(i.cls == "zero" ? 0.0f : 1e-6f);
  return true;
}

std::vector<class_share> distribution_of(const run_state& s, const capabilities& domain) {
  std::vector<class_share> out;
  std::map<std::pair<std::string, std::string>, double> wanted;
  for (const intended_share& i : s.p.intended)
    if (intent_applies(i, s.k, domain) && !(i.unless_observed && s.counts.count(*i.unless_observed)))
      wanted[{i.dimension, i.cls}] = i.min_share;
  for (const auto& [key, count] : s.counts) {
    class_share c{key.first, key.second, count, s.cases ? double(count) / double(s.cases) : 0.0, 0};
    if (auto it = wanted.find(key); it != wanted.end()) c.min_share = it->second;
    out.push_back(c);
  }
  for (const auto& [key, min_share] : wanted)
    if (!s.counts.count(key)) out.push_back({key.first, key.second, 0, 0.0, min_share});
  for (class_share& c : out) {
    if (c.min_share == 0) continue;
    // one-sided: below only where so few cases are improbable at the minimum share, so a
    // correct kernel fails by chance at most once in 1/share_test_level judgements
    if (binomial_lower_tail(0, s.cases, c.min_share) >= share_test_level)
      c.judged = c.share >= c.min_share ? class_share::verdict::reached : class_share::verdict::too_few_cases;
    else if (c.share >= c.min_share)
      c.judged = class_share::verdict::reached;
    else
      c.judged = binomial_lower_tail(c.count, s.cases, c.min_share) < share_test_level
                     ? class_share::verdict::below
                     : class_share::verdict::reached_within_chance;
  }
  std::sort(out.begin(), out.end(), [](const class_share& a, const class_share& b) {
    return a.dimension != b.dimension ? a.dimension < b.dimension : a.count > b.count;
  });
  return out;
}

std::string shown(const rc::detail::Example& example) {
  std::string text;
  for (const auto& [type, value] : example) text += value + "\n";
  return text;
}

}  // namespace

double binomial_lower_tail(std::int64_t count, std::int64_t cases, double share) {
  if (count >= cases || share <= 0) return 1.0;
  if (share >= 1) return 0.0;
  // the terms P(X = j) by their recurrence in log space, summed from j = 0
  const double log_p = std::log(share), log_q = std::log1p(-share);
  double log_term = double(cases) * log_q, total = 0;
  for (std::int64_t j = 0; j <= count; ++j) {
    total += std::exp(log_term);
    log_term += std::log(double(cases - j)) - std::log(double(j + 1)) + log_p - log_q;
  }
  return std::min(1.0, total);
}

capabilities domain_of(const kernel& k, const campaign_options& options) {
  capabilities domain = k.capabilities();
  if (options.epsilon) {
    const float e = *options.epsilon;
    if (!std::isfinite(e) || e < 0)
      throw std::invalid_argument("--epsilon " + std::to_string(e) + ": must be finite and >= 0");
    if (!domain.takes_epsilon(e))
      throw std::invalid_argument("--epsilon " + std::to_string(e) + ": the kernel does not take it (it declares " +
                                  domain.describe() + ")");
    domain.epsilons = {e};
  }
  if (!options.variant.empty()) {
    if (!is_variant_name(options.variant))
      throw std::invalid_argument("--variant " + options.variant + ": not a variant (normcheck variants lists them)");
    std::vector<nc_operation> kept;
    for (const nc_operation& op : domain.operations)
      if (variant_of(op) == options.variant) kept.push_back(op);
    if (kept.empty())
      throw std::invalid_argument("--variant " + options.variant + ": the kernel does not declare it (it declares " +
                                  domain.describe() + ")");
    domain.operations = kept;
  }
  return domain;
}

std::int64_t planned_cases(const property& p, const campaign_options& options) {
  const std::int64_t wanted =
      options.cases > 0 ? options.cases : std::max<std::int64_t>(1, std::llround(double(p.cases) * options.scale));
  const std::int64_t floor = std::max<std::int64_t>(wanted, p.min_cases);
  return p.max_cases > 0 ? std::min<std::int64_t>(floor, p.max_cases) : floor;
}

std::string skip_reason(const property& p, const kernel& k, const campaign_options& options) {
  if (!p.device_only.empty() && !k.device_memory()) return "needs a backend with device memory: " + p.device_only;
  if (p.needs_backend)
    if (const std::string why = p.needs_backend(k); !why.empty()) return "not exercised: " + why;
  const capabilities domain = domain_of(k, options);
  if (!p.variants && !domain.serves_plain())
    return "not exercised: it draws the plain operation (rmsnorm), which " +
           std::string(options.variant.empty() ? "the kernel does not declare" : "--variant " + options.variant + " leaves out");
  if (p.needs)
    if (const std::string why = p.needs(domain); !why.empty()) return "not exercised: " + why;
  // a property of y in x's dtype draws no quantized output (abi.h "Variants")
  if (p.variants && !p.quantized &&
      std::all_of(domain.operations.begin(), domain.operations.end(), [](const nc_operation& op) { return quantizes(op); }))
    return "not exercised: every operation drawn is a quantized output, which it does not draw";
  return "";
}

std::vector<std::string> declared_variants(const kernel& k) {
  std::vector<std::string> out;
  for (const variant_info& v : variants)
    for (const nc_operation& op : k.capabilities().operations)
      if (variant_of(op) == v.name) {
        out.emplace_back(v.name);
        break;
      }
  return out;
}

property_result run_property(const property& p, const kernel& k, const campaign_options& options) {
  if (std::string why = skip_reason(p, k, options); !why.empty()) {
    property_result skipped;
    skipped.name = p.name;
    skipped.family = p.family;
    skipped.skipped = std::move(why);
    return skipped;
  }
  const capabilities domain = domain_of(k, options);
  const scoped_domain drawing(domain);
  run_state s{p, k, options};
  s.planned = planned_cases(p, options);

  const auto body = [&s] {
    const norm_case c = *s.p.gen;
    // past the shrink budget every further candidate "passes" unchecked, so RapidCheck
    // accepts no more steps and stops at the smallest failing case found so far
    if (s.first_failure && s.options.shrink_seconds > 0 &&
        std::chrono::duration<double>(clock::now() - *s.first_failure).count() > s.options.shrink_seconds) {
      s.shrink_cut = true;
      return;
    }
    observation o;
    if (s.options.on_case) s.options.on_case(c);
    try {
      s.p.check(s.k, c, o);
    } catch (const std::exception& e) {
      s.failing = c;
      s.failing_message = e.what();
      if (!s.first_failure) s.first_failure = clock::now();
      throw;
    }
    s.pending = std::move(o);
  };

  rc::detail::TestParams params;
  params.seed = options.seed;
  params.maxSuccess = int(s.planned);
  params.maxSize = 100;  // RapidCheck's own limit (issue #289); the profiles set the scale
  rc::detail::TestMetadata metadata;
  metadata.id = p.name;
  metadata.description = p.name;
  listener events(s);
  // RapidCheck's configuration (read from RC_PARAMS) only for its reproduce strings: loading it
  // otherwise would print a seed that is not this campaign's
  static const std::unordered_map<std::string, rc::detail::Reproduce> no_reproduce;
  const auto& reproduce = std::getenv("RC_PARAMS") ? rc::detail::configuration().reproduce : no_reproduce;
  const rc::detail::TestResult result =
      rc::detail::checkProperty(rc::detail::toProperty(body), metadata, params, events, reproduce);

  property_result r;
  r.name = p.name;
  r.family = p.family;
  r.planned = s.planned;
  r.cases = s.cases;
  r.seconds = s.seconds();
  r.max_error_in_bounds = s.max_units;
  r.fixed_table_misses = s.table_misses;
  r.shrinks = s.shrinks;
  r.distribution = distribution_of(s, domain);

  rc::detail::FailureResult failure;
  rc::detail::GaveUpResult gave_up;
  rc::detail::Error error;
  if (result.match(failure)) {
    r.failed = true;
    r.failure = s.failing_message;
    r.counterexample = shown(failure.counterExample);
    if (s.shrink_cut)
      r.counterexample += "(shrinking stopped after its budget of " + std::to_string(int(options.shrink_seconds)) +
                          " s: NORMCHECK_SHRINK_SECONDS)\n";
    rc::detail::Configuration config;
    config.testParams = params;
    config.reproduce[p.name] = failure.reproduce;
    r.reproduce = "RC_PARAMS=\"" + rc::detail::configToMinimalString(config) + "\"";
    if (s.failing) {
      case_file file{*s.failing, {}};
      file.metadata = {{"origin", "property"},
                       {"property", p.name},
                       {"backend", k.backend()},
                       {"kernel", k.path()},
                       {"kernel_name", k.name()},
                       {"seed", seed_text(options.seed)},
                       {"reproduce", r.reproduce},
                       {"failure", s.failing_message.substr(0, s.failing_message.find('\n'))}};
      if (!options.machine.empty()) file.metadata["machine"] = options.machine;
      r.case_file = options.case_dir + "/" + p.name + "-" + seed_text(options.seed) + ".case";
      // a case file that cannot be written must not lose the counterexample or end the campaign
      try {
        write_case_file(r.case_file, file);
      } catch (const std::exception& e) {
        r.case_file_error = e.what();
        r.unsaved_case = to_text(file);
        r.case_file.clear();
      }
    }
  } else if (result.match(gave_up)) {
    r.failed = true;
    r.failure = "gave up after " + std::to_string(gave_up.numSuccess) + " cases: " + gave_up.description;
  } else if (result.match(error)) {
    r.failed = true;
    r.failure = "RapidCheck error: " + error.description;
  }
  for (const class_share& c : r.distribution) r.distribution_short |= c.judged == class_share::verdict::below;
  return r;
}

double case_scale_from_environment() {
  const std::optional<std::string> value = environment_value("NORMCHECK_CASE_SCALE");
  const char* text = value ? value->c_str() : nullptr;
  if (text == nullptr || *text == '\0') return 1.0;
  char* end = nullptr;
  const double scale = std::strtod(text, &end);
  if (*end != '\0' || !(scale > 0) || !(scale <= 1000))
    throw std::invalid_argument(std::string("NORMCHECK_CASE_SCALE = '") + text + "': must be a number in (0, 1000]");
  return scale;
}

double shrink_seconds_from_environment() {
  const std::optional<std::string> value = environment_value("NORMCHECK_SHRINK_SECONDS");
  const char* text = value ? value->c_str() : nullptr;
  if (text == nullptr || *text == '\0') return 30.0;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  if (*end != '\0' || !(seconds >= 0) || !std::isfinite(seconds))
    throw std::invalid_argument(std::string("NORMCHECK_SHRINK_SECONDS = '") + text + "': must be a number >= 0");
  return seconds;
}

std::optional<float> epsilon_from_environment() {
  const std::optional<std::string> value = environment_value("NORMCHECK_EPSILON");
  if (!value) return std::nullopt;
  char* end = nullptr;
  const float e = std::strtof(value->c_str(), &end);
  if (*end != '\0' || !std::isfinite(e) || e < 0)
    throw std::invalid_argument("NORMCHECK_EPSILON = '" + *value + "': must be a finite number >= 0");
  return e;
}

std::string variant_from_environment() {
  const std::string value = environment_value("NORMCHECK_VARIANT").value_or("");
  if (!value.empty() && !is_variant_name(value))
    throw std::invalid_argument("NORMCHECK_VARIANT = '" + value + "': not a variant (normcheck variants lists them)");
  return value;
}

std::uint64_t seed_from_environment() {
  const std::optional<std::string> value = environment_value("NORMCHECK_SEED");
  const char* text = value ? value->c_str() : nullptr;
  if (text != nullptr && *text != '\0') {
    char* end = nullptr;
    errno = 0;
    const unsigned long long seed = std::strtoull(text, &end, 10);
    if (!std::isdigit(static_cast<unsigned char>(*text)) || *end != '\0' || errno == ERANGE)
      throw std::invalid_argument(std::string("NORMCHECK_SEED = '") + text +
                                  "': must be an integer in [0, 2^64 - 1]");
    return seed;
  }
  std::random_device device;
  return (std::uint64_t(device()) << 32) | device();
}

std::string format_distribution(const property_result& r) {
  // the columns as wide as their longest entry, two spaces apart
  std::size_t dimension = 9, cls = 5;
  for (const class_share& c : r.distribution)
    dimension = std::max(dimension, c.dimension.size()), cls = std::max(cls, c.cls.size());
  const int dw = int(dimension + 2), cw = int(cls + 2);
  std::ostringstream out;
  out << "  " << std::left << std::setw(dw) << "dimension" << std::setw(cw) << "class" << std::right << std::setw(7)
      << "cases" << std::setw(9) << "share" << std::setw(9) << "minimum" << "  verdict\n";
  for (const class_share& c : r.distribution) {
    out << "  " << std::left << std::setw(dw) << c.dimension << std::setw(cw) << c.cls << std::right << std::setw(7)
        << c.count << std::setw(8) << std::fixed << std::setprecision(1) << 100 * c.share << "%";
    if (c.min_share > 0) out << std::setw(8) << std::setprecision(1) << 100 * c.min_share << "%";
    else out << std::setw(9) << "";
    switch (c.judged) {
      case class_share::verdict::reported: break;
      case class_share::verdict::reached: out << "  reached"; break;
      case class_share::verdict::below: out << "  BELOW MINIMUM"; break;
      case class_share::verdict::too_few_cases: out << "  too few cases to judge"; break;
      case class_share::verdict::reached_within_chance: out << "  below, within chance"; break;
    }
    out << "\n";
  }
  return out.str();
}

kernel select_backend(const std::string& backend, std::string* why_not) {
  if (backend == "simt" || backend == "cuda") return kernel::shipped(backend);
  try {
    kernel cuda = kernel::shipped("cuda");
    if (cuda.available()) return cuda;
    if (why_not) *why_not = "the cuda plugin loads but no CUDA device is present";
  } catch (const std::exception& e) {
    if (why_not) *why_not = e.what();
  }
  return kernel::shipped("simt");
}

}  // namespace nc::harness
