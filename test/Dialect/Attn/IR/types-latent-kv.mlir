// RUN: attn-opt %s -split-input-file | attn-opt -split-input-file | FileCheck %s

// DeepSeek's 512 latent + 64 rope cache, paged and dense.
// CHECK-LABEL: func.func @latent_caches
// CHECK-SAME: !attn.latent_kv<?x576xbf16, rope = 64, paged<64, nhd>>
// CHECK-SAME: !attn.latent_kv<?x576xbf16, rope = 64>
func.func @latent_caches(%a: !attn.latent_kv<?x576xbf16, rope = 64, paged<64, nhd>>,
                         %b: !attn.latent_kv<?x576xbf16, rope = 64>) {
  return
}
