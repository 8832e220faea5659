// Slurm's compressed lists, expanded: the hostlists of SLURM_JOB_NODELIST and
// SLURM_STEP_NODELIST, and the task counts of SLURM_TASKS_PER_NODE and
// SLURM_STEP_TASKS_PER_NODE (what `scontrol show hostnames` and srun's
// environment mean by them; TensorFlow's SlurmClusterResolver reads them the
// same way).
//
//   ExpandHostlist("n[1-2,5],m7")         -> n1 n2 n5 m7
//   ExpandHostlist("o[3-4,6,7-9]")        -> o3 o4 o6 o7 o8 o9
//   ExpandHostlist("nid[008-010]")        -> nid008 nid009 nid010 (zero-padded: the
//                                            lower bound's width)
//   ExpandHostlist("r[1-2]-n[1-2]")       -> r1-n1 r1-n2 r2-n1 r2-n2 (several
//                                            brackets: every combination, first slowest)
//   ExpandTasksPerNode("2(x3),1")         -> 2 2 2 1
//
// Contract: order is kept and nothing is deduplicated (the caller checks
// what it needs). Malformed input is InvalidArgument saying what is wrong
// and where, without the variable's name (the caller knows which variable it
// read and prefixes it): an empty item, an unbalanced or nested bracket, a
// range that is not N or N-M with N <= M, a host character outside
// [A-Za-z0-9._-], a count that is not a positive integer, or more than
// kMaxSlurmHosts results (a typo such as n[1-999999999] never allocates
// without bound).
#pragma once

#include <string>
#include <vector>

#include "actorflow/core/status.hpp"

namespace actorflow {

/// The most hosts (or per-node counts) an expansion yields.
constexpr int kMaxSlurmHosts = 65536;

/// Expands a Slurm hostlist ("n[1-2,5],m7") into host names, in order.
Status ExpandHostlist(const std::string& hostlist, std::vector<std::string>* hosts);

/// Expands a Slurm tasks-per-node list ("2(x3),1") into one count per node, in order.
Status ExpandTasksPerNode(const std::string& text, std::vector<int>* counts);

}  // namespace actorflow
