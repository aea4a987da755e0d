// RUN: attn-opt %s -split-input-file -verify-diagnostics -allow-unregistered-dialect

// -----

// Head counts must be positive.
// expected-error @+1 {{query head count must be in [1, 1024], got 0}}
func.func @f(%a: !attn.q<?x0x64xbf16>) {
  return
}

// -----

// Head dims keep rows 16-byte aligned.
// expected-error @+1 {{key/value head dim must be a multiple of 8 in [8, 1024], got 100}}
func.func @f(%a: !attn.kv<?x8x100xbf16>) {
  return
}

// -----

// Sequence lengths are positive or dynamic.
// expected-error @+1 {{sequence length must be in [1, 2147483647] or '?', got 0}}
func.func @f(%a: !attn.out<0x8x64xbf16>) {
  return
}

// -----

// Queries are bf16 or f16.
// expected-error @+1 {{query element type must be bf16 or f16, got 'f32'}}
func.func @f(%a: !attn.q<?x8x64xf32>) {
  return
}

// -----

// Keys and values are bf16, f16 or fp8.
// expected-error @+1 {{key/value element type must be bf16, f16, f8E4M3FN or f8E5M2, got 'f32'}}
func.func @f(%a: !attn.kv<?x8x64xf32>) {
  return
}

// -----

// Outputs are bf16, f16 or f32.
// expected-error @+1 {{output element type must be bf16, f16 or f32, got 'i8'}}
func.func @f(%a: !attn.out<?x8x64xi8>) {
  return
}

// -----

// Only keys and values can be paged.
// expected-error @+1 {{query cannot be paged: only keys and values live in a paged cache}}
func.func @f(%a: !attn.q<?x8x64xbf16, paged<16, nhd>>) {
  return
}

// -----

// Page sizes range from 1 to 256.
// expected-error @+1 {{page size must be between 1 and 256, got 512}}
func.func @f(%a: !attn.kv<?x8x64xbf16, paged<512, nhd>>) {
  return
}

// -----

// A page size of 0 is out of range too.
// expected-error @+1 {{page size must be between 1 and 256, got 0}}
func.func @f(%a: !attn.kv<?x8x64xbf16, paged<0, hnd>>) {
  return
}

// -----

// Layouts are dense, ragged or paged.
// expected-error @+1 {{expected a layout: 'dense', 'ragged' or 'paged<page_size, nhd|hnd>', got 'blocked'}}
func.func @f(%a: !attn.kv<?x8x64xbf16, blocked>) {
  return
}

// -----

// Pages are ordered nhd or hnd.
// expected-error @+1 {{expected a page order 'nhd' or 'hnd', got 'dhn'}}
func.func @f(%a: !attn.kv<?x8x64xbf16, paged<16, dhn>>) {
  return
}

// -----

// Head tensors have three dimensions.
// expected-error @+1 {{expected SEQxHEADSxDIMxELEMENT, got 2 dimensions}}
func.func @f(%a: !attn.kv<?x64xbf16>) {
  return
}

// -----

// The rotary part is smaller than the latent cache.
// expected-error @+1 {{rope dims must be a non-negative multiple of 8 smaller than the cache's dim (64), got 64}}
func.func @f(%a: !attn.latent_kv<?x64xbf16, rope = 64>) {
  return
}

// -----

// A log-sum-exp has a sequence and a head dimension.
// expected-error @+1 {{expected SEQxHEADS, got 3 dimensions}}
func.func @f(%a: !attn.lse<?x8x64>) {
  return
}

// -----

// Window extents are non-negative.
func.func @f() {
  // expected-error @+1 {{window extents must be in [0, 2147483647], got <-1, 0>}}
  "test.use"() {w = #attn.window<-1, 0>} : () -> ()
  return
}

// -----

// Query heads are a multiple of KV heads.
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x3x64xbf16>, %v: !attn.kv<?x3x64xbf16>) {
  // expected-error @+1 {{'attn.attention' op query heads (8) must be a multiple of key/value heads (3)}}
  %out = attn.attention(%q, %k, %v) 
      : !attn.q<?x8x64xbf16>, !attn.kv<?x3x64xbf16>, !attn.kv<?x3x64xbf16> -> !attn.out<?x8x64xbf16>
  return
}

// -----

// Keys and values have the same heads.
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x4x64xbf16>) {
  // expected-error @+1 {{'attn.attention' op key heads (8) and value heads (4) must match}}
  %out = attn.attention(%q, %k, %v) 
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x4x64xbf16> -> !attn.out<?x8x64xbf16>
  return
}

// -----

// Keys and values share a layout.
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16, ragged>) {
  // expected-error @+1 {{'attn.attention' op keys and values must have the same sequence length and layout}}
  %out = attn.attention(%q, %k, %v) 
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16, ragged> -> !attn.out<?x8x64xbf16>
  return
}

