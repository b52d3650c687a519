// The example plugin of PyTorch's and Apex's fused order (torch_order.hpp has the rows);
// normcheck/plugin_kit.hpp does the ABI.
#include "normcheck/plugin_kit.hpp"
#include "torch_order.hpp"

NORMCHECK_EXAMPLE_PLUGIN(nc::example::torch_order)
