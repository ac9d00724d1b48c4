#include "dist/row_exchange.hpp"

#include <Eigen/Core>
#include <algorithm>

namespace pagedw2v::dist {
namespace {

// The vocabulary has fewer than 2^31 words (ShardedBackend checks).
constexpr uint32_t kOutputTag = 0x80000000u;
using Row = Eigen::Map<Eigen::VectorXf>;
using ConstRow = Eigen::Map<const Eigen::VectorXf>;

}  // namespace

RowExchange::RowExchange(MpiComm& comm, uint32_t dim)
    : comm_(comm), owners_{comm.size()}, dim_(dim), asked_(comm.size()) {}

float* RowExchange::owned_row(const OwnedRows& owned, uint32_t tagged) {
  const uint32_t id = tagged & ~kOutputTag;
  return (tagged & kOutputTag) != 0 ? owned.output(id) : owned.input(id);
}

float* RowExchange::work_row(const WorkingSet& work, uint32_t tagged) {
  const uint32_t id = tagged & ~kOutputTag;
  return (tagged & kOutputTag) != 0 ? work.output(id) : work.input(id);
}

void RowExchange::fetch(const OwnedRows& owned, const WorkingSet& work, const NeededRows& need) {
  const uint32_t me = comm_.rank(), n = comm_.size();
  for (auto& a : asked_) a.clear();
  for (const uint32_t id : need.input()) {
    if (owners_.owner(id) != me) asked_[owners_.owner(id)].push_back(id);
  }
  for (const uint32_t id : need.output()) {
    if (owners_.owner(id) != me) asked_[owners_.owner(id)].push_back(id | kOutputTag);
  }
  std::vector<int> served_ids;
  served_ = comm_.all_to_all(asked_, &served_ids);
  served_counts_.resize(n);
  asked_counts_.resize(n);
  size_t asked_total = 0;
  for (uint32_t r = 0; r < n; ++r) {
    served_counts_[r] = served_ids[r] * static_cast<int>(dim_);
    asked_counts_[r] = static_cast<int>(asked_[r].size() * dim_);
    asked_total += asked_[r].size();
  }
  buffer_.resize(served_.size() * dim_);
  for (size_t k = 0; k < served_.size(); ++k) {
    std::copy_n(owned_row(owned, served_[k]), dim_, buffer_.data() + k * dim_);
  }
  fetched_.resize(asked_total * dim_);
  comm_.all_to_all(buffer_.data(), served_counts_, fetched_.data(), asked_counts_);
  size_t k = 0;
  for (uint32_t r = 0; r < n; ++r) {
    for (const uint32_t tagged : asked_[r]) {
      std::copy_n(fetched_.data() + k * dim_, dim_, work_row(work, tagged));
      ++k;
    }
  }
}

void RowExchange::return_deltas(const OwnedRows& owned, const WorkingSet& work) {
  size_t k = 0;
  for (const auto& ids : asked_) {
    for (const uint32_t tagged : ids) {
      Row delta(fetched_.data() + k * dim_, dim_);
      delta = ConstRow(work_row(work, tagged), dim_) - delta;
      ++k;
    }
  }
  comm_.all_to_all(fetched_.data(), asked_counts_, buffer_.data(), served_counts_);
  // The receive buffer holds the deltas in rank order: every owner adds them in that order.
  for (size_t j = 0; j < served_.size(); ++j) {
    Row(owned_row(owned, served_[j]), dim_) += ConstRow(buffer_.data() + j * dim_, dim_);
  }
}

}  // namespace pagedw2v::dist