// -----

// Keys and values share an element type.
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xf16>) {
  // expected-error @+1 {{'attn.attention' op keys and values must share an element type}}
  %out = attn.attention(%q, %k, %v) 
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xf16> -> !attn.out<?x8x64xbf16>
  return
}

// -----

// Queries and keys meet in one product.
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x128xbf16>, %v: !attn.kv<?x8x128xbf16>) {
  // expected-error @+1 {{'attn.attention' op query head dim (64) must equal the key head dim (128)}}
  %out = attn.attention(%q, %k, %v) 
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x128xbf16>, !attn.kv<?x8x128xbf16> -> !attn.out<?x8x64xbf16>
  return
}

// -----

// The output has the value head dim.
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  // expected-error @+1 {{'attn.attention' op output head dim (128) must equal the value head dim (64)}}
  %out = attn.attention(%q, %k, %v) 
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x128xbf16>
  return
}

// -----

// The output has one head per query head.
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  // expected-error @+1 {{'attn.attention' op output heads (4) must equal query heads (8)}}
  %out = attn.attention(%q, %k, %v) 
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x4x64xbf16>
  return
}

// -----

// The output is laid out like the queries.
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  // expected-error @+1 {{'attn.attention' op output must have the queries' sequence length and layout}}
  %out = attn.attention(%q, %k, %v) 
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16, ragged>
  return
}

// -----

// Non-fp8 keys share the queries' element type.
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xf16>, %v: !attn.kv<?x8x64xf16>) {
  // expected-error @+1 {{'attn.attention' op key element type ('f16') must match the query element type ('bf16') unless keys are fp8}}
  %out = attn.attention(%q, %k, %v) 
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xf16>, !attn.kv<?x8x64xf16> -> !attn.out<?x8x64xbf16>
  return
}

// -----

// Plain keys need a value operand.
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  // expected-error @+1 {{'attn.attention' op needs a value operand unless the key is a !attn.latent_kv cache}}
  %out = attn.attention(%q, %k) 
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
  return
}

// -----

// The log-sum-exp matches the queries.
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  // expected-error @+1 {{'attn.attention' op log-sum-exp must have one entry per query and head, laid out like the queries}}
  %out, %lse = attn.attention(%q, %k, %v) : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>, !attn.lse<?x4>
  return
}

// -----

// An MLA cache is its own value.
func.func @f(%q: !attn.q<1x16x576xbf16>, %kv: !attn.latent_kv<?x576xbf16, rope = 64>, %v: !attn.kv<?x1x512xbf16>) {
  // expected-error @+1 {{'attn.attention' op takes no value operand with a !attn.latent_kv key: the value is the latent part of the same cache}}
  %out = attn.attention(%q, %kv, %v) : !attn.q<1x16x576xbf16>, !attn.latent_kv<?x576xbf16, rope = 64>, !attn.kv<?x1x512xbf16> -> !attn.out<1x16x512xbf16>
  return
}

// -----

// MLA queries are absorbed to the cache width.
func.func @f(%q: !attn.q<1x16x128xbf16>, %kv: !attn.latent_kv<?x576xbf16, rope = 64>) {
  // expected-error @+1 {{'attn.attention' op query head dim (128) must equal the latent cache's dim (576): absorb the key up-projection into the queries}}
  %out = attn.attention(%q, %kv) : !attn.q<1x16x128xbf16>, !attn.latent_kv<?x576xbf16, rope = 64> -> !attn.out<1x16x512xbf16>
  return
}

// -----

// MLA outputs have the latent width.
func.func @f(%q: !attn.q<1x16x576xbf16>, %kv: !attn.latent_kv<?x576xbf16, rope = 64>) {
  // expected-error @+1 {{'attn.attention' op output head dim (576) must equal the latent dim (512)}}
  %out = attn.attention(%q, %kv) : !attn.q<1x16x576xbf16>, !attn.latent_kv<?x576xbf16, rope = 64> -> !attn.out<1x16x576xbf16>
  return
}

// -----

// A causal window cannot look ahead.
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  // expected-error @+1 {{'attn.attention' op a causal window must have right extent 0, got 8}}
  %out = attn.attention(%q, %k, %v) {causal, window = #attn.window<128, 8>}
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
  return
}

// -----

// Sinks are non-negative.
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  // expected-error @+1 {{'attn.attention' op sinks must be in [0, 2147483647], got -1}}
  %out = attn.attention(%q, %k, %v) {window = #attn.window<128, 0>, sinks = -1}
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
  return
}

// -----

// The scale is positive.
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  // expected-error @+1 {{'attn.attention' op scale must be positive and finite, got -1.000000e+00}}
  %out = attn.attention(%q, %k, %v) {scale = -1.0 : f32}
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
  return
}

