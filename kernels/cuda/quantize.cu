// The quantized forward's kernels on the cuda backend (rmsnorm_quantize.cuh), one build of
// forward_quantized_typed for each storage type pair. A translation unit beside plugin.cu,
// which declares them extern (NC_QUANTIZED_ELSEWHERE), so a build of the plugin compiles the
// two on two cores.
#include "src/rmsnorm_dispatch.cuh"

namespace nc {

#define NC_QUANTIZED_BUILD(XD, GD, T, G) \
  template nc_status forward_quantized_typed<T, G>(const nc_forward_args&, const forward_params<T, G>&);
NC_STORAGE_TYPE_PAIRS(NC_QUANTIZED_BUILD)
#undef NC_QUANTIZED_BUILD

}  // namespace nc
