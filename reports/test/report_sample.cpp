// Writes the sample campaign's reports into a folder, for the schema and browser checks:
//   report_sample OUT_DIR [ELEMENTS_JS]
#include <cstdio>

#include "normcheck/mutation_report.hpp"
#include "sample_campaign.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: report_sample OUT_DIR [mutation-test-elements.js]\n");
    return 2;
  }
  for (const auto& p : nc::reports::write_reports(nc::reports::test::sample_campaign(), argv[1],
                                                  argc > 2 ? argv[2] : ""))
    std::printf("%s\n", p.c_str());
  return 0;
}
