package sim

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// palette colours policies in order; readable on white and in greyscale.
var palette = []string{"#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"}

type panel struct {
	title string
	unit  string
	value func(Point) float64
	// dashed draws a second series per policy (the limit over in-flight).
	dashed func(Point) float64
	// clip: a dashed value far above every solid one (an "unlimited"
	// policy's huge limit) runs along the top edge instead of setting
	// the scale.
	clip bool
}

// WritePlot draws every policy's series on one SVG page: in flight with
// the limit dashed, queue depth, p99 latency, and outcomes per second.
func WritePlot(w io.Writer, title string, series []*Series, every time.Duration) {
	perSec := func(n int) float64 { return float64(n) / every.Seconds() }
	panels := []panel{
		{title: "in flight (solid) and concurrency limit (dashed)", unit: "requests",
			value: func(p Point) float64 { return float64(p.InFlight) }, dashed: func(p Point) float64 { return float64(p.Limit) }, clip: true},
		{title: "queue depth: the gateway's (solid) and the upstream servers' own (dashed)", unit: "requests",
			value: func(p Point) float64 { return float64(p.Queued) }, dashed: func(p Point) float64 { return float64(p.Upstream) }},
		{title: "p99 latency of answers", unit: "seconds", value: func(p Point) float64 { return p.P99.Seconds() }},
		{title: "answered within patience", unit: "per second", value: func(p Point) float64 { return perSec(p.OK) }},
		{title: "shed (fast refusals)", unit: "per second", value: func(p Point) float64 { return perSec(p.Shed) }},
	}
	const width, ph, left, top, gap = 900, 150, 70, 60, 45
	height := top + len(panels)*(ph+gap) + 20 + 18*((len(series)+2)/3)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/><text x="%d" y="24" font-size="16" font-weight="bold">%s</text>`+"\n", left, esc(title))
	tmax := maxOf(series, func(p Point) float64 { return p.At.Seconds() })
	if tmax == 0 {
		tmax = 1
	}
	plotW := float64(width - left - 30)
	for i, pn := range panels {
		y0 := top + i*(ph+gap)
		vmax := maxOf(series, pn.value)
		if pn.dashed != nil {
			if d := maxOf(series, pn.dashed); !pn.clip || d <= 4*vmax || vmax == 0 {
				vmax = max(vmax, d)
			}
		}
		vmax = niceCeil(vmax)
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-weight="bold">%s</text>`+"\n", left, y0-6, esc(pn.title))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.0f" height="%d" fill="none" stroke="#999"/>`+"\n", left, y0, plotW, ph)
		for k := 0; k <= 4; k++ {
			v := vmax * float64(k) / 4
			y := float64(y0+ph) - float64(ph)*float64(k)/4
			fmt.Fprintf(&b, `<text x="%d" y="%.0f" text-anchor="end">%s</text><line x1="%d" x2="%.0f" y1="%.0f" y2="%.0f" stroke="#eee"/>`+"\n",
				left-6, y+4, trim(v), left, float64(left)+plotW, y, y)
		}
		fmt.Fprintf(&b, `<text x="12" y="%d" transform="rotate(-90 12 %d)" text-anchor="middle" fill="#555">%s</text>`+"\n", y0+ph/2, y0+ph/2, pn.unit)
		xy := func(p Point, v float64) (float64, float64) {
			x := float64(left) + plotW*p.At.Seconds()/tmax
			y := float64(y0+ph) - float64(ph)*math.Min(v, vmax)/math.Max(vmax, 1e-9)
			return x, y
		}
		for si, s := range series {
			col := palette[si%len(palette)]
			line := func(f func(Point) float64, dash string) {
				var pts strings.Builder
				for _, p := range s.Points {
					x, y := xy(p, f(p))
					fmt.Fprintf(&pts, "%.1f,%.1f ", x, y)
				}
				fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" %s points="%s"/>`+"\n", col, dash, pts.String())
			}
			line(pn.value, "")
			if pn.dashed != nil && maxOf([]*Series{s}, pn.dashed) > 0 { // 0: unlimited, nothing to draw
				line(pn.dashed, `stroke-dasharray="5,3"`)
			}
		}
	}
	axisY := top + len(panels)*(ph+gap) - gap + 16
	step := niceCeil(tmax / 8)
	for t := 0.0; t <= tmax+1e-9; t += step {
		fmt.Fprintf(&b, `<text x="%.0f" y="%d" text-anchor="middle">%ss</text>`+"\n", float64(left)+plotW*t/tmax, axisY, trim(t))
	}
	for si, s := range series {
		x := left + (si%3)*280
		y := axisY + 22 + 18*(si/3)
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="14" height="4" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n", x, y-4, palette[si%len(palette)], x+20, y+1, esc(s.Name))
	}
	b.WriteString("</svg>\n")
	io.WriteString(w, b.String())
}

// niceCeil rounds up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func trim(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
