// The shipped kernels' dispatch table: the paths and the rows each serves. The dispatch
// (kernels/src/rmsnorm_dispatch.cuh) takes the first vector path of a direction whose limit a row fits
// (when every operand is unit-stride with 16-byte aligned rows and N is a multiple of the
// vector width), else a strided path by N. The harness draws N on either side of every limit
// here (its generators' interesting columns, and the dispatch-boundary property): the table is
// the one home of the thresholds. Plain C++, no device code.
#pragma once

#include <cstdint>

namespace nc {

enum class path { vector_warp, vector_block128, vector_block256, vector_block512, vector_block1024,
                  vector_reload, strided_warp, strided_block };

inline constexpr const char* path_name(path p) {
  switch (p) {
    case path::vector_warp: return "vector-warp";
    case path::vector_block128: return "vector-block128";
    case path::vector_block256: return "vector-block256";
    case path::vector_block512: return "vector-block512";
    case path::vector_block1024: return "vector-block1024";
    case path::vector_reload: return "vector-reload";
    case path::strided_warp: return "strided-warp";
    case path::strided_block: return "strided-block";
  }
  return "?";
}

struct path_limit {
  path choice;
  std::int64_t threads;      ///< a row's threads
  std::int64_t max_vectors;  ///< the longest row it serves, in 16-byte vectors (0: any longer)
};

/// the forward's vector paths, shortest rows first: x held in registers, 8 vectors a thread
/// (vector-reload: x read twice)
inline constexpr path_limit forward_vector_paths[] = {
    {path::vector_warp, 32, 32 * 8},
    {path::vector_block128, 128, 128 * 8},
    {path::vector_block512, 512, 512 * 8},
    {path::vector_block1024, 1024, 1024 * 8},
    {path::vector_reload, 1024, 0},
};

/// a quantized output's vector paths, shortest rows first: x held in registers, 8 vectors a
/// thread (longer rows take a strided path). 256 threads where the forward takes 512 for up to
/// 8 vectors a thread: the codes' arithmetic takes more registers than the forward's, and 512
/// threads of them would leave an SM one block
inline constexpr path_limit quantized_vector_paths[] = {
    {path::vector_warp, 32, 32 * 8},
    {path::vector_block128, 128, 128 * 8},
    {path::vector_block256, 256, 256 * 8},
    {path::vector_block512, 512, 512 * 8},
};

/// the backward's vector paths, shortest rows first (longer rows take a strided path)
inline constexpr path_limit backward_vector_paths[] = {
    {path::vector_warp, 32, 32 * 4},
    {path::vector_block128, 128, 128 * 4},
    {path::vector_block256, 256, 256 * 4},
    {path::vector_block512, 512, 512 * 8},
};

/// both directions' strided paths: strided-warp up to this N, strided-block past it
inline constexpr std::int64_t strided_warp_max_n = 1024;

}  // namespace nc
