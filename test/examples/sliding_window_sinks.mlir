// RUN: attn-opt %examples/sliding_window_sinks.mlir | attn-opt | FileCheck %s

// The sliding-window-with-sinks example round-trips.
// CHECK-LABEL: func.func @sliding_window_sinks
// CHECK: {causal, sinks = 4 : i64, window = #attn.window<1024, 0>}
