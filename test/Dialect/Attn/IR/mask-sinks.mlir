// RUN: attn-opt %s -split-input-file | attn-opt -split-input-file | FileCheck %s

// Four attention sinks exempt from a causal window.
// CHECK-LABEL: func.func @sinks
// CHECK: {causal, sinks = 4 : i64, window = #attn.window<1024, 0>}
func.func @sinks(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>,
                 %v: !attn.kv<?x8x64xbf16>) {
  %out = attn.attention(%q, %k, %v) {causal, window = #attn.window<1024, 0>, sinks = 4}
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16>
      -> !attn.out<?x8x64xbf16>
  return
}
