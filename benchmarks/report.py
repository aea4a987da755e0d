"""The Markdown results of bench.py from its rows (plain Python: no torch,
so the table can be checked without a GPU)."""

# Every peer, in column order; "best peer / attnc" takes the fastest.
PEERS = ("flash", "cudnn", "flex", "flashinfer", "fi_decode", "fi_decode_tc")
FLASHINFER_PEERS = ("flashinfer", "fi_decode", "fi_decode_tc")
COLUMNS = {"flash": "flash ms", "cudnn": "cuDNN ms", "flex": "Flex ms",
           "flashinfer": "FlashInfer ms", "fi_decode": "FI decode ms",
           "fi_decode_tc": "FI decode TC ms"}
# The FlashInfer peers of a prefill row and of a decode row.
PREFILL_ONLY = ("flashinfer",)
DECODE_ONLY = ("fi_decode", "fi_decode_tc")


# attnc's output against the reference: the Python GPU tests' bound.
ERROR_LIMIT = 1e-2


def check_failures(rows):
    """Rows whose attnc output is NaN or off: 'P4 (nan)'."""
    return [f"{r['name']} ({r['error_vs_peer']:.1e})" for r in rows
            if r.get("error_vs_peer") is not None and
            not r["error_vs_peer"] <= ERROR_LIMIT]


def fmt(x, spec=".3f"):
    return "n/a" if x is None else format(x, spec)


def best_peer(row):
    times = [row[p] for p in PEERS if row.get(p)]
    return min(times) if times else None


def peer_cell(row, peer):
    """A peer's time; n/a where it could not run (or was left out), '–'
    where the peer does not apply to the row (decode vs prefill)."""
    if peer not in row and (peer in PREFILL_ONLY and row.get("decode") or
                            peer in DECODE_ONLY and not row.get("decode")):
        return "–"
    return fmt(row.get(peer))


def markdown(rows, meta):
    """meta: device, date, command, iters, copy_gbs, gemm_tflops,
    flashinfer (its version, or None), flashinfer_why (why not used, or
    None), flashinfer_notes (lines)."""
    peers = [p for p in PEERS
             if meta.get("flashinfer") or p not in FLASHINFER_PEERS]
    lines = [
        f"Device: **{meta['device']}**, {meta['date']}. Command: "
        f"`{meta['command']}` (CUDA events; the median of 3 rounds that "
        f"each time every implementation in turn, so the card's clock "
        f"drift under load falls on all alike; a round's time is the "
        f"median of about {meta['iters']}/3 samples after 3 warm-ups, each "
        f"sample timing back-to-back calls for at least 5 ms, so host "
        f"overhead overlaps GPU work).",
        "",
        f"Ceilings measured in the same run: device copy "
        f"**{meta['copy_gbs']:.0f} GB/s** (1 GiB `copy_`), bf16 GEMM "
        f"**{meta['gemm_tflops']:.0f} TFLOP/s** (8192³ `torch.mm`). A "
        f"decode row is also set against a copy of its own bytes, timed "
        f"in its rounds (of same-bytes copy): the rate a kernel that short "
        f"can reach, launch and tail included.",
        "",
        "| workload | attnc ms | rate | of ceiling | of same-bytes copy | " +
        " | ".join(COLUMNS[p] for p in peers) +
        " | best peer / attnc | rel. error vs peer |",
        "|---|---:|---:|---:|---:|" + "---:|" * len(peers) + "---:|---:|",
    ]
    for r in rows:
        rate = ("n/a" if r.get("attnc_rate") is None
                else f"{r['attnc_rate']:.0f} {r['unit']}")
        ceiling = ("n/a" if r.get("vs_ceiling") is None
                   else f"{r['vs_ceiling']:.0%}")
        same_copy = ("–" if not r.get("decode") else
                     "n/a" if r.get("vs_same_bytes_copy") is None
                     else f"{r['vs_same_bytes_copy']:.0%}")
        lines.append(
            f"| {r['name']}: {r['what']} | {fmt(r.get('attnc'))} | {rate} | "
            f"{ceiling} | {same_copy} | " +
            " | ".join(peer_cell(r, p) for p in peers) +
            f" | {fmt(r.get('vs_best_peer'), '.2f')} | "
            f"{fmt(r.get('error_vs_peer'), '.1e')} |")
    wrong = check_failures(rows)
    if wrong:
        lines += ["", f"**Error check failed** (attnc's rel. error NaN or "
                  f"above {ERROR_LIMIT:.0e}): {', '.join(wrong)}."]
    failed = [f"- {r['name']}: {r['attnc_why']}" for r in rows
              if r.get("attnc_why")]
    if failed:
        lines += ["", "attnc failed on:"] + failed
    notes = [f"- {r['name']} {p}: {r[p + '_why']}" for r in rows
             for p in peers if r.get(p + "_why")]
    if notes:
        lines += ["", "Peers that could not run a workload:"] + notes
    if meta.get("flashinfer"):
        lines += [""] + meta.get("flashinfer_notes", [])
    elif meta.get("flashinfer_why"):
        lines += ["", f"FlashInfer: not used ({meta['flashinfer_why']})."]
    lines += [""] + [f"- {line}" for line in row_notes(rows)]
    by_name = {r["name"]: r for r in rows}
    d1, d4 = by_name.get("D1"), by_name.get("D4")
    if d1 and d4 and d1.get("attnc") and d4.get("attnc"):
        lines += ["", f"D4 (paged, shuffled 16-token pages) runs at "
                  f"**{d1['attnc'] / d4['attnc']:.0%}** of D1's speed "
                  f"(contiguous)."]
    return lines


def row_notes(rows):
    """What the reference of each error is, and the rows' own notes."""
    notes = ["rel. error: attnc against the first peer that ran (flash, "
             "cuDNN, Flex, FlashInfer, in that order), except where a row "
             "says otherwise; each peer's own error against the same "
             "reference is in results.json (`peer_errors`)."]
    for r in rows:
        if r.get("reference") and r["reference"] not in PEERS:
            errors = ", ".join(f"{COLUMNS[p].replace(' ms', '')} {e:.1e}"
                               for p, e in r.get("peer_errors", {}).items()
                               if e is not None)
            notes.append(f"{r['name']}: error against {r['reference']}; "
                         f"the peers against it: {errors or 'none ran'}.")
        notes += [f"{r['name']}: {n}" for n in r.get("notes", [])]
    return notes
