// RUN: attn-opt %s -split-input-file -attn-plan -attn-analyze-masks | FileCheck %s

// Causal attention hides keys after each query: an upper bound, and only the
// tiles crossing the diagonal need the per-element mask.
// CHECK-LABEL: func.func @causal
// CHECK: attn_gpu.masks = #attn_gpu.masks<lower = false, upper = true, sinks = 0, partial = edges>
func.func @causal(%q: !attn.q<?x8x128xbf16>, %k: !attn.kv<?x8x128xbf16>,
                  %v: !attn.kv<?x8x128xbf16>) -> !attn.out<?x8x128xbf16> {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x8x128xbf16>, !attn.kv<?x8x128xbf16>, !attn.kv<?x8x128xbf16> -> !attn.out<?x8x128xbf16>
  return %out : !attn.out<?x8x128xbf16>
}

// -----

// A sliding window bounds both sides; its sink tokens stay visible.
// CHECK-LABEL: func.func @window_sinks
// CHECK: attn_gpu.masks = #attn_gpu.masks<lower = true, upper = true, sinks = 4, partial = edges>
func.func @window_sinks(%q: !attn.q<?x8x128xbf16>, %k: !attn.kv<?x8x128xbf16>,
                        %v: !attn.kv<?x8x128xbf16>) -> !attn.out<?x8x128xbf16> {
  %out = attn.attention(%q, %k, %v) {causal, window = #attn.window<1024, 0>, sinks = 4}
      : !attn.q<?x8x128xbf16>, !attn.kv<?x8x128xbf16>, !attn.kv<?x8x128xbf16> -> !attn.out<?x8x128xbf16>
  return %out : !attn.out<?x8x128xbf16>
}

// -----

// No mask and a static key count that fills whole tiles: no mask code at all.
// CHECK-LABEL: func.func @whole_tiles
// CHECK: attn_gpu.masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never>
func.func @whole_tiles(%q: !attn.q<?x8x128xbf16>, %k: !attn.kv<4096x8x128xbf16>,
                       %v: !attn.kv<4096x8x128xbf16>) -> !attn.out<?x8x128xbf16> {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<?x8x128xbf16>, !attn.kv<4096x8x128xbf16>, !attn.kv<4096x8x128xbf16> -> !attn.out<?x8x128xbf16>
  return %out : !attn.out<?x8x128xbf16>
}

// -----

// A key count that may end inside a tile keeps the edge test.
// CHECK-LABEL: func.func @ragged_end
// CHECK: attn_gpu.masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = edges>
func.func @ragged_end(%q: !attn.q<1x8x128xbf16>, %k: !attn.kv<?x8x128xbf16>,
                      %v: !attn.kv<?x8x128xbf16>) -> !attn.out<1x8x128xbf16> {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<1x8x128xbf16>, !attn.kv<?x8x128xbf16>, !attn.kv<?x8x128xbf16> -> !attn.out<1x8x128xbf16>
  return %out : !attn.out<1x8x128xbf16>
}

// -----

// A mask_mod has no closed form: every tile is masked element by element.
// CHECK-LABEL: func.func @mask_mod
// CHECK: attn_gpu.masks = #attn_gpu.masks<lower = false, upper = true, sinks = 0, partial = always>
func.func @mask_mod(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>,
                    %v: !attn.kv<?x8x64xbf16>) -> !attn.out<?x8x64xbf16> {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index, %ql: index, %kl: index):
        %c3 = arith.constant 3 : index
        %r = arith.remui %j, %c3 : index
        %c0 = arith.constant 0 : index
        %keep = arith.cmpi ne, %r, %c0 : index
        attn.yield %keep : i1
      }
  return %out : !attn.out<?x8x64xbf16>
}
