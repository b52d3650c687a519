// The registry: every property, in the order a campaign runs them. Each family lives in a file
// of its own (a property is a claim, the cases it draws and the check of one case):
//
//   differential   y and r, dx, dgamma against the exact oracle, both verdicts of DESIGN.md, and
//                  dx and dgamma on a workspace left dirty (differential_properties.cpp)
//   contract       every rule of the kernel contract rejects a call that breaks it, naming the
//                  argument, before anything is written (contract_property.cpp)
//   metamorphic    scaling by 2^k, batch invariance, layout invariance, determinism, row
//                  permutation, the closed form of Σ x·dx, linearity of the backward in dy
//                  (metamorphic_properties.cpp)
//   isolation      a NaN or Inf in one row leaves every other row's bits alone
//                  (isolation_properties.cpp)
//   dispatch       the path table's boundaries, a batch taller than the grid
//                  (dispatch_properties.cpp)
//   variants, quantized outputs, the launch (grids, far rows, late inputs, accesses): their own
//                  files (variant_properties.cpp, quantized_properties.cpp, launch_properties.cpp)
// Every run of a kernel goes through execute() (execute.hpp), so every case of every property
// also checks guard bands, gaps, inputs and that every output element was written.
#include <string>
#include <vector>

#include "normcheck/harness/property.hpp"
#include "property_kit.hpp"

namespace nc::harness {

const std::vector<property>& all_properties() {
  static const std::vector<property> properties = [] {
    std::vector<property> list;
    const auto add = [&list](property_family family, std::vector<property> members) {
      for (property& p : members) {
        p.family = family;
        list.push_back(std::move(p));
      }
    };
    using f = property_family;
    add(f::differential, differential_properties());
    // early in the order, cheap (1000 cases in about a second on simt): a mutation run stops a
    // mutant's suite at its first kill, and a contract mutant's suite ran every property first
    add(f::contract, {contract_property()});
    // cheap too (400 cases in about 7 s on simt), and the only killer of a read whose value is
    // never used
    add(f::launch, {access_property()});
    // two backward calls a case, the second on the workspace the first left dirty (early in the
    // order: a first-kill mutation run gets its mutants here in 25 s, not 70 s; the few others
    // that get this far pay 6 s)
    add(f::differential, {reused_workspace_property()});
    add(f::metamorphic, metamorphic_properties());
    add(f::isolation, {isolation_property()});
    add(f::dispatch, dispatch_properties());
    add(f::variant, variant_properties());
    add(f::quantized, quantized_properties());
    add(f::launch, launch_properties());
    return list;
  }();
  return properties;
}

std::string_view family_name(property_family f) {
  switch (f) {
    case property_family::differential: return "differential";
    case property_family::contract: return "contract";
    case property_family::metamorphic: return "metamorphic";
    case property_family::isolation: return "isolation";
    case property_family::dispatch: return "dispatch";
    case property_family::variant: return "variant";
    case property_family::quantized: return "quantized";
    case property_family::launch: return "launch";
  }
  return "unknown";
}

bool judges_values(property_family f) { return f != property_family::contract && f != property_family::isolation; }

const property* find_property(const std::string& name) {
  for (const property& p : all_properties())
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace nc::harness