// -----

// The soft-cap is positive.
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  // expected-error @+1 {{'attn.attention' op softcap must be positive and finite, got 0.000000e+00}}
  %out = attn.attention(%q, %k, %v) {softcap = 0.0 : f32}
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
  return
}

// -----

// Segment ids come in pairs (generic form).
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>, %s: memref<?x?xi32>) {
  // expected-error @+1 {{'attn.attention' op query and key segment ids must be given together}}
  %out = "attn.attention"(%q, %k, %v, %s) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0>}> ({}, {}) : (!attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, memref<?x?xi32>) -> !attn.out<?x8x64xbf16>
  return
}

// -----

// Segment ids of a dense batch are [batch, seq].
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>, %s: memref<?xi32>) {
  // expected-error @+1 {{'attn.attention' op query segment ids of a dense batch must be a rank-2 memref of i32, got 'memref<?xi32>'}}
  %out = attn.attention(%q, %k, %v) segments(%s, %s : memref<?xi32>, memref<?xi32>) : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
  return
}

// -----

// Captured buffers hold i32, i64 or f32.
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>, %c: memref<8xf16>) {
  // expected-error @+1 {{'attn.attention' op captured buffers must be memrefs of rank 1 to 2 with an identity layout and i32, i64 or f32 elements, got 'memref<8xf16>'}}
  %out = attn.attention(%q, %k, %v) captures(%c : memref<8xf16>) : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
  return
}

// -----

// score_mod takes the score, batch, head, qi, kvi, q_len and kv_len.
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  // expected-error @+1 {{'attn.attention' op 'score_mod' block arguments must be (f32, index, index, index, index, index, index), the captures' types last, got (f32, index)}}
  %out = attn.attention(%q, %k, %v) 
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
      score_mod {
      ^bb0(%s: f32, %i: index):
        attn.yield %s : f32
      }
  return
}

// -----

// mask_mod takes six indices and the captures.
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>, %c: memref<8xi32>) {
  // expected-error @+1 {{'attn.attention' op 'mask_mod' block arguments must be (index, index, index, index, index, index, memref<8xi32>), the captures' types last, got (index, index, index, index, index, index)}}
  %out = attn.attention(%q, %k, %v) captures(%c : memref<8xi32>) : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index, %ql: index, %kl: index):
        %t = arith.constant true
        attn.yield %t : i1
      }
  return
}

// -----

// score_mod yields one f32.
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  %out = attn.attention(%q, %k, %v) : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %ql: index, %kl: index):
        // expected-error @+1 {{'attn.yield' op in 'score_mod' must yield exactly one 'f32'}}
        attn.yield %i : index
      }
  return
}

// -----

// mask_mod yields one i1.
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  %out = attn.attention(%q, %k, %v) : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index, %ql: index, %kl: index):
        // expected-error @+1 {{'attn.yield' op in 'mask_mod' must yield exactly one 'i1'}}
        attn.yield
      }
  return
}

// -----

// Regions hold only the listed arith and math ops and memref.load.
func.func @g(%x: f32) -> f32 {
  return %x : f32
}
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  %out = attn.attention(%q, %k, %v) : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %ql: index, %kl: index):
        // expected-error @+1 {{'func.call' op is not allowed in 'score_mod': regions hold the arith and math ops listed in docs/regions.md, and memref.load on captures}}
        %r = func.call @g(%s) : (f32) -> f32
        attn.yield %r : f32
      }
  return
}

// -----

// A math op without a lowering is refused by name, not at code generation.
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  %out = attn.attention(%q, %k, %v) : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %ql: index, %kl: index):
        %n = arith.constant 3 : i32
        // expected-error @+1 {{'math.fpowi' op is not allowed in 'score_mod': regions hold the arith and math ops listed in docs/regions.md, and memref.load on captures}}
        %r = math.fpowi %s, %n : f32, i32
        attn.yield %r : f32
      }
  return
}

// -----

// An arith op outside the list is refused by name.
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  %out = attn.attention(%q, %k, %v) : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index, %ql: index, %kl: index):
        %f = arith.constant 1.0 : f32
        // expected-error @+1 {{'arith.bitcast' op is not allowed in 'mask_mod': regions hold the arith and math ops listed in docs/regions.md, and memref.load on captures}}
        %x = arith.bitcast %f : f32 to i32
        %c = arith.constant 0 : i32
        %r = arith.cmpi eq, %x, %c : i32
        attn.yield %r : i1
      }
  return
}

// -----

// Regions compute in f32: f64 values are refused.
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  %out = attn.attention(%q, %k, %v) : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %ql: index, %kl: index):
        // expected-error @+1 {{'arith.constant' op in 'score_mod' computes on 'f64': regions compute on f32, i1, i32, i64 and index scalars}}
        %c = arith.constant 2.0 : f64
        attn.yield %s : f32
      }
  return
}

