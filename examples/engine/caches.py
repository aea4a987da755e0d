"""Where the engine keeps each layer's paged keys and values ("NHD":
[pages, page_size, kv_heads, head_dim] per layer), in one of two ways:

- OwnCaches: tensors of the engine's own beside an accounting pool (the
  scheduler only counts pages): the engine writes K/V at the step's slots
  and must apply each step's page copies (a fork's copy-on-write) itself.
- PoolCaches: the attnc.KVPool's own per-layer caches (host memory on the
  CPU, device memory on the GPU): K/V go in through pool.append_slots, and
  the pool made the page copies already.

Both give the scheduler the pool it schedules over (`pool`). Under a
radix cache with a host tier (RadixCache(pool, host_pages=N)) each step
lists the pages the tier moved (page_transfers: offloads of evicted
pages, loads of admitted prefixes): the tier moved them in the pool's own
caches already, so PoolCaches has nothing to do, while OwnCaches keeps
host pages of its own and moves its pages alike.
"""

import torch

import attnc


# A page_transfers entry's direction (attnc's TRANSFER_OFFLOAD, _LOAD).
OFFLOAD, LOAD = 0, 1


class OwnCaches:
    def __init__(self, num_layers, num_pages, page_size, num_kv_heads,
                 head_dim, dtype, device, host_pages=0):
        self.pool = attnc.KVPool(num_pages, page_size=page_size,
                                 num_kv_heads=num_kv_heads, head_dim=head_dim,
                                 memory="accounting")
        shape = (num_layers, num_pages, page_size, num_kv_heads, head_dim)
        # Zeroed, not empty: attnc's prefill reads whole last pages, and a
        # masked 0 times a NaN left in an unwritten slot is NaN.
        self.keys = torch.zeros(shape, dtype=dtype, device=device)
        self.values = torch.zeros(shape, dtype=dtype, device=device)
        # The host tier's pages, pinned beside a GPU so that transfers
        # are queued on the stream in order with the steps.
        host_shape = (num_layers, host_pages) + shape[2:]
        pinned = torch.device(device).type == "cuda"
        self.host_keys = torch.zeros(host_shape, dtype=dtype,
                                     pin_memory=pinned)
        self.host_values = torch.zeros(host_shape, dtype=dtype,
                                       pin_memory=pinned)

    def copy_pages(self, copies):
        # In order: a later copy may read a page an earlier one wrote.
        for src, dst in copies:
            self.keys[:, dst] = self.keys[:, src]
            self.values[:, dst] = self.values[:, src]

    def transfer_pages(self, transfers):
        """(host page, device page, direction) triples, in order: a page
        offloaded may be loaded into within the same list."""
        for host, device, direction in transfers:
            if direction == OFFLOAD:
                self.host_keys[:, host].copy_(self.keys[:, device],
                                              non_blocking=True)
                self.host_values[:, host].copy_(self.values[:, device],
                                                non_blocking=True)
            elif direction == LOAD:
                self.keys[:, device].copy_(self.host_keys[:, host],
                                           non_blocking=True)
                self.values[:, device].copy_(self.host_values[:, host],
                                             non_blocking=True)
            else:
                raise ValueError(f"a page transfer's direction is {OFFLOAD}"
                                 f" or {LOAD}, got {direction}")

    def write(self, layer, keys, values, slots):
        """keys, values [tokens, kv_heads, head_dim] at int64 `slots` (on
        the caches' device, none negative: StepContext drops the rows the
        step does not write)."""
        heads, dim = keys.shape[1], keys.shape[2]
        self.keys[layer].view(-1, heads, dim)[slots] = \
            keys.to(self.keys.dtype)
        self.values[layer].view(-1, heads, dim)[slots] = \
            values.to(self.values.dtype)

    def layer(self, layer):
        return self.keys[layer], self.values[layer]

    def close(self):
        self.pool.close()


class PoolCaches:
    def __init__(self, num_layers, num_pages, page_size, num_kv_heads,
                 head_dim, dtype, device, host_pages=0):
        """host_pages: the radix cache's host tier holds those pages."""
        device = torch.device(device)
        self._dtype = dtype
        self.pool = attnc.KVPool(
            num_pages, page_size=page_size, num_kv_heads=num_kv_heads,
            head_dim=head_dim, dtype=str(dtype).replace("torch.", ""),
            memory="device" if device.type == "cuda" else "host",
            num_layers=num_layers)
        if device.type == "cuda":
            # The pool's fork copies must come before the step's writes,
            # which go on torch's stream.
            self.pool.set_stream(torch.cuda.current_stream())
        self._layers = [self.pool.caches(layer)
                        for layer in range(num_layers)]

    def copy_pages(self, copies):
        """Done already: the scheduler's pool copies the pages itself."""

    def transfer_pages(self, transfers):
        """Done already: the host tier moves the pool's pages itself (a
        device pool's on the pool's stream, the engine's)."""

    def write(self, layer, keys, values, slots):
        self.pool.append_slots(self._packed(keys), self._packed(values),
                               slots, layer=layer)

    def _packed(self, rows):
        """rows in the pool's dtype with strides (heads * dim, dim, 1):
        append_slots checks the token stride even for one token, whose
        stride torch's contiguous() leaves as it found it."""
        return rows.to(self._dtype).clone(
            memory_format=torch.contiguous_format)

    def layer(self, layer):
        return self._layers[layer]

    def close(self):
        self._layers = None
        self.pool.close()


STORAGE = {"own": OwnCaches, "pool": PoolCaches}
