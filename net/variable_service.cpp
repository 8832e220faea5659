#include "actorflow/net/variable_service.hpp"

namespace actorflow {

const char* VarUpdateName(VarUpdateKind kind) {
  switch (kind) {
    case VarUpdateKind::kAssign: return "Assign";
    case VarUpdateKind::kAssignAdd: return "AssignAdd";
    case VarUpdateKind::kAssignSub: return "AssignSub";
    case VarUpdateKind::kGradientDescent: return "ApplyGradientDescent";
    case VarUpdateKind::kMomentum: return "ApplyMomentum";
    case VarUpdateKind::kAdam: return "ApplyAdam";
    case VarUpdateKind::kAdagrad: return "ApplyAdagrad";
    case VarUpdateKind::kRMSProp: return "ApplyRMSProp";
    case VarUpdateKind::kCountUpTo: return "CountUpTo";
  }
  return "unknown update";
}

}  // namespace actorflow
