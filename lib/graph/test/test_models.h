#pragma once
// Small hand-checkable models shared by the graph tests.
#include "burst/graph/builder.h"

namespace burst::graph::testing {

inline Conv2dAttrs conv(int64_t out_channels, int64_t kernel, int64_t stride = 1,
                        int64_t padding = 0, bool bias = true) {
  return conv2d_attrs(out_channels, {kernel, kernel}, {stride, stride}, {padding, padding}, bias);
}

// input [1, 8, 8] -> conv 4x3x3 pad 1 -> relu -> flatten [256] -> linear 10 -> loss.
inline Graph tiny_cnn() {
  GraphBuilder b("tiny_cnn");
  auto x = b.input("input", {1, 8, 8});
  x = b.conv2d("conv", x, conv(4, 3, 1, 1));
  x = b.relu("relu", x);
  x = b.flatten("flatten", x);
  x = b.linear("fc", x, 10);
  b.cross_entropy("loss", x);
  return std::move(b).build();
}

}  // namespace burst::graph::testing