// -----

// Conversions to other float types are refused by name.
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  %out = attn.attention(%q, %k, %v) : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %ql: index, %kl: index):
        // expected-error @+1 {{'arith.truncf' op is not allowed in 'score_mod': regions hold the arith and math ops listed in docs/regions.md, and memref.load on captures}}
        %x = arith.truncf %s : f32 to bf16
        attn.yield %s : f32
      }
  return
}

// -----

// f16 values are refused where they appear.
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  %out = attn.attention(%q, %k, %v) : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %ql: index, %kl: index):
        // expected-error @+1 {{'arith.constant' op in 'score_mod' computes on 'f16': regions compute on f32, i1, i32, i64 and index scalars}}
        %c = arith.constant 2.0 : f16
        %t = math.tanh %c : f16
        attn.yield %s : f32
      }
  return
}

// -----

// Integers narrower than 32 bits are refused.
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  %out = attn.attention(%q, %k, %v) : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index, %ql: index, %kl: index):
        // expected-error @+1 {{'arith.index_cast' op in 'mask_mod' computes on 'i8': regions compute on f32, i1, i32, i64 and index scalars}}
        %x = arith.index_cast %i : index to i8
        %t = arith.constant true
        attn.yield %t : i1
      }
  return
}

// -----

// Vector values are refused.
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  %out = attn.attention(%q, %k, %v) : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %ql: index, %kl: index):
        // expected-error @+1 {{'arith.constant' op in 'score_mod' computes on 'vector<4xf32>': regions compute on f32, i1, i32, i64 and index scalars}}
        %c = arith.constant dense<1.0> : vector<4xf32>
        attn.yield %s : f32
      }
  return
}

// -----

// Booleans are not ordered as signed numbers: true is -1 in arith, 1 in C++.
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  %out = attn.attention(%q, %k, %v) : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index, %ql: index, %kl: index):
        %a = arith.cmpi ule, %j, %i : index
        %z = arith.constant false
        // expected-error @+1 {{'arith.cmpi' op in 'mask_mod' orders i1 values as signed numbers: compare booleans with eq, ne or an unsigned predicate}}
        %r = arith.cmpi slt, %a, %z : i1
        attn.yield %r : i1
      }
  return
}

// -----

// Booleans are not numbers.
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  %out = attn.attention(%q, %k, %v) : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %ql: index, %kl: index):
        %a = arith.cmpi ule, %j, %i : index
        // expected-error @+1 {{'arith.extsi' op in 'score_mod' reads i1 as a number: booleans take andi, ori, xori, select, cmpi (eq, ne, unsigned), extui, uitofp, index_castui and trunci}}
        %x = arith.extsi %a : i1 to i32
        attn.yield %s : f32
      }
  return
}

// -----

// Regions are isolated, in a name scope of their own: values of the
// function are not visible there (buffers come in as captures).
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>, %x: f32) {
  %out = attn.attention(%q, %k, %v) : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %ql: index, %kl: index):
        // expected-error @+1 {{use of undeclared SSA value name}}
        %r = arith.addf %s, %x : f32
        attn.yield %r : f32
      }
  return
}

// -----

// attn.yield only ends attention regions.
func.func @f(%x: f32) {
  // expected-error @+1 {{'attn.yield' op expects parent op 'attn.attention'}}
  attn.yield %x : f32
}

// -----

// A merge needs two states.
func.func @f(%o: !attn.out<1x8x64xf32>, %l: !attn.lse<1x8>) {
  // expected-error @+1 {{'attn.merge_states' op merges 2 to 32 states, got 1}}
  %out, %lse = attn.merge_states (%o, %l) : !attn.out<1x8x64xf32>, !attn.lse<1x8> -> !attn.out<1x8x64xbf16>
  return
}

// -----

// Partial states share a type (generic form).
func.func @f(%o: !attn.out<1x8x64xf32>, %o2: !attn.out<1x8x64xbf16>, %l: !attn.lse<1x8>) {
  // expected-error @+1 {{'attn.merge_states' op all partial outputs must have the same type}}
  %out, %lse = "attn.merge_states"(%o, %o2, %l, %l) : (!attn.out<1x8x64xf32>, !attn.out<1x8x64xbf16>, !attn.lse<1x8>, !attn.lse<1x8>) -> (!attn.out<1x8x64xf32>, !attn.lse<1x8>)
  return
}

// -----

// Each LSE matches its output.
func.func @f(%o: !attn.out<1x8x64xf32>, %l: !attn.lse<1x4>) {
  // expected-error @+1 {{'attn.merge_states' op each log-sum-exp must have one entry per query and head of its output}}
  %out, %lse = attn.merge_states (%o, %l), (%o, %l) : !attn.out<1x8x64xf32>, !attn.lse<1x4> -> !attn.out<1x8x64xf32>
  return
}

