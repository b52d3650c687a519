#include "fuzz_session.hpp"

#include <bit>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "normcheck/environment.hpp"
#include "normcheck/harness/campaign.hpp"
#include "normcheck/harness/case_file.hpp"
#include "normcheck/harness/failure.hpp"
#include "normcheck/harness/property.hpp"
#include "normcheck/harness/worker.hpp"

namespace nc::fuzz {

namespace {

bool tags_on = false;
std::map<std::string, std::int64_t> tally;
std::string current_file;
std::function<std::string(const std::string&)> case_writer;

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

void write_case(const std::string& failure) {
  const char* path = env("NORMCHECK_FUZZ_CASE_OUT");
  if (!path || !case_writer) return;
  std::ofstream(path) << case_writer(failure);
}

}  // namespace

harness::norm_case norm_case_of(const call_spec& c, const arena& a) {
  harness::norm_case out;
  out.m = c.m, out.n = c.n, out.epsilon = c.epsilon, out.op = c.op;
  out.x_dtype = c.ops[op_x].dtype, out.gamma_dtype = c.ops[op_gamma].dtype;
  const auto rows = [&](int k) {
    const operand& o = c.ops[std::size_t(k)];
    return harness::matrix_layout{o.offset, o.row_stride, o.col_stride};
  };
  const auto entries = [&](int k) {
    const operand& o = c.ops[std::size_t(k)];
    return harness::vector_layout{o.offset, o.col_stride};
  };
  out.layout = {rows(op_x), rows(op_y), rows(op_dy), rows(op_dx), entries(op_gamma), entries(op_r), entries(op_dgamma)};
  out.x = a.elements(c, op_x), out.gamma = a.elements(c, op_gamma);
  if (c.uses(op_dy)) out.dy = a.elements(c, op_dy);
  return out;
}

harness::outputs outputs_of(const call_spec& c, const arena& a) {
  harness::outputs out;
  for (auto [k, values] : {std::pair{op_y, &out.y}, {op_r, &out.r}, {op_dx, &out.dx}, {op_dgamma, &out.dgamma}})
    if (c.writes(k)) *values = a.elements(c, k);
  return out;
}

const std::vector<const char*>& judged_properties() {
  static const std::vector<const char*> names = {"y_and_r_match_the_exact_oracle", "dx_matches_the_exact_oracle",
                                                 "dgamma_matches_the_exact_oracle"};
  return names;
}

std::string judged_property_of(const std::string& failure) {
  for (const char* name : judged_properties())
    if (failure.rfind(name, 0) == 0) return name;
  return {};
}

const harness::property& judging_property(const char* target, const char* name, const call_spec& call) {
  const harness::property* p = harness::find_property(name);
  if (p == nullptr || !p->judge)
    violation(target, std::string("no property judging a given run named ") + name + " (a bug of the target)",
              describe(call));
  return *p;
}

bool judge_with(const char* target, const harness::property& p, const kernel& k, const harness::norm_case& c,
                const harness::outputs& out, const call_spec& call, harness::observation& o) {
  // a property the kernel's capabilities rule out (a forward-only kernel's dx) is not its finding
  if (p.needs && !p.needs(k.capabilities()).empty()) return false;
  try {
    p.judge(k, c, out, o);
  } catch (const harness::property_failure& e) {
    violation(target, p.name + ": " + e.what(), describe(call));
  }
  return true;
}

void judge_outputs(const char* target, const kernel& k, const harness::norm_case& c, const harness::outputs& out,
                   bool forward_ran, bool backward_ran, const call_spec& call) {
  for (const char* name : judged_properties()) {
    const harness::property& p = judging_property(target, name, call);
    if (!(p.judged_calls == harness::calls::forward ? forward_ran : backward_ran)) continue;
    harness::observation o;
    if (!judge_with(target, p, k, c, out, call, o)) continue;
    if (const auto domain = o.tags.find("domain"); domain != o.tags.end()) tag("domain " + domain->second);
  }
}

int run_input(const char* target, void (*body)(const std::uint8_t*, std::size_t), const std::uint8_t* data,
              std::size_t size) {
  try {
    body(data, size);
  } catch (const std::exception& e) {
    violation(target, std::string("an unexpected exception: ") + e.what(), "(see the input)");
  }
  return 0;
}

const kernel& plugin() {
  static const kernel k = [] {
    // one OS thread for the simt blocks: deterministic, and cheapest for small calls
    setenv("NORMCHECK_SIMT_THREADS", "1", 0);
    // a build tree keeps the shipped plugins in ../lib; OSS-Fuzz's $OUT holds them in lib/ beside
    // the binary
    namespace fs = std::filesystem;
    std::error_code ec;
    const std::string backend = environment_value("NORMCHECK_BACKEND").value_or("simt");
    const fs::path here = fs::read_symlink("/proc/self/exe", ec).parent_path();
    const std::string name = "libnormcheck_" + backend + ".so";
    if (!environment_value("NORMCHECK_KERNEL") && !fs::exists(kernel::shipped_path(backend), ec))
      for (const fs::path& p : {here / "lib" / name, here / name})
        if (fs::exists(p, ec)) return kernel::load(p.string());
    // else the one resolver's rule: NORMCHECK_KERNEL, NORMCHECK_BACKEND, simt
    return harness::resolve_kernel({std::nullopt, std::nullopt, "simt"}, {});
  }();
  return k;
}

harness::arena& input_arena() {
  // never destroyed: at exit the plugin's own statics may be gone before it could free its memory
  static harness::arena& a = *new harness::arena(plugin(), fuzz_limits);
  return a;
}

const capabilities& declaration() {
  static const capabilities declared = [] {
    capabilities d = plugin().capabilities();
    try {
      if (const std::optional<float> e = harness::epsilon_from_environment()) {
        if (!d.takes_epsilon(*e)) throw std::invalid_argument("NORMCHECK_EPSILON: the kernel does not take it (it declares " + d.describe() + ")");
        d.epsilons = {*e};
      }
    } catch (const std::invalid_argument& e) {
      std::fprintf(stderr, "==normcheck-fuzz== %s\n", e.what());
      std::exit(64);
    }
    return d;
  }();
  return declared;
}

void enable_tags() { tags_on = true; }
void tag(const std::string& name) {
  if (tags_on) ++tally[name];
}
const std::map<std::string, std::int64_t>& tags() { return tally; }

void set_current_file(const std::string& path) { current_file = path; }

void set_case_writer(std::function<std::string(const std::string&)> writer) {
  case_writer = std::move(writer);
  write_case("");
}

void violation(const char* target, const std::string& what, const std::string& call) {
  std::fprintf(stderr, "\n==normcheck-fuzz== VIOLATION in %s on %s (%s)\n  %s\n  call: %s\n", target,
               plugin().name().c_str(), plugin_path_for_files().c_str(), what.c_str(), call.c_str());
  if (!current_file.empty())
    std::fprintf(stderr, "  reproduce: %s_replay %s\n", target, current_file.c_str());
  else
    std::fprintf(stderr, "  reproduce: %s_replay <the crash file libFuzzer writes below>\n", target);
  write_case(what);
  std::fflush(stderr);
  std::abort();
}

std::string plugin_path_for_files() {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(plugin().path(), ec);
  const fs::path rel = fs::relative(p, fs::current_path(), ec);
  if (!ec && !rel.empty() && rel.begin()->string() != "..") return rel.string();
  return fs::path(plugin().path()).filename().string();
}

std::string hex_bytes(const std::uint8_t* data, std::size_t size) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * size);
  for (std::size_t i = 0; i < size; ++i) out += digits[data[i] >> 4], out += digits[data[i] & 15];
  return out;
}

