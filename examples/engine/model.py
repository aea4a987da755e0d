"""Small decoder-only models built from transformers configs with seeded
random weights (no download): a Llama-style one (GQA, RoPE) and a
Gemma-2-style one (GQA, RoPE, sliding-window layers alternating with
global ones, tanh soft-capped attention scores and logits).

The reference each engine run is held to is the model's own unmodified
`generate()`, greedy, one request at a time, with the attention
implementation transformers runs that model with: "sdpa" for Llama, and
"eager" for Gemma-2, because transformers' sdpa path drops the attention
soft-cap without a word (sdpa_attention_forward takes `softcap` into
**kwargs and never reads it), so an "sdpa" Gemma-2 is not the model.
"""

import torch
import transformers

# Sizes the attnc paged kernels take (head_dim 64, groups of 4 query heads
# per KV head) and a CPU runs in seconds.
SIZES = dict(vocab_size=512, hidden_size=256, intermediate_size=512,
             num_hidden_layers=2, num_attention_heads=8,
             num_key_value_heads=2, head_dim=64, max_position_embeddings=2048)

# Which attention implementation the reference generate() runs, by
# model_type (see the module docstring for Gemma-2's).
REFERENCE_ATTENTION = {"llama": "sdpa", "gemma2": "eager"}


def llama_config(**overrides):
    sizes = dict(SIZES, **overrides)
    return transformers.LlamaConfig(
        **sizes, rope_theta=10000.0, tie_word_embeddings=False,
        bos_token_id=None, eos_token_id=None, pad_token_id=None)


def gemma2_config(**overrides):
    """Layers alternate sliding (even) and global (odd), as Gemma-2's do.
    The window and the soft-cap are small enough to bite on 20-300 token
    prompts and random weights: a window of 48 tokens, and a soft-cap of 8
    that the scores reach once q and k are scaled up (build_model's
    qk_gain); the scale 1/sqrt(80) is not 1/sqrt(head_dim), so a backend
    that ignores the model's scale diverges."""
    settings = dict(SIZES, num_hidden_layers=4, sliding_window=48,
                    attn_logit_softcapping=8.0, final_logit_softcapping=30.0,
                    query_pre_attn_scalar=80)
    settings.update(overrides)
    layers = settings["num_hidden_layers"]
    settings.setdefault("layer_types", [
        "sliding_attention" if i % 2 == 0 else "full_attention"
        for i in range(layers)])
    return transformers.Gemma2Config(
        **settings, bos_token_id=None, eos_token_id=None, pad_token_id=None)


CONFIGS = {"llama": llama_config, "gemma2": gemma2_config}


def build_model(config, seed=0, dtype=torch.float32, device="cpu",
                qk_gain=None, attention_gain=None):
    """The model of `config` with weights drawn from torch.manual_seed(seed),
    in eval mode, its attention the reference's (REFERENCE_ATTENTION).

    Two gains shape the random weights for a greedy-identity test:
    qk_gain scales the query and key projections up from transformers'
    0.02-std init (default 4 for Gemma-2, 1 otherwise): scores of random
    weights are otherwise so small that a soft-cap never acts.
    attention_gain scales what attention adds to the residual stream: the
    fp16 rounding of queries and keys moves the logits by ~1e-3 of their
    spread at gain 1, enough to flip the near-ties a few hundred greedy
    tokens always hold. The defaults (0.03 for Llama, 0.1 for Gemma-2,
    whose score error is larger for its larger scores) put the smallest
    top-1 margin of the test workloads 9-26x above the CPU reference's
    fp16 logit error, while a wrong window or a dropped soft-cap still
    changes most requests' tokens (python/tests/test_engine.py checks
    both)."""
    torch.manual_seed(seed)
    if qk_gain is None:
        qk_gain = 4.0 if config.model_type == "gemma2" else 1.0
    if attention_gain is None:
        attention_gain = 0.1 if config.model_type == "gemma2" else 0.03
    attention = REFERENCE_ATTENTION[config.model_type]
    model_class = transformers.AutoModelForCausalLM
    model = model_class.from_config(config, attn_implementation=attention,
                                    dtype=dtype)
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.q_proj.weight.mul_(qk_gain)
            layer.self_attn.k_proj.weight.mul_(qk_gain)
            if config.model_type == "gemma2":
                # Gemma-2 normalizes attention's output before adding it
                # (post_attention_layernorm, scale 1 + weight): the gain
                # goes there, as o_proj's would be normalized away.
                layer.post_attention_layernorm.weight.fill_(
                    attention_gain - 1.0)
            else:
                layer.self_attn.o_proj.weight.mul_(attention_gain)
    # generate() reads its defaults from here: greedy, and no end of
    # sequence (the engine stops requests at max_tokens, as generate at
    # max_new_tokens).
    model.generation_config.do_sample = False
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    return model.to(device).eval()


def random_prompts(vocab_size, count, shared_prefixes, prefix_len,
                   own_len_range, seed=0):
    """`count` prompts of random token ids, request i starting with shared
    prefix i % shared_prefixes (prefix_len tokens) and going on with
    random tokens of its own (a length drawn from own_len_range)."""
    rng = torch.Generator().manual_seed(seed)

    def tokens(n):
        return torch.randint(1, vocab_size, (n,), generator=rng).tolist()

    prefixes = [tokens(prefix_len) for _ in range(shared_prefixes)]
    low, high = own_len_range
    prompts = []
    for i in range(count):
        own = int(torch.randint(low, high + 1, (1,), generator=rng))
        prompts.append(prefixes[i % shared_prefixes] + tokens(own))
    return prompts


@torch.no_grad()
def reference_generate(model, prompt, max_new_tokens):
    """The model's own greedy generate() of one prompt: (new tokens, the
    top-1 margin of each step's logits, those logits [steps, vocab])."""
    input_ids = torch.tensor([prompt], device=model.device)
    out = model.generate(input_ids, max_new_tokens=max_new_tokens,
                         min_new_tokens=max_new_tokens, do_sample=False,
                         output_logits=True, return_dict_in_generate=True)
    logits = torch.cat(out.logits).float()
    top2 = logits.topk(2, dim=-1).values
    margins = (top2[:, 0] - top2[:, 1]).tolist()
    return out.sequences[0, len(prompt):].tolist(), margins, logits
