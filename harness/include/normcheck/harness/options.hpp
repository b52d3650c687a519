// The one option parser of every normcheck program: the CLI's verbs, train, bench, the
// mutation runner and exercise. `--name VALUE` or `--name=VALUE` for an option that takes a
// value, `--name` for a flag, `--help` (or -h) always; an option given twice, one the program
// does not take, a missing value or a number out of its range is a usage_error naming the
// option and the rule (exit 64, exit_code.hpp). Header-only, as exit_code.hpp, so the mutation
// runner uses it without linking the harness.
#pragma once

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>
#include <utility>
#include <stdexcept>
#include <string>
#include <vector>

#include "normcheck/harness/exit_code.hpp"

namespace nc {

/// an integer option's text in [least, most]; anything else names the option, the value and
/// the range ("[1, 2147483647]", or `range` where given)
inline std::uint64_t parse_integer(const std::string& option, const std::string& text, std::uint64_t least,
                                   std::uint64_t most, std::string range = "") {
  if (range.empty()) range = "[" + std::to_string(least) + ", " + std::to_string(most) + "]";
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0])) || *end != '\0' || errno == ERANGE ||
      v < least || v > most)
    throw usage_error(option + " '" + text + "': must be an integer in " + range);
  return v;
}

/// a number option's text, finite, in [least, most] (in (least, most] where open_below)
inline double parse_number(const std::string& option, const std::string& text, double least, double most,
                           bool open_below = false) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  std::ostringstream range;
  range << (open_below ? "(" : "[") << least << ", " << most << "]";
  if (text.empty() || *end != '\0' || !std::isfinite(v) || (open_below ? !(v > least) : !(v >= least)) || v > most)
    throw usage_error(option + " '" + text + "': must be a number in " + range.str());
  return v;
}

/// text split at `separator` outside parentheses, empty parts dropped ("a,,b" -> a, b; a
/// generated mutant's id holds its operator's pair: "f.cuh:109:27:relational(==,!=)")
inline std::vector<std::string> split_list(const std::string& text, char separator = ',') {
  std::vector<std::string> parts;
  std::string part;
  int depth = 0;
  for (const char c : text) {
    depth += c == '(' ? 1 : c == ')' ? -1 : 0;
    if (c == separator && depth <= 0) {
      if (!part.empty()) parts.push_back(std::move(part));
      part.clear();
    } else {
      part += c;
    }
  }
  if (!part.empty()) parts.push_back(std::move(part));
  return parts;
}

/// one program's command line, argv[first..argc)
class options {
 public:
  /// valued: the options that take a value (each at most once, unless also in repeatable);
  /// flags: those that take none. program names the program in errors ("normcheck train")
  options(int argc, char** argv, int first, const std::string& program, std::vector<std::string> valued,
          std::vector<std::string> flags = {}, std::vector<std::string> repeatable = {}) {
    const auto in = [](const std::vector<std::string>& names, const std::string& n) {
      return std::find(names.begin(), names.end(), n) != names.end();
    };
    for (int i = first; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "--help" || a == "-h") {
        help_ = true;
        continue;
      }
      if (a.rfind("--", 0) != 0 || a == "--") {
        positional_.push_back(a);
        continue;
      }
      std::optional<std::string> inline_value;
      if (const auto eq = a.find('='); eq != std::string::npos) inline_value = a.substr(eq + 1), a.resize(eq);
      const std::string name = a.substr(2);
      if (in(flags, name) && !inline_value) {
        flags_.push_back(name);
        continue;
      }
      if (!in(valued, name) && !in(repeatable, name)) {
        if (in(flags, name)) throw usage_error("option '" + a + "' takes no value");
        throw usage_error("unknown option '" + a + "' for " + program);
      }
      if (!inline_value && i + 1 >= argc) throw usage_error("option '" + a + "' needs a value");
      std::string value = inline_value ? *inline_value : std::string(argv[++i]);
      if (!in(repeatable, name) && values_.count(name)) throw usage_error("option '" + a + "' given twice");
      values_[name].push_back(std::move(value));
    }
  }

  bool help() const { return help_; }
  /// the value of an option given once, if given
  std::optional<std::string> get(const std::string& name) const {
    const auto it = values_.find(name);
    return it == values_.end() ? std::nullopt : std::optional(it->second.front());
  }
  /// every value of a repeatable option, each split at commas
  std::vector<std::string> list(const std::string& name) const {
    std::vector<std::string> out;
    if (const auto it = values_.find(name); it != values_.end())
      for (const std::string& v : it->second)
        for (std::string& part : split_list(v)) out.push_back(std::move(part));
    return out;
  }
  bool has(const std::string& flag) const { return std::find(flags_.begin(), flags_.end(), flag) != flags_.end(); }
  const std::vector<std::string>& positional() const { return positional_; }
  /// throws unless no positional argument was given
  void no_positional(const std::string& program) const {
    if (!positional_.empty()) throw usage_error(program + " takes no argument '" + positional_.front() + "'");
  }

  /// an integer option in [least, most], or fallback when not given
  std::uint64_t integer(const std::string& name, std::uint64_t fallback, std::uint64_t least, std::uint64_t most,
                        const std::string& range = "") const {
    const auto v = get(name);
    return v ? parse_integer("--" + name, *v, least, most, range) : fallback;
  }
  /// a number option in [least, most] (open below where asked), or fallback when not given
  double number(const std::string& name, double fallback, double least, double most, bool open_below = false) const {
    const auto v = get(name);
    return v ? parse_number("--" + name, *v, least, most, open_below) : fallback;
  }

 private:
  std::map<std::string, std::vector<std::string>> values_;
  std::vector<std::string> flags_, positional_;
  bool help_ = false;
};

}  // namespace nc
