// RUN: attn-opt %s -split-input-file -attn-analyze-masks -attn-lower-to-gpu | FileCheck %s

// Plans written by hand (attn-plan sets its own): the choices attn-plan no
// longer makes still lower as the plan says.

// A plan with lean_tile_loop takes the tile loop that holds fewer
// registers: the first tile's softmax is built apart, an scf.for then
// issues each later tile's scores and the previous tile's P.V before its
// softmax, and the masks go with the modifiers. The plan's fields reach the
// kernel as written.
// CHECK-LABEL: attn_gpu.kernel @attention
// CHECK-SAME: static_order = true, lean_tile_loop = true
// CHECK: attn_gpu.begin_consumer
// CHECK: %[[BEGIN:.*]] = attn_gpu.tiles_begin
// CHECK-NEXT: %[[END:.*]] = attn_gpu.tiles_end
// CHECK: %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT: attn_gpu.await_turn
// CHECK-NEXT: attn_gpu.issue_scores %[[BEGIN]]
// CHECK-NEXT: attn_gpu.pass_turn
// CHECK-NEXT: attn_gpu.wait_scores pending = 0
// CHECK-NEXT: %[[FIRST_PARTIAL:.*]] = attn_gpu.tile_is_partial %[[BEGIN]]
// CHECK-NEXT: scf.if %[[FIRST_PARTIAL]] {
// CHECK-NEXT: attn_gpu.modify_scores %[[BEGIN]] {masked}
// CHECK-NEXT: } else {
// CHECK-NEXT: attn_gpu.modify_scores %[[BEGIN]]
// CHECK-NEXT: }
// CHECK-NEXT: attn_gpu.softmax_update
// CHECK-NEXT: %[[SECOND:.*]] = arith.addi %[[BEGIN]], %[[ONE]]
// CHECK-NEXT: scf.for %[[TILE:.*]] = %[[SECOND]] to %[[END]] step %[[ONE]] {
// CHECK-NEXT: %[[PREV:.*]] = arith.subi %[[TILE]], %[[ONE]]
// CHECK-NEXT: attn_gpu.await_turn
// CHECK-NEXT: attn_gpu.issue_scores %[[TILE]]
// CHECK-NEXT: attn_gpu.issue_values %[[PREV]]
// CHECK-NEXT: attn_gpu.pass_turn
// CHECK-NEXT: attn_gpu.wait_scores pending = 1
// CHECK-NEXT: %[[PARTIAL:.*]] = attn_gpu.tile_is_partial %[[TILE]]
// CHECK-NEXT: scf.if %[[PARTIAL]] {
// CHECK-NEXT: attn_gpu.modify_scores %[[TILE]] {masked}
// CHECK-NEXT: } else {
// CHECK-NEXT: attn_gpu.modify_scores %[[TILE]]
// CHECK-NEXT: }
// CHECK-NEXT: attn_gpu.softmax_update
// CHECK-NEXT: }
// CHECK-NOT: scf.while
// CHECK-NOT: mask_scores
module attributes {attn_gpu.target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448>} {
  func.func @prefill_d64_score_mod(%q: !attn.q<?x16x64xbf16>, %k: !attn.kv<?x16x64xbf16>,
                                   %v: !attn.kv<?x16x64xbf16>) -> !attn.out<?x16x64xbf16> {
    %out = attn.attention(%q, %k, %v)
        {attn_gpu.plan = #attn_gpu.plan<warp_specialized, block = 192 x 128, warps = 16 x 1, stages = 3, kv_splits = 1, q_in_regs = false, q_buffers = 2, static_order = true, lean_tile_loop = true>}
        : !attn.q<?x16x64xbf16>, !attn.kv<?x16x64xbf16>, !attn.kv<?x16x64xbf16>
        -> !attn.out<?x16x64xbf16>
        score_mod {
        ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %ql: index, %kl: index):
          %c = arith.constant 0.5 : f32
          %r = arith.mulf %s, %c : f32
          attn.yield %r : f32
        }
    return %out : !attn.out<?x16x64xbf16>
  }
}