// -----

// The merged output keeps the partial shape.
func.func @f(%o: !attn.out<1x8x64xf32>, %l: !attn.lse<1x8>) {
  // expected-error @+1 {{'attn.merge_states' op merged output must have the partial outputs' shape and layout; only its element type may differ}}
  %out, %lse = attn.merge_states (%o, %l), (%o, %l) : !attn.out<1x8x64xf32>, !attn.lse<1x8> -> !attn.out<1x8x128xbf16>
  return
}

// -----

// repeat_kv multiplies the head count by the group.
func.func @f(%k: !attn.kv<?x8x64xbf16>) {
  // expected-error @+1 {{'attn.repeat_kv' op result heads (30) must be the source heads (8) times the group (4)}}
  %r = attn.repeat_kv %k by 4 : !attn.kv<?x8x64xbf16> -> !attn.kv<?x30x64xbf16>
  return
}

// -----

// repeat_kv repeats at least once.
func.func @f(%k: !attn.kv<?x8x64xbf16>) {
  // expected-error @+1 {{'attn.repeat_kv' op group must be in [1, 1024], got 0}}
  %r = attn.repeat_kv %k by 0 : !attn.kv<?x8x64xbf16> -> !attn.kv<?x8x64xbf16>
  return
}

// -----

// repeat_kv changes nothing but the heads.
func.func @f(%k: !attn.kv<?x8x64xbf16>) {
  // expected-error @+1 {{'attn.repeat_kv' op result must keep the source's sequence length, head dim, element type and layout}}
  %r = attn.repeat_kv %k by 2 : !attn.kv<?x8x64xbf16> -> !attn.kv<?x16x64xbf16, ragged>
  return
}

// -----

// Merging KV splits takes the one state that holds them.
func.func @f(%o: !attn.out<1x8x64xf32>, %l: !attn.lse<1x8>) {
  // expected-error @+1 {{'attn.merge_states' op merges the splits of one state, got 2 states}}
  %out, %lse = attn.merge_states (%o, %l), (%o, %l) {kv_splits = 4 : i64} : !attn.out<1x8x64xf32>, !attn.lse<1x8> -> !attn.out<1x8x64xbf16>
  return
}

// -----

// One split is no split.
func.func @f(%o: !attn.out<1x8x64xf32>, %l: !attn.lse<1x8>) {
  // expected-error @+1 {{'attn.merge_states' op kv_splits must be in [2, 32], got 1}}
  %out, %lse = attn.merge_states (%o, %l) {kv_splits = 1 : i64} : !attn.out<1x8x64xf32>, !attn.lse<1x8> -> !attn.out<1x8x64xbf16>
  return
}

// -----

// Split-KV partial states are kept in f32 with their log-sum-exps.
func.func @f(%q: !attn.q<1x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  // expected-error @+1 {{'attn.attention' op with kv_splits produces f32 partial states and their log-sum-exps}}
  %out = attn.attention(%q, %k, %v) {kv_splits = 4 : i64}
      : !attn.q<1x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<1x8x64xbf16>
  return
}

// -----

// One split of the keys is no split.
func.func @f(%q: !attn.q<1x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  // expected-error @+1 {{'attn.attention' op kv_splits must be in [2, 32], got 1}}
  %out, %lse = attn.attention(%q, %k, %v) {kv_splits = 1 : i64}
      : !attn.q<1x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<1x8x64xf32>, !attn.lse<1x8>
  return
}

// -----

// A misspelled mask is refused, not compiled as no mask.
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  // expected-error @+1 {{'attn.attention' op has no attribute 'casual'; did you mean 'causal'?}}
  %out = attn.attention(%q, %k, %v) {casual}
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
  return
}

// -----

// An attribute far from every declared one lists them.
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  // expected-error @+1 {{'attn.attention' op has no attribute 'sliding'; it takes alibi, causal, kv_splits, scale, shared_keys, sinks, softcap, window}}
  %out = attn.attention(%q, %k, %v) {causal, sliding = 4 : i64}
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
  return
}

// -----

// Only the pipeline's own attn_gpu annotations are allowed.
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  // expected-error @+1 {{unknown annotation 'attn_gpu.palm': attn_gpu annotates with attn_gpu.target, attn_gpu.plan and attn_gpu.masks}}
  %out = attn.attention(%q, %k, %v) {attn_gpu.palm = 1 : i64}
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
  return
}

// -----

// A pipeline annotation has its attribute type.
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  // expected-error @+1 {{'attn_gpu.plan' must be an #attn_gpu.plan on an attn.attention, got 1 : i64}}
  %out = attn.attention(%q, %k, %v) {attn_gpu.plan = 1 : i64}
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
  return
}

