// A small campaign with one mutant of every status, for the report tests and the sample page.
#pragma once

#include "normcheck/mutation_report.hpp"

namespace nc::reports::test {

inline campaign sample_campaign() {
  campaign c;
  c.backend = "simt";
  c.kernel = "libnormcheck_simt.so";
  c.seed = "42";
  c.cases = 50;
  c.schedules = {"1"};
  c.baseline_seconds = 12.5;
  c.started = "2026-12-02T17:00:00Z";
  c.properties = {{"differential.forward", "differential"}, {"differential.backward", "differential"},
                  {"metamorphic.batch_invariance", "metamorphic"}, {"contract.guard_bands", "contract"}};
  c.sources["kernels/src/rmsnorm_forward.cuh"] =
      "// forward\n"
      "    const float r = rsqrtf(ss / static_cast<float>(p.n) + p.epsilon);\n"
      "    if (lane == 0) p.r[row * p.r_stride] = r;\n";
  const std::string& src = c.sources["kernels/src/rmsnorm_forward.cuh"];
  auto add = [&](const char* id, status s, std::string search, std::string replace) {
    mutant m;
    m.id = id;
    m.bug_class = "a bug class";
    m.summary = std::string("what ") + id + " changes";
    m.mirrors = "no public issue found";
    m.expected_killer = "differential.forward";
    m.file = "kernels/src/rmsnorm_forward.cuh";
    m.where = changed_region(src, src.find(search), search, replace, m.replacement);
    m.result = s;
    for (const auto& p : c.properties) m.covered_by.push_back(p.name);
    m.seconds = 3;
    c.mutants.push_back(m);
    return &c.mutants.back();
  };
  mutant* k = add("fwd-mean-block", status::killed, "static_cast<float>(p.n)", "static_cast<float>(block)");
  k->kills = {{"differential.forward", "differential", false, 12, 0.4, "m=1 n=257 fp32", "y off by 41%", true},
              {"contract.guard_bands", "contract", false, 3, 0.1, "", "guard written"}};
  k->cases_to_kill = 12;
  k->seconds_to_kill = 0.4;
  k->reason = "killed by differential.forward after 12 cases: y off by 41%\nfirst counterexample: m=1 n=257 fp32";
  mutant* f = add("vector-no-align-check", status::killed, "+ p.epsilon", "");
  f->kills = {{"differential.forward", "differential", true, 2, 0.05, "", "simt: misaligned 16-byte access", true}};
  f->cases_to_kill = 2;
  f->seconds_to_kill = 0.05;
  f->reason = "killed by differential.forward (a fault)";
  add("eps-dropped", status::survived, "+ p.epsilon", "")->reason = "no property failed";
  add("r-saved-rounded", status::timeout, "= r;", "= to_float(from_float<T>(r));")->reason = "no result within 92 s";
  mutant* g = add("row-offset-int32", status::no_coverage, "row * p.r_stride", "int(row * p.r_stride)");
  g->reason = "needs a GPU: M * row_stride >= 2^31";
  g->covered_by.clear();
  return c;
}

}  // namespace nc::reports::test
