// The dispatch family: the path table's boundaries swept against the exact oracle, and a batch
// taller than the backward's grid against its pieces.
#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <numeric>
#include <sstream>
#include <tuple>

#include "normcheck/harness/execute.hpp"
#include "normcheck/harness/failure.hpp"
#include "normcheck/harness/generators.hpp"
#include "normcheck/harness/judge.hpp"
#include "normcheck/harness/property.hpp"
#include "normcheck/oracles/compare.hpp"
#include "normcheck/oracles/exact.hpp"
#include "normcheck/path_table.hpp"
#include "property_kit.hpp"
#include "verdicts.hpp"

namespace nc::harness {
namespace {

// ---- the dispatch table's boundaries ----
// The shipped kernels' paths switch at the limits of path_table.hpp: a row one vector past a
// register path's limit is where an off-by-one in the table or in a kernel's register count
// shows, and random N reaches such a row rarely. Each case sweeps them all: for every dtype
// pair the kernel serves, N of limit - 1, limit and limit + 1 vectors of every vector path of
// both directions (dense, aligned rows), and the strided paths' limit +- 1 element, each run
// forward and backward against the exact oracle. A kernel that lists the table's paths must
// also take the path the table gives. Every cell is a row of the distribution table that
// every case must hit.

struct boundary_cell {
  std::string name;  // "forward vector-warp 256+1 vectors, 4-byte x": a distribution dimension
  std::int64_t n;
};

// the path of the table a dense aligned row of `vectors` vectors takes (strided past them all)
template <std::size_t K>
std::string table_path(const path_limit (&table)[K], std::int64_t vectors, std::int64_t n) {
  for (const path_limit& p : table)
    if (p.max_vectors == 0 || vectors <= p.max_vectors) return path_name(p.choice);
  return path_name(n <= strided_warp_max_n ? path::strided_warp : path::strided_block);
}

std::vector<boundary_cell> boundary_cells(std::int64_t width) {
  std::vector<boundary_cell> out;
  const std::string bytes = ", " + std::to_string(16 / width) + "-byte x";
  const auto vector_cells = [&](const char* direction, const auto& table) {
    for (const path_limit& p : table) {
      if (p.max_vectors == 0) continue;
      for (const std::int64_t side : {-1, 0, 1})
        out.push_back({std::string(direction) + " " + path_name(p.choice) + " " + std::to_string(p.max_vectors) +
                           (side < 0 ? "-1" : side > 0 ? "+1" : "") + " vectors" + bytes,
                       (p.max_vectors + side) * width});
    }
  };
  vector_cells("forward", forward_vector_paths);
  vector_cells("backward", backward_vector_paths);
  // a ragged row (N odd: no vector path) either side of the strided paths' limit
  for (const std::int64_t side : {-1, 1})
    out.push_back({"strided " + std::to_string(strided_warp_max_n) + (side < 0 ? "-1" : "+1") + " elements" + bytes,
                   strided_warp_max_n + side});
  return out;
}

// why a kernel cannot serve a cell's row ("" if it can)
std::string cell_needs(const boundary_cell& cell, const capabilities& caps) {
  if ((caps.max_n > 0 && cell.n > caps.max_n) || (caps.max_elements > 0 && cell.n > caps.max_elements))
    return "longer than the kernel serves";
  if (!caps.takes_n(cell.n)) return "N not a multiple the kernel serves";
  return "";
}

rc::Gen<norm_case> boundary_cases() {
  return rc::gen::noShrink(rc::gen::exec([] {
    // the carrier of the sweep's seed: a valid empty call (M = 0), so its case file reads back
    norm_case c;
    c.n = drawing_domain().n_multiple;
    c.op = drawing_domain().operations.front();  // an operation the kernel declares
    c.epsilon = usual_epsilon();
    c.layout = contiguous_layouts(c.n);
    one_row_a_token(c);
    c.gamma.assign(std::size_t(c.n), bits_of(c.gamma_dtype, 1.0));
    c.parameters["sweep seed"] = std::to_string(*gen_seed());
    return c;
  }));
}

bool lists_table_paths(const kernel& k) {
  for (const path_limit& p : forward_vector_paths)
    if (!k.lists_forward_path(path_name(p.choice))) return false;
  for (const path_limit& p : backward_vector_paths)
    if (!k.lists_backward_path(path_name(p.choice))) return false;
  return true;
}

void check_dispatch_boundaries(const kernel& k, const norm_case& sweep, observation& o) {
  // every cell of an operation the kernel declares (abi.h "Variants": a residual add's
  // operands take the vector paths too), one the sweep's seed draws a cell
  // (its backward judged where the kernel has one)
  case_profile profile = case_profile::differential();
  profile.variants = true, profile.backward = drawing_domain().backward();
  const std::vector<nc_operation> operations = drawable_operations(profile);
  // the campaign's domain: the kernel's capabilities, epsilon pinned where --epsilon pins it
  const capabilities& caps = drawing_domain();
  const float epsilon = usual_epsilon();
  const std::uint64_t seed = std::stoull(parameter(sweep, "sweep seed"));
  const bool table_kernel = lists_table_paths(k);
  std::uint64_t draw = seed;
  for (const nc_dtype x : all_dtypes)
    for (const nc_dtype g : all_dtypes) {
      if (!caps.serves(x, g)) continue;
      const std::int64_t width = vector_width_of(x);
      for (const boundary_cell& cell : boundary_cells(width)) {
        const std::string dimension = cell.name;
        if (const std::string why = cell_needs(cell, caps); !why.empty()) {
          o.tag(dimension, why);
          continue;
        }
        norm_case c;
        c.x_dtype = x, c.gamma_dtype = g, c.n = cell.n, c.epsilon = epsilon;
        // 1 to 3 rows, as many as the kernel's size limit allows
        c.m = 1 + std::int64_t(draw % 3);
        if (caps.max_elements > 0) c.m = std::min(c.m, caps.max_elements / c.n);
        c.layout = contiguous_layouts(c.n);
        draw = draw * 6364136223846793005ull + 1442695040888963407ull;
        if (!operations.empty()) c.op = operations[(draw >> 33) % operations.size()];
        one_row_a_token(c);
        c = rc::gen::exec([&] {
          norm_case v = c;
          draw_values(v, profile);
          draw_residual(v, profile);
          return v;
        })(rc::Random(draw), 0).value();
        outputs out;
        try {
          out = execute(k, c, calls::forward_and_backward);
        } catch (const property_failure& e) {
          throw property_failure(dimension + ": " + describe(c) + ": " + e.summary(), e.first());
        }
        const auto forward = exact_forward_of(c, caps);
        verdicts v;
        v.oracle_matrix("y", c.x_dtype, out.y, c.m, c.n, forward.y, forward.y_bound, forward.rows);
        if (caps.writes_r()) v.oracle_vector("r", NC_F32, out.r, forward.r, forward.r_bound, forward.rows, false);
        if (caps.backward()) {
          const auto backward = exact_backward_of(c, c.dy, caps);
          v.oracle_matrix("dx", c.x_dtype, out.dx, c.m, c.n, backward.dx, backward.dx_bound, backward.rows);
          v.oracle_vector("dgamma", c.gamma_dtype, out.dgamma, backward.dgamma, backward.dgamma_bound,
                          backward.columns, true);
        }
        const std::int64_t vectors = c.n % width == 0 ? c.n / width : 0;
        if (table_kernel) {
          const std::string want_forward = vectors ? table_path(forward_vector_paths, vectors, c.n)
                                                   : path_name(c.n <= strided_warp_max_n ? path::strided_warp : path::strided_block);
          const std::string want_backward = vectors ? table_path(backward_vector_paths, vectors, c.n) : want_forward;
          if (out.forward_path != want_forward)
            v.fail("the forward took " + out.forward_path + ", the dispatch table gives " + want_forward);
          if (caps.backward() && out.backward_path != want_backward)
            v.fail("the backward took " + out.backward_path + ", the dispatch table gives " + want_backward);
        }
        // the case itself, for the failure's message (a case file holds the sweep's seed)
        v.finish(o, dimension + ": " + describe(c) + " must match the exact oracle" +
                        (table_kernel ? " on the table's paths" : ""));
        o.tag(dimension, "hit");
      }
    }
}

// ---- a batch taller than the grid ----
// On a GPU the backward grid is persistent: a few thousand row slots, each looping over the
// rows S apart. Here the rows outnumber the slots on the block paths (N of 1032–1900), and
// the rows past the first S must give the bits they give in pieces of at most S rows, where
// no slot loops; a block reduction whose shared totals a looping warp overwrites too early
// breaks it (compute-sanitizer racecheck sees that hazard on any timing). The batch's dgamma,
// a sum over every slot's rows, must match the exact oracle. Millions of
// elements a case: a device backend only (simt's grid of 16 blocks loops in every property).

rc::Gen<norm_case> tall_wide_cases() {
  return rc::gen::noShrink(rc::gen::exec([] {
    static const case_profile profile = case_profile::differential();
    norm_case c;
    std::tie(c.x_dtype, c.gamma_dtype) = *gen_served_pair(NC_PAIRS_ALL);
    // N past the warp paths (more than 128 vectors, more than 1024 elements); two thirds whole
    // vectors (the vector block paths), the rest ragged (the strided block path), as is every
    // case whose x is one element off 16 bytes
    const std::int64_t w = vector_width_of(c.x_dtype);
    c.n = *gen_uniform(1032, 1900, 1032);
    if (*gen_weighted_index({2, 1}) == 0) c.n = c.n / w * w;
    c.n -= c.n % drawing_domain().n_multiple;  // inside the kernel's shape rule
    c.m = std::min(*gen_uniform(2200, 4400, 2200), (std::int64_t(1) << 22) / c.n);
    c.layout = contiguous_layouts(c.n);
    if (*gen_weighted_index({3, 1}) == 1 && drawing_domain().serves_layouts(NC_LAYOUT_MISALIGNED)) c.layout.x.offset = 1;
    c.epsilon = usual_epsilon();
    draw_values(c, profile);
    return c;
  }));
}

void check_tall_batch(const kernel& k, const norm_case& c, observation& o) {
  const outputs batch = execute(k, c, calls::forward_and_backward);
  tag_case(o, c), tag_paths(o, batch);
  // the backward's row slots: its partial table is slots × N fp32
  // a kernel without a partial table (workspace 0: its own reduction) is cut into pieces of
  // 1024 rows: the rows must still give the bits they give in a shorter batch
  const std::int64_t table_rows = std::int64_t(batch.workspace_bytes / sizeof(float)) / c.n;
  const std::int64_t slots = table_rows >= 1 ? table_rows : 1024;
  o.tag("backward slots", table_rows < 1 ? "no partial table" : c.m > slots ? "loop" : "one row each");
  verdicts v;
  // a kernel that reports no path: the pieces' rows against the batch's, within the bound
  outputs pieces = batch;
  std::vector<std::pair<std::int64_t, std::int64_t>> rows;
  for (std::int64_t first = slots; first < c.m; first += slots) {
    const std::int64_t count = std::min(slots, c.m - first);
    const norm_case piece = piece_of(c, first, count, k.capabilities());
    const outputs p = execute(k, piece, calls::forward_and_backward);
    if (batch.forward_path.empty()) {
      std::copy(p.y.begin(), p.y.end(), pieces.y.begin() + first * c.n);
      std::copy(p.r.begin(), p.r.end(), pieces.r.begin() + first);
      std::copy(p.dx.begin(), p.dx.end(), pieces.dx.begin() + first * c.n);
      for (std::int64_t i = first; i < first + count; ++i) rows.push_back({i, i});
      continue;
    }
    const auto rows = [&](const std::vector<std::uint32_t>& v, std::int64_t width) {
      return std::vector<std::uint32_t>(v.begin() + first * width, v.begin() + (first + count) * width);
    };
    v.same_bits("y", c.x_dtype, rows(batch.y, c.n), p.y, c.n);
    v.same_bits("r", NC_F32, rows(batch.r, 1), p.r, 1);
    v.same_bits("dx", c.x_dtype, rows(batch.dx, c.n), p.dx, c.n);
    if (p.forward_path != batch.forward_path || p.backward_path != batch.backward_path)
      v.fail("rows " + std::to_string(first) + "+ alone took another path (" + p.forward_path + "/" +
             p.backward_path + ")");
  }
  if (!rows.empty()) rows_within_twice_the_bound(v, k, c, batch, pieces, rows);
  // dgamma sums over every slot's rows: no piece has it, the exact oracle does (a slot that
  // keeps only its last row, or starts from what its table row held, is caught here)
  const auto exact = exact_backward_of(c, c.dy, k.capabilities());
  v.oracle_vector("dgamma", c.gamma_dtype, batch.dgamma, exact.dgamma, exact.dgamma_bound, exact.columns, true);
  v.finish(o, "the rows past the first " + std::to_string(slots) + " (the backward's slots) of a batch of " +
                  std::to_string(c.m) + " must give the bits they give in pieces of at most that many rows, "
                  "and its dgamma must match the exact oracle");
}

// the sweep runs the backward where there is one: a kernel with a backward whose every declared
// operation is an fp32-sum residual add (its backward not judged) has no operation to sweep
std::string needs_a_sweep_operation(const capabilities& caps) {
  return caps.backward() ? needs_backward(caps) : "";
}

std::string needs_tall_backward(const capabilities& caps) {
  if (!caps.backward()) return needs_backward(caps);
  if ((caps.max_n > 0 && caps.max_n < 1900) || (caps.max_elements > 0 && caps.max_elements < (std::int64_t(1) << 22)))
    return "it needs 4M-element batches of rows up to 1900 long";
  return "";
}

// every cell of the dispatch-boundary sweep in every case, where the kernel serves the dtype
std::vector<intended_share> boundary_intents() {
  std::vector<intended_share> out;
  for (const std::int64_t width : {4, 8})
    for (const boundary_cell& cell : boundary_cells(width)) {
      const bool bytes4 = width == 4;
      out.push_back({cell.name, "hit", 0.99, [bytes4, cell](const capabilities& caps) -> std::string {
                       const std::uint32_t pairs = bytes4 ? NC_PAIR_F32 : NC_PAIRS_ALL & ~std::uint32_t(NC_PAIR_F32);
                       if (!(caps.dtype_pairs & pairs)) return "the kernel serves no x of that size";
                       return cell_needs(cell, caps);
                     }});
    }
  return out;
}

}  // namespace

std::vector<property> dispatch_properties() {
  return {
        // a case is a sweep of about 130 calls: 3 cases whatever --cases asks (every cell in each)
        drawing_variants({"the_dispatch_boundaries_match_the_exact_oracle", {"forward", "backward", "gamma"}, 3,
                          boundary_cases(), check_dispatch_boundaries, boundary_intents(), "", 3,
                          needs_a_sweep_operation}),
        {"a_batch_taller_than_the_grid_gives_its_pieces_bits", {"forward", "backward"}, 6,
         tall_wide_cases(), check_tall_batch, {{"backward slots", "loop", 0.85}},
         "up to 4M elements a case; the simt grid of 16 blocks already loops in every other property", 6,
         needs_tall_backward}};
}

}  // namespace nc::harness
