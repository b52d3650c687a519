// The property suite: one gtest test per property of the registry (property.hpp), each run
// through the campaign library on the kernel under test — NORMCHECK_KERNEL (a plugin's
// path) or the shipped plugin of NORMCHECK_BACKEND (simt | cuda, default simt). Case
// counts scale with NORMCHECK_CASE_SCALE; the seed is NORMCHECK_SEED or fresh, and printed.
// A backend without its device exits 77, which ctest reports as skipped.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "normcheck/environment.hpp"
#include "normcheck/harness/campaign.hpp"
#include "normcheck/harness/case_file.hpp"
#include "normcheck/harness/exit_code.hpp"
#include "normcheck/harness/worker.hpp"

namespace {

using namespace nc::harness;

const nc::kernel* kernel_under_test = nullptr;
campaign_options options;

class property_test : public ::testing::Test {
 public:
  explicit property_test(const property& p) : p_(p) {}

  void TestBody() override {
    const property_result r = run_property(p_, *kernel_under_test, options);
    if (!r.skipped.empty()) GTEST_SKIP() << p_.name << ": " << r.skipped;
    std::cout << p_.name << ": " << r.cases << " of " << r.planned << " cases passed in " << r.seconds << " s ("
              << (r.seconds > 0 ? double(r.cases) / r.seconds : 0.0) << " cases/s), max error " << r.max_error_in_bounds
              << " bounds, " << r.fixed_table_misses << " elements outside the fixed table where it only reports\n"
              << format_distribution(r);
    if (r.failed) {
      std::string replay;
      if (!r.case_file.empty())
        replay = "\ncase file: " + std::filesystem::absolute(r.case_file).string() +
                 "\nreplay: normcheck replay " + std::filesystem::absolute(r.case_file).string();
      ADD_FAILURE() << r.failure << "\ncounterexample (after " << r.shrinks << " shrinks): " << r.counterexample
                    << "reproduce: " << r.reproduce << " " << ::testing::internal::GetArgvs()[0]
                    << " --gtest_filter=property." << p_.name << replay;
    }
    EXPECT_FALSE(r.distribution_short) << "an intended class of cases fell below its minimum share (table above)";
  }

 private:
  const property& p_;
};

}  // namespace

int main(int argc, char** argv) {
  // property_test --ctest-script FILE BACKEND...: the suite as ctest's tests (campaign.hpp)
  if (argc >= 4 && std::string(argv[1]) == "--ctest-script") {
    try {
      const std::vector<std::string> backends(argv + 3, argv + argc);
      const std::string script = ctest_script(std::filesystem::canonical("/proc/self/exe").string(), backends,
                                              nc::kernel::shipped("simt"));
      std::ofstream file(argv[2]);
      file << script;
      file.close();
      if (!file) throw std::runtime_error(std::string("cannot write ") + argv[2]);
      return 0;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "property_test --ctest-script: %s\n", e.what());
      return 1;
    }
  }
  ::testing::InitGoogleTest(&argc, argv);
  std::optional<nc::kernel> loaded;
  try {
    // the one resolver's rule with no flags: NORMCHECK_KERNEL, NORMCHECK_BACKEND, else simt
    loaded = resolve_kernel({std::nullopt, std::nullopt, "simt"}, isolation_from_environment());
    options.seed = seed_from_environment();
    options.scale = case_scale_from_environment();
    options.shrink_seconds = shrink_seconds_from_environment();
    options.variant = variant_from_environment();
  } catch (const nc::skipped_error& e) {
    std::fprintf(stderr, "property_test: %s\n", e.what());
    return nc::exit_skipped;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "property_test: %s\n", e.what());
    return 1;
  }
  const nc::kernel& k = *loaded;
  kernel_under_test = &k;
  options.case_dir = default_case_dir();
  std::printf("kernel under test: %s (%s) from %s\nseed: %llu (NORMCHECK_SEED=%llu reruns these cases), case scale %g\n",
              k.name().c_str(), k.backend().c_str(), k.path().c_str(), static_cast<unsigned long long>(options.seed),
              static_cast<unsigned long long>(options.seed), options.scale);
  if (!k.available()) {
    std::printf("no device for the %s backend: skipped\n", k.backend().c_str());
    return 77;
  }
  for (const property& p : all_properties())
    ::testing::RegisterTest("property", p.name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                            [&p]() -> ::testing::Test* { return new property_test(p); });
  return RUN_ALL_TESTS();
}
