"""attnc from Python: a GQA causal prefill and a paged decode step on
PyTorch tensors, checked against torch's scaled_dot_product_attention.

    PYTHONPATH=python python3 examples/python_attention.py
"""

import torch
import torch.nn.functional as F

import attnc

torch.manual_seed(0)
q = torch.randn(2, 1024, 32, 128, device="cuda", dtype=torch.bfloat16)
k = torch.randn(2, 1024, 8, 128, device="cuda", dtype=torch.bfloat16)
v = torch.randn_like(k)
out = attnc.attention(q, k, v, layout="bshd", causal=True)  # [B, L, H, D]
ref = F.scaled_dot_product_attention(
    q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True,
    enable_gqa=True).transpose(1, 2)
print("prefill: relative error",
      ((out.float() - ref.float()).norm() / ref.float().norm()).item())

# Decode over a paged cache: 4 requests of 16-token pages, pages shuffled.
pages, page_size = 256, 16
k_cache = torch.randn(pages, page_size, 8, 128, device="cuda",
                      dtype=torch.bfloat16)
v_cache = torch.randn_like(k_cache)
kv_indices = torch.randperm(pages, dtype=torch.int32)[:200]
kv_indptr = torch.tensor([0, 50, 100, 150, 200], dtype=torch.int32)
kv_last_page_len = torch.tensor([16, 3, 9, 1], dtype=torch.int32)
wrapper = attnc.PagedAttention(32, 8, 128, page_size)
wrapper.plan(kv_indptr, kv_indices, kv_last_page_len)  # once per step
q1 = torch.randn(4, 32, 128, device="cuda", dtype=torch.bfloat16)
for layer in range(3):  # every layer reuses the plan
    out1 = wrapper.run(q1, k_cache, v_cache)
print("decode: out", tuple(out1.shape), "finite:",
      bool(torch.isfinite(out1).all()))