// -----

// Window extents fit the device's 32-bit positions, never truncated.
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  // expected-error @+1 {{window extents must be in [0, 2147483647], got <4294967297, 0>}}
  %out = attn.attention(%q, %k, %v) {window = #attn.window<4294967297, 0>}
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
  return
}

// -----

// Sinks fit the device's 32-bit positions, never truncated.
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  // expected-error @+1 {{'attn.attention' op sinks must be in [0, 2147483647], got 4294967296}}
  %out = attn.attention(%q, %k, %v) {window = #attn.window<128, 0>, sinks = 4294967296}
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
  return
}

// -----

// Splits are bounded by what one merge kernel combines.
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  // expected-error @+1 {{'attn.attention' op kv_splits must be in [2, 32], got 33}}
  %out = attn.attention(%q, %k, %v) {kv_splits = 33 : i64}
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
  return
}

// -----

// Head counts fit the launch grid, never truncated.
// expected-error @+1 {{query head count must be in [1, 1024], got 2147483648}}
func.func @f(%a: !attn.q<?x2147483648x128xbf16>) {
  return
}

// -----

// Sequence lengths fit the device's 32-bit positions.
// expected-error @+1 {{sequence length must be in [1, 2147483647] or '?', got 4294967296}}
func.func @f(%a: !attn.kv<4294967296x8x64xbf16>) {
  return
}

// -----

// Head dims are bounded.
// expected-error @+1 {{output head dim must be a multiple of 8 in [8, 1024], got 2048}}
func.func @f(%a: !attn.out<?x8x2048xbf16>) {
  return
}

// -----

// Log-sum-exp head counts are bounded like the outputs'.
// expected-error @+1 {{log-sum-exp head count must be in [1, 1024], got 0}}
func.func @f(%a: !attn.lse<?x0>) {
  return
}

// -----

// A merge combines at most as many states as its kernel takes.
func.func @f(%o: !attn.out<1x8x64xf32>, %l: !attn.lse<1x8>) {
  // expected-error @+1 {{'attn.merge_states' op merges 2 to 32 states, got 33}}
  %out, %lse = attn.merge_states (%o, %l), (%o, %l), (%o, %l), (%o, %l), (%o, %l), (%o, %l), (%o, %l), (%o, %l), (%o, %l), (%o, %l), (%o, %l), (%o, %l), (%o, %l), (%o, %l), (%o, %l), (%o, %l), (%o, %l), (%o, %l), (%o, %l), (%o, %l), (%o, %l), (%o, %l), (%o, %l), (%o, %l), (%o, %l), (%o, %l), (%o, %l), (%o, %l), (%o, %l), (%o, %l), (%o, %l), (%o, %l), (%o, %l)
      : !attn.out<1x8x64xf32>, !attn.lse<1x8> -> !attn.out<1x8x64xbf16>
  return
}

// -----

// Merges take no undeclared attributes.
func.func @f(%o: !attn.out<1x8x64xf32>, %l: !attn.lse<1x8>) {
  // expected-error @+1 {{'attn.merge_states' op has no attribute 'kv_split'; did you mean 'kv_splits'?}}
  %out, %lse = attn.merge_states (%o, %l) {kv_split = 2 : i64}
      : !attn.out<1x8x64xf32>, !attn.lse<1x8> -> !attn.out<1x8x64xbf16>
  return
}

// -----

// A repeat takes no undeclared attributes.
func.func @f(%k: !attn.kv<?x8x64xbf16>) {
  // expected-error @+1 {{'attn.repeat_kv' op has no attribute 'fast'; it takes group}}
  %r = attn.repeat_kv %k by 4 {fast} : !attn.kv<?x8x64xbf16> -> !attn.kv<?x32x64xbf16>
  return
}

// -----

// A repeat's group is bounded like head counts.
func.func @f(%k: !attn.kv<?x1x64xbf16>) {
  // expected-error @+1 {{'attn.repeat_kv' op group must be in [1, 1024], got 2048}}
  %r = attn.repeat_kv %k by 2048 : !attn.kv<?x1x64xbf16> -> !attn.kv<?x1024x64xbf16>
  return
}

// -----

// A region's yield takes no attributes.
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
      score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    // expected-error @+1 {{'attn.yield' op has no attribute 'fast'; it takes none}}
    attn.yield {fast} %s : f32
  }
  return
}

// -----

// A variant captures at most as many buffers as the launch passes.
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>, %t: memref<8xf32>) {
  // expected-error @+1 {{'attn.attention' op captures at most 8 buffers, got 9}}
  %out = attn.attention(%q, %k, %v) captures(%t, %t, %t, %t, %t, %t, %t, %t, %t : memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<8xf32>)
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
  return
}

