#include "normcheck/json.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace nc::json {

namespace {

class parser {
 public:
  explicit parser(std::string_view text) : text_(text) {}

  value document() {
    skip_space();
    value v = any();
    skip_space();
    if (pos_ != text_.size()) fail("text after the JSON value");
    return v;
  }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
  int depth_ = 0;

  [[noreturn]] void fail(const std::string& why) const {
    int line = 1, column = 1;
    for (std::size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') ++line, column = 1;
      else ++column;
    }
    throw parse_error("JSON " + std::to_string(line) + ":" + std::to_string(column) + ": " + why);
  }

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\r'))
      ++pos_;
  }

  bool take(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) return ++pos_, true;
    return false;
  }

  void expect_word(std::string_view w) {
    if (text_.substr(pos_, w.size()) != w) fail("expected '" + std::string(w) + "'");
    pos_ += w.size();
  }

  value any() {
    if (pos_ >= text_.size()) fail("unexpected end of text");
    if (++depth_ > 200) fail("nesting deeper than 200");
    value v;
    switch (text_[pos_]) {
      case '{': v = members(); break;
      case '[': v = elements(); break;
      case '"': v = value(string()); break;
      case 't': expect_word("true"), v = value(true); break;
      case 'f': expect_word("false"), v = value(false); break;
      case 'n': expect_word("null"); break;
      default: v = number();
    }
    --depth_;
    return v;
  }

  value members() {
    ++pos_;
    object o;
    skip_space();
    if (take('}')) return value(std::move(o));
    while (true) {
      skip_space();
      if (pos_ >= text_.size() || text_[pos_] != '"') fail("expected a member name");
      std::string key = string();
      skip_space();
      if (!take(':')) fail("expected ':' after a member name");
      skip_space();
      o.emplace_back(std::move(key), any());
      skip_space();
      if (take('}')) return value(std::move(o));
      if (!take(',')) fail("expected ',' or '}' in an object");
    }
  }

  value elements() {
    ++pos_;
    array a;
    skip_space();
    if (take(']')) return value(std::move(a));
    while (true) {
      skip_space();
      a.push_back(any());
      skip_space();
      if (take(']')) return value(std::move(a));
      if (!take(',')) fail("expected ',' or ']' in an array");
    }
  }

  unsigned hex4() {
    if (pos_ + 4 > text_.size()) fail("short \\u escape");
    unsigned u = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_++];
      u <<= 4;
      if (c >= '0' && c <= '9') u |= unsigned(c - '0');
      else if (c >= 'a' && c <= 'f') u |= unsigned(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') u |= unsigned(c - 'A' + 10);
      else fail("bad hex digit in a \\u escape");
    }
    return u;
  }

  static void utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3F));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
  }

  std::string string() {
    ++pos_;  // the opening quote
    std::string out;
    while (true) {
      if (pos_ >= text_.size()) fail("unterminated string");
      const char c = text_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= text_.size()) fail("unterminated escape");
      switch (text_[pos_++]) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00 && text_.substr(pos_, 2) == "\\u") {
            pos_ += 2;
            const unsigned low = hex4();
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          utf8(out, cp);
          break;
        }
        default: fail("unknown escape");
      }
    }
  }

  value number() {
    const std::size_t start = pos_;
    take('-');
    if (pos_ >= text_.size() || !(text_[pos_] >= '0' && text_[pos_] <= '9')) fail("expected a value");
    while (pos_ < text_.size() && std::string_view("0123456789+-.eE").find(text_[pos_]) != std::string_view::npos)
      ++pos_;
    const std::string digits(text_.substr(start, pos_ - start));
    char* end = nullptr;
    const double d = std::strtod(digits.c_str(), &end);
    if (end != digits.c_str() + digits.size()) fail("malformed number '" + digits + "'");
    if (digits.find_first_not_of("0123456789") == std::string::npos) {
      errno = 0;
      const unsigned long long u = std::strtoull(digits.c_str(), nullptr, 10);
      if (errno != ERANGE) return value(u);
    }
    return value(d);
  }
};

[[noreturn]] void wrong_type(const char* want) {
  throw std::runtime_error(std::string("JSON value is not ") + want);
}

}  // namespace

value value::parse(std::string_view text) { return parser(text).document(); }

