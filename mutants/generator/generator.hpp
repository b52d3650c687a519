// Generated mutation operators: every site of a kernel source file where one of the operator
// classes applies, each change as a catalog-format mutant (mutants/README.md: one search/replace
// block on one file), so the plugin build and the runner treat it as they treat the hand-written
// catalog. The scan is lexical: comments, string and character literals and preprocessor lines
// are not sites; a binary operator is one with whitespace on both sides (the source's style, which
// tells `a < b` from `forward_params<T, G>`).
//
// Operator classes (generated_mutant::op_class):
//   arithmetic   + <-> -, * <-> /, % -> *, and the compound assignments += <-> -=, *= <-> /=
//   relational   boundary < <-> <=, > <-> >=; equality == <-> !=
//   constant     integer literal 0 -> 1, 1 -> 0, k -> k + 1 and k - 1; 0.0f <-> 1.0f
//   index        a subscript a[i] -> a[i + 1] and a[i - 1] (not an array's declared size)
//   statement    an expression statement (assignment, call) replaced by {}
//   barrier      a barrier call (__syncthreads, __syncwarp, follow_prior_grid, ...) replaced by {}
//   cast         static_cast<T>(e) and T(e) of an arithmetic type dropped to (e); a 64-bit
//                integer type narrowed to int / unsigned, double to float
// A mutant's id is stable as long as its site does not move: file:line:column:operator.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nc::mutants {

struct generated_mutant {
  std::string id;        // rmsnorm_forward.cuh:89:38:relational(<,<=)
  std::string file;      // the file name as given to generate()
  std::string op_class;  // arithmetic, relational, constant, index, statement, barrier, cast
  std::string op;        // relational(<,<=)
  int line = 0, column = 0;   // 1-based, of the changed text
  std::size_t offset = 0;     // byte offset of the changed text in the file
  std::string original;       // the changed text
  std::string mutated;        // what replaces it
  // the catalog block: whole lines around the change, unique in the file
  std::size_t search_offset = 0;
  std::string search, replace;
};

/// The operator classes, in the order above.
const std::vector<std::string>& operator_classes();

/// Every mutant of one source file, in the order of the sites.
std::vector<generated_mutant> generate(const std::string& file, std::string_view text);

/// The file's text with the mutant applied (the search block replaced).
std::string apply(const generated_mutant& m, std::string_view text);

/// The mutant in the catalog format (mutants/README.md); dir is the file's folder under kernels/.
std::string catalog_text(const generated_mutant& m, const std::string& dir);

/// The number of distinct sites (file, line, column) among the mutants.
std::size_t count_sites(const std::vector<generated_mutant>& mutants);

/// 64-bit FNV-1a; hex_hash prints it as 16 hex digits.
std::uint64_t fnv1a(std::string_view data, std::uint64_t h = 0xcbf29ce484222325ull);
std::string hex_hash(std::uint64_t h);

/// A file name for the mutant: its id with every character but [A-Za-z0-9._-] as '_' and a hash
/// of the id, so two ids never share one.
std::string file_safe_id(const std::string& id);

}  // namespace nc::mutants
