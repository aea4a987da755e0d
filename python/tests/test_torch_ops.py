"""torch.ops.attnc.*: torch.compile(fullgraph=True) traces attnc's front
ends into the operators with no graph break (on CPU fake tensors: dynamo
needs no GPU to trace), and, on the GPU, compiled calls give eager's
results, the fake implementations agree with the real ones
(torch.library.opcheck) and CUDA graphs capture them."""

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed")
import attnc  # noqa: E402

BF16 = torch.bfloat16
on_gpu = pytest.mark.skipif(not torch.cuda.is_available(),
                            reason="no CUDA GPU on this machine")


class Traced(Exception):
    """Raised by the recording backend instead of running the graph."""


def traced_graph(fn, *args):
    """The FX graph torch.compile(fullgraph=True) makes of fn(*args)."""
    graphs = []

    def backend(graph, example_inputs):
        graphs.append(graph)

        def run(*inputs):
            raise Traced()
        return run
    torch._dynamo.reset()
    with pytest.raises(Traced):
        torch.compile(fn, backend=backend, fullgraph=True)(*args)
    return graphs[0]


def operators(graph):
    return [str(node.target) for node in graph.graph.nodes
            if node.op == "call_function"]


@pytest.mark.parametrize("layout, q_shape, k_shape", [
    ("bhsd", (2, 8, 64, 64), (2, 2, 64, 64)),
    ("bshd", (2, 64, 8, 64), (2, 64, 2, 64)),
])
def test_attention_traces_into_one_operator(layout, q_shape, k_shape):
    q = torch.randn(q_shape, dtype=BF16)
    k = torch.randn(k_shape, dtype=BF16)

    def layer(q, k, v):
        out, lse = attnc.attention(q, k, v, layout=layout, causal=True,
                                   window=(16, 0), softcap=30.0,
                                   return_lse=True)
        return out * 2, lse
    graph = traced_graph(layer, q, k, k)
    assert "attnc.attention" in operators(graph)
    node = next(n for n in graph.graph.nodes
                if str(n.target) == "attnc.attention")
    # The options reach the operator as constants.
    assert node.args[3:] == (layout, True, 16, 0, 0, 30.0, 0.0, False, True)


def test_fake_outputs_lie_in_the_eager_memory_order():
    # [B, H, S, D] inputs of a GQA prefill are read as tokens of heads
    # (they cannot fold): the output is a [B, H, S, D] view of a
    # [B, S, H, D] tensor, as the eager call returns it.
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        q = torch.empty(2, 8, 64, 64, dtype=BF16)
        k = torch.empty(2, 2, 64, 64, dtype=BF16)
        out, lse = torch.ops.attnc.attention(q, k, k, "bhsd", True, -1, -1,
                                             0, 0.0, 0.0, False, True)
    assert out.shape == (2, 8, 64, 64) and out.stride() == (32768, 64, 512,
                                                            1)
    assert lse.shape == (2, 8, 64)


def test_a_dense_call_without_a_layout_is_refused_while_tracing():
    q = torch.randn(2, 8, 64, 64, dtype=BF16)
    torch._dynamo.reset()
    with pytest.raises(Exception, match="dense attention needs layout="):
        torch.compile(lambda q: attnc.attention(q, q, q), backend="eager",
                      fullgraph=True)(q)


def test_arguments_the_operator_lacks_break_the_graph_with_a_reason():
    q = torch.randn(2, 8, 64, 64, dtype=BF16)
    doc = torch.zeros(2, 64, dtype=torch.int32)

    def layer(q, k, v):
        return attnc.attention(q, k, v, layout="bhsd", segments=doc)
    torch._dynamo.reset()
    with pytest.raises(Exception, match="attnc.attention with .*segments.* "
                       "runs eagerly"):
        torch.compile(layer, backend="eager", fullgraph=True)(q, q, q)


@pytest.mark.gpu
@on_gpu
def test_compiled_attention_matches_eager():
    torch.manual_seed(1)
    q = torch.randn(2, 16, 200, 128, device="cuda", dtype=BF16)
    k = torch.randn(2, 4, 300, 128, device="cuda", dtype=BF16)
    v = torch.randn_like(k)
    w = torch.randn(128, 128, device="cuda", dtype=BF16)

    def layer(q, k, v):
        return attnc.attention(q @ w, k, v, layout="bhsd", causal=True) @ w
    eager = layer(q, k, v)
    torch._dynamo.reset()
    compiled = torch.compile(layer, fullgraph=True)(q, k, v)
    assert torch.equal(compiled, eager)


@pytest.mark.gpu
@on_gpu
@pytest.mark.parametrize("layout, q_shape, k_shape", [
    ("bhsd", (2, 8, 100, 64), (2, 2, 150, 64)),   # tokens of heads
    ("bhsd", (2, 8, 1, 64), (2, 2, 150, 64)),     # folded decode
    ("bshd", (2, 100, 8, 64), (2, 150, 8, 64)),
])
def test_attention_operator_passes_opcheck(layout, q_shape, k_shape):
    torch.manual_seed(2)
    q = torch.randn(q_shape, device="cuda", dtype=BF16)
    k = torch.randn(k_shape, device="cuda", dtype=BF16)
    v = torch.randn_like(k)
    torch.library.opcheck(torch.ops.attnc.attention.default,
                          (q, k, v, layout, True, -1, -1, 0, 0.0, 0.0, False,
                           True))


@pytest.mark.gpu
@on_gpu
def test_paged_run_and_merge_compile_into_operators():
    torch.manual_seed(3)
    heads, kv_heads, dim, page = 16, 4, 128, 16
    k_cache = torch.randn(64, page, kv_heads, dim, device="cuda",
                          dtype=BF16)
    v_cache = torch.randn_like(k_cache)
    wrapper = attnc.PagedAttention(heads, kv_heads, dim, page,
                                   return_lse=True)
    wrapper.plan(torch.tensor([0, 20, 50], dtype=torch.int32),
                 torch.randperm(64, dtype=torch.int32)[:50],
                 torch.tensor([7, 16], dtype=torch.int32))
    q = torch.randn(2, heads, dim, device="cuda", dtype=BF16)

    def step(q):
        out, lse = wrapper.run(q, k_cache, v_cache)
        return attnc.merge_states([out, out], [lse, lse])
    eager = step(q)
    torch._dynamo.reset()
    compiled = torch.compile(step, fullgraph=True)(q)
    for a, b in zip(compiled, eager):
        assert torch.equal(a, b)


@pytest.mark.gpu
@on_gpu
def test_cuda_graphs_capture_the_compiled_operator():
    torch.manual_seed(4)
    q = torch.randn(4, 32, 1, 128, device="cuda", dtype=BF16)
    k = torch.randn(4, 8, 1000, 128, device="cuda", dtype=BF16)
    v = torch.randn_like(k)

    def decode(q, k, v):
        return attnc.attention(q, k, v, layout="bhsd")
    eager = decode(q, k, v)
    torch._dynamo.reset()
    compiled = torch.compile(decode, mode="reduce-overhead", fullgraph=True)
    for _ in range(3):  # warm-up, record, replay
        out = compiled(q, k, v)
    assert torch.equal(out, eager)
