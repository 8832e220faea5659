// The geometry of 2-D convolutions and pooling in NHWC, as TensorFlow
// computes it (tensorflow/core/framework/kernel_shape_util.cc): for padding
// VALID, out = ceil((in - k + 1) / stride); for SAME, out = ceil(in / stride)
// with the padding split evenly, the extra element after; for EXPLICIT
// (Conv2D's explicit_paddings), out = (in + before + after - k) / stride + 1.
// Used by Conv2D,
// its backprops and the pooling ops (conv_ops.cpp, pooling_ops.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "actorflow/core/status.hpp"
#include "actorflow/ops/op_kernel.hpp"

namespace actorflow {

/// One spatial dimension: its input size, window, stride, the output size
/// and the padding before it.
struct Window1D {
  int64_t in = 0, k = 0, stride = 1, out = 0, pad_before = 0;
  int64_t pad_after = 0;  // EXPLICIT: set, with pad_before, before ResolveWindow
};

/// The output size and padding of `w` (in, k, stride set) for "SAME",
/// "VALID" or "EXPLICIT" (pad_before and pad_after set); InvalidArgument
/// naming `what` for another padding or a window larger than the padded input.
Status ResolveWindow(const std::string& padding, const char* what, Window1D* w);

/// A 2-D window op's attributes read from its node: strides (and ksize, for
/// pooling) as [1, h, w, 1] in NHWC, padding (with explicit_paddings, eight
/// values [0, 0, top, bottom, left, right, 0, 0], for EXPLICIT);
/// InvalidArgument for data_format NCHW, a stride or window over the batch or
/// channels, dilations other than 1, explicit paddings that are not that.
struct Window2DAttrs {
  int64_t kh = 0, kw = 0;  // pooling only (ksize)
  int64_t sh = 1, sw = 1;
  std::string padding;
  int64_t top = 0, bottom = 0, left = 0, right = 0;  // EXPLICIT: from explicit_paddings
};
Status ReadWindow2DAttrs(const proto::NodeDef& node, bool pooling, Window2DAttrs* attrs);

}  // namespace actorflow
