"""Runs the engine on the check workload and compares it with generate():

    PYTHONPATH=python:examples python3 -m engine --model gemma2 \\
        --backend attnc --device cuda --storage pool --overlap

Exits 1 when any (request, branch) differs from generate()."""

import argparse
import sys

import torch

from . import check


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=sorted(check.CONFIGS),
                        default="llama")
    parser.add_argument("--backend", choices=("torch", "attnc"),
                        default="attnc" if torch.cuda.is_available()
                        else "torch")
    parser.add_argument("--device", default="cuda" if
                        torch.cuda.is_available() else "cpu")
    parser.add_argument("--storage", choices=("own", "pool"), default="own")
    parser.add_argument("--kv-dtype", choices=("float16", "bfloat16"),
                        default="float16")
    parser.add_argument("--pages", type=int,
                        default=check.DEFAULT_WORKLOAD.num_pages)
    parser.add_argument("--overlap", action="store_true",
                        help="form each step before the last is committed")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    workload = check.DEFAULT_WORKLOAD._replace(num_pages=args.pages)
    report = check.check(args.model, args.backend, args.device, args.storage,
                         workload, args.seed, getattr(torch, args.kv_dtype),
                         args.overlap)
    history, stats = report.history, report.stats
    branches = len(report.outputs)
    loop = "overlapped" if args.overlap else "synchronous"
    overlapped = sum(1 for r in history if r.pending_rows)
    print(f"{args.model} on {args.device} ({args.backend} attention, "
          f"{args.storage} caches, {args.kv_dtype}, {loop} loop: "
          f"{overlapped} steps fed by uncommitted samples): "
          f"{workload.requests} "
          f"requests, {branches} branches, {len(history)} steps, "
          f"{stats.cached_tokens} of {stats.prompt_tokens} prompt tokens "
          f"from the cache, {stats.preemptions} preemptions "
          f"({stats.recomputed_tokens} tokens recomputed), "
          f"{sum(r.page_copies for r in history)} fork page copies")
    print(f"smallest top-1 margin along generate(): {report.min_margin:.2e};"
          f" largest engine logit error: {report.max_logit_error:.2e}")
    if report.mismatches:
        print("differ from generate() (request, branch, index, margin, "
              "logit error):")
        for mismatch in report.mismatches:
            print("  ", mismatch)
        sys.exit(1)
    print(f"all {branches} branches equal generate()'s tokens")


if __name__ == "__main__":
    main()
