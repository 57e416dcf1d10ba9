// SPDX-License-Identifier: Apache-2.0
// A minimal JSON value for kernelforge-doctor's --json output: null, bool,
// number, string, array and object (keys kept in insertion order), and dump().
// Only what the doctor writes; it never parses JSON.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace kf::doctor {

class json {
 public:
  enum class kind { null, boolean, number, string, array, object };

  json() = default;
  json(bool b) : kind_(kind::boolean), bool_(b) {}
  json(int v) : kind_(kind::number), number_(v) {}
  json(long v) : kind_(kind::number), number_(static_cast<double>(v)) {}
  json(long long v) : kind_(kind::number), number_(static_cast<double>(v)) {}
  json(unsigned long v) : kind_(kind::number), number_(static_cast<double>(v)) {}
  json(unsigned long long v) : kind_(kind::number), number_(static_cast<double>(v)) {}
  json(double v) : kind_(kind::number), number_(v) {}
  json(const char* s) : kind_(s ? kind::string : kind::null), string_(s ? s : "") {}
  json(std::string s) : kind_(kind::string), string_(std::move(s)) {}

  static json array() {
    json j;
    j.kind_ = kind::array;
    return j;
  }
  static json object() {
    json j;
    j.kind_ = kind::object;
    return j;
  }

  /// Object member (appended; keys are not de-duplicated).
  json& set(std::string key, json value) {
    kind_ = kind::object;
    members_.emplace_back(std::move(key), std::move(value));
    return *this;
  }
  /// Array element.
  json& push(json value) {
    kind_ = kind::array;
    members_.emplace_back(std::string(), std::move(value));
    return *this;
  }
  bool empty() const { return members_.empty(); }

  std::string dump(int indent = 2) const {
    std::string out;
    write(out, indent, 0);
    return out;
  }

 private:
  static void write_string(std::string& out, const std::string& s) {
    out += '"';
    for (unsigned char c : s) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\t': out += "\\t"; break;
        case '\r': out += "\\r"; break;
        default:
          if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
          } else {
            out += static_cast<char>(c);
          }
      }
    }
    out += '"';
  }

  void write(std::string& out, int indent, int depth) const {
    const std::string pad(static_cast<std::size_t>(indent * (depth + 1)), ' ');
    const std::string close_pad(static_cast<std::size_t>(indent * depth), ' ');
    switch (kind_) {
      case kind::null: out += "null"; return;
      case kind::boolean: out += bool_ ? "true" : "false"; return;
      case kind::number: {
        if (!std::isfinite(number_)) {
          out += "null";
          return;
        }
        char buf[32];
        if (number_ == std::floor(number_) && std::fabs(number_) < 1e15)
          std::snprintf(buf, sizeof buf, "%.0f", number_);
        else
          std::snprintf(buf, sizeof buf, "%.6g", number_);
        out += buf;
        return;
      }
      case kind::string: write_string(out, string_); return;
      case kind::array:
      case kind::object: {
        const bool is_object = kind_ == kind::object;
        out += is_object ? '{' : '[';
        for (std::size_t i = 0; i < members_.size(); ++i) {
          out += i ? ",\n" : "\n";
          out += pad;
          if (is_object) {
            write_string(out, members_[i].first);
            out += ": ";
          }
          members_[i].second.write(out, indent, depth + 1);
        }
        if (!members_.empty()) out += "\n" + close_pad;
        out += is_object ? '}' : ']';
        return;
      }
    }
  }

  kind kind_ = kind::null;
  bool bool_ = false;
  double number_ = 0;
  std::string string_;
  std::vector<std::pair<std::string, json>> members_;
};

}  // namespace kf::doctor
