// RUN: attn-opt %s -split-input-file | attn-opt -split-input-file | FileCheck %s

// MLA: no value operand; the value is the latent part of the key cache.
// CHECK-LABEL: func.func @mla_prefill
// CHECK-SAME: (%[[Q:[^:]+]]: !attn.q<?x16x576xbf16, ragged>, %[[KV:[^:]+]]: !attn.latent_kv<?x576xbf16, rope = 64, ragged>)
// CHECK: attn.attention(%[[Q]], %[[KV]]) {causal, scale = {{.*}} : f32} : !attn.q<?x16x576xbf16, ragged>, !attn.latent_kv<?x576xbf16, rope = 64, ragged> -> !attn.out<?x16x512xbf16, ragged>
func.func @mla_prefill(%q: !attn.q<?x16x576xbf16, ragged>,
                       %kv: !attn.latent_kv<?x576xbf16, rope = 64, ragged>) {
  %out = attn.attention(%q, %kv) {causal, scale = 0.0721687824 : f32}
      : !attn.q<?x16x576xbf16, ragged>, !attn.latent_kv<?x576xbf16, rope = 64, ragged>
      -> !attn.out<?x16x512xbf16, ragged>
  return
}
