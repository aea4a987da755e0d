//===- kv_pool.h - writing the serving runtime's paged KV pool ------------===//
//
// The pool (serving/kv) holds keys and values of each of its layers as two
// caches in the paged layout the attention kernels read: [pages][page]
// where a page is laid out by pagedSlotOffset (params.h). A token's place
// is its slot, page * page_size + position in the page, as an engine's slot
// mapping gives it; a slot names the same rows in every layer.
//
// The caches follow one another in one allocation, layer by layer, keys
// then values: layer l's key cache starts poolCacheOffset(l, 0, stride)
// bytes in and its value cache poolCacheOffset(l, 1, stride), where the
// stride is poolCacheStride (a cache's bytes, rounded up to
// kPoolCacheAlign). A pool of one layer is a key cache and a value cache.
//
// Two kernels write the caches: appendSlots copies a step's new keys and
// values of one layer to their slots, copyPages copies whole pages in every
// layer (copy-on-write of a page that forked sequences share). The host
// emits a config C with the pool's layout (kPageSize, kKVHeads, kHeadDim,
// kElementBytes, kPageOrder) and an entry point for each.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DEVICE_KV_POOL_H
#define ATTNC_DEVICE_KV_POOL_H

#include "attnc/device/params.h"

namespace attnc {

/// Pages copied by one copyPages launch.
constexpr int kMaxPageCopies = 32;
/// Layers a pool holds (a launch's grid.z bounds one copy's layers).
constexpr int kMaxPoolLayers = 65535;
/// Where each cache of the pool starts: as aligned as the allocation, for
/// the kernels' widest loads.
constexpr i64 kPoolCacheAlign = 256;

/// Bytes of one page of one cache.
constexpr i64 poolPageBytes(i64 pageSize, i64 kvHeads, i64 headDim,
                            i64 elementBytes) {
  return pageSize * kvHeads * headDim * elementBytes;
}

/// Bytes from the start of one cache to the next: a cache of `numPages`
/// pages, rounded up to kPoolCacheAlign.
constexpr i64 poolCacheStride(i64 numPages, i64 pageBytes) {
  return (numPages * pageBytes + kPoolCacheAlign - 1) / kPoolCacheAlign *
         kPoolCacheAlign;
}

/// Byte offset of layer `layer`'s key (`which` 0) or value (1) cache from
/// the start of the pool's allocation.
constexpr i64 poolCacheOffset(i64 layer, int which, i64 cacheStride) {
  return (2 * layer + which) * cacheStride;
}

/// Bytes of the pool's allocation: every layer's two caches, the last one
/// unpadded.
constexpr i64 poolBytes(i64 layers, i64 numPages, i64 pageBytes) {
  return poolCacheOffset(layers - 1, 1, poolCacheStride(numPages, pageBytes)) +
         numPages * pageBytes;
}

/// A step's new keys and values: token t's head h starts at element
/// t * stride + h * head_dim of `keys` (and `values`), so that K and V may
/// be views into one projection's output.
struct AppendParams {
  const void *keys;
  const void *values;
  i64 key_stride, value_stride; // elements between tokens
  const i64 *slots; // one per token; negative or past the pool: not written
  i64 tokens;
  i64 slot_count; // the pool's slots
  void *key_cache;
  void *value_cache;
};

/// Where pages of the pool's layout live, as a copy reads or writes them:
/// layer l's caches are key_cache and value_cache plus l * layer_bytes. The
/// pool's own caches, or a host tier's pinned pages (mapped, so that a
/// kernel reaches them over the bus: one launch moves many pages where a
/// copy call per page each cost microseconds).
struct PageStore {
  void *key_cache;   // layer 0's
  void *value_cache; // layer 0's
  i64 layer_bytes;   // poolCacheOffset(1, 0, stride): one layer's two caches
};

/// Pages copied in every layer, page from[k] of `source` over page to[k] of
/// `destination` (the same store for a pool's own copies).
struct CopyPagesParams {
  PageStore source;
  PageStore destination;
  i32 layers;
  i32 from[kMaxPageCopies];
  i32 to[kMaxPageCopies];
  i32 count;
};

/// The slot of position `inPage` of page `page`: what a slot mapping holds.
ATTNC_DEVICE i64 poolSlot(i32 page, int pageSize, int inPage) {
  return i64(page) * pageSize + inPage;
}

/// Byte offset of slot `slot`'s row of KV head `head` from the start of a
/// cache (K or V) of the pool's layout.
ATTNC_DEVICE i64 poolRowOffset(i64 slot, int head, PageOrder order,
                               int pageSize, int kvHeads, int headDim,
                               int elementBytes) {
  i64 pageBytes = i64(pageSize) * kvHeads * headDim * elementBytes;
  return slot / pageSize * pageBytes +
         pagedSlotOffset(order, head, int(slot % pageSize), pageSize, kvHeads,
                         headDim) *
             elementBytes;
}

/// The widest copy that divides a row of `rowBytes`: every row, page and
/// cache start is aligned to it, and so must be what is appended.
constexpr int poolChunkBytes(i64 rowBytes) {
  return rowBytes % 16 == 0  ? 16
         : rowBytes % 8 == 0 ? 8
         : rowBytes % 4 == 0 ? 4
         : rowBytes % 2 == 0 ? 2
                             : 1;
}

/// The pool's layout as its kernels are compiled for it.
template <class C> struct PoolLayout {
  static constexpr i64 kRowBytes = i64(C::kHeadDim) * C::kElementBytes;
  static constexpr i64 kPageBytes = kRowBytes * C::kPageSize * C::kKVHeads;
  static constexpr int kChunkBytes = poolChunkBytes(kRowBytes);
  static constexpr int kRowChunks = int(kRowBytes / kChunkBytes);

  ATTNC_DEVICE static i64 rowOffset(i64 slot, int head) {
    return poolRowOffset(slot, head, C::kPageOrder, C::kPageSize, C::kKVHeads,
                         C::kHeadDim, C::kElementBytes);
  }
};

#if ATTNC_IS_DEVICE
template <int Bytes> struct Chunk;
template <> struct Chunk<16> {
  using Type = uint4;
};
template <> struct Chunk<8> {
  using Type = uint2;
};
template <> struct Chunk<4> {
  using Type = uint32_t;
};
template <> struct Chunk<2> {
  using Type = uint16_t;
};
template <> struct Chunk<1> {
  using Type = uint8_t;
};

template <class C>
ATTNC_DEVICE void copyChunk(void *dst, i64 dstOffset, const void *src,
                            i64 srcOffset) {
  using T = typename Chunk<PoolLayout<C>::kChunkBytes>::Type;
  *reinterpret_cast<T *>(static_cast<char *>(dst) + dstOffset) =
      *reinterpret_cast<const T *>(static_cast<const char *>(src) + srcOffset);
}

/// One thread per chunk of a (token, head) row, K and V alike.
template <class C> ATTNC_DEVICE void appendSlots(const AppendParams &p) {
  using L = PoolLayout<C>;
  i64 rows = p.tokens * C::kKVHeads;
  for (i64 i = i64(blockIdx.x) * blockDim.x + threadIdx.x;
       i < rows * L::kRowChunks; i += i64(gridDim.x) * blockDim.x) {
    i64 row = i / L::kRowChunks;
    int chunk = int(i % L::kRowChunks);
    i64 token = row / C::kKVHeads;
    int head = int(row % C::kKVHeads);
    i64 slot = p.slots[token];
    if (slot < 0 || slot >= p.slot_count)
      continue; // padding the engine gave no slot, or a slot not ours
    i64 dst = L::rowOffset(slot, head) + i64(chunk) * L::kChunkBytes;
    i64 within = (i64(head) * C::kHeadDim) * C::kElementBytes +
                 i64(chunk) * L::kChunkBytes;
    copyChunk<C>(p.key_cache, dst, p.keys,
                 token * p.key_stride * C::kElementBytes + within);
    copyChunk<C>(p.value_cache, dst, p.values,
                 token * p.value_stride * C::kElementBytes + within);
  }
}

/// A CTA row per copied page and a CTA layer per layer; whole pages, K and
/// V.
template <class C> ATTNC_DEVICE void copyPages(const CopyPagesParams &p) {
  using L = PoolLayout<C>;
  constexpr i64 chunks = L::kPageBytes / L::kChunkBytes;
  for (int layer = blockIdx.z; layer < p.layers; layer += gridDim.z) {
    const char *fromKeys = static_cast<const char *>(p.source.key_cache) +
                           layer * p.source.layer_bytes;
    const char *fromValues = static_cast<const char *>(p.source.value_cache) +
                             layer * p.source.layer_bytes;
    char *toKeys = static_cast<char *>(p.destination.key_cache) +
                   layer * p.destination.layer_bytes;
    char *toValues = static_cast<char *>(p.destination.value_cache) +
                     layer * p.destination.layer_bytes;
    for (int copy = blockIdx.y; copy < p.count; copy += gridDim.y) {
      i64 from = i64(p.from[copy]) * L::kPageBytes;
      i64 to = i64(p.to[copy]) * L::kPageBytes;
      for (i64 i = i64(blockIdx.x) * blockDim.x + threadIdx.x; i < chunks;
           i += i64(gridDim.x) * blockDim.x) {
        i64 offset = i * L::kChunkBytes;
        copyChunk<C>(toKeys, to + offset, fromKeys, from + offset);
        copyChunk<C>(toValues, to + offset, fromValues, from + offset);
      }
    }
  }
}
#endif

} // namespace attnc

#endif // ATTNC_DEVICE_KV_POOL_H
