// A property: a named claim about a kernel, the generator of the cases it is checked on, and
// the check of one case. The campaign (campaign.hpp) drives them through RapidCheck; the
// gtest suite, `normcheck check`, `normcheck run` and `normcheck replay` all use this one
// list (properties.cpp), so every front end checks the same properties.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <rapidcheck.h>

#include "normcheck/harness/case.hpp"
#include "normcheck/harness/execute.hpp"
#include "normcheck/kernel.hpp"

namespace nc::harness {

/// what one case showed besides pass or fail
struct observation {
  /// dimension ("forward path", "dtype", "alignment", "size", ...) -> the case's class
  std::map<std::string, std::string> tags;
  /// the largest |kernel − exact| / bound over the case's bounded comparisons (0 if none)
  double max_error_in_bounds = 0;
  /// elements outside the document's fixed atol/rtol table (verdict 1) where it only reports
  std::int64_t fixed_table_misses = 0;

  void tag(const std::string& dimension, const std::string& cls) { tags[dimension] = cls; }
};

/// a class a property's generator means to hit: the share of its cases must reach min_share
/// (judged by a one-sided binomial test, campaign.hpp). Only where the class can occur: a
/// dtype pair the kernel serves, a path the kernel lists (abi.h forward_paths/backward_paths),
/// layouts and sizes its capabilities allow (intent_applies in campaign.cpp)
/// why a property (or a class of its cases) cannot occur on a kernel drawn inside these
/// capabilities ("" if it can)
using requirement = std::function<std::string(const capabilities&)>;

struct intended_share {
  std::string dimension;
  std::string cls;
  double min_share;
  requirement needs = {};  ///< the class occurs only where this holds (empty: wherever the dimension allows)
  /// a class of cases that says this one could not occur on the kernel (a rule drawn that the
  /// call left nothing to break of): observed in a run, the share is not judged there
  std::optional<std::pair<std::string, std::string>> unless_observed = {};
};

/// the kind of claim a property makes: its family, each in a file of its own (properties.cpp)
/// (launch stays the last: the report's reader walks the families up to it)
enum class property_family { differential, contract, metamorphic, isolation, dispatch, variant, quantized, launch };
/// "differential", "contract", ...: how reports and the mutation runner spell a family
std::string_view family_name(property_family f);
/// a failure of this family is a wrong value, judged against the oracle or a relation: a kill by
/// it counts in the strict mutation score (a contract or isolation property's does not)
bool judges_values(property_family f);

struct property {
  std::string name;                 ///< the test name, a sentence in snake_case
  std::vector<std::string> groups;  ///< "forward", "backward", "gamma": what `normcheck check GROUP` runs
  int cases = 0;                    ///< cases at NORMCHECK_CASE_SCALE = 1
  rc::Gen<norm_case> gen;           ///< the cases, the property's parameters in norm_case::parameters
  /// checks one case; throws property_failure when the kernel breaks the claim
  std::function<void(const kernel&, const norm_case&, observation&)> check;
  std::vector<intended_share> intended;
  /// non-empty: the property needs a backend with device memory (its cases are too big for
  /// the simt backend's host memory) and is skipped elsewhere; says why
  std::string device_only;
  /// when > 0, no run takes more cases than this (cases that each take seconds)
  int max_cases = 0;
  /// what the property needs of the kernel's capabilities (empty: nothing); a property that
  /// cannot run is reported as not exercised, with the reason
  requirement needs;
  /// when > 0, no run takes fewer cases than this, whatever --cases or the scale ask (cheap
  /// cases, each of which draws one of many classes that must all occur: the contract rules)
  int min_cases = 0;
  /// the property draws any operation the kernel declares (abi.h "Variants"); else the plain
  /// one only, and it is not exercised where the drawing domain has no plain operation
  bool variants = false;
  /// with variants: it draws (and judges) quantized outputs too
  bool quantized = false;
  /// what the property needs of the plugin beyond device_only (its backend, a library of
  /// normcheck's): "" where it can run, else why not; such a run is reported as not exercised
  std::function<std::string(const kernel&)> needs_backend;
  /// its family: declared by the registry (properties.cpp), which adds each family's properties
  property_family family = property_family::differential;
  /// a property that judges one run of its case (the differential ones; the isolation property,
  /// whose judge makes the run it compares with): check is execute(k, c, judged_calls) then judge,
  /// so a caller that has run the case already (the value fuzzer runs each input once) judges
  /// those outputs without running the case again. Empty elsewhere
  std::function<void(const kernel&, const norm_case&, const outputs&, observation&)> judge;
  calls judged_calls = calls::forward;
};

/// every property, in the order a campaign runs them
const std::vector<property>& all_properties();

/// the property of a name, or null
const property* find_property(const std::string& name);

/// one way the contract property breaks a call: its sentence, the call it breaks, and the id of
/// the rule it breaks in normcheck/contract_rules.hpp
struct contract_breaker {
  std::string name;
  bool backward = false;
  std::string rule_id;
  /// it breaks the rule at its exact boundary (the first broken value beside the last valid
  /// one) in a share of its cases, or in all of them
  bool boundary = false;
};
std::vector<contract_breaker> contract_breakers();

}  // namespace nc::harness
