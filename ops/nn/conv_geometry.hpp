// The geometry of 2-D convolutions and pooling in NHWC, as TensorFlow
// computes it (tensorflow/core/framework/kernel_shape_util.cc): for padding
// VALID, out = ceil((in - k + 1) / stride); for SAME, out = ceil(in / stride)
// with the padding split evenly, the extra element after. Used by Conv2D,
// its backprops and the pooling ops (conv_ops.cpp, pooling_ops.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "ops/op_kernel.hpp"

namespace actorflow {

/// One spatial dimension: its input size, window, stride, the output size
/// and the padding before it.
struct Window1D {
  int64_t in = 0, k = 0, stride = 1, out = 0, pad_before = 0;
};

/// The output size and padding of `w` (in, k, stride set) for "SAME" or
/// "VALID"; InvalidArgument naming `what` for another padding or a window
/// larger than a VALID input.
Status ResolveWindow(const std::string& padding, const char* what, Window1D* w);

/// A 2-D window op's attributes read from its node: strides (and ksize, for
/// pooling) as [1, h, w, 1] in NHWC, padding; InvalidArgument for
/// data_format NCHW, a stride or window over the batch or channels, dilations
/// other than 1.
struct Window2DAttrs {
  int64_t kh = 0, kw = 0;  // pooling only (ksize)
  int64_t sh = 1, sw = 1;
  std::string padding;
};
Status ReadWindow2DAttrs(const proto::NodeDef& node, bool pooling, Window2DAttrs* attrs);

}  // namespace actorflow
