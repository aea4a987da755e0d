"""An SVG bar chart of the benchmark's speed ratios, written by hand so the
GPU machine needs no plotting library."""


def bar_chart_svg(rows, device, date):
    series = [("attnc", "#1f77b4"), ("flash", "#ff7f0e"),
              ("cudnn", "#2ca02c"), ("flex", "#9467bd"),
              ("flashinfer", "#d62728"), ("fi_decode", "#8c564b"),
              ("fi_decode_tc", "#e377c2")]
    # Only the implementations that ran somewhere (FlashInfer may be off).
    series = [(name, color) for name, color in series
              if name == "attnc" or any(row.get(name) for row in rows)]
    width, height, left, top, bottom = 900, 360, 60, 40, 60
    plot_h = height - top - bottom
    group_w = (width - left - 20) / max(1, len(rows))
    bar_w = group_w / (len(series) + 1)
    # Speed relative to the fastest implementation of each workload.
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
           f'height="{height}" font-family="sans-serif" font-size="11">',
           f'<text x="{left}" y="20" font-size="14">Speed relative to the '
           f'fastest implementation (1.0 = fastest); {device}, {date}</text>']
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        y = top + plot_h * (1 - tick)
        out.append(f'<line x1="{left}" x2="{width - 20}" y1="{y:.1f}" '
                   f'y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 8}" y="{y + 4:.1f}" '
                   f'text-anchor="end">{tick:.2f}</text>')
    for i, row in enumerate(rows):
        times = {name: row.get(name) for name, _ in series}
        if not any(times.values()):
            continue
        fastest = min(t for t in times.values() if t)
        x0 = left + i * group_w + bar_w / 2
        for j, (name, color) in enumerate(series):
            t = times[name]
            if not t:
                continue
            h = plot_h * fastest / t
            x = x0 + j * bar_w
            out.append(f'<rect x="{x:.1f}" y="{top + plot_h - h:.1f}" '
                       f'width="{bar_w * 0.9:.1f}" height="{h:.1f}" '
                       f'fill="{color}"/>')
        out.append(f'<text x="{x0 + bar_w * len(series) / 2:.1f}" '
                   f'y="{top + plot_h + 16}" text-anchor="middle">'
                   f'{row["name"]}</text>')
    for j, (name, color) in enumerate(series):
        x = left + j * 110
        y = height - 18
        out.append(f'<rect x="{x}" y="{y - 10}" width="12" height="12" '
                   f'fill="{color}"/>')
        out.append(f'<text x="{x + 16}" y="{y}">{name}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