// -----

// Scales dequantize fp8 caches only.
func.func @f(%q: !attn.q<1x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>,
             %ks: memref<1xf32>, %vs: memref<1xf32>) {
  // expected-error @below {{kv_scales dequantize an fp8 key/value cache; the cache holds 'bf16'}}
  %out = attn.attention(%q, %k, %v) kv_scales(%ks, %vs : memref<1xf32>, memref<1xf32>)
      : !attn.q<1x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<1x8x64xbf16>
  return
}

// -----

// A scale is one f32 per tensor or one per KV head.
func.func @f(%q: !attn.q<1x8x64xbf16>, %k: !attn.kv<?x2x64xf8E4M3FN>, %v: !attn.kv<?x2x64xf8E4M3FN>,
             %ks: memref<4xf32>, %vs: memref<1xf32>) {
  // expected-error @below {{key scale must be memref<1xf32> (per tensor) or memref<2xf32> (per KV head), got 'memref<4xf32>'}}
  %out = attn.attention(%q, %k, %v) kv_scales(%ks, %vs : memref<4xf32>, memref<1xf32>)
      : !attn.q<1x8x64xbf16>, !attn.kv<?x2x64xf8E4M3FN>, !attn.kv<?x2x64xf8E4M3FN> -> !attn.out<1x8x64xbf16>
  return
}

// -----

// Scales are f32 with a static size.
func.func @f(%q: !attn.q<1x8x64xbf16>, %k: !attn.kv<?x2x64xf8E4M3FN>, %v: !attn.kv<?x2x64xf8E4M3FN>,
             %ks: memref<1xf32>, %vs: memref<?xf16>) {
  // expected-error @below {{value scale must be memref<1xf32> (per tensor) or memref<2xf32> (per KV head), got 'memref<?xf16>'}}
  %out = attn.attention(%q, %k, %v) kv_scales(%ks, %vs : memref<1xf32>, memref<?xf16>)
      : !attn.q<1x8x64xbf16>, !attn.kv<?x2x64xf8E4M3FN>, !attn.kv<?x2x64xf8E4M3FN> -> !attn.out<1x8x64xbf16>
  return
}

// -----

// Scales come in pairs (generic form).
func.func @f(%q: !attn.q<1x8x64xbf16>, %k: !attn.kv<?x8x64xf8E4M3FN>, %v: !attn.kv<?x8x64xf8E4M3FN>, %s: memref<1xf32>) {
  // expected-error @+1 {{'attn.attention' op key and value scales must be given together}}
  %out = "attn.attention"(%q, %k, %v, %s) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 1, 0>}> ({}, {}) : (!attn.q<1x8x64xbf16>, !attn.kv<?x8x64xf8E4M3FN>, !attn.kv<?x8x64xf8E4M3FN>, memref<1xf32>) -> !attn.out<1x8x64xbf16>
  return
}

// -----

// attn annotates no other operation: `attn.causal` on a function would be
// ignored, so the dialect refuses it.
// expected-error @+1 {{'attn.causal' on 'func.func' would be ignored: attn annotates no other operation; write variant attributes on attn.attention (e.g. {causal})}}
func.func @f() attributes {attn.causal} {
  return
}

// -----

// Nor does it annotate a function's arguments.
// expected-error @+1 {{'attn.window' on argument 0 of 'func.func' would be ignored}}
func.func @f(%q: !attn.q<?x8x64xbf16> {attn.window = 4 : i64}) {
  return
}

// -----

// Nor its results.
// expected-error @+1 {{'attn.causal' on result 0 of 'func.func' would be ignored}}
func.func @f() -> (i32 {attn.causal}) {
  %c = arith.constant 0 : i32
  return %c : i32
}

// -----

// A shared node's queries belong to many requests: no causal mask.
func.func @f(%q: !attn.q<?x8x64xbf16, ragged>, %k: !attn.kv<?x8x64xbf16, paged<16, nhd>>, %v: !attn.kv<?x8x64xbf16, paged<16, nhd>>) {
  // expected-error @+1 {{'attn.attention' op with shared_keys cannot take causal: a shared node's queries are many requests' rows, whose positions it does not know}}
  %out = attn.attention(%q, %k, %v) {shared_keys, causal}
      : !attn.q<?x8x64xbf16, ragged>, !attn.kv<?x8x64xbf16, paged<16, nhd>>, !attn.kv<?x8x64xbf16, paged<16, nhd>> -> !attn.out<?x8x64xbf16, ragged>
  return
}

// -----

