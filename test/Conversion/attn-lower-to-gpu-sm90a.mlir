// RUN: attn-opt %s -split-input-file -attn-plan="arch=sm_90a" -attn-analyze-masks -attn-split-kv -attn-lower-to-gpu | FileCheck %s

// The warp-specialized kernel: the producer and consumer roles are the two
// branches of one scf.if, and each role walks the CTA's work items (a
// persistent grid). One producer thread issues the copies. A consumer
// clears its rows for each item, peels its first tile, then issues each
// tile's scores before the previous tile's P.V and waits only for the
// scores (pending = 1) before its softmax; the last P.V follows the loop,
// then the epilogue, which stages the output through the item's query
// tile (the plan gives each consumer two), and only then the query tile
// goes back to the producer.
// Consumers issue their products in turns (await_turn / pass_turn), which
// run on across items; the first consumer takes the last one (end_turns).
// CHECK-LABEL: attn_gpu.kernel @attention
// CHECK-SAME: plan = <warp_specialized, block = 128 x 128, warps = 12 x 1
// CHECK: %[[LIVE:.*]] = attn_gpu.begin : i1
// CHECK: scf.if %[[LIVE]]
// CHECK: %[[PRODUCER:.*]] = attn_gpu.is_producer : i1
// CHECK: scf.if %[[PRODUCER]] {
// CHECK-NEXT: %[[ISSUER:.*]] = attn_gpu.begin_producer : i1
// CHECK-NEXT: scf.if %[[ISSUER]] {
// CHECK-NEXT: %[[PITEMS:.*]] = attn_gpu.work_items
// CHECK: scf.for %[[PK:.*]] = %{{.*}} to %[[PITEMS]]
// CHECK-NEXT: %[[PLIVE:.*]] = attn_gpu.begin_item %[[PK]] : i1
// CHECK-NEXT: scf.if %[[PLIVE]] {
// CHECK-NEXT: attn_gpu.produce_tiles
// CHECK: } else {
// CHECK-NEXT: attn_gpu.begin_consumer
// CHECK-NEXT: %[[ITEMS:.*]] = attn_gpu.work_items
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %[[ITEMS]]
// CHECK-NEXT: %[[ITEM:.*]] = attn_gpu.begin_item %[[K]] : i1
// CHECK-NEXT: scf.if %[[ITEM]] {
// CHECK-NEXT: attn_gpu.begin_rows
// CHECK-NEXT: %[[BEGIN:.*]], %[[END:.*]] = attn_gpu.tile_range
// CHECK: %[[ANY:.*]] = arith.cmpi slt, %[[BEGIN]], %[[END]]
// CHECK: scf.if %[[ANY]] {
// CHECK-NEXT: attn_gpu.await_turn
// CHECK-NEXT: attn_gpu.issue_scores %[[BEGIN]]
// CHECK-NEXT: attn_gpu.pass_turn
// CHECK-NEXT: attn_gpu.wait_scores pending = 0
// CHECK: attn_gpu.softmax_update
// CHECK: scf.for %[[TILE:.*]] =
// CHECK-NEXT: attn_gpu.await_turn
// CHECK-NEXT: attn_gpu.issue_scores %[[TILE]]
// CHECK: %[[PREV:.*]] = arith.subi %[[TILE]]
// CHECK-NEXT: attn_gpu.issue_values %[[PREV]]
// CHECK-NEXT: attn_gpu.pass_turn
// CHECK-NEXT: attn_gpu.wait_scores pending = 1
// CHECK: attn_gpu.tile_is_partial %[[TILE]]
// CHECK: attn_gpu.softmax_update
// CHECK: attn_gpu.await_turn
// CHECK-NEXT: %[[LAST:.*]] = arith.subi %[[END]]
// CHECK-NEXT: attn_gpu.issue_values %[[LAST]]
// CHECK-NEXT: attn_gpu.pass_turn
// CHECK-NEXT: }
// CHECK-NEXT: attn_gpu.store_state
// CHECK-NEXT: attn_gpu.release_query
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: attn_gpu.end_turns
func.func @prefill(%q: !attn.q<?x32x128xbf16, ragged>, %k: !attn.kv<?x8x128xbf16, ragged>,
                   %v: !attn.kv<?x8x128xbf16, ragged>) -> !attn.out<?x32x128xbf16, ragged> {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x32x128xbf16, ragged>, !attn.kv<?x8x128xbf16, ragged>, !attn.kv<?x8x128xbf16, ragged>
      -> !attn.out<?x32x128xbf16, ragged>
  return %out : !attn.out<?x32x128xbf16, ragged>
}

// -----

// With one query tile per consumer (head dim 256 leaves no room for a
// second), the tile goes back to the producer as soon as the item's last
// scores are done, so that the next item's queries load during the last
// P.V and the epilogue.
// CHECK-LABEL: attn_gpu.kernel @attention
// CHECK-SAME: stages = 2, kv_splits = 1, q_in_regs = false>
// CHECK: attn_gpu.release_query
// CHECK-NEXT: attn_gpu.store_state
func.func @prefill_d256(%q: !attn.q<?x8x256xbf16>, %k: !attn.kv<?x8x256xbf16>,
                        %v: !attn.kv<?x8x256xbf16>) -> !attn.out<?x8x256xbf16> {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x8x256xbf16>, !attn.kv<?x8x256xbf16>, !attn.kv<?x8x256xbf16>
      -> !attn.out<?x8x256xbf16>
  return %out : !attn.out<?x8x256xbf16>
}
