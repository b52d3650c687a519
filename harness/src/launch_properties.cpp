// The launch's properties: what depends on how a kernel is launched and where its operands
// lie rather than on its arithmetic, where the campaign's usual cases never go.
//
//   rows past the largest grid   a batch with more rows than the launcher's largest grid holds
//   rows past element 2^31       one operand's rows 2^31 or 2^32 elements apart
//   late inputs                  inputs written by a kernel before the call in its stream that
//                                lets the call start early and finishes late
//   accesses                     every operand between pages no access may touch
#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "normcheck/environment.hpp"
#include "normcheck/harness/execute.hpp"
#include "normcheck/harness/generators.hpp"
#include "normcheck/harness/judge.hpp"
#include "normcheck/harness/late_inputs.hpp"
#include "normcheck/harness/property.hpp"
#include "property_kit.hpp"
#include "verdicts.hpp"

namespace nc::harness {
namespace {

// a case made as `setting` says, its backward too where `backward`: every output against the
// exact oracle; `condition` opens the claim ("with ...")
void judge_every_output(const kernel& k, const norm_case& c, observation& o, const call_setting& setting,
                        bool backward, const std::string& condition) {
  const capabilities& caps = k.capabilities();
  const outputs out = execute(k, c, backward ? calls::forward_and_backward : calls::forward, setting);
  tag_case(o, c), tag_paths(o, out);
  verdicts v(table_binding(c));
  tag_domain(o, judge_forward(v, c, caps, out).plain.rows);
  if (backward) judge_backward(v, c, caps, out);
  v.finish(o, condition + ", " + (backward ? "the forward's and the backward's outputs" : "the forward's outputs") +
                  " must match the exact oracle");
}

// ---- rows past the largest grid ----
// A launcher caps its grid and its blocks loop over the rows past the cap (the shipped forward:
// 2^16 blocks, kernels/src/launch.cuh). A kernel whose blocks take one row a slot and stop
// leaves every row past the cap unwritten (the arena's check names the first); one that loops
// by the wrong step computes some rows twice and others never. A case is a batch past 2^16
// blocks of a row each (2^16 + up to 2^12 rows of 1025 to 1100 columns: the strided-block and
// fp32 vector-block128 paths) or past 2^16 blocks of four warp rows (2^18 + up to 2^14 rows of up
// to 64 columns). Its rows are copies of 61 rows the differential profile draws, in an order no
// power of two repeats (row i copies row hash(i) mod 61): the first copy of each is judged
// against the exact oracle, and every other copy must have its bits or lie within the same
// bound. About 2^26 elements a case: a device backend only (the simt launcher's grid of 16
// blocks loops in every other property's cases).

constexpr std::int64_t pool_rows = 61;
constexpr std::int64_t grid_blocks = std::int64_t(1) << 16;

std::int64_t pool_row(std::int64_t i) {
  return std::int64_t((std::uint64_t(i) * 0x9E3779B97F4A7C15ull) >> 40) % pool_rows;
}

rc::Gen<norm_case> past_the_grid_cases() {
  // no shrinking: a smaller batch would not pass the grid
  return rc::gen::noShrink(rc::gen::exec([] {
    static const case_profile profile = case_profile::differential();
    const capabilities& caps = drawing_domain();
    norm_case pool;
    std::tie(pool.x_dtype, pool.gamma_dtype) = *gen_served_pair(NC_PAIRS_ALL);
    const std::int64_t w = vector_width_of(pool.x_dtype);
    const bool a_row_a_block = *gen_weighted_index({1, 1}) == 0;
    std::int64_t m = 0;
    if (a_row_a_block) {
      // ragged rows past the warp paths (strided-block); whole vectors of an fp32 x past the
      // vector-warp path's 256 (vector-block128)
      pool.n = *gen_uniform(1025, 1100, 1025);
      if (pool.n % w == 0) ++pool.n;
      if (w == 4 && *gen_weighted_index({1, 1}) == 0) pool.n = std::max<std::int64_t>(pool.n / w * w, 1028);
      m = grid_blocks + *gen_uniform(1, 4096, 1);
    } else {
      pool.n = *gen_uniform(1, 64, 8);
      if (*gen_weighted_index({2, 1}) == 0) pool.n = std::max(w, pool.n / w * w);  // the vector paths
      m = 4 * grid_blocks + *gen_uniform(1, 16384, 1);
    }
    pool.n = std::max(caps.n_multiple, pool.n - pool.n % caps.n_multiple);  // inside the kernel's shape rule
    pool.m = pool_rows;
    pool.layout = contiguous_layouts(pool.n);
    pool.epsilon = usual_epsilon();
    draw_values(pool, profile);
    norm_case c = pool;
    c.m = m;
    c.x.resize(std::size_t(m * c.n));
    for (std::int64_t i = 0; i < m; ++i)
      std::copy_n(pool.x.begin() + pool_row(i) * c.n, c.n, c.x.begin() + i * c.n);
    c.dy = c.x;  // the forward's case: dy takes its place in the arena only
    c.parameters["rows"] = a_row_a_block ? "past 2^16 blocks of a row" : "past 2^16 blocks of four warp rows";
    return c;
  }));
}

void check_past_the_grid(const kernel& k, const norm_case& c, observation& o) {
  const capabilities& caps = k.capabilities();
  const outputs out = execute(k, c, calls::forward);
  tag_case(o, c), tag_paths(o, out);
  o.tag("rows", parameter(c, "rows"));
  // each pool row's first copy, and the pool of those rows (in the order they first occur)
  std::vector<std::int64_t> first(pool_rows, -1), slot(pool_rows, -1);
  norm_case pool = c;
  pool.x.clear(), pool.dy.clear();
  outputs judged;
  for (std::int64_t i = 0; i < c.m; ++i) {
    const std::int64_t p = pool_row(i);
    if (first[std::size_t(p)] >= 0) continue;
    first[std::size_t(p)] = i, slot[std::size_t(p)] = std::int64_t(judged.r.size());
    const std::vector<std::uint32_t> x = row_of(c.x, c.n, i), y = row_of(out.y, c.n, i);
    pool.x.insert(pool.x.end(), x.begin(), x.end());
    judged.y.insert(judged.y.end(), y.begin(), y.end());
    judged.r.push_back(out.r[std::size_t(i)]);
  }
  pool.m = std::int64_t(judged.r.size());
  pool.dy = pool.x;
  verdicts v(table_binding(c));
  const oracle::forward_result exact = judge_forward(v, pool, caps, judged).plain;
  // every other copy: the bits of its first copy, or within the first copy's bound
  for (std::int64_t i = 0; i < c.m; ++i) {
    const std::int64_t p = pool_row(i), f = first[std::size_t(p)], s = slot[std::size_t(p)];
    if (i == f) continue;
    for (std::int64_t j = 0; j < c.n; ++j) {
      const std::uint32_t got = out.y[std::size_t(i * c.n + j)];
      if (got != out.y[std::size_t(f * c.n + j)])
        v.within("y", i, j, value_of(c.x_dtype, got), exact.y[std::size_t(s * c.n + j)],
                 exact.y_bound[std::size_t(s * c.n + j)]);
    }
    if (caps.writes_r() && out.r[std::size_t(i)] != out.r[std::size_t(f)])
      v.within("r", i, 0, value_of(NC_F32, out.r[std::size_t(i)]), exact.r[std::size_t(s)],
               exact.r_bound[std::size_t(s)]);
  }
  v.finish(o, "the " + std::to_string(c.m) + " rows of a batch past " + std::to_string(grid_blocks) +
                  " blocks (copies of " + std::to_string(pool.m) +
                  " rows) must each match the exact oracle of the row they copy");
}

std::string needs_past_the_grid(const capabilities& caps) {
  if ((caps.max_n > 0 && caps.max_n < 1100) || (caps.max_elements > 0 && caps.max_elements < (std::int64_t(1) << 27)))
    return "it needs batches of 2^16 rows of up to 1100 columns and 2^18 rows of up to 64 (2^27 elements)";
  return "";
}

// ---- rows past element 2^31 ----
// One operand's rows lie 2^31 + p or 2^32 + p elements apart (p >= N, whole vectors; r's
// elements, for r): row i starts at element i·(2^31 + p) or i·(2^32 + p), where an offset
// computed in 32 bits goes negative (before the operand) or wraps to i·p (into row 0's padding,
// whose gap NaNs it reads, or over row 0 where it writes). A case is one direction and one of its
// operands: the forward's x, y or r, the backward's x, dy or dx (after its forward on the same
// layouts), every dtype pair, 2 or 3 rows of up to 96 columns. The region is up to 34 GB; the
// host image holds only the bytes near the elements (arena.hpp sparse), so a case takes seconds.
// Every output against the exact oracle.

rc::Gen<norm_case> far_row_cases() {
  // no shrinking: a case is already two or three short rows, and each run allocates gigabytes
  return rc::gen::noShrink(rc::gen::exec([] {
    static const case_profile profile = case_profile::differential();
    const capabilities& caps = drawing_domain();
    norm_case c;
    std::tie(c.x_dtype, c.gamma_dtype) = *gen_served_pair(NC_PAIRS_ALL);
    c.n = *gen_columns(c.x_dtype, 96);
    c.m = *gen_uniform(2, 3, 2);
    c.layout = contiguous_layouts(c.n);
    const std::int64_t w = vector_width_of(c.x_dtype), past = *gen_weighted_index({1, 1}) == 0 ? 31 : 32;
    const std::int64_t stride = (std::int64_t(1) << past) + (c.n + w - 1) / w * w;
    const bool backward = caps.backward() && *gen_weighted_index({1, 1}) == 0;
    std::vector<std::string> far = backward ? std::vector<std::string>{"x", "dy", "dx"} : std::vector<std::string>{"x", "y"};
    if (!backward && caps.writes_r() && caps.serves_layouts(NC_LAYOUT_COLUMN_STRIDED)) far.push_back("r");
    const std::string which = far[std::size_t(*gen_uniform(0, std::int64_t(far.size()) - 1, 0))];
    if (which == "r") c.layout.r.stride = stride;
    else (which == "x" ? c.layout.x : which == "y" ? c.layout.y : which == "dy" ? c.layout.dy : c.layout.dx).row_stride = stride;
    c.parameters["direction"] = backward ? "backward" : "forward";
    c.parameters["far"] = which;
    c.parameters["apart"] = "2^" + std::to_string(past) + " + " + std::to_string(stride - (std::int64_t(1) << past));
    c.epsilon = usual_epsilon();
    draw_values(c, profile);
    return c;
  }));
}

void check_far_rows(const kernel& k, const norm_case& c, observation& o) {
  call_setting sparse;
  sparse.sparse = true;
  o.tag("far operand", parameter(c, "direction") + " " + parameter(c, "far"));
  judge_every_output(k, c, o, sparse, parameter(c, "direction") == "backward",
                     "with " + parameter(c, "far") + "'s rows " + parameter(c, "apart") + " elements apart");
}

std::string needs_far_rows(const capabilities& caps) {
  if (!caps.serves_layouts(NC_LAYOUT_PADDED_ROWS)) return "it needs padded rows (a row stride past 2^31)";
  if (caps.max_elements > 0) return "it needs operands past 2^32 elements: the kernel declares a size limit";
  if (caps.max_n > 0 && caps.max_n < 96) return "it needs rows of up to 96 elements";
  return "";
}

// ---- inputs that arrive late ----
// In a training step the kernel before a norm in its stream writes its operands (the layer
// before writes x, the optimizer gamma), and a kernel launched with programmatic dependent
// launch may start before that kernel ends: it must wait (griddepcontrol.wait) before it reads
// them. The campaign's inputs are otherwise uploaded long before the launch, so a read before
// the wait gets the right bytes by luck. Here every call's arena is made stale after the upload
// (0xff: NaN in every dtype) and written back by a kernel of the call's stream that lets the call
// start at once and writes 200 us later (late_inputs.hpp). The forward's cases (every
// operation the kernel declares), the backward too where it is judged: every output must
// match the exact oracle. A CUDA plugin only.

void check_late_inputs(const kernel& k, const norm_case& c, observation& o) {
  call_setting late;
  late.late_inputs = true;
  judge_every_output(k, c, o, late, k.capabilities().backward() && backward_judged(c.op),
                     "with its inputs written by a kernel of its stream that finishes after the call starts");
}

// ---- every access inside the operands ----
// A read past an operand's end whose value is never used (a masked load that reads the whole
// vector, a prefetch of the row after the last) changes no output, so no comparison sees it;
// on a GPU it reads another allocation's bytes, or faults when the operand ends a page. Here
// each operand (and the workspace) lies between two pages no access may touch, its last byte
// against the next (in half the cases) or its first byte against the one before, as close as
// its alignment lets it (arena.hpp page_guard): an access of a guard page kills the call's
// worker, which names the operand beside it, the element the access would be and the kernel
// thread (host memory: simt, C plugins). In device memory each run of bytes between guard pages
// is an allocation of its own and the guard pages are holes, which compute-sanitizer memcheck
// reports (the campaign runs under it). The outputs are judged by the exact oracle too.

rc::Gen<norm_case> guarded_cases() {
  return rc::gen::exec([cases = differential_cases(false)] {
    norm_case c = *cases;
    c.parameters["guard"] = *gen_weighted_index({1, 1}) == 0 ? "after each operand" : "before each operand";
    return c;
  });
}

void check_guarded(const kernel& k, const norm_case& c, observation& o) {
  const std::string side = parameter(c, "guard");
  call_setting guarded;
  guarded.guard = side == "after each operand" ? page_guard::after_each : page_guard::before_each;
  o.tag("guard", side);
  judge_every_output(k, c, o, guarded, k.capabilities().backward() && backward_judged(c.op),
                     "with a page no access may touch " + std::string(side == "after each operand" ? "after" : "before") +
                         " each operand");
}

// in device memory the guard pages are holes between allocations (arena.hpp): an access of one
// is seen by compute-sanitizer memcheck, which the campaign must run under
std::string needs_a_checker(const kernel& k) {
  if (!k.device_memory()) return "";
  return environment_value("NORMCHECK_SANITIZER") == "memcheck"
             ? ""
             : "in device memory its guard pages are holes between allocations, seen only by compute-sanitizer "
               "memcheck: run the campaign under it (normcheck check --sanitizer memcheck; the mutation runner's "
               "memcheck pass does)";
}

}  // namespace

std::vector<property> launch_properties() {
  property past_the_grid{"rows_past_the_largest_grid_match_the_exact_oracle", {"forward"}, 4, past_the_grid_cases(),
                         check_past_the_grid,
                         {{"rows", "past 2^16 blocks of a row", 0.2}, {"rows", "past 2^16 blocks of four warp rows", 0.2}},
                         "up to 2^27 elements a case; the simt launcher's grid of 16 blocks already loops in every "
                         "other property's cases",
                         4, needs_past_the_grid};
  property late{"outputs_match_the_oracle_when_the_inputs_arrive_late", {"forward", "backward", "gamma"}, 600,
                differential_cases(false), check_late_inputs,
                {{"forward path", "vector-warp", 0.05}, {"forward path", "strided-warp", 0.05}},
                "it writes the inputs from a kernel in the call's CUDA stream"};
  late.variants = late.quantized = true;
  late.needs_backend = late_inputs::unavailable;
  // a case takes about 0.1 s on an H100 (most of it the region's allocation): every direction
  // and operand in each run
  const auto strided_r = [](const capabilities& caps) -> std::string {
    return caps.writes_r() && caps.serves_layouts(NC_LAYOUT_COLUMN_STRIDED) ? "" : "r far apart needs column strides";
  };
  property far_rows{"rows_past_element_2_to_the_31_match_the_exact_oracle", {"forward", "backward", "gamma"}, 40,
                    far_row_cases(), check_far_rows,
                    {{"far operand", "forward x", 0.04}, {"far operand", "forward y", 0.04},
                     {"far operand", "forward r", 0.02, strided_r}, {"far operand", "backward x", 0.04, needs_backward},
                     {"far operand", "backward dy", 0.04, needs_backward}, {"far operand", "backward dx", 0.04, needs_backward}},
                    "a region of up to 34 GB (rows 2^32 elements apart), beyond the host memory the simt backend "
                    "is given",
                    40, needs_far_rows};
  return {past_the_grid, far_rows, late};
}

property access_property() {
  property accesses{"every_access_stays_inside_the_operands", {"forward", "backward", "gamma"}, 400, guarded_cases(),
                    check_guarded,
                    {{"guard", "after each operand", 0.3}, {"guard", "before each operand", 0.3},
                     {"forward path", "vector-warp", 0.05}, {"forward path", "strided-warp", 0.05}}};
  accesses.variants = accesses.quantized = true;
  accesses.needs_backend = needs_a_checker;
  return accesses;
}

}  // namespace nc::harness
