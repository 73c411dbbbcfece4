"""A small SVG line chart (Python 3 standard library): panels of series against the same x
categories, on a log or a linear y axis, with a legend. What scripts/bench draws latest.svg with."""

import math

FONT = 'font-family="Helvetica, Arial, sans-serif" font-size="12"'


def esc(text):
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def human(v):
    for unit, f in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if v >= f:
            return f"{v / f:g}{unit}"
    return f"{v:g}"


def _ticks(lo, hi, log):
    if log:
        ticks, decade = [], 10 ** math.floor(math.log10(lo))
        while decade <= hi * 1.0001:
            ticks += [decade * m for m in (1, 2, 5) if lo <= decade * m <= hi]
            decade *= 10
        return ticks
    step = next(s for s in (0.5, 1, 2, 5, 10, 20, 50, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9) if (hi - lo) / s <= 8)
    return [i * step for i in range(math.ceil(lo / step), math.floor(hi / step) + 1)]


def panel(x0, y0, w, h, title, xs, series, log=False, label_points=False, xlabel="", ylabel="", hline=None, note=""):
    """One panel at (x0, y0), w x h. `series`: [(color, dashed, [y or None per x])]."""
    values = [v for _, _, ys in series for v in ys if v is not None]
    if not values:
        return []
    if log:
        lo, hi = 10 ** math.floor(math.log10(min(values))), 10 ** math.ceil(math.log10(max(values)))
        hi = max(hi, lo * 100)
        fy = lambda v: y0 + h - (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) * h
    else:
        lo, hi = 0.0, max(2.0, max(values) * 1.2)
        ticks = _ticks(lo, hi, False)
        hi = ticks[-1] if ticks[-1] >= max(values) else ticks[-1] + (ticks[1] - ticks[0])
        fy = lambda v: y0 + h - (v - lo) / (hi - lo) * h
    fx = lambda i: x0 + 30 + i * (w - 60) / max(1, len(xs) - 1)
    out = [f'<text x="{x0 + w / 2}" y="{y0 - 12}" text-anchor="middle" font-size="13" font-weight="bold">{esc(title)}</text>',
           f'<rect x="{x0}" y="{y0}" width="{w}" height="{h}" fill="none" stroke="#999"/>']
    for v in _ticks(lo, hi, log):
        out.append(f'<line x1="{x0}" y1="{fy(v):.1f}" x2="{x0 + w}" y2="{fy(v):.1f}" stroke="#eee"/>')
        out.append(f'<text x="{x0 - 6}" y="{fy(v) + 4:.1f}" text-anchor="end" fill="#444">'
                   f'{human(v) if log else f"{v:g}x"}</text>')
    if hline is not None:
        out.append(f'<line x1="{x0}" y1="{fy(hline):.1f}" x2="{x0 + w}" y2="{fy(hline):.1f}" stroke="#111" stroke-dasharray="4,3"/>')
    for i, x in enumerate(xs):
        out.append(f'<text x="{fx(i):.1f}" y="{y0 + h + 18}" text-anchor="middle" fill="#444">{esc(x)}</text>')
    out.append(f'<text x="{x0 + w / 2}" y="{y0 + h + 36}" text-anchor="middle">{esc(xlabel)}</text>')
    out.append(f'<text transform="translate({x0 - 60},{y0 + h / 2}) rotate(-90)" text-anchor="middle">{esc(ylabel)}</text>')
    if note:
        out.append(f'<text x="{x0 + w / 2}" y="{y0 + h + 54}" text-anchor="middle" fill="#555" font-size="11">{esc(note)}</text>')
    for k, (color, dashed, ys) in enumerate(series):
        pts = [(fx(i), fy(v), v) for i, v in enumerate(ys) if v is not None]
        dash = ' stroke-dasharray="6,4"' if dashed else ""
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="2.5"{dash} points="'
                   + " ".join(f"{x:.1f},{y:.1f}" for x, y, _ in pts) + '"/>')
        for x, y, v in pts:
            out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{color}"/>')
            if label_points:
                out.append(f'<text x="{x:.1f}" y="{y + (-9 if k % 2 == 0 else 18):.1f}" text-anchor="middle" '
                           f'fill="{color}" font-size="11" font-weight="bold">{v:.2f}x</text>')
    return out


def document(width, height, title, lines, panels, legend):
    """The whole SVG: a title, subtitle lines, the panels' elements, and `legend` [(color, dashed, text)]."""
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" {FONT}>',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{width / 2}" y="26" text-anchor="middle" font-size="16" font-weight="bold">{esc(title)}</text>']
    out += [f'<text x="{width / 2}" y="{48 + 18 * i}" text-anchor="middle" fill="#555">{esc(t)}</text>' for i, t in enumerate(lines)]
    for p in panels:
        out += p
    for k, (color, dashed, text) in enumerate(legend):
        lx, ly = 60 + (k % 2) * 470, height - 44 + (k // 2) * 22
        dash = ' stroke-dasharray="6,4"' if dashed else ""
        out.append(f'<line x1="{lx}" y1="{ly - 4}" x2="{lx + 20}" y2="{ly - 4}" stroke="{color}" stroke-width="3"{dash}/>')
        out.append(f'<text x="{lx + 26}" y="{ly}" font-size="11">{esc(text)}</text>')
    return "\n".join(out + ["</svg>"]) + "\n"
