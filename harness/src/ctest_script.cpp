// ctest's property suite, written from the registry (properties.cpp) and the shipped kernel's
// declaration: harness/test/CMakeLists.txt runs `property_test --ctest-script` after every
// build and ctest includes what it writes, so a property added to the registry is a ctest test
// without a list to keep beside it.
#include <sstream>

#include "normcheck/harness/campaign.hpp"
#include "normcheck/variant.hpp"

namespace nc::harness {

namespace {

// a CMake bracket argument: any text, quotes and semicolons included
std::string bracket(const std::string& text) { return "[==[" + text + "]==]"; }

void add_test(std::ostream& out, const std::string& name, const std::string& binary, const std::string& property,
              const std::string& labels, const std::string& environment, bool gpu) {
  out << "add_test(" << bracket(name) << " " << bracket(binary) << " " << bracket("--gtest_filter=property." + property)
      << ")\nset_tests_properties(" << bracket(name) << " PROPERTIES LABELS " << bracket(labels + (gpu ? ";gpu" : ""))
      << " TIMEOUT 1200 ENVIRONMENT " << bracket(environment) << (gpu ? " SKIP_RETURN_CODE 77" : "") << ")\n";
}

bool quantized_variant(const kernel& k, const std::string& variant) {
  for (const nc_operation& op : k.capabilities().operations)
    if (variant_of(op) == variant && quantizes(op)) return true;
  return false;
}

}  // namespace

std::string ctest_script(const std::string& binary, const std::vector<std::string>& backends, const kernel& shipped) {
  std::ostringstream out;
  out << "# written by property_test --ctest-script from the registry of properties; do not edit\n";
  for (const std::string& backend : backends) {
    const bool gpu = backend != "simt";
    const std::string environment = "NORMCHECK_BACKEND=" + backend;
    // every property, labelled `property` (and `variant` for the variants' own families); the
    // properties that need device memory on a device's backend only
    for (const property& p : all_properties()) {
      if (!gpu && !p.device_only.empty()) continue;
      const bool variant_family = p.family == property_family::variant || p.family == property_family::quantized;
      add_test(out, "property_" + backend + "." + p.name, binary, p.name, variant_family ? "property;variant" : "property",
               environment, gpu);
    }
    // each variant the shipped kernel declares alone, through the differential properties that
    // draw variants (a quantized one through those that draw quantized outputs), at a fifth of
    // their cases
    for (const std::string& variant : declared_variants(shipped)) {
      if (variant == "rmsnorm") continue;
      const bool quantized = quantized_variant(shipped, variant);
      for (const property& p : all_properties())
        if (p.family == property_family::differential && p.variants && (p.quantized || !quantized))
          add_test(out, "variant_" + backend + "." + variant + "." + p.name, binary, p.name, "variant",
                   environment + ";NORMCHECK_VARIANT=" + variant + ";NORMCHECK_CASE_SCALE=0.2", gpu);
    }
  }
  return out.str();
}

}  // namespace nc::harness
