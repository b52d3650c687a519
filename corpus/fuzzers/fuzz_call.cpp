#include "fuzz_call.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

namespace nc::fuzz {

namespace {

using wide = __int128;
constexpr wide int64_max = std::numeric_limits<std::int64_t>::max();

std::int64_t saturate(wide v) {
  if (v > int64_max) return std::numeric_limits<std::int64_t>::max();
  if (v < -int64_max - 1) return std::numeric_limits<std::int64_t>::min();
  return std::int64_t(v);
}

// a product of two 64-bit values fits in 128 bits, a sum of three of them may not: anything
// past 2^100 is just "too large" for every use here
wide clamped(wide v) {
  constexpr wide limit = wide(1) << 100;
  return v > limit ? limit : v < -limit ? -limit : v;
}

// raw dtype codes: 0-2 are the dtypes, anything else must be rejected (nc_dtype spans 32 bits,
// so every code is a value of the type)
nc_dtype raw_code(unsigned byte) { return nc_dtype(byte); }

nc_dtype decode_x(std::uint8_t b) {
  return b < contract_input::raw_code_from ? nc_dtype(b % 3) : raw_code(b - contract_input::raw_code_from);
}

nc_dtype decode_gamma(std::uint8_t b, nc_dtype x) {
  if (b >= contract_input::raw_code_from) return raw_code(b - contract_input::raw_code_from);
  return (b & 1) ? NC_F32 : x;
}

}  // namespace

call_spec realize(const contract_input& in, const capabilities& declared) {
  call_spec c;
  c.backward = in.op & contract_input::backward;
  c.m = (in.m & contract_input::wild_m_flag) ? in.wild_m : in.m;
  c.n = in.n == contract_input::wild_n_flag ? in.wild_n : in.n;
  const bool wild_size = (in.m & contract_input::wild_m_flag) || in.n == contract_input::wild_n_flag;
  if (!wild_size) {
    // one run stays cheap: M·N ≤ small_elements, unless the size class asks for more
    const std::uint8_t size_class = in.op & 0xf0;
    if (size_class == contract_input::long_row) {
      c.m %= 2;
      c.n %= long_row_cap + 1;
    } else {
      const std::int64_t cap = size_class == contract_input::large ? max_elements : small_elements;
      c.n %= cap + 1;
      if (c.m >= 2 && c.m * c.n > cap) c.m = std::max<std::int64_t>(1, cap / std::max<std::int64_t>(c.n, 1));
    }
  }
  fit_sizes(c.m, c.n, declared);
  switch (in.epsilon_mode % 4) {
    case 0: c.epsilon = 1e-6f; break;
    case 1: c.epsilon = 0.0f; break;
    case 2: c.epsilon = std::bit_cast<float>(in.epsilon_bits); break;
    default: c.epsilon = 1.0f; break;
  }
  // the backward takes no ε (r carries it); the ε of the forward that wrote r must be valid
  if (c.backward && !(std::isfinite(c.epsilon) && c.epsilon >= 0.0f)) c.epsilon = 1e-6f;

  const nc_dtype x = decode_x(in.x_dtype), gamma = decode_gamma(in.gamma_dtype, x);
  const nc_dtype fault = raw_code(in.fault_code);
  auto dtype = [&](int bit, nc_dtype required) { return (in.dtype_faults >> bit) & 1 ? fault : required; };
  const std::array<nc_dtype, operand_count> types = {x, gamma, dtype(1, x), dtype(0, x), dtype(3, NC_F32),
                                                     dtype(2, x), dtype(4, gamma)};

  for (int k = 0; k < operand_count; ++k) {
    const operand_bytes& b = in.operands[std::size_t(k)];
    operand& o = c.ops[std::size_t(k)];
    o.name = operand_names[std::size_t(k)];
    o.matrix = is_matrix(k);
    o.dtype = types[std::size_t(k)];
    o.null = b.flags & operand_bytes::null;
    if ((b.flags & operand_bytes::alias) && k > 0) {
      o.alias_target = b.alias_target % k;
      o.alias_delta = b.alias_delta;
    }
    o.base_shift = b.base_shift();
    if (b.flags & operand_bytes::wild) {
      o.offset = b.wild_offset;
      o.row_stride = b.wild_row_stride;
      o.col_stride = b.wild_col_stride;
    } else if (!o.matrix) {
      o.offset = b.offset;
      o.col_stride = b.stride;
    } else {
      o.offset = b.offset;
      // dense in one direction with the other padded: a stride of `stride` elements between
      // neighbours, and `pad` extra elements between rows (between columns when column-major)
      const wide s = b.stride, pad = b.pad;
      if (b.flags & operand_bytes::column_major) {
        o.row_stride = b.stride;
        o.col_stride = saturate((wide(c.m) - 1) * s + 1 + pad);
      } else {
        o.col_stride = b.stride;
        o.row_stride = saturate((wide(c.n) - 1) * s + 1 + pad);
      }
    }
  }
  c.workspace = workspace_mode(in.workspace % std::uint8_t(workspace_mode::count));
  c.workspace_param = in.workspace_param;
  fit_to_declaration(c, declared);
  return c;
}

// ---- the declaration --------------------------------------------------------------------

namespace {

bool x_role(int k) { return k == op_x || k == op_y || k == op_dy || k == op_dx; }
bool gamma_role(int k) { return k == op_gamma || k == op_dgamma; }

// whether a dtype is x's (or gamma's) in a pair the kernel serves
bool served_dtype(const capabilities& declared, nc_dtype t, bool as_gamma) {
  for (nc_dtype x : {NC_F32, NC_F16, NC_BF16})
    for (nc_dtype g : {NC_F32, NC_F16, NC_BF16})
      if (declared.serves(x, g) && (as_gamma ? g : x) == t) return true;
  return false;
}

// the rule operand k's own layout breaks (its pointer, offset, strides, distinct elements, 64-bit
// indexing), or nothing; last: the index of its last element when it keeps them
std::optional<std::string> own_break(const call_spec& c, int k, wide* last = nullptr) {
  const operand& o = c.ops[std::size_t(k)];
  const std::int64_t rows = c.rows(k), cols = c.cols(k);
  if (rows == 0 || cols == 0) return std::nullopt;  // an empty operand touches nothing
  const wide rs = rows > 1 ? o.row_stride : 0, cs = cols > 1 ? o.col_stride : 0;
  if (o.null) return ".null";
  if (o.offset < 0) return ".offset";
  if (o.matrix) {
    if (o.col_stride < 1) return ".col_stride";
    if (rows > 1 && o.row_stride < 1) return ".row_stride";
  } else if (cols > 1 && o.col_stride < 1) {
    return ".stride";
  }
  // 64-bit indexing: the last element's index, and its byte offset at 4 bytes an element
  const wide end = wide(o.offset) + clamped((wide(rows) - 1) * rs) + clamped((wide(cols) - 1) * cs);
  if ((end + 1) * 4 > int64_max) return ".overflow";
  if (o.matrix) {
    // distinct elements: rows side by side, or columns side by side
    const bool rows_apart = rows == 1 || wide(o.row_stride) >= (wide(cols) - 1) * o.col_stride + 1;
    const bool cols_apart = cols == 1 || wide(o.col_stride) >= (wide(rows) - 1) * o.row_stride + 1;
    if (!rows_apart && !cols_apart) return ".distinct";
  }
  if (last) *last = end;
  return std::nullopt;
}

}  // namespace

void fit_sizes(std::int64_t& m, std::int64_t& n, const capabilities& declared) {
  if (n < 1 || m < 0) return;
  if (declared.max_n > 0 && n > declared.max_n) n = 1 + (n - 1) % declared.max_n;
  const std::int64_t most = declared.max_elements;
  if (most > 0 && n > most) n = 1 + (n - 1) % most;
  if (most > 0 && wide(m) * n > most) m = most / n;
}

void fit_to_declaration(call_spec& c, const capabilities& declared) {
  if (c.backward && !declared.backward()) c.backward = false;
  c.writes_r = declared.writes_r();
  if (!c.backward && !c.writes_r) c.ops[op_r].null = true;  // the harness passes r.data = NULL
  // a kernel that serves no element offsets takes buffers that start 256-byte aligned (abi.h)
  c.base_align = declared.serves_layouts(NC_LAYOUT_OFFSETS) ? 16 : 256;

  // a pair of the contract the kernel does not serve: one it serves, by the pair's place
  const nc_dtype x = c.ops[op_x].dtype, g = c.ops[op_gamma].dtype;
  if (const std::uint32_t pair = pair_of(x, g); pair != 0 && !declared.serves(x, g)) {
    std::vector<std::pair<nc_dtype, nc_dtype>> served;
    for (nc_dtype sx : {NC_F32, NC_F16, NC_BF16})
      for (nc_dtype sg : {sx, NC_F32})
        if (declared.serves(sx, sg) && (served.empty() || served.back() != std::pair{sx, sg})) served.emplace_back(sx, sg);
    if (!served.empty()) {
      const auto [nx, ng] = served[std::size_t(std::countr_zero(pair)) % served.size()];
      for (int k = 0; k < operand_count; ++k) {
        nc_dtype& t = c.ops[std::size_t(k)].dtype;
        if (x_role(k) && t == x) t = nx;
        else if (gamma_role(k) && t == g) t = ng;
      }
    }
  }
  // a valid ε the kernel does not take: one it takes (the backward's ε makes its r)
  if (std::isfinite(c.epsilon) && c.epsilon >= 0.0f && !declared.takes_epsilon(c.epsilon))
    c.epsilon = declared.epsilons[std::bit_cast<std::uint32_t>(c.epsilon) % declared.epsilons.size()];

  // an operand whose own layout keeps the contract but is not declared: dense (every operand,
  // so that the backward of a forward's operands is inside too); an aliased one keeps its
  // alias, rounded to the others' boundary where the kernel serves no misaligned rows
  if (!declared.serves_layouts(NC_LAYOUT_MISALIGNED)) c.alias_align = c.base_align;
  for (int k = 0; k < operand_count; ++k) {
    operand& o = c.ops[std::size_t(k)];
    if (own_break(c, k)) continue;
    const std::int64_t base = o.alias_target >= 0 ? 0 : std::int64_t(o.base_shift) * std::int64_t(element_bytes(o.dtype));
    if (declared.serves_layouts(layout_bits(c, k, base))) continue;
    o.offset = 0, o.col_stride = 1, o.base_shift = 0;
    if (o.matrix) o.row_stride = c.n;
  }
}

std::uint32_t layout_bits(const call_spec& c, int k, std::int64_t base) {
  const operand& o = c.ops[std::size_t(k)];
  const std::int64_t size = std::int64_t(element_bytes(o.dtype));
  std::uint32_t bits = 0;
  if (o.col_stride != 1) bits |= NC_LAYOUT_COLUMN_STRIDED;
  if (o.matrix && o.row_stride != c.n)
    bits |= wide(o.row_stride) * size % 16 == 0 ? NC_LAYOUT_PADDED_ROWS : NC_LAYOUT_MISALIGNED;
  const wide start = wide(base) + wide(o.offset) * size;
  if (start % 16 != 0) bits |= NC_LAYOUT_MISALIGNED;
  else if (o.offset != 0 || base % 256 != 0) bits |= NC_LAYOUT_OFFSETS;
  return bits;
}

std::string outside_declaration(const call_spec& c, const capabilities& declared) {
  std::string why;
  const auto add = [&](const std::string& what) { why += (why.empty() ? "" : ", ") + what; };
  if (c.backward && !declared.backward()) add("the backward");
  const nc_dtype x = c.ops[op_x].dtype, g = c.ops[op_gamma].dtype;
  if (!declared.serves(x, g)) add("dtype pair " + dtype_text(x) + " x, " + dtype_text(g) + " gamma");
  for (int k = 0; k < operand_count; ++k) {
    if (!c.uses(k)) continue;
    const operand& o = c.ops[std::size_t(k)];
    if ((x_role(k) || gamma_role(k)) && !served_dtype(declared, o.dtype, gamma_role(k)))
      add(std::string(o.name) + " in " + dtype_text(o.dtype));
    const std::uint32_t missing = layout_bits(c, k, o.base) & ~declared.layouts;
    for (std::uint32_t b = 1; b <= NC_LAYOUT_COLUMN_STRIDED; b <<= 1)
      if (missing & b) add(std::string("layout ") + layout_name(b) + " of " + o.name);
  }
  if (!c.backward && !declared.takes_epsilon(c.epsilon)) add("epsilon " + std::to_string(c.epsilon));
  if (declared.max_n > 0 && c.n > declared.max_n) add("N = " + std::to_string(c.n));
  if (declared.max_elements > 0 && c.m > 0 && c.n > 0 && wide(c.m) * c.n > declared.max_elements)
    add("M*N = " + std::to_string(c.m) + "*" + std::to_string(c.n));
  return why;
}

// ---- the contract model -----------------------------------------------------------------

std::vector<rule_break> contract_breaks(const call_spec& c, const arena& a) {
  std::vector<rule_break> breaks;
  auto broke = [&](const std::string& rule, std::vector<std::string> names) { breaks.push_back({rule, std::move(names)}); };
  auto op = [&](int k) -> const operand& { return c.ops[std::size_t(k)]; };
  const std::string x = "x", gamma = "gamma";

  // sizes and ε
  if (c.m < 0) broke("m", {"m"});
  if (c.n < 1) broke("n", {"n"});
  if (!c.backward && !(std::isfinite(c.epsilon) && c.epsilon >= 0.0f)) broke("epsilon", {"epsilon"});

  // dtypes: y, dy, dx have x's dtype; gamma is x's dtype or fp32; dgamma has gamma's; r is fp32
  bool dtypes_ok = true;
  auto dtype_rule = [&](bool ok, int k, const char* rule) {
    if (!ok) broke(std::string(op(k).name) + rule, {op(k).name}), dtypes_ok = false;
  };
  dtype_rule(nc::valid_dtype(op(op_x).dtype), op_x, ".dtype");
  dtype_rule(nc::valid_dtype(op(op_gamma).dtype), op_gamma, ".dtype");
  if (nc::valid_dtype(op(op_gamma).dtype))
    dtype_rule(op(op_gamma).dtype == op(op_x).dtype || op(op_gamma).dtype == NC_F32, op_gamma, ".dtype_pair");
  if (c.uses(op_r)) dtype_rule(op(op_r).dtype == NC_F32, op_r, ".dtype");
  if (c.backward) {
    dtype_rule(op(op_dy).dtype == op(op_x).dtype, op_dy, ".dtype");
    dtype_rule(op(op_dx).dtype == op(op_x).dtype, op_dx, ".dtype");
    dtype_rule(op(op_dgamma).dtype == op(op_gamma).dtype, op_dgamma, ".dtype");
  } else {
    dtype_rule(op(op_y).dtype == op(op_x).dtype, op_y, ".dtype");
  }

  // the workspace (needed is 0 when the call cannot be planned: bad sizes or dtypes): every
  // rule it breaks, since a kernel may check them in any order and name the first it meets
  if (c.backward) {
    const std::size_t need = c.workspace_needed;
    // the pointer the call passes (a null one is not misaligned: it breaks the null rule)
    const void* workspace = c.workspace_null ? nullptr : a.device(c.workspace_base);
    if (c.workspace_bytes < need) broke("workspace_bytes", {"workspace_bytes"});
    if (need > 0 && workspace == nullptr) broke("workspace.null", {"workspace"});
    if (need > 0 && reinterpret_cast<std::uintptr_t>(workspace) % 16 != 0) broke("workspace.align", {"workspace"});
  }
  if (c.m < 0 || c.n < 1) return breaks;

  // each operand's own layout; spans [first, last) of region bytes for the overlap rule
  struct span {
    int k;
    wide first, last;
  };
  std::vector<span> spans;
  for (int k = 0; k < operand_count; ++k) {
    if (!c.uses(k)) continue;
    wide last = -1;
    if (const auto rule = own_break(c, k, &last)) {
      broke(op(k).name + *rule, {op(k).name});
      continue;
    }
    if (last < 0) continue;  // an empty operand touches nothing
    const operand& o = op(k);
    const wide size = wide(element_bytes(o.dtype));
    spans.push_back({k, wide(o.base) + o.offset * size, wide(o.base) + (last + 1) * size});
  }
  if (!dtypes_ok) return breaks;

  // an output shares no byte with any other operand (the workspace is an output)
  constexpr int workspace_k = operand_count;
  if (c.backward && c.workspace_needed > 0 && !c.workspace_null)
    spans.push_back({workspace_k, c.workspace_base, wide(c.workspace_base) + wide(c.workspace_needed)});
  auto name_of = [&](int k) { return k == workspace_k ? std::string("workspace") : std::string(op(k).name); };
  for (const span& s : spans) {
    if (!(s.k == workspace_k || c.writes(s.k))) continue;
    // the output and every operand it overlaps: an error may name any of them
    std::vector<std::string> names = {name_of(s.k)};
    for (const span& t : spans)
      if (&s != &t && s.first < t.last && t.first < s.last) names.push_back(name_of(t.k));
    if (names.size() > 1) broke(name_of(s.k) + ".overlap", std::move(names));
  }
  return breaks;
}

std::string case_lines(const call_spec& c) {
  std::ostringstream out;
  out << "direction = " << (c.backward ? "backward" : "forward") << "\n"
      << "m = " << c.m << "\n"
      << "n = " << c.n << "\n"
      << "epsilon = " << c.epsilon << "\n"
      << "epsilon_bits = 0x" << std::hex << std::bit_cast<std::uint32_t>(c.epsilon) << std::dec << "\n";
  for (int k = 0; k < operand_count; ++k) {
    if (!c.uses(k)) continue;
    const operand& o = c.ops[std::size_t(k)];
    const std::string p = std::string(o.name) + ".";
    out << p << "dtype = " << dtype_text(o.dtype) << "\n"
        << p << "data = " << (o.null ? std::string("null") : "arena+" + std::to_string(o.base)) << "\n"
        << p << "offset = " << o.offset << "\n";
    if (o.matrix) out << p << "row_stride = " << o.row_stride << "\n" << p << "col_stride = " << o.col_stride << "\n";
    else out << p << "stride = " << o.col_stride << "\n";
  }
  if (c.backward)
    out << "workspace.mode = " << harness::workspace_mode_name(c.workspace) << "\n"
        << "workspace.data = " << (c.workspace_null ? std::string("null") : "arena+" + std::to_string(c.workspace_base))
        << "\n"
        << "workspace.bytes = " << c.workspace_bytes << "\n"
        << "workspace.needed = " << c.workspace_needed << "\n";
  return out.str();
}

}  // namespace nc::fuzz
