#include "normcheck/harness/case_file.hpp"

#include <bit>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "normcheck/environment.hpp"

namespace nc::harness {

namespace {

constexpr const char* format_line = "normcheck-case 1";
constexpr std::int64_t values_per_line = 8;

std::string hex(std::uint32_t bits, int digits) {
  char text[16];
  std::snprintf(text, sizeof text, "%0*x", digits, bits);
  return text;
}

void write_block(std::ostream& out, const char* name, nc_dtype type, const std::vector<std::uint32_t>& bits,
                 std::int64_t rows, std::int64_t cols, bool matrix) {
  const int digits = int(size_of(type) * 2);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; j += values_per_line) {
      out << name << "[";
      if (matrix) out << i << ",";
      out << j << "] =";
      std::ostringstream decimals;
      for (std::int64_t k = j; k < std::min(cols, j + values_per_line); ++k) {
        const std::uint32_t b = bits[std::size_t(i * cols + k)];
        out << " " << hex(b, digits);
        decimals << " " << value_of(type, b);
      }
      out << "  #" << decimals.str() << "\n";
    }
}

void write_matrix_layout(std::ostream& out, const char* name, const matrix_layout& l) {
  out << name << ".offset = " << l.offset << "\n"
      << name << ".row_stride = " << l.row_stride << "\n"
      << name << ".col_stride = " << l.col_stride << "\n";
  if (l.head_stride != 0) out << name << ".head_stride = " << l.head_stride << "\n";
  if (l.batch_stride != 0) out << name << ".batch_stride = " << l.batch_stride << "\n";
}

void write_vector_layout(std::ostream& out, const char* name, const vector_layout& l) {
  out << name << ".offset = " << l.offset << "\n" << name << ".stride = " << l.stride << "\n";
}

// metadata is one line without comments: newlines become spaces, '#' becomes %23
std::string one_line(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '\n') out += ' ';
    else if (ch == '#') out += "%23";
    else out += ch;
  }
  return out;
}

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

}  // namespace

std::string to_text(const case_file& file) {
  const norm_case& c = file.value;
  std::ostringstream out;
  out << "# a normcheck case: `normcheck replay FILE` re-runs it (format: harness/include/normcheck/harness/case_file.hpp)\n";
  out << "format = " << format_line << "\n";
  for (const auto& [key, value] : file.metadata) out << key << " = " << one_line(value) << "\n";
  out << "m = " << c.m << "\n" << "n = " << c.n << "\n";
  out << "x_dtype = " << dtype_name(c.x_dtype) << "\n" << "gamma_dtype = " << dtype_name(c.gamma_dtype) << "\n";
  out << "epsilon = 0x" << hex(std::bit_cast<std::uint32_t>(c.epsilon), 8) << "  # " << c.epsilon << "\n";
  write_matrix_layout(out, "x", c.layout.x);
  write_matrix_layout(out, "y", c.layout.y);
  write_matrix_layout(out, "dy", c.layout.dy);
  write_matrix_layout(out, "dx", c.layout.dx);
  write_vector_layout(out, "gamma", c.layout.gamma);
  write_vector_layout(out, "r", c.layout.r);
  write_vector_layout(out, "dgamma", c.layout.dgamma);
  // the operation (abi.h "Variants"): absent in a case of the plain operator
  if (!(c.op == nc_operation{})) {
    out << "variant = " << variant_of(c.op) << "  # " << describe_operation(c.op) << "\n";
    out << "op.residual = " << residual_name(c.op.residual) << "\n" << "op.in_place = " << c.op.in_place << "\n";
    out << "op.weight_offset = 0x" << hex(std::bit_cast<std::uint32_t>(c.op.weight_offset), 8) << "  # "
        << c.op.weight_offset << "\n";
    if (c.op.rows == NC_ROWS_HEADS) out << "op.rows = heads\n" << "heads = " << c.heads << "\n";
    if (c.op.rows == NC_ROWS_BATCHES)
      out << "op.rows = batches  # a 4-D view [batches, tokens, heads, N]\n" << "heads = " << c.heads << "\n"
          << "tokens = " << c.tokens << "\n";
    if (quantizes(c.op)) {
      out << "op.quant = " << quant_name(c.op.quant) << "\n" << "op.scale = " << scale_name(c.op.scale) << "\n"
          << "op.apply = " << apply_name(c.op.apply) << "\n";
      if (c.op.scale == NC_SCALE_PER_GROUP) out << "op.group = " << c.op.group << "\n";
      if (dynamic_scale(c.op))
        out << "op.scale_floor = 0x" << hex(std::bit_cast<std::uint32_t>(c.op.scale_floor), 8) << "  # "
            << c.op.scale_floor << "\n";
      else
        out << "scale = 0x" << hex(c.scale, 8) << "  # " << std::bit_cast<float>(c.scale) << "\n";
      write_matrix_layout(out, "scale", c.layout.scale);
    }
  }
  if (adds_residual(c.op)) {
    write_matrix_layout(out, "residual", c.layout.residual);
    write_matrix_layout(out, "residual_out", c.layout.residual_out);
    write_matrix_layout(out, "residual_grad", c.layout.residual_grad);
  }
  for (const auto& [key, value] : c.parameters) out << "param." << key << " = " << value << "\n";
  write_block(out, "x", c.x_dtype, c.x, c.m, c.n, true);
  write_block(out, "gamma", c.gamma_dtype, c.gamma, 1, c.n, false);
  write_block(out, "dy", c.x_dtype, c.dy, c.m, c.n, true);
  if (!c.dy2.empty()) write_block(out, "dy2", c.x_dtype, c.dy2, c.m, c.n, true);
  if (adds_residual(c.op)) {
    write_block(out, "residual", c.x_dtype, c.residual, c.m, c.n, true);
    write_block(out, "residual_grad", c.x_dtype, c.residual_grad, c.m, c.n, true);
  }
  return out.str();
}