std::string case_text(const call_spec& c, const std::vector<std::uint32_t>& x, const std::vector<std::uint32_t>& gamma,
                      const std::vector<std::uint32_t>& dy, const std::map<std::string, std::string>& metadata) {
  harness::case_file file;
  harness::norm_case& v = file.value;
  v.m = c.m;
  v.n = c.n;
  v.x_dtype = c.ops[op_x].dtype;
  v.gamma_dtype = c.ops[op_gamma].dtype;
  v.epsilon = c.epsilon;
  auto matrix = [&](int k) {
    const operand& o = c.ops[std::size_t(k)];
    return harness::matrix_layout{o.offset, o.row_stride, o.col_stride};
  };
  auto vector = [&](int k) {
    const operand& o = c.ops[std::size_t(k)];
    return harness::vector_layout{o.offset, o.col_stride};
  };
  v.layout = {matrix(op_x), matrix(op_y), matrix(op_dy), matrix(op_dx), vector(op_gamma), vector(op_r), vector(op_dgamma)};
  v.x = x;
  v.gamma = gamma;
  v.dy = dy;
  file.metadata = metadata;
  return harness::to_text(file);
}

}  // namespace nc::fuzz

// both targets' libFuzzer initialization (and the replay main's): the plugin loaded once, before
// the first input
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  nc::fuzz::plugin();
  return 0;
}

// AddressSanitizer's defaults for the targets (ASAN_OPTIONS overrides them): a 16 MiB quarantine
// of freed memory instead of 256. A use after free of the last 16 MiB freed is still caught;
// with 256 every input's arena and outputs came from memory never touched, whose page faults
// cost value_fuzzer 15% of its time on its corpus (and 600 MB of memory where 155 do)
extern "C" const char* __asan_default_options() { return "quarantine_size_mb=16"; }
