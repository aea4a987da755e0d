"""The eager launch path: what a call of a shape already seen does, with no
argument checks, spec building or ctypes conversion beyond the launch's
own (issue 46: users call attnc eagerly, where a small decode step is
bound by the host)."""

import ctypes

from ._capi import check, lib
from ._layouts import as_order
from ._tensors import current_stream

_ADDRESSES = {}


def addresses(*values):
    """A C array of device addresses (its type made once per length)."""
    array = _ADDRESSES.get(len(values))
    if array is None:
        array = _ADDRESSES[len(values)] = ctypes.c_uint64 * max(1,
                                                                len(values))
    return array(*values)


def run(kernel, plan, inputs, outputs, stream):
    """attnc_run of a kernel without buffer inputs: its addresses are
    trusted (the caller's checks made them)."""
    check(lib.attnc_run(kernel._handle, plan._handle, addresses(*inputs),
                        len(inputs), addresses(*outputs), len(outputs), None,
                        None, stream))


class DenseCall:
    """What a dense call resolved to, reused by every later call with the
    same shapes, strides, dtypes, devices and options: the kernel, how q,
    k and v reach it (`route`: _layouts.Route), where the output goes and
    a plan per stream (a plan serves one launch at a time)."""

    def __init__(self, kernel, batch, layout, route, out_shape, lse_shape,
                 out_direct, return_lse):
        self.kernel, self.batch = kernel, batch
        self.layout, self.route = layout, route
        self.order = route.order()
        # Output shapes in the route's memory order; out_direct: whether a
        # caller's out lies in that order (else a temporary is copied in).
        self.out_shape, self.lse_shape = out_shape, lse_shape
        self.out_direct, self.return_lse = out_direct, return_lse
        self.plans = {}

    def plan(self, stream):
        plan = self.plans.get(stream)
        if plan is None:
            plan = self.plans[stream] = self.kernel.plan(**self.batch)
        return plan

    def _operand(self, x, copy):
        """An operand as the kernel reads it: the tensor itself (a
        transpose or a folding of heads is a view starting where it does)
        or its copy in the route's order."""
        return as_order(x, self.layout, self.order) if copy else x

    def _logical(self, x):
        """A result in the route's memory order as the caller's layout."""
        return x if self.layout == self.order else x.transpose(1, 2)

    def launch(self, q, k, v, out, buffers=(), sizes=None):
        import torch
        copies = self.route.copies
        # Copies stay alive until their launch is queued (then torch's
        # allocator reuses their memory only behind it on the stream).
        operands = (self._operand(q, copies[0]), self._operand(k, copies[1]),
                    self._operand(v, copies[2]))
        inputs = [x.data_ptr() for x in operands]
        if out is None or not self.out_direct:
            memory = torch.empty(self.out_shape, dtype=q.dtype,
                                 device=q.device)
        else:
            memory = out.transpose(1, 2) if self.layout != self.order \
                else out
        outputs = [memory.data_ptr()]
        lse = None
        if self.return_lse:
            lse = torch.empty(self.lse_shape, dtype=torch.float32,
                              device=q.device)
            outputs.append(lse.data_ptr())
        stream = current_stream(q)
        plan = self.plan(stream)
        if buffers:
            self.kernel.run(plan, inputs + [b.data_ptr() for b in buffers],
                            outputs, stream, sizes)
        else:
            run(self.kernel, plan, inputs, outputs, stream)
        result = self._logical(memory)
        if out is not None and not self.out_direct:
            out.copy_(result)
            result = out
        elif out is not None:
            result = out
        if lse is not None:
            return result, self._logical(lse)
        return result
