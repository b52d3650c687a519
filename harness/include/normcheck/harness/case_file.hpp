// Case files: a case, and where it came from, as plain text that a person can read and
// `normcheck replay FILE` re-runs. Failing properties write them; fuzz regressions use the
// same format.
//
// The format, version 1:
//   - one `key = value` per line; `#` starts a comment that runs to the end of the line;
//     blank lines are ignored; keys are case-sensitive; every key appears at most once.
//   - the first key is `format = normcheck-case 1`.
//   - metadata (optional, free text, one line each): `property` (the property that failed,
//     what replay re-checks), `backend`, `kernel` (the plugin's path), `kernel_name`, `seed`,
//     `reproduce` (the RapidCheck reproduce line), `failure` (the failure's summary),
//     `origin` (who wrote the file: `property` or a fuzz target's name). Keys this version
//     does not know are kept as metadata too. Writers put a '#' in a value as %23.
//   - the case: `m`, `n`, `x_dtype` and `gamma_dtype` (fp32 | fp16 | bf16), `epsilon` (the
//     fp32 bit pattern in hex, 0x…, a decimal rendering may follow as a comment), the layout
//     of every operand in elements: `x.offset`, `x.row_stride`, `x.col_stride` and the same
//     for y, dy, dx; `gamma.offset`, `gamma.stride` and the same for r, dgamma; property
//     parameters as `param.NAME = value`.
//   - value blocks: `x[i,j] = h h h …` gives the bit patterns (hex, no 0x, in the dtype's
//     width) of row i from column j on; dy and dy2 alike; `gamma[j] = h h …` gives gamma from
//     entry j on. Writers put 8 values on a line with their decimal values in a comment. Every
//     element of x, dy and gamma must be given exactly once; dy2 is optional (all or none).
#pragma once

#include <map>
#include <stdexcept>
#include <string>

#include "normcheck/harness/case.hpp"

namespace nc::harness {

struct case_file {
  norm_case value;
  std::map<std::string, std::string> metadata;
};

/// a malformed case file: the message names the line and what is wrong with it
class case_file_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::string to_text(const case_file& file);
case_file parse_case_file(const std::string& text);

/// writes a case file, creating its folder; throws std::runtime_error when it cannot
void write_case_file(const std::string& path, const case_file& file);
case_file read_case_file(const std::string& path);

/// where failing cases are written: $NORMCHECK_CASE_DIR, else reports/cases
std::string default_case_dir();

}  // namespace nc::harness
