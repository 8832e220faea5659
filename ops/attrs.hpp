// Typed access to a node's attrs (the AttrValue map of its NodeDef), and the
// resolution of a node's input and output dtypes from its OpDef.
#pragma once

#include <string>
#include <vector>

#include "core/dtypes.hpp"
#include "core/proto/node_def.pb.h"
#include "core/proto/op_def.pb.h"
#include "core/status.hpp"
#include "core/tensor_shape.hpp"

namespace actorflow {

class Tensor;
using DataTypeVector = std::vector<DataType>;

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
Status InOutTypesForNode(const proto::NodeDef& node, const proto::OpDef& op, DataTypeVector* inputs,
                         DataTypeVector* outputs);
/// Number of tensors an arg stands for in `node` (N for "N * T").
Status ArgCount(const proto::NodeDef& node, const proto::OpDef::ArgDef& arg, int* n);
/// Adds every attr the node omits that has a default.
void AddDefaultsToNodeDef(const proto::OpDef& op, proto::NodeDef* node);
/// Checks the attrs of `node` against `op`: all present, right kinds, allowed
/// values, minimums, no unknown attrs (names starting with '_' are internal).
Status ValidateNodeAttrs(const proto::NodeDef& node, const proto::OpDef& op);
/// "{T=float, transpose_a=false}"-style summary for error messages.
std::string SummarizeAttrs(const proto::NodeDef& node);
std::string AttrValueString(const proto::AttrValue& v);

}  // namespace actorflow
