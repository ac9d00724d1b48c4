#pragma once
/// @file option_table.hpp
/// The option table's rows: every setting of `train`, its help, its default, how a flag or a
/// TOML key sets it and how it is printed back, which settings fix the model and its tables, and
/// the flags of word2vec and fastText that mean it. config.cpp keeps one copy (train_options).

#include <vector>

#include "config/config.hpp"

namespace pagedw2v {
namespace detail {

/// The rows of the option table, in --help's order.
std::vector<OptionSpec> make_train_options();

}  // namespace detail
}  // namespace pagedw2v