case_file parse_case_file(const std::string& text) {
  case_file file;
  norm_case& c = file.value;
  std::map<std::string, std::pair<std::string, int>> keys;  // key -> (value, line)
  struct block_line {
    std::string name;
    std::int64_t row, col;
    std::string values;
    int line;
  };
  std::vector<block_line> blocks;

  std::istringstream in(text);
  std::string raw;
  int number = 0;
  const auto fail = [&](int line, const std::string& why) -> case_file_error {
    return case_file_error("case file line " + std::to_string(line) + ": " + why);
  };
  while (std::getline(in, raw)) {
    ++number;
    const std::string line = trim(raw.substr(0, raw.find('#')));
    if (line.empty()) continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos) throw fail(number, "expected `key = value`, got '" + line + "'");
    const std::string key = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    if (const auto bracket = key.find('['); bracket != std::string::npos) {
      block_line b{key.substr(0, bracket), 0, 0, value, number};
      const std::string index = key.substr(bracket + 1, key.size() - bracket - 2);
      if (key.back() != ']') throw fail(number, "a value block key ends in ']': '" + key + "'");
      char* end = nullptr;
      const long long first = std::strtoll(index.c_str(), &end, 10);
      if (*end == ',') {
        b.row = first;
        b.col = std::strtoll(end + 1, &end, 10);
      } else {
        b.col = first;
      }
      if (*end != '\0' || b.row < 0 || b.col < 0) throw fail(number, "bad index in '" + key + "'");
      blocks.push_back(std::move(b));
      continue;
    }
    if (!keys.emplace(key, std::make_pair(value, number)).second) throw fail(number, "key '" + key + "' given twice");
  }

  const auto take = [&](const std::string& key) -> std::pair<std::string, int> {
    const auto it = keys.find(key);
    if (it == keys.end()) throw case_file_error("case file: missing key '" + key + "'");
    auto v = it->second;
    keys.erase(it);
    return v;
  };
  const auto integer = [&](const std::string& key) {
    const auto [value, line] = take(key);
    char* end = nullptr;
    const long long v = std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0') throw fail(line, "'" + key + "' must be an integer, got '" + value + "'");
    return std::int64_t(v);
  };
  const auto dtype = [&](const std::string& key) {
    const auto [value, line] = take(key);
    const std::optional<nc_dtype> t = parse_dtype(value);
    if (!t) throw fail(line, "'" + key + "' must be fp32, fp16 or bf16, got '" + value + "'");
    return *t;
  };

  if (const auto [value, line] = take("format"); value != format_line)
    throw fail(line, "format must be '" + std::string(format_line) + "', got '" + value + "'");
  c.m = integer("m");
  c.n = integer("n");
  if (c.m < 0 || c.n < 1) throw case_file_error("case file: need m >= 0 and n >= 1");
  c.x_dtype = dtype("x_dtype");
  c.gamma_dtype = dtype("gamma_dtype");
  {
    const auto [value, line] = take("epsilon");
    char* end = nullptr;
    const unsigned long bits = std::strtoul(value.c_str(), &end, 16);
    if (value.rfind("0x", 0) != 0 || *end != '\0') throw fail(line, "epsilon must be fp32 bits in hex (0x...)");
    c.epsilon = std::bit_cast<float>(std::uint32_t(bits));
  }
  // a per-head view's head and batch strides are written only where they are not 0
  const auto matrix = [&](const std::string& name, matrix_layout& l) {
    l.offset = integer(name + ".offset");
    l.row_stride = integer(name + ".row_stride");
    l.col_stride = integer(name + ".col_stride");
    if (keys.count(name + ".head_stride")) l.head_stride = integer(name + ".head_stride");
    if (keys.count(name + ".batch_stride")) l.batch_stride = integer(name + ".batch_stride");
  };
  for (auto [name, l] : {std::pair<const char*, matrix_layout*>{"x", &c.layout.x}, {"y", &c.layout.y},
                         {"dy", &c.layout.dy}, {"dx", &c.layout.dx}})
    matrix(name, *l);
  for (auto [name, l] : {std::pair<const char*, vector_layout*>{"gamma", &c.layout.gamma}, {"r", &c.layout.r},
                         {"dgamma", &c.layout.dgamma}}) {
    l->offset = integer(std::string(name) + ".offset");
    l->stride = integer(std::string(name) + ".stride");
  }
  if (keys.count("op.residual")) {
    const auto [residual, line] = take("op.residual");
    if (residual == "none") c.op.residual = NC_RESIDUAL_NONE;
    else if (residual == "rounded") c.op.residual = NC_RESIDUAL_ROUNDED;
    else if (residual == "fp32") c.op.residual = NC_RESIDUAL_FP32;
    else throw fail(line, "op.residual must be none, rounded or fp32, got '" + residual + "'");
    const std::int64_t in_place = integer("op.in_place");
    if (in_place != 0 && in_place != 1) throw case_file_error("case file: op.in_place must be 0 or 1");
    c.op.in_place = std::uint32_t(in_place);
    const auto [offset, at] = take("op.weight_offset");
    char* end = nullptr;
    const unsigned long bits = std::strtoul(offset.c_str(), &end, 16);
    if (offset.rfind("0x", 0) != 0 || *end != '\0') throw fail(at, "op.weight_offset must be fp32 bits in hex (0x...)");
    c.op.weight_offset = std::bit_cast<float>(std::uint32_t(bits));
    if (keys.count("op.rows")) {
      const auto [rows, row_line] = take("op.rows");
      if (rows != "heads" && rows != "batches")
        throw fail(row_line, "op.rows must be heads or batches (2-D rows have no op.rows line), got '" + rows + "'");
      c.op.rows = rows == "heads" ? NC_ROWS_HEADS : NC_ROWS_BATCHES;
      c.heads = integer("heads");
      if (c.heads < 1 || (c.m % c.heads) != 0)
        throw case_file_error("case file: heads must be >= 1 and divide m = " + std::to_string(c.m));
      if (c.op.rows == NC_ROWS_BATCHES) {
        c.tokens = integer("tokens");
        if (c.tokens < 1 || (c.m / c.heads) % c.tokens != 0)
          throw case_file_error("case file: tokens must be >= 1 and heads x tokens divide m = " + std::to_string(c.m));
      }
    }
    if (keys.count("op.quant")) {
      // one of the words the writer gives each field
      const auto word = [&](const std::string& key, auto first, auto last, auto name) {
        const auto [value, line] = take(key);
        for (int v = int(first); v <= int(last); ++v)
          if (value == name(decltype(first)(v))) return decltype(first)(v);
        throw fail(line, key + " has no value '" + value + "'");
      };
      const auto fp32_bits = [&](const std::string& key) {
        const auto [value, line] = take(key);
        char* end = nullptr;
        const unsigned long bits = std::strtoul(value.c_str(), &end, 16);
        if (value.rfind("0x", 0) != 0 || *end != '\0') throw fail(line, key + " must be fp32 bits in hex (0x...)");
        return std::uint32_t(bits);
      };
      c.op.quant = word("op.quant", NC_QUANT_FP8_E4M3, NC_QUANT_INT8, quant_name);
      c.op.scale = word("op.scale", NC_SCALE_STATIC, NC_SCALE_PER_GROUP, scale_name);
      c.op.apply = word("op.apply", NC_APPLY_RECIPROCAL, NC_APPLY_DIVIDE, apply_name);
      if (c.op.scale == NC_SCALE_PER_GROUP) {
        c.op.group = std::int32_t(integer("op.group"));
        if (c.op.group < 1 || c.n % c.op.group != 0)
          throw case_file_error("case file: op.group must be >= 1 and divide n = " + std::to_string(c.n));
      }
      if (dynamic_scale(c.op)) c.op.scale_floor = std::bit_cast<float>(fp32_bits("op.scale_floor"));
      else c.scale = fp32_bits("scale");
      matrix("scale", c.layout.scale);
    }
    keys.erase("variant");  // a comment for readers: op.* say what the operation is
  }
  if (adds_residual(c.op))
    for (auto [name, l] : {std::pair<const char*, matrix_layout*>{"residual", &c.layout.residual},
                           {"residual_out", &c.layout.residual_out}, {"residual_grad", &c.layout.residual_grad}})
      matrix(name, *l);
  for (auto& [key, entry] : keys) {
    if (key.rfind("param.", 0) == 0) c.parameters[key.substr(6)] = entry.first;
    else file.metadata[key] = entry.first;
  }

  // value blocks
  struct target {
    std::vector<std::uint32_t>* bits;
    nc_dtype type;
    std::int64_t rows;
    bool matrix;
  };
  const std::map<std::string, target> targets = {{"x", {&c.x, c.x_dtype, c.m, true}},
                                                 {"dy", {&c.dy, c.x_dtype, c.m, true}},
                                                 {"dy2", {&c.dy2, c.x_dtype, c.m, true}},
                                                 {"residual", {&c.residual, c.x_dtype, adds_residual(c.op) ? c.m : 0, true}},
                                                 {"residual_grad", {&c.residual_grad, c.x_dtype, adds_residual(c.op) ? c.m : 0, true}},
                                                 {"gamma", {&c.gamma, c.gamma_dtype, 1, false}}};
  std::map<std::string, std::vector<bool>> given;
  for (const auto& [name, t] : targets) {
    t.bits->assign(std::size_t(t.rows * c.n), 0);
    given[name].assign(std::size_t(t.rows * c.n), false);
  }
  for (const block_line& b : blocks) {
    const auto it = targets.find(b.name);
    if (it == targets.end()) throw fail(b.line, "unknown value block '" + b.name + "'");
    const target& t = it->second;
    if (b.row >= t.rows) throw fail(b.line, "row " + std::to_string(b.row) + " is past m");
    std::istringstream values(b.values);
    std::string word;
    std::int64_t j = b.col;
    while (values >> word) {
      if (j >= c.n) throw fail(b.line, "more values than n columns");
      char* end = nullptr;
      const unsigned long bits = std::strtoul(word.c_str(), &end, 16);
      if (*end != '\0' || word.size() != size_of(t.type) * 2)
        throw fail(b.line, "'" + word + "' is not a " + std::to_string(size_of(t.type) * 2) + "-digit hex pattern");
      const std::size_t at = std::size_t(b.row * c.n + j);
      if (given[b.name][at]) throw fail(b.line, b.name + " element given twice");
      (*t.bits)[at] = std::uint32_t(bits);
      given[b.name][at] = true;
      ++j;
    }
  }
  for (const auto& [name, flags] : given) {
    std::size_t count = 0;
    for (bool f : flags) count += f;
    if (name == "dy2" && count == 0) {
      c.dy2.clear();
      continue;
    }
    if (count != flags.size())
      throw case_file_error("case file: " + name + " has " + std::to_string(count) + " of its " +
                            std::to_string(flags.size()) + " elements");
  }
  return file;
}

void write_case_file(const std::string& path, const case_file& file) {
  const std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  std::ofstream out(path);
  out << to_text(file);
  if (!out) throw std::runtime_error("cannot write case file '" + path + "'");
}

case_file read_case_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read case file '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  return parse_case_file(text.str());
}

std::string default_case_dir() {
  return environment_value("NORMCHECK_CASE_DIR").value_or("reports/cases");
}

}  // namespace nc::harness
