"""Where the engine keeps each layer's paged keys and values ("NHD":
[pages, page_size, kv_heads, head_dim] per layer), in one of two ways:

- OwnCaches: tensors of the engine's own beside an accounting pool (the
  scheduler only counts pages): the engine writes K/V at the step's slots
  and must apply each step's page copies (a fork's copy-on-write) itself.
- PoolCaches: the attnc.KVPool's own per-layer caches (host memory on the
  CPU, device memory on the GPU): K/V go in through pool.append_slots, and
  the pool made the page copies already. This is where a host tier would
  slot in: pages the pool moves between memories stay the pool's business.

Both give the scheduler the pool it schedules over (`pool`).
"""

import torch

import attnc


class OwnCaches:
    def __init__(self, num_layers, num_pages, page_size, num_kv_heads,
                 head_dim, dtype, device):
        self.pool = attnc.KVPool(num_pages, page_size=page_size,
                                 num_kv_heads=num_kv_heads, head_dim=head_dim,
                                 memory="accounting")
        shape = (num_layers, num_pages, page_size, num_kv_heads, head_dim)
        # Zeroed, not empty: attnc's prefill reads whole last pages, and a
        # masked 0 times a NaN left in an unwritten slot is NaN.
        self.keys = torch.zeros(shape, dtype=dtype, device=device)
        self.values = torch.zeros(shape, dtype=dtype, device=device)

    def copy_pages(self, copies):
        # In order: a later copy may read a page an earlier one wrote.
        for src, dst in copies:
            self.keys[:, dst] = self.keys[:, src]
            self.values[:, dst] = self.values[:, src]

    def write(self, layer, keys, values, slots):
        """keys, values [tokens, kv_heads, head_dim] at int64 `slots` (on
        the caches' device); a negative slot is skipped, as the pool's
        append_slots does."""
        keep = slots >= 0
        heads, dim = keys.shape[1], keys.shape[2]
        self.keys[layer].view(-1, heads, dim)[slots[keep]] = \
            keys[keep].to(self.keys.dtype)
        self.values[layer].view(-1, heads, dim)[slots[keep]] = \
            values[keep].to(self.values.dtype)

    def layer(self, layer):
        return self.keys[layer], self.values[layer]

    def close(self):
        self.pool.close()


class PoolCaches:
    def __init__(self, num_layers, num_pages, page_size, num_kv_heads,
                 head_dim, dtype, device):
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
