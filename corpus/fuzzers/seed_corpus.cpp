// fuzz_seed_corpus: writes the seed corpora of both fuzz targets, one small input per thing a
// seed must reach — every kernel path in every dtype the size cap allows, every rejection rule
// of the contract broken alone, the layouts (strided, column-major, padded, offset, aliased
// inputs) and the value classes (NaN/Inf rows, subnormals, near-overflow, zero rows, ±0).
// Inputs are built as fields and encoded with the targets' own schema (fuzz_input.hpp).
//
//   fuzz_seed_corpus OUT            writes OUT/contract_fuzzer/* and OUT/value_fuzzer/*
//   fuzz_seed_corpus --check DIR    fails unless every seed is in DIR/<target>/ byte for byte
//
// The committed corpus/<target>/ folders hold these seeds plus what nightly merges add;
// regenerate with `cmake --build --preset cpu --target update_fuzz_seeds`.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "fuzz_input.hpp"

namespace fs = std::filesystem;
using namespace nc::fuzz;

namespace {

using seeds = std::map<std::string, std::vector<std::uint8_t>>;

// past the end every field reads 0: trailing zero bytes of an input without raw values are redundant
std::vector<std::uint8_t> trimmed(std::vector<std::uint8_t> bytes) {
  while (!bytes.empty() && bytes.back() == 0) bytes.pop_back();
  return bytes;
}

constexpr std::uint8_t fp32 = 0, fp16 = 1, bf16 = 2;
const char* dtype_word(std::uint8_t t) { return t == fp32 ? "fp32" : t == fp16 ? "fp16" : "bf16"; }

// ---- contract_fuzzer ----------------------------------------------------------------------

// a valid m×n call, every operand dense, aligned and apart, values from a seed
contract_input call(bool backward, std::uint8_t m, std::uint16_t n, std::uint8_t x = fp32, bool gamma_fp32 = false) {
  contract_input c;
  c.op = backward ? contract_input::backward : 0;
  c.m = m;
  c.n = n;
  c.x_dtype = x;
  c.gamma_dtype = gamma_fp32 ? 1 : 0;
  for (operand_bytes& o : c.operands) o = operand_bytes{};
  c.value_seed = 0x5eed0000u + m * 131u + n;
  return c;
}

void wild(operand_bytes& o, std::int64_t offset, std::int64_t row_stride, std::int64_t col_stride) {
  o.flags |= operand_bytes::wild;
  o.wild_offset = offset;
  o.wild_row_stride = row_stride;
  o.wild_col_stride = col_stride;
}

void contract_seeds(seeds& out) {
  auto add = [&](const std::string& name, const contract_input& c) { out["contract_fuzzer/" + name] = trimmed(encode(c)); };

  // every kernel path, in every dtype pair (the size cap allows no fp16/bf16 vector-reload)
  struct shape {
    const char* path;
    std::uint8_t m32;
    std::uint16_t n32;  // for fp32
    std::uint8_t m16;
    std::uint16_t n16;  // for the 16-bit dtypes; 0: unreachable under the size cap
    bool misaligned;
  };
  // rows of 16-byte vectors: forward warp <= 256, block128 <= 1024, block512 <= 4096,
  // block1024 <= 8192, reload beyond; backward warp <= 128, block128 <= 512, block256 <= 1024,
  // block512 <= 4096 (rmsnorm_dispatch.cuh)
  const shape forward[] = {{"vector-warp", 4, 64, 4, 64, false},
                           {"vector-block128", 2, 2048, 1, 4096, false},
                           {"vector-block512", 1, 8192, 1, 16384, false},
                           {"vector-block1024", 1, 20000, 1, 32776, false},
                           {"vector-reload", 1, 32772, 0, 0, false},
                           {"strided-warp", 3, 7, 3, 7, false},
                           {"strided-block", 2, 1500, 2, 1500, true}};
  const shape backward[] = {{"vector-warp", 4, 64, 4, 64, false},
                            {"vector-block128", 4, 1024, 2, 2048, false},
                            {"vector-block256", 1, 4096, 1, 8192, false},
                            {"vector-block512", 1, 8192, 1, 16384, false},
                            {"strided-warp", 3, 7, 3, 7, false},
                            {"strided-block", 2, 2000, 2, 2000, true}};
  for (bool bwd : {false, true})
    for (const shape& s : bwd ? std::vector<shape>(std::begin(backward), std::end(backward))
                              : std::vector<shape>(std::begin(forward), std::end(forward)))
      for (std::uint8_t x : {fp32, fp16, bf16})
        for (bool gamma_fp32 : {false, true}) {
          if (x == fp32 && gamma_fp32) continue;
          const std::uint16_t n = x == fp32 ? s.n32 : s.n16;
          if (n == 0) continue;
          contract_input c = call(bwd, x == fp32 ? s.m32 : s.m16, n, x, gamma_fp32);
          const std::int64_t elements = std::int64_t(c.m) * n;
          if (elements > 4096) c.op |= contract_input::long_row;
          else if (elements > 256) c.op |= contract_input::large;
          if (s.misaligned) c.operands[op_x].offset = 1;
          add(std::string(bwd ? "backward" : "forward") + "-path-" + s.path + "-" + dtype_word(x) +
                  (gamma_fp32 ? "-gamma-fp32" : ""),
              c);
        }

  // layouts the kernels must take in their stride
  for (bool bwd : {false, true}) {
    const std::string d = bwd ? "backward" : "forward";
    contract_input c = call(bwd, 5, 9);
    c.operands[op_x].stride = 3;
    add(d + "-layout-col-stride", c);
    c = call(bwd, 5, 9);
    c.operands[op_x].flags |= operand_bytes::column_major;
    c.operands[bwd ? op_dx : op_y].flags |= operand_bytes::column_major;
    add(d + "-layout-column-major", c);
    c = call(bwd, 6, 16);
    for (operand_bytes& o : c.operands) o.pad = 5, o.offset = 3;
    add(d + "-layout-padded-offset", c);
    c = call(bwd, 4, 32, fp16);
    for (operand_bytes& o : c.operands) o.flags |= 3 << 4;  // each base 3 elements past 16 bytes
    add(d + "-layout-base-shift-fp16", c);
    c = call(bwd, 0, 8);
    add(d + "-m0", c);
    c = call(bwd, 3, 12);
    c.epsilon_mode = 1;  // ε = 0
    c.op |= contract_input::raw_values;
    c.values = {0, 0, 0, 0};  // every value +0: zero rows with ε = 0
    add(d + "-zero-rows-eps0", c);
    c = call(bwd, 3, 12);
    c.epsilon_mode = 2;
    c.epsilon_bits = 0x00000001;  // the smallest subnormal
    add(d + "-eps-subnormal", c);
    c = call(bwd, 2, 40, bf16);
    c.op |= contract_input::raw_values;
    c.values = {0x80, 0x3f, 0x00, 0xc0, 0x7f, 0x7f, 0x01, 0x00, 0x00, 0x80};  // raw bf16 bits
    add(d + "-raw-values-bf16", c);
  }
  // inputs may share memory: dy is x; r is x (the backward reads r)
  contract_input c = call(true, 4, 16);
  c.operands[op_dy].flags |= operand_bytes::alias;
  c.operands[op_dy].alias_target = op_x;
  add("backward-alias-dy-is-x", c);
  c = call(true, 4, 16);
  c.operands[op_r].flags |= operand_bytes::alias;
  c.operands[op_r].alias_target = op_x;
  add("backward-alias-r-in-x", c);
  for (std::uint8_t mode : {std::uint8_t(workspace_mode::larger), std::uint8_t(workspace_mode::claimed)}) {
    c = call(true, 4, 16);
    c.workspace = mode;
    c.workspace_param = 4096;
    add(std::string("backward-workspace-") + (mode == std::uint8_t(workspace_mode::larger) ? "larger" : "claimed-big"), c);
  }

  // every rule, broken alone
  for (bool bwd : {false, true}) {
    const std::string d = std::string(bwd ? "backward" : "forward") + "-rejects-";
    c = call(bwd, 3, 8);
    c.m = contract_input::wild_m_flag;
    c.wild_m = -1;
    add(d + "m", c);
    add(d + "n", call(bwd, 3, 0));
    if (!bwd)
      for (auto [name, bits] : {std::pair{"nan", 0x7fc00000u}, {"negative", 0xbf800000u}, {"inf", 0x7f800000u}}) {
        c = call(bwd, 3, 8);
        c.epsilon_mode = 2;
        c.epsilon_bits = bits;
        add(d + "epsilon-" + name, c);
      }
    c = call(bwd, 3, 8);
    c.x_dtype = contract_input::raw_code_from + 3;  // dtype code 3
    c.gamma_dtype = 1;
    add(d + "x.dtype", c);
    c = call(bwd, 3, 8);
    c.gamma_dtype = contract_input::raw_code_from + 3;
    add(d + "gamma.dtype", c);
    c = call(bwd, 3, 8, fp16);
    c.gamma_dtype = contract_input::raw_code_from + bf16;  // bf16 gamma with fp16 x
    add(d + "gamma.dtype_pair", c);
    // bits of dtype_faults: y, dy, dx, r, dgamma
    const std::vector<std::pair<const char*, int>> faults =
        bwd ? std::vector<std::pair<const char*, int>>{{"dy", 1}, {"dx", 2}, {"r", 3}, {"dgamma", 4}}
            : std::vector<std::pair<const char*, int>>{{"y", 0}, {"r", 3}};
    for (auto [name, bit] : faults) {
      c = call(bwd, 3, 8, fp32, true);
      c.dtype_faults = std::uint8_t(1 << bit);
      c.fault_code = fp16;
      add(d + name + ".dtype", c);
    }
    const std::vector<int> matrices = bwd ? std::vector<int>{op_x, op_dy, op_dx} : std::vector<int>{op_x, op_y};
    for (int k : matrices) {
      const std::string p = d + operand_names[std::size_t(k)];
      c = call(bwd, 3, 8);
      c.operands[std::size_t(k)].flags |= operand_bytes::null;
      add(p + ".null", c);
      c = call(bwd, 3, 8);
      wild(c.operands[std::size_t(k)], -1, 8, 1);
      add(p + ".offset", c);
      c = call(bwd, 3, 8);
      c.operands[std::size_t(k)].stride = 0;
      add(p + ".col_stride", c);
      c = call(bwd, 2, 1);
      c.operands[std::size_t(k)].pad = -1;  // row stride (1-1)·1 + 1 - 1 = 0
      add(p + ".row_stride", c);
      c = call(bwd, 2, 4);
      c.operands[std::size_t(k)].pad = -2;  // row stride 2 < 4 columns: rows overlap
      add(p + ".distinct", c);
      c = call(bwd, 3, 2);
      wild(c.operands[std::size_t(k)], 0, std::int64_t(1) << 61, 1);
      add(p + ".overflow", c);
    }
    const std::vector<int> vectors = bwd ? std::vector<int>{op_gamma, op_r, op_dgamma} : std::vector<int>{op_gamma, op_r};
    for (int k : vectors) {
      const std::string p = d + operand_names[std::size_t(k)];
      c = call(bwd, 3, 8);
      c.operands[std::size_t(k)].flags |= operand_bytes::null;
      add(p + ".null", c);
      c = call(bwd, 3, 8);
      wild(c.operands[std::size_t(k)], -1, 0, 1);
      add(p + ".offset", c);
      c = call(bwd, 3, 8);
      c.operands[std::size_t(k)].stride = 0;
      add(p + ".stride", c);
      c = call(bwd, 3, 8);
      wild(c.operands[std::size_t(k)], 0, 0, std::int64_t(1) << 62);
      add(p + ".overflow", c);
    }
    // outputs overlapping another operand
    const std::vector<std::pair<int, int>> overlaps = bwd ? std::vector<std::pair<int, int>>{{op_dx, op_x}, {op_dgamma, op_gamma}}
                                                          : std::vector<std::pair<int, int>>{{op_y, op_x}, {op_r, op_gamma}};
    for (auto [k, onto] : overlaps) {
      c = call(bwd, 3, 8);
      c.operands[std::size_t(k)].flags |= operand_bytes::alias;
      c.operands[std::size_t(k)].alias_target = std::uint8_t(onto);
      add(d + operand_names[std::size_t(k)] + ".overlap", c);
    }
    if (bwd) {
      for (auto [name, mode] : {std::pair{"workspace_bytes", workspace_mode::short_by},
                                {"workspace.null", workspace_mode::null},
                                {"workspace.align", workspace_mode::misaligned},
                                {"workspace.overlap", workspace_mode::aliased}}) {
        // 257 rows (a wild M: the plain size byte stops at 127): a backward of at most 256
        // rows is one launch without a workspace, so a broken workspace is no error there
        c = call(bwd, 1, 8);
        c.m = contract_input::wild_m_flag;
        c.wild_m = 257;
        c.workspace = std::uint8_t(mode);
        c.workspace_param = mode == workspace_mode::aliased ? op_x : 0;
        add(d + name, c);
      }
    }
  }
}

// ---- value_fuzzer -------------------------------------------------------------------------

struct lcg {
  std::uint64_t state;
  std::uint32_t next() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return std::uint32_t(state >> 32);
  }
};

