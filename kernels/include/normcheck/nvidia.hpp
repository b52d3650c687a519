// The versions a CUDA machine is named by, in one place for the cuda plugin's machine line
// (abi.h nc_plugin.machine) and the benchmark's stamp. Header-only, no CUDA headers.
#pragma once

#include <cctype>
#include <fstream>
#include <sstream>
#include <string>

namespace nc {

/// a CUDA version number (cudaRuntimeGetVersion, cudaDriverGetVersion) as text: 13000 -> "13.0"
inline std::string cuda_version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

/// the NVIDIA kernel module's version ("580.159.04") from /proc, or "" where it is not there
inline std::string nvidia_driver_version() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line, token;
  if (!std::getline(in, line)) return "";
  std::istringstream words(line);
  while (words >> token)
    if (std::isdigit(static_cast<unsigned char>(token[0])) && token.find('.') != std::string::npos &&
        token.find_first_not_of("0123456789.") == std::string::npos)
      return token;
  return "";
}

}  // namespace nc
