// The example plugin of PyTorch's and Apex's fused order (torch_order.hpp has the rows);
// example_plugin.hpp does the ABI.
#include "../example_plugin.hpp"
#include "torch_order.hpp"

NORMCHECK_EXAMPLE_PLUGIN(nc::example::torch_order)
