"""A small SVG chart: points or lines on a linear or log10 x axis and a linear y axis, with
reference lines and a legend. The standard library only, so that results/ regenerate anywhere."""
import math

COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"]
W, H, LEFT, RIGHT, TOP, BOTTOM = 760, 440, 70, 190, 40, 55


def _nice_step(span):
    raw = span / 6
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if m * mag >= raw:
            return m * mag
    return 10 * mag


class Chart:
    """chart = Chart(title, xlabel, ylabel, logx=True); chart.series(...); chart.save(path)"""

    def __init__(self, title, xlabel, ylabel, logx=False, logy=False):
        self.title, self.xlabel, self.ylabel, self.logx = title, xlabel, ylabel, logx
        self.logy = logy
        self.items, self.hlines = [], []

    def series(self, name, points, lines=False):
        self.items.append((name, sorted(points), lines))

    def hline(self, name, y):
        self.hlines.append((name, y))

    def _ranges(self):
        xs = [x for _, pts, _ in self.items for x, _ in pts]
        ys = [y for _, pts, _ in self.items for _, y in pts] + [y for _, y in self.hlines]
        fx = (lambda v: math.log10(v)) if self.logx else (lambda v: v)
        x0, x1 = fx(min(xs)), fx(max(xs))
        if self.logx:
            x0, x1 = math.floor(x0), math.ceil(x1)
        if self.logy:
            return fx, x0, x1, math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys))), 1
        step = _nice_step(max(ys) or 1)
        return fx, x0, x1, 0.0, step * math.ceil(max(ys) * 1.05 / step), step

    def _axes(self, out, fx, x0, x1, y0, y1, step):
        px = lambda v: LEFT + (fx(v) - x0) / (x1 - x0) * (W - LEFT - RIGHT)
        fy = (lambda v: math.log10(v)) if self.logy else (lambda v: v)
        py = lambda v: H - BOTTOM - (fy(v) - y0) / (y1 - y0) * (H - TOP - BOTTOM)
        out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#444"/>' % (
            LEFT, TOP, W - LEFT - RIGHT, H - TOP - BOTTOM))
        ticks = [10.0 ** e for e in range(int(y0), int(y1) + 1)] if self.logy else []
        y = y0
        while not self.logy and y <= y1 + 1e-9:
            ticks.append(y)
            y += step
        for y in ticks:
            out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>' % (
                LEFT, W - RIGHT, py(y), py(y)))
            out.append('<text x="%d" y="%.1f" text-anchor="end" font-size="11">%g</text>' % (
                LEFT - 6, py(y) + 4, y))
        ticks = [10 ** e for e in range(int(x0), int(x1) + 1)] if self.logx else []
        for t in ticks:
            out.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#ddd"/>' % (
                px(t), px(t), TOP, H - BOTTOM))
            out.append('<text x="%.1f" y="%d" text-anchor="middle" font-size="11">1e%d</text>' % (
                px(t), H - BOTTOM + 16, round(math.log10(t))))
        out.append('<text x="%d" y="%d" text-anchor="middle" font-size="12">%s</text>' % (
            (LEFT + W - RIGHT) // 2, H - 12, self.xlabel))
        out.append('<text x="16" y="%d" font-size="12" transform="rotate(-90 16 %d)" '
                   'text-anchor="middle">%s</text>' % ((TOP + H - BOTTOM) // 2,
                                                       (TOP + H - BOTTOM) // 2, self.ylabel))
        return px, py

    def _xticks_linear(self, out, px, x0, x1):
        step = _nice_step(x1 - x0)
        t = math.ceil(x0 / step) * step
        while t <= x1:
            out.append('<text x="%.1f" y="%d" text-anchor="middle" font-size="11">%g</text>' % (
                px(t), H - BOTTOM + 16, t))
            t += step

    def save(self, path):
        fx, x0, x1, y0, y1, step = self._ranges()
        out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
               'font-family="sans-serif">' % (W, H),
               '<rect width="100%" height="100%" fill="white"/>',
               '<text x="%d" y="22" font-size="14">%s</text>' % (LEFT, self.title)]
        px, py = self._axes(out, fx, x0, x1, y0, y1, step)
        if not self.logx:
            self._xticks_linear(out, px, x0, x1)
        legend = []
        for i, (name, pts, lines) in enumerate(self.items):
            c = COLORS[i % len(COLORS)]
            if lines:
                out.append('<polyline fill="none" stroke="%s" stroke-width="1.6" points="%s"/>' % (
                    c, " ".join("%.1f,%.1f" % (px(x), py(y)) for x, y in pts)))
            for x, y in pts:
                out.append('<circle cx="%.1f" cy="%.1f" r="%s" fill="%s" fill-opacity="0.55"/>' % (
                    px(x), py(y), "2.6" if lines else "1.8", c))
            legend.append((name, c, False))
        for name, y in self.hlines:
            out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#555" '
                       'stroke-dasharray="5,4"/>' % (LEFT, W - RIGHT, py(y), py(y)))
            out.append('<text x="%d" y="%.1f" font-size="10" fill="#555">%s</text>' % (
                W - RIGHT + 4, py(y) + 3, name))
        for i, (name, c, _) in enumerate(legend):
            y = TOP + 14 + 18 * i
            out.append('<circle cx="%d" cy="%d" r="4" fill="%s"/>' % (W - RIGHT + 12, y - 4, c))
            out.append('<text x="%d" y="%d" font-size="11">%s</text>' % (W - RIGHT + 20, y, name))
        out.append("</svg>")
        with open(path + ".tmp", "w") as f:
            f.write("\n".join(out) + "\n")
        import os
        os.replace(path + ".tmp", path)
