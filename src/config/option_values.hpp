#pragma once
/// @file option_values.hpp
/// How the option table (option_table.hpp) reads an option's value text and prints it back:
/// integers, numbers and booleans checked against their range, with the one error line a bad
/// value gets (`--NAME: expected ..., got '...'`), and numbers and lists written so they read
/// back the same.

#include <cstdint>
#include <string>
#include <vector>

namespace pagedw2v {
namespace detail {

/// Throws the UsageError of a bad value of option `name`.
[[noreturn]] void bad_value(const std::string& name, const std::string& expected,
                            const std::string& value);

/// `value` as an integer in [lo, hi], or bad_value.
uint64_t parse_uint(const std::string& name, const std::string& value, uint64_t lo, uint64_t hi);

/// `value` as a finite number in [lo, hi] ((lo, hi] when lo_open), or bad_value.
double parse_double(const std::string& name, const std::string& value, double lo, double hi,
                    bool lo_open);

/// true/1/yes or false/0/no, or bad_value.
bool parse_bool(const std::string& name, const std::string& value);

/// `v` with 17 significant digits (reads back the same double).
std::string num(double v);

/// `items` joined by commas.
std::string join(const std::vector<std::string>& items);

}  // namespace detail
}  // namespace pagedw2v
