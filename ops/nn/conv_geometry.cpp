#include "actorflow/ops/nn/conv_geometry.hpp"

#include <algorithm>

#include "actorflow/ops/attrs.hpp"

namespace actorflow {

Status ResolveWindow(const std::string& padding, const char* what, Window1D* w) {
  if (w->stride < 1) return errors::InvalidArgument(what, ": the stride must be at least 1, got ", w->stride);
  if (w->k < 1) return errors::InvalidArgument(what, ": the window must be at least 1, got ", w->k);
  if (padding == "VALID") {
    if (w->in < w->k)
      return errors::InvalidArgument(what, ": the window (", w->k, ") is larger than the input (", w->in,
                                     ") with VALID padding");
    w->out = (w->in - w->k) / w->stride + 1;
    w->pad_before = 0;
    return Status::OK();
  }
  if (padding == "SAME") {
    w->out = (w->in + w->stride - 1) / w->stride;
    const int64_t total = std::max<int64_t>((w->out - 1) * w->stride + w->k - w->in, 0);
    w->pad_before = total / 2;
    return Status::OK();
  }
  if (padding == "EXPLICIT") {
    if (w->pad_before < 0 || w->pad_after < 0)
      return errors::InvalidArgument(what, ": explicit paddings must be >= 0, got ", w->pad_before, " and ",
                                     w->pad_after);
    const int64_t padded = w->in + w->pad_before + w->pad_after;
    if (padded < w->k)
      return errors::InvalidArgument(what, ": the window (", w->k, ") is larger than the padded input (", padded, ")");
    w->out = (padded - w->k) / w->stride + 1;
    return Status::OK();
  }
  return errors::InvalidArgument(what, ": padding '", padding, "' is not supported (SAME, VALID or EXPLICIT)");
}

Status ReadWindow2DAttrs(const proto::NodeDef& node, bool pooling, Window2DAttrs* a) {
  std::string format = "NHWC";
  (void)GetNodeAttr(node, "data_format", &format);
  if (format != "NHWC")
    return errors::Unimplemented("node '", node.name(), "' (op '", node.op(), "'): data_format ", format,
                                 " (only NHWC runs on the CPU)");
  std::vector<int64_t> strides, ksize, dilations;
  AF_RETURN_IF_ERROR(GetNodeAttr(node, "strides", &strides));
  AF_RETURN_IF_ERROR(GetNodeAttr(node, "padding", &a->padding));
  if (strides.size() != 4 || strides[0] != 1 || strides[3] != 1)
    return errors::InvalidArgument("node '", node.name(), "': strides must be [1, h, w, 1] in NHWC");
  a->sh = strides[1];
  a->sw = strides[2];
  if (a->padding == "EXPLICIT") {
    std::vector<int64_t> p;
    (void)GetNodeAttr(node, "explicit_paddings", &p);
    if (pooling || p.size() != 8 || p[0] != 0 || p[1] != 0 || p[6] != 0 || p[7] != 0)
      return errors::InvalidArgument("node '", node.name(), "' (op '", node.op(),
                                     "'): EXPLICIT padding takes explicit_paddings [0, 0, top, bottom, left, right, 0, 0]",
                                     pooling ? " (and pooling here takes SAME or VALID)" : "");
    a->top = p[2];
    a->bottom = p[3];
    a->left = p[4];
    a->right = p[5];
  }
  if (pooling) {
    AF_RETURN_IF_ERROR(GetNodeAttr(node, "ksize", &ksize));
    if (ksize.size() != 4 || ksize[0] != 1 || ksize[3] != 1)
      return errors::Unimplemented("node '", node.name(), "': pooling windows over the batch or channels");
    a->kh = ksize[1];
    a->kw = ksize[2];
  } else if (GetNodeAttr(node, "dilations", &dilations).ok()) {
    for (int64_t d : dilations)
      if (d != 1) return errors::Unimplemented("node '", node.name(), "': dilated convolutions");
  }
  return Status::OK();
}

}  // namespace actorflow
