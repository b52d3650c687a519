#include "fuzz_session.hpp"

#include <bit>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "normcheck/environment.hpp"

#if NORMCHECK_FUZZ_HAVE_HARNESS
#include "normcheck/harness/case_file.hpp"
#endif

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

const kernel& plugin() {
  static const kernel k = [] {
    // one OS thread for the simt blocks: deterministic, and cheapest for small calls
    setenv("NORMCHECK_SIMT_THREADS", "1", 0);
    if (const auto spec = environment_value("NORMCHECK_KERNEL")) return kernel::load(*spec);
    const std::string backend = environment_value("NORMCHECK_BACKEND").value_or("simt");
    // a build tree keeps plugins in ../lib; OSS-Fuzz's $OUT holds them in lib/ beside the binary
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path here = fs::read_symlink("/proc/self/exe", ec).parent_path();
    const std::string name = "libnormcheck_" + backend + ".so";
    for (const fs::path& p : {fs::path(kernel::shipped_path(backend)), here / "lib" / name, here / name})
      if (fs::exists(p, ec)) return kernel::load(p.string());
    return kernel::shipped(backend);
  }();
  return k;
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
#if NORMCHECK_FUZZ_HAVE_HARNESS
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
#else
  // the same format, written here until the harness library exists
  std::ostringstream out;
  auto one_line = [](std::string s) {
    std::string t;
    for (char ch : s) t += ch == '\n' ? std::string(" ") : ch == '#' ? std::string("%23") : std::string(1, ch);
    return t;
  };
  auto hex = [](std::uint32_t bits, int digits) {
    char text[16];
    std::snprintf(text, sizeof text, "%0*x", digits, bits);
    return std::string(text);
  };
  out << "# a normcheck case: `normcheck replay FILE` re-runs it (format: harness/include/normcheck/harness/case_file.hpp)\n"
      << "format = normcheck-case 1\n";
  for (const auto& [key, value] : metadata) out << key << " = " << one_line(value) << "\n";
  out << "m = " << c.m << "\nn = " << c.n << "\nx_dtype = " << dtype_text(c.ops[op_x].dtype)
      << "\ngamma_dtype = " << dtype_text(c.ops[op_gamma].dtype) << "\nepsilon = 0x"
      << hex(std::bit_cast<std::uint32_t>(c.epsilon), 8) << "  # " << c.epsilon << "\n";
  for (int k : {op_x, op_y, op_dy, op_dx}) {
    const operand& o = c.ops[std::size_t(k)];
    out << o.name << ".offset = " << o.offset << "\n" << o.name << ".row_stride = " << o.row_stride << "\n"
        << o.name << ".col_stride = " << o.col_stride << "\n";
  }
  for (int k : {op_gamma, op_r, op_dgamma}) {
    const operand& o = c.ops[std::size_t(k)];
    out << o.name << ".offset = " << o.offset << "\n" << o.name << ".stride = " << o.col_stride << "\n";
  }
  auto block = [&](const char* name, nc_dtype type, const std::vector<std::uint32_t>& bits, std::int64_t rows,
                   std::int64_t cols, bool matrix) {
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < cols; j += 8) {
        out << name << "[";
        if (matrix) out << i << ",";
        out << j << "] =";
        for (std::int64_t k = j; k < std::min(cols, j + 8); ++k)
          out << " " << hex(bits[std::size_t(i * cols + k)], int(size_of(type) * 2));
        out << "\n";
      }
  };
  block("x", c.ops[op_x].dtype, x, c.m, c.n, true);
  block("gamma", c.ops[op_gamma].dtype, gamma, 1, c.n, false);
  block("dy", c.ops[op_x].dtype, dy, c.m, c.n, true);
  return out.str();
#endif
}

}  // namespace nc::fuzz