bool value::as_bool() const {
  if (!is_bool()) wrong_type("a boolean");
  return std::get<bool>(v_);
}
double value::as_number() const {
  if (!is_number()) wrong_type("a number");
  return std::get<double>(v_);
}
const std::string& value::as_string() const {
  if (!is_string()) wrong_type("a string");
  return std::get<std::string>(v_);
}
const array& value::as_array() const {
  if (!is_array()) wrong_type("an array");
  return std::get<array>(v_);
}
const object& value::as_object() const {
  if (!is_object()) wrong_type("an object");
  return std::get<object>(v_);
}
array& value::as_array() {
  if (!is_array()) wrong_type("an array");
  return std::get<array>(v_);
}
object& value::as_object() {
  if (!is_object()) wrong_type("an object");
  return std::get<object>(v_);
}

const value* value::find(std::string_view key) const {
  if (!is_object()) return nullptr;
  for (const auto& [k, v] : std::get<object>(v_))
    if (k == key) return &v;
  return nullptr;
}

value* value::find(std::string_view key) {
  return const_cast<value*>(static_cast<const value&>(*this).find(key));
}

const value& value::operator[](std::string_view key) const {
  static const value null_value;
  const value* v = find(key);
  return v ? *v : null_value;
}

std::string value::get_string(std::string_view key, std::string fallback) const {
  const value* v = find(key);
  return v && v->is_string() ? v->as_string() : fallback;
}
double value::get_number(std::string_view key, double fallback) const {
  const value* v = find(key);
  return v && v->is_number() ? v->as_number() : fallback;
}
bool value::get_bool(std::string_view key, bool fallback) const {
  const value* v = find(key);
  return v && v->is_bool() ? v->as_bool() : fallback;
}

value& value::set(std::string key, value v) {
  if (is_null()) v_ = object{};
  for (auto& [k, old] : as_object())
    if (k == key) return old = std::move(v);
  as_object().emplace_back(std::move(key), std::move(v));
  return as_object().back().second;
}

value& value::push(value v) {
  if (is_null()) v_ = array{};
  as_array().push_back(std::move(v));
  return as_array().back();
}

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '/': out += (i > 0 && s[i - 1] == '<') ? "\\/" : "/"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(static_cast<unsigned char>(c)));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

void value::write(std::string& out, int indent, int depth) const {
  const auto newline = [&](int d) {
    if (indent < 0) return;
    out += '\n';
    out.append(std::size_t(indent * d), ' ');
  };
  switch (v_.index()) {
    case 0: out += "null"; break;
    case 1: out += std::get<bool>(v_) ? "true" : "false"; break;
    case 2: {
      const double d = std::get<double>(v_);
      if (!digits_.empty()) {
        out += digits_;
      } else if (!std::isfinite(d)) {
        out += "null";  // JSON has no NaN or infinity
      } else if (d == std::floor(d) && std::fabs(d) < 9e15) {
        out += std::to_string(static_cast<long long>(d));
      } else {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.17g", d);
        // the shortest form that reads back the same double
        for (int p = 6; p < 17; ++p) {
          char shorter[32];
          std::snprintf(shorter, sizeof shorter, "%.*g", p, d);
          if (std::strtod(shorter, nullptr) == d) {
            std::snprintf(buf, sizeof buf, "%s", shorter);
            break;
          }
        }
        out += buf;
      }
      break;
    }
    case 3: out += quote(std::get<std::string>(v_)); break;
    case 4: {
      const auto& a = std::get<array>(v_);
      if (a.empty()) return void(out += "[]");
      out += '[';
      for (std::size_t i = 0; i < a.size(); ++i) {
        if (i) out += ',';
        newline(depth + 1);
        a[i].write(out, indent, depth + 1);
      }
      newline(depth);
      out += ']';
      break;
    }
    case 5: {
      const auto& o = std::get<object>(v_);
      if (o.empty()) return void(out += "{}");
      out += '{';
      for (std::size_t i = 0; i < o.size(); ++i) {
        if (i) out += ',';
        newline(depth + 1);
        out += quote(o[i].first);
        out += indent < 0 ? ":" : ": ";
        o[i].second.write(out, indent, depth + 1);
      }
      newline(depth);
      out += '}';
      break;
    }
  }
}

std::string value::dump(int indent) const {
  std::string out;
  write(out, indent, 0);
  return out;
}

}  // namespace nc::json
