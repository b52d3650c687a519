// normcheck bench: times a kernel plugin's forward and forward+backward on the GPU with
// the source document's protocol (see bench.cpp for the protocol and the byte counting).
#pragma once

namespace nc::bench {

/// `normcheck bench [options]`: argv holds the arguments after the subcommand, argv[0]
/// being the first option (a leading "bench" is skipped too, so either convention
/// works). Prints a Markdown table to stdout and writes normcheck.json and normcheck.md
/// under --out. Returns 0 when every row was timed and passed its spot check, 1 when a
/// row failed, 2 on a usage error, 77 when no CUDA device is present.
int run_main(int argc, char** argv);

}  // namespace nc::bench