// A window needs each query's position.
func.func @f(%q: !attn.q<?x8x64xbf16, ragged>, %k: !attn.kv<?x8x64xbf16, paged<16, nhd>>, %v: !attn.kv<?x8x64xbf16, paged<16, nhd>>) {
  // expected-error @+1 {{'attn.attention' op with shared_keys cannot take a window}}
  %out = attn.attention(%q, %k, %v) {shared_keys, window = #attn.window<128, 0>}
      : !attn.q<?x8x64xbf16, ragged>, !attn.kv<?x8x64xbf16, paged<16, nhd>>, !attn.kv<?x8x64xbf16, paged<16, nhd>> -> !attn.out<?x8x64xbf16, ragged>
  return
}

// -----

// ALiBi's bias needs each query's position.
func.func @f(%q: !attn.q<?x8x64xbf16, ragged>, %k: !attn.kv<?x8x64xbf16, paged<16, nhd>>, %v: !attn.kv<?x8x64xbf16, paged<16, nhd>>) {
  // expected-error @+1 {{'attn.attention' op with shared_keys cannot take ALiBi}}
  %out = attn.attention(%q, %k, %v) {shared_keys, alibi}
      : !attn.q<?x8x64xbf16, ragged>, !attn.kv<?x8x64xbf16, paged<16, nhd>>, !attn.kv<?x8x64xbf16, paged<16, nhd>> -> !attn.out<?x8x64xbf16, ragged>
  return
}

// -----

// Sinks are the first keys of one request, and would count once per level.
func.func @f(%q: !attn.q<?x8x64xbf16, ragged>, %k: !attn.kv<?x8x64xbf16, paged<16, nhd>>, %v: !attn.kv<?x8x64xbf16, paged<16, nhd>>) {
  // expected-error @+1 {{'attn.attention' op with shared_keys cannot take sinks}}
  %out = attn.attention(%q, %k, %v) {shared_keys, sinks = 4}
      : !attn.q<?x8x64xbf16, ragged>, !attn.kv<?x8x64xbf16, paged<16, nhd>>, !attn.kv<?x8x64xbf16, paged<16, nhd>> -> !attn.out<?x8x64xbf16, ragged>
  return
}

// -----

// Document ids are per request.
func.func @f(%q: !attn.q<?x8x64xbf16, ragged>, %k: !attn.kv<?x8x64xbf16, ragged>, %v: !attn.kv<?x8x64xbf16, ragged>, %qs: memref<?xi32>, %ks: memref<?xi32>) {
  // expected-error @+1 {{'attn.attention' op with shared_keys cannot take segments}}
  %out = attn.attention(%q, %k, %v) segments(%qs, %ks : memref<?xi32>, memref<?xi32>) {shared_keys}
      : !attn.q<?x8x64xbf16, ragged>, !attn.kv<?x8x64xbf16, ragged>, !attn.kv<?x8x64xbf16, ragged> -> !attn.out<?x8x64xbf16, ragged>
  return
}

// -----

// A score_mod reading a query's index would see the node's row, not the request's.
func.func @f(%q: !attn.q<?x8x64xbf16, ragged>, %k: !attn.kv<?x8x64xbf16, paged<16, nhd>>, %v: !attn.kv<?x8x64xbf16, paged<16, nhd>>) {
  // expected-error @+1 {{'attn.attention' op with shared_keys, 'score_mod' may not read its qi argument: a shared node's rows belong to many requests}}
  %out = attn.attention(%q, %k, %v) {shared_keys}
      : !attn.q<?x8x64xbf16, ragged>, !attn.kv<?x8x64xbf16, paged<16, nhd>>, !attn.kv<?x8x64xbf16, paged<16, nhd>> -> !attn.out<?x8x64xbf16, ragged>
      score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kvi: index, %ql: index, %kl: index):
    %i = arith.index_cast %qi : index to i32
    %f = arith.sitofp %i : i32 to f32
    %r = arith.addf %s, %f : f32
    attn.yield %r : f32
  }
  return
}

// -----

// A mask_mod reading the request index would see the node's.
func.func @f(%q: !attn.q<?x8x64xbf16, ragged>, %k: !attn.kv<?x8x64xbf16, paged<16, nhd>>, %v: !attn.kv<?x8x64xbf16, paged<16, nhd>>) {
  // expected-error @+1 {{'attn.attention' op with shared_keys, 'mask_mod' may not read its batch argument}}
  %out = attn.attention(%q, %k, %v) {shared_keys}
      : !attn.q<?x8x64xbf16, ragged>, !attn.kv<?x8x64xbf16, paged<16, nhd>>, !attn.kv<?x8x64xbf16, paged<16, nhd>> -> !attn.out<?x8x64xbf16, ragged>
      mask_mod {
  ^bb0(%b: index, %h: index, %qi: index, %kvi: index, %ql: index, %kl: index):
    %z = arith.constant 0 : index
    %keep = arith.cmpi eq, %b, %z : index
    attn.yield %keep : i1
  }
  return
}
