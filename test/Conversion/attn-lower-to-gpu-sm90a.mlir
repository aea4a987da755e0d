// RUN: attn-opt %s -split-input-file -attn-plan="arch=sm_90a" -attn-analyze-masks -attn-split-kv -attn-lower-to-gpu | FileCheck %s

// The warp-specialized kernel: the producer and consumer roles are the two
// branches of one scf.if, and each role walks the CTA's work items (a
// persistent grid). One producer thread issues the copies. A consumer
// clears its rows for each item and issues its first tile's scores; its
// tile loop (an scf.while) then does a tile's modifiers, its masks apart
// where the tile is partial, and its softmax, and, unless it was the last
// tile, issues the next tile's scores before this tile's P.V and waits
// only for the scores (pending = 1). The last P.V follows the loop,
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
// CHECK-NEXT: %[[BEGIN:.*]] = attn_gpu.tiles_begin
// CHECK-NEXT: %[[END:.*]] = attn_gpu.tiles_end
// CHECK: %[[ANY:.*]] = arith.cmpi slt, %[[BEGIN]], %[[END]]
// CHECK: scf.if %[[ANY]] {
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT: attn_gpu.await_turn
// CHECK-NEXT: attn_gpu.issue_scores %[[BEGIN]]
// CHECK-NEXT: attn_gpu.pass_turn
// CHECK-NEXT: attn_gpu.wait_scores pending = 0
// CHECK-NEXT: scf.while (%[[TILE:.*]] = %[[BEGIN]]) : (index) -> index {
// CHECK-NEXT: attn_gpu.modify_scores %[[TILE]]{{$}}
// CHECK-NEXT: %[[PARTIAL:.*]] = attn_gpu.tile_is_partial %[[TILE]]
// CHECK-NEXT: scf.if %[[PARTIAL]] {
// CHECK-NEXT: attn_gpu.mask_scores %[[TILE]]
// CHECK-NEXT: }
// CHECK-NEXT: attn_gpu.softmax_update
// CHECK-NEXT: %[[NEXT:.*]] = arith.addi %[[TILE]], %[[ONE]]
// CHECK-NEXT: %[[MORE:.*]] = arith.cmpi slt, %[[NEXT]], %[[END]]
// CHECK-NEXT: scf.condition(%[[MORE]]) %[[NEXT]]
// CHECK-NEXT: } do {
// CHECK-NEXT: ^bb0(%[[ISSUED:.*]]: index):
// CHECK-NEXT: %[[DONE:.*]] = arith.subi %[[ISSUED]], %[[ONE]]
// CHECK-NEXT: attn_gpu.await_turn
// CHECK-NEXT: attn_gpu.issue_scores %[[ISSUED]]
// CHECK-NEXT: attn_gpu.issue_values %[[DONE]]
// CHECK-NEXT: attn_gpu.pass_turn
// CHECK-NEXT: attn_gpu.wait_scores pending = 1
// CHECK-NEXT: scf.yield %[[ISSUED]]
// CHECK-NEXT: }
// CHECK-NEXT: attn_gpu.await_turn
// CHECK-NEXT: %[[LAST:.*]] = arith.subi %[[END]], %[[ONE]]
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

// -----

// Three consumers beside a region take 96-key tiles, and with them the
// compact tile loop (the loop exits in the middle, the masks apart) and
// claimed work items. The lean loop a written plan may ask for is in
// attn-lower-to-gpu-written-plans.mlir.
// CHECK-LABEL: attn_gpu.kernel @attention
// CHECK-SAME: block = 192 x 96
// CHECK-NOT: static_order
// CHECK-NOT: lean_tile_loop
// CHECK: attn_gpu.begin_consumer
// CHECK: scf.while
// CHECK: attn_gpu.modify_scores
// CHECK: attn_gpu.mask_scores
func.func @prefill_d64_score_mod(%q: !attn.q<?x16x64xbf16>, %k: !attn.kv<?x16x64xbf16>,
                                 %v: !attn.kv<?x16x64xbf16>) -> !attn.out<?x16x64xbf16> {
  %out = attn.attention(%q, %k, %v)
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

// -----

// A mask_mod region makes every tile partial (the analysis cannot bound
// it): two consumers keep the compact loop, whose passes mask every tile
// after its modifiers, with no branch.
// CHECK-LABEL: attn_gpu.kernel @attention
// CHECK-SAME: q_buffers = 2>
// CHECK-SAME: partial = always
// CHECK: scf.while (%[[TILE:.*]] = %{{.*}}) : (index) -> index {
// CHECK-NEXT: attn_gpu.modify_scores %[[TILE]]{{$}}
// CHECK-NEXT: attn_gpu.mask_scores %[[TILE]]
// CHECK-NEXT: attn_gpu.softmax_update
func.func @prefill_mask_mod(%q: !attn.q<?x16x128xbf16>, %k: !attn.kv<?x16x128xbf16>,
                            %v: !attn.kv<?x16x128xbf16>) -> !attn.out<?x16x128xbf16> {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<?x16x128xbf16>, !attn.kv<?x16x128xbf16>, !attn.kv<?x16x128xbf16>
      -> !attn.out<?x16x128xbf16>
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index, %ql: index, %kl: index):
        %d = arith.subi %i, %j : index
        %c = arith.constant 2 : index
        %r = arith.remui %d, %c : index
        %z = arith.constant 0 : index
        %e = arith.cmpi eq, %r, %z : index
        attn.yield %e : i1
      }
  return %out : !attn.out<?x16x128xbf16>
}