// raw element bits of a dtype, little-endian
void put(std::vector<std::uint8_t>& v, std::uint8_t dtype, std::uint32_t bits) {
  v.push_back(std::uint8_t(bits));
  v.push_back(std::uint8_t(bits >> 8));
  if (dtype == fp32) v.push_back(std::uint8_t(bits >> 16)), v.push_back(std::uint8_t(bits >> 24));
}

// a normal value of magnitude about 2^[-3, 3), random sign, as bits of a dtype
std::uint32_t normal(lcg& g, std::uint8_t dtype) {
  const std::uint32_t r = g.next();
  const std::uint32_t sign = r >> 31, e = (r >> 24) % 6, man = r & 0x7fffff;
  const std::uint32_t f32 = (sign << 31) | ((124 + e) << 23) | man;
  if (dtype == fp32) return f32;
  if (dtype == bf16) return f32 >> 16;
  return (sign << 15) | ((12 + e) << 10) | (man >> 13);  // fp16
}

void value_seeds(seeds& out) {
  const char* pair_words[] = {"fp32", "fp16", "fp16-gamma-fp32", "bf16", "bf16-gamma-fp32"};
  const std::uint8_t x_of[] = {fp32, fp16, fp16, bf16, bf16}, g_of[] = {fp32, fp16, fp32, bf16, fp32};
  auto add = [&](const std::string& name, const value_input& v) { out["value_fuzzer/" + name] = encode(v); };
  // values for m rows of x, gamma and dy; per_element(i, j, which) may override (which: 0 x, 1 gamma, 2 dy)
  auto make = [&](int pair, int m, int n, bool offset, std::uint32_t seed, auto&& special) {
    value_input v;
    v.dtypes = std::uint8_t(pair);
    v.n = std::uint16_t(n - 1);
    v.m = std::uint8_t(m - 1);
    v.layout = std::uint8_t((offset ? 1 : 0) | (m * n > value_input::small_elements ? value_input::large : 0));
    lcg g{seed};
    const std::uint8_t xt = x_of[pair], gt = g_of[pair];
    for (int which = 0; which < 3; ++which)
      for (int i = 0; i < (which == 1 ? 1 : m); ++i)
        for (int j = 0; j < n; ++j) {
          const std::uint8_t t = which == 1 ? gt : xt;
          put(v.values, t, special(i, j, which, normal(g, t)));
        }
    return v;
  };
  auto plain = [](int, int, int, std::uint32_t bits) { return bits; };

  // sizes around the vector width, the warp, the blocks; aligned and one element off
  for (int pair = 0; pair < 5; ++pair)
    for (int n : {1, 3, 8, 31, 33, 257, 1024, 2056, 4096}) {
      const int m = n <= 512 ? 3 : 1;
      for (bool offset : {false, true}) {
        if (offset && n != 33 && n != 2056) continue;
        add(std::string(pair_words[pair]) + "-n" + std::to_string(n) + (offset ? "-offset" : ""),
            make(pair, m, n, offset, 1000u * unsigned(pair) + unsigned(n), plain));
      }
    }
  // value classes, in each dtype pair
  for (int pair = 0; pair < 5; ++pair) {
    const std::uint8_t xt = x_of[pair];
    const std::uint32_t nan = xt == fp32 ? 0x7fc00000u : xt == fp16 ? 0x7e00u : 0x7fc0u;
    const std::uint32_t inf = xt == fp32 ? 0x7f800000u : xt == fp16 ? 0x7c00u : 0x7f80u;
    const std::uint32_t neg_zero = xt == fp32 ? 0x80000000u : 0x8000u;
    const std::uint32_t tiny = 1;  // the smallest subnormal
    const std::uint32_t huge = xt == fp32 ? 0x7f000000u : xt == fp16 ? 0x7bffu : 0x7f00u;
    const std::string p = pair_words[pair];
    add(p + "-nan-row", make(pair, 4, 24, false, 7, [&](int i, int j, int w, std::uint32_t b) {
          return w == 0 && i == 1 && j == 5 ? nan : b;
        }));
    add(p + "-inf-dy-row", make(pair, 4, 24, false, 8, [&](int i, int j, int w, std::uint32_t b) {
          return w == 2 && i == 2 && j == 0 ? inf : b;
        }));
    add(p + "-subnormal", make(pair, 3, 16, false, 9, [&](int, int j, int w, std::uint32_t b) {
          return w == 0 ? (tiny + std::uint32_t(j)) : b;
        }));
    add(p + "-near-overflow", make(pair, 3, 16, false, 10, [&](int i, int, int w, std::uint32_t b) {
          return w == 0 && i == 0 ? huge : b;
        }));
    add(p + "-zero-and-signed-zero", make(pair, 3, 16, false, 11, [&](int i, int j, int w, std::uint32_t b) {
          return w == 0 && i == 1 ? (j % 2 ? neg_zero : 0) : b;
        }));
    add(p + "-one-hot", make(pair, 2, 40, false, 12, [&](int i, int j, int w, std::uint32_t b) {
          return w == 0 ? (j == i + 3 ? b : 0) : b;
        }));
    value_input v = make(pair, 3, 16, false, 13, [&](int i, int, int w, std::uint32_t b) {
      return w == 0 && i == 1 ? 0 : b;
    });
    v.epsilon_mode = 1;  // a zero row with ε = 0
    add(p + "-zero-row-eps0", v);
  }
}

bool same_file(const fs::path& p, const std::vector<std::uint8_t>& bytes) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return false;
  const std::vector<std::uint8_t> have((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return have == bytes;
}

}  // namespace

int main(int argc, char** argv) {
  const bool check = argc == 3 && std::string(argv[1]) == "--check";
  if (argc != 2 && !check) {
    std::fprintf(stderr, "usage: fuzz_seed_corpus OUT | fuzz_seed_corpus --check DIR\n");
    return 2;
  }
  const fs::path root = argv[argc - 1];
  seeds all;
  contract_seeds(all);
  value_seeds(all);
  int stale = 0;
  for (const auto& [name, bytes] : all) {
    const fs::path p = root / name;
    if (check) {
      if (!same_file(p, bytes)) std::printf("missing or different: %s\n", p.string().c_str()), ++stale;
      continue;
    }
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  }
  if (check) {
    std::printf("%zu seed(s) checked, %d missing or different%s\n", all.size(), stale,
                stale ? ": regenerate with the update_fuzz_seeds target (corpus/README.md)" : "");
    return stale ? 1 : 0;
  }
  std::printf("wrote %zu seed(s) under %s\n", all.size(), root.string().c_str());
  return 0;
}
