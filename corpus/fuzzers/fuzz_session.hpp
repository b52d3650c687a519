// What the fuzz targets share beyond one call: the plugin under test, the tally of what the
// inputs reached (for the replay main's --stats and --expect), the case file of the input
// being run, and how a violation ends the run.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "fuzz_call.hpp"
#include "normcheck/harness/case.hpp"
#include "normcheck/harness/execute.hpp"
#include "normcheck/harness/property.hpp"
#include "normcheck/kernel.hpp"

namespace nc::fuzz {

/// The plugin under test, loaded once: $NORMCHECK_KERNEL (a path) if set, else the shipped
/// plugin of $NORMCHECK_BACKEND (simt when unset; normcheck/environment.hpp, whose deprecated
/// aliases NORMCHECK_FUZZ_PLUGIN and NORMCHECK_FUZZ_BACKEND still work), from the build tree's lib/
/// ($NORMCHECK_PLUGIN_DIR) or from lib/ beside the binary (OSS-Fuzz). For the simt backend the
/// blocks run on the calling thread unless NORMCHECK_SIMT_THREADS says otherwise.
const kernel& plugin();

/// the arena every input of this process is placed in (fuzz_limits): each input is a new
/// placement (arena::place_operands), and the memory of the last one is reused rather than
/// allocated and faulted in again, input after input
harness::arena& input_arena();

/// what the targets draw inside: the plugin's declared capabilities, with ε pinned to
/// $NORMCHECK_EPSILON when it is set (as `normcheck check --epsilon` pins it: a kernel with one
/// built in). A value the kernel does not take ends the run with a message naming the variable.
const capabilities& declaration();

/// the call as the harness's case: x, gamma and dy as they sit in the arena (row-major, the
/// operands the call reads) and each operand's layout
harness::norm_case norm_case_of(const call_spec& c, const arena& a);
/// what the call wrote, as the harness's judges read it (row-major; what it does not write
/// stays empty)
harness::outputs outputs_of(const call_spec& c, const arena& a);

/// The properties' judges (property::judge: the one judge of outputs against the exact oracle)
/// on what the calls of case c wrote: the forward's (y and r) where the forward ran, dx's and
/// dgamma's where the backward ran, each where the kernel's capabilities let it apply. A failure
/// is a violation whose text starts with the property's name, so a regression replays as it.
void judge_outputs(const char* target, const kernel& k, const harness::norm_case& c, const harness::outputs& out,
                   bool forward_ran, bool backward_ran, const call_spec& call);
/// the property of a name that judges a given run (property::judge); a violation if there is none
const harness::property& judging_property(const char* target, const char* name, const call_spec& call);
/// its judge on outputs already made: a failure is a violation whose text starts with its name;
/// false (nothing judged) where the kernel's capabilities rule it out
bool judge_with(const char* target, const harness::property& p, const kernel& k, const harness::norm_case& c,
                const harness::outputs& out, const call_spec& call, harness::observation& o);
/// the differential properties judge_outputs runs, by name
const std::vector<const char*>& judged_properties();
/// the judged property a failure's text names (judge_outputs' violations start with it), else empty
std::string judged_property_of(const std::string& failure);

/// tags: counted only once enable_tags() was called (the replay main does)
void enable_tags();
void tag(const std::string& name);
const std::map<std::string, std::int64_t>& tags();

/// the file the replay main is running (for the reproduce line)
void set_current_file(const std::string& path);

/// The case file of the input being run: when $NORMCHECK_FUZZ_CASE_OUT names a file, the
/// target's writer is called once before the call (a crash still leaves the file) and again
/// with the failure's text if a violation ends the run.
void set_case_writer(std::function<std::string(const std::string& failure)> writer);

/// one input through a target's body, an exception out of it a violation; 0, as libFuzzer wants.
/// The plugin is loaded before the first input by LLVMFuzzerInitialize, defined here for both
/// targets
int run_input(const char* target, void (*body)(const std::uint8_t*, std::size_t), const std::uint8_t* data,
              std::size_t size);

/// a violated property: prints what, where and how to reproduce, writes the case file, aborts
/// (libFuzzer records the input as a crash)
[[noreturn]] void violation(const char* target, const std::string& what, const std::string& call);

/// the case of a call in the case-file format of harness/include/normcheck/harness/case_file.hpp
/// (values: x and dy row-major M×N, gamma N, as bits); keys it has no field for go in metadata
std::string case_text(const call_spec& c, const std::vector<std::uint32_t>& x, const std::vector<std::uint32_t>& gamma,
                      const std::vector<std::uint32_t>& dy, const std::map<std::string, std::string>& metadata);

/// the plugin's path as case files record it: relative to the working folder when it lies
/// below it, else its file name (committed files hold no machine paths)
std::string plugin_path_for_files();

/// bytes as hex, for the fuzz.input metadata
std::string hex_bytes(const std::uint8_t* data, std::size_t size);

}  // namespace nc::fuzz
