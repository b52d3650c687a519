// A small JSON value: what normcheck's reports write and what the mutation runner reads
// (the `normcheck check --json` output, the mutant manifest). Objects keep their keys in
// insertion order, so a written report reads in the order it was built.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace nc::json {

/// Text that is not JSON; what() says where (line:column) and why.
class parse_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class value;
using array = std::vector<value>;
using object = std::vector<std::pair<std::string, value>>;

class value {
 public:
  value() = default;                      // null
  value(std::nullptr_t) {}
  value(bool b) : v_(b) {}
  value(double d) : v_(d) {}
  value(int i) : v_(double(i)) {}
  value(long i) : v_(double(i)) {}
  value(long long i) : v_(double(i)) {}
  // a 64-bit integer keeps its exact digits (a seed past 2^53 written and read back unchanged)
  value(unsigned long i) : v_(double(i)), digits_(std::to_string(i)) {}
  value(unsigned long long i) : v_(double(i)), digits_(std::to_string(i)) {}
  value(const char* s) : v_(std::string(s)) {}
  value(std::string s) : v_(std::move(s)) {}
  value(std::string_view s) : v_(std::string(s)) {}
  value(array a) : v_(std::move(a)) {}
  value(object o) : v_(std::move(o)) {}

  /// Parses one JSON document (RFC 8259); throws parse_error.
  static value parse(std::string_view text);

  /// The JSON text; indent < 0 writes one line.
  std::string dump(int indent = 2) const;

  bool is_null() const { return v_.index() == 0; }
  bool is_bool() const { return v_.index() == 1; }
  bool is_number() const { return v_.index() == 2; }
  bool is_string() const { return v_.index() == 3; }
  bool is_array() const { return v_.index() == 4; }
  bool is_object() const { return v_.index() == 5; }

  /// Typed access; each throws std::runtime_error naming the expected type on a mismatch.
  bool as_bool() const;
  double as_number() const;
  const std::string& as_string() const;
  const array& as_array() const;
  const object& as_object() const;
  array& as_array();
  object& as_object();

  /// The member named key, or nullptr (also when this is not an object).
  const value* find(std::string_view key) const;
  value* find(std::string_view key);
  /// The member named key, or a null value.
  const value& operator[](std::string_view key) const;

  /// Convenience readers for optional members: the member if it has the type, else fallback.
  std::string get_string(std::string_view key, std::string fallback = "") const;
  double get_number(std::string_view key, double fallback = 0) const;
  bool get_bool(std::string_view key, bool fallback = false) const;

  /// Appends (or replaces) a member of an object; makes a null value an object first.
  value& set(std::string key, value v);
  /// Appends to an array; makes a null value an array first.
  value& push(value v);

 private:
  std::variant<std::nullptr_t, bool, double, std::string, array, object> v_{nullptr};
  std::string digits_;  ///< a number's exact decimal digits where it is a non-negative integer
  void write(std::string& out, int indent, int depth) const;
};

/// s as a JSON string literal, quotes included. Also escapes "</" so the text can sit inside
/// an HTML <script> element.
std::string quote(std::string_view s);

}  // namespace nc::json
