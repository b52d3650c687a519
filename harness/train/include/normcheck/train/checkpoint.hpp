// The checkpoint file of `normcheck train`: a trained network's weights, versioned and checked.
//
// Format version 1. Every integer is unsigned little-endian, every weight an IEEE-754 binary32
// in little-endian byte order (the fp32 master weights, bit for bit):
//
//   offset  bytes  field
//   0       8      magic "NCTRAIN\n" (4e 43 54 52 41 49 4e 0a)
//   8       4      format version: 1
//   12      4      inputs        (the layer widths: a checkpoint loads only into a network of
//   16      4      hidden         the same shape)
//   20      4      outputs
//   24      4      dtype RMSNorm trained in: 0 fp32, 1 fp16, 2 bf16 (the weights are fp32 whatever it is)
//   28      4      tensor count: 5
//   32      8      steps trained
//   40      8      seed of the run
//   48      ...    the tensors in order w1, b1, gamma, w2, b2; each:
//                    4 bytes name length L, L bytes name (ASCII), 8 bytes element count C,
//                    4·C bytes the elements (row-major, as network.hpp lays them out)
//   end−8   8      FNV-1a 64-bit hash of every byte before it
//
// A loader rejects, naming the file, the byte offset and the rule: a file shorter than its
// fields (truncated), another magic, a version it does not know, a hash that does not match
// (corrupted), a shape or a tensor name or count other than the network's, bytes after the hash.
// Loading returns a new set of weights or throws: nothing the caller holds is changed. Saving
// writes a temporary file beside the target and renames it over the target only once every byte
// is written, so a failed save leaves an existing checkpoint as it was.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "normcheck/oracles/dtype.hpp"
#include "normcheck/train/network.hpp"

namespace nc::train {

inline constexpr std::uint32_t checkpoint_version = 1;

/// what a checkpoint holds besides the weights
struct checkpoint_info {
  shape widths;
  oracle::dtype type = oracle::dtype::f32;
  std::uint64_t steps = 0;
  std::uint64_t seed = 0;
};

/// a checkpoint file that cannot be loaded; what() names the file, the offset and the rule
class checkpoint_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// the bytes of a checkpoint (what save_checkpoint writes)
std::string checkpoint_bytes(const parameters& w, const checkpoint_info& info);

/// writes the checkpoint (temporary file, then rename); throws std::runtime_error on an I/O failure
void save_checkpoint(const std::string& path, const parameters& w, const checkpoint_info& info);

/// reads a checkpoint for a network of the shape `expected`; throws checkpoint_error
parameters load_checkpoint(const std::string& path, const shape& expected, checkpoint_info* info = nullptr);

/// the same from bytes already read (`what` names them in errors)
parameters parse_checkpoint(const std::string& bytes, const shape& expected, const std::string& what,
                            checkpoint_info* info = nullptr);

}  // namespace nc::train
