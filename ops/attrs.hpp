// Typed access to a node's attrs (the AttrValue map of its NodeDef), and the
// resolution of a node's input and output dtypes from its OpDef.
//
// Attrs come from GraphDefs that may be hostile, so every attr that sizes
// something is checked before it does: a count ("N * T", a type list) against
// kMaxArgCount and, for a node's inputs, against the data inputs its NodeDef
// actually lists (CheckDataInputCounts); shape attrs against kMaxShapeRank.
// Every refusal is InvalidArgument naming the node, the op, the attr and the
// numbers involved; nothing here allocates by an unchecked attr value.
#pragma once

#include <cstdint>

#include <string>
#include <vector>

#include "actorflow/core/dtypes.hpp"
#include "actorflow/core/proto/node_def.pb.h"
#include "actorflow/core/proto/op_def.pb.h"
#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor_shape.hpp"

namespace actorflow {

class Tensor;
using DataTypeVector = std::vector<DataType>;

/// The most tensors one arg may stand for, and the most inputs or outputs one
/// node may have in all (TensorFlow ops have a handful; 1<<20 leaves room for
/// any real graph while a node's type lists stay a few MB).
constexpr int64_t kMaxArgCount = int64_t{1} << 20;
/// The highest rank a shape attr (or a statically inferred shape) may have:
/// TensorFlow's TensorShape limit.
constexpr int kMaxShapeRank = 254;

/// Reads attr `name` of `node`; NotFound or InvalidArgument naming node and attr.
Status GetNodeAttr(const proto::NodeDef& node, const std::string& name, int64_t* v);
Status GetNodeAttr(const proto::NodeDef& node, const std::string& name, int32_t* v);
Status GetNodeAttr(const proto::NodeDef& node, const std::string& name, float* v);
Status GetNodeAttr(const proto::NodeDef& node, const std::string& name, bool* v);
Status GetNodeAttr(const proto::NodeDef& node, const std::string& name, std::string* v);
Status GetNodeAttr(const proto::NodeDef& node, const std::string& name, DataType* v);
Status GetNodeAttr(const proto::NodeDef& node, const std::string& name, PartialTensorShape* v);
Status GetNodeAttr(const proto::NodeDef& node, const std::string& name, Tensor* v);
Status GetNodeAttr(const proto::NodeDef& node, const std::string& name, std::vector<int64_t>* v);
Status GetNodeAttr(const proto::NodeDef& node, const std::string& name, std::vector<int32_t>* v);
Status GetNodeAttr(const proto::NodeDef& node, const std::string& name, std::vector<DataType>* v);
Status GetNodeAttr(const proto::NodeDef& node, const std::string& name, std::vector<std::string>* v);
Status GetNodeAttr(const proto::NodeDef& node, const std::string& name, std::vector<PartialTensorShape>* v);
bool HasNodeAttr(const proto::NodeDef& node, const std::string& name);

/// Attr value constructors for building NodeDefs.
proto::AttrValue AttrInt(int64_t v);
proto::AttrValue AttrFloat(float v);
proto::AttrValue AttrBool(bool v);
proto::AttrValue AttrString(const std::string& v);
proto::AttrValue AttrType(DataType t);
proto::AttrValue AttrShape(const PartialTensorShape& s);
proto::AttrValue AttrTensor(const Tensor& t);
proto::AttrValue AttrIntList(const std::vector<int64_t>& v);
proto::AttrValue AttrTypeList(const std::vector<DataType>& v);
proto::AttrValue AttrStringList(const std::vector<std::string>& v);
proto::AttrValue AttrShapeList(const std::vector<PartialTensorShape>& v);

/// The dtypes of a node's inputs and outputs, expanding N * T and type lists.
/// Every count is checked (ArgCount) and the totals bounded by kMaxArgCount
/// before either vector is sized.
Status InOutTypesForNode(const proto::NodeDef& node, const proto::OpDef& op, DataTypeVector* inputs,
                         DataTypeVector* outputs);
/// Number of tensors an arg stands for in `node` (N for "N * T", the length of
/// a type list, else 1). InvalidArgument naming node, op and attr when the
/// count is negative or above kMaxArgCount.
Status ArgCount(const proto::NodeDef& node, const proto::OpDef::ArgDef& arg, int* n);
/// The number of data (non-control, i.e. not "^name") inputs `node` lists.
int NumDataInputs(const proto::NodeDef& node);
/// For an op with count or type-list input args: InvalidArgument naming the
/// node, op, attr(s) and both numbers unless the data inputs the attrs ask for
/// are `num_data_inputs` (what the NodeDef lists). Reads the attrs as plain
/// integers and allocates nothing by them, so it is safe on hostile values;
/// OK for ops whose inputs are all single tensors (their count is checked
/// where edges are made) and when a count attr is missing or of the wrong kind
/// (ValidateNodeAttrs reports that). Run it before ValidateNodeAttrs to report
/// a count that disagrees with the inputs rather than one that is too large.
Status CheckDataInputCounts(const proto::NodeDef& node, const proto::OpDef& op, int64_t num_data_inputs);
/// Adds every attr the node omits that has a default.
void AddDefaultsToNodeDef(const proto::OpDef& op, proto::NodeDef* node);
/// Checks the attrs of `node` against `op`: all present, right kinds, allowed
/// values, minimums, no unknown attrs (names starting with '_' are internal),
/// count attrs (of "N * T" args) at most kMaxArgCount, and shape attrs of rank
/// at most kMaxShapeRank.
Status ValidateNodeAttrs(const proto::NodeDef& node, const proto::OpDef& op);
/// "{T=float, transpose_a=false}"-style summary for error messages.
std::string SummarizeAttrs(const proto::NodeDef& node);
std::string AttrValueString(const proto::AttrValue& v);

}  // namespace actorflow
