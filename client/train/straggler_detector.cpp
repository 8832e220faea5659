#include "actorflow/client/train/straggler_detector.hpp"

#include <algorithm>
#include <cstdio>

namespace actorflow {

StragglerDetector::StragglerDetector(StragglerOptions options) : options_(options) {}

void StragglerDetector::Add(const std::vector<float>& ms_by_task) {
  if (tasks_.size() < ms_by_task.size()) tasks_.resize(ms_by_task.size());
  for (size_t i = 0; i < tasks_.size(); ++i) {
    Task& t = tasks_[i];
    const double ms = i < ms_by_task.size() ? ms_by_task[i] : 0;
    t.in_last = ms > 0;
    if (!t.in_last) continue;
    const size_t window = static_cast<size_t>(std::max(1, options_.window));
    if (t.recent.size() < window) t.recent.push_back(static_cast<float>(ms));
    else t.recent[static_cast<size_t>(t.steps) % window] = static_cast<float>(ms);
    ++t.steps;
    std::vector<float> sorted = t.recent;
    std::nth_element(sorted.begin(), sorted.begin() + static_cast<long>(sorted.size() / 2), sorted.end());
    t.ms = sorted[sorted.size() / 2];
  }
}

double StragglerDetector::median_ms(int except) const {
  std::vector<double> v;
  for (size_t i = 0; i < tasks_.size(); ++i)
    if (tasks_[i].in_last && static_cast<int>(i) != except) v.push_back(tasks_[i].ms);
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::vector<StragglerDetector::Straggler> StragglerDetector::Stragglers() const {
  std::vector<Straggler> out;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    const Task& t = tasks_[i];
    if (!t.in_last || t.steps < options_.warmup) continue;
    const double median = median_ms(static_cast<int>(i));
    if (median <= 0) continue;
    const double ratio = t.ms / median;
    if (ratio >= options_.threshold && t.ms - median >= options_.min_excess_ms)
      out.push_back({static_cast<int>(i), t.ms, ratio, median});
  }
  std::sort(out.begin(), out.end(), [](const Straggler& a, const Straggler& b) { return a.ratio > b.ratio; });
  return out;
}

double StragglerDetector::smoothed_ms(int task) const {
  return task >= 0 && static_cast<size_t>(task) < tasks_.size() ? tasks_[static_cast<size_t>(task)].ms : 0;
}

std::string StragglerDetector::Describe(const std::string& job) const {
  std::string out;
  for (const Straggler& s : Stragglers()) {
    char line[160];
    std::snprintf(line, sizeof(line), "%s:%d at %.1fx the median (%.1f ms, median %.1f ms)", job.c_str(), s.task,
                  s.ratio, s.ms, s.median_ms);
    out += (out.empty() ? "" : "; ") + std::string(line);
  }
  return out;
}

}  // namespace actorflow
