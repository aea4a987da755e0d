// RUN: attn-opt %s -split-input-file | attn-opt -split-input-file | FileCheck %s

// A causal sliding window of 4096 keys (Mistral).
// CHECK-LABEL: func.func @causal_window
// CHECK: {causal, window = #attn.window<4096, 0>}
func.func @causal_window(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>,
                         %v: !attn.kv<?x8x64xbf16>) {
  %out = attn.attention(%q, %k, %v) {causal, window = #attn.window<4096, 0>}
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16>
      -> !attn.out<?x8x64xbf16>
  return
}

// -----

// A two-sided local window, not causal.
// CHECK-LABEL: func.func @local_window
// CHECK: {window = #attn.window<128, 64>}
func.func @local_window(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>,
                        %v: !attn.kv<?x8x64xbf16>) {
  %out = attn.attention(%q, %k, %v) {window = #attn.window<128, 64>}
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16>
      -> !attn.out<?x8x64xbf16>
  return
}
