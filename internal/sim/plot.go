package sim

import (
	"cmp"
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/sluice-gw/sluice/internal/sim/scenario"
)

// palette colours policies in order (Paul Tol's "bright" and "muted"
// qualitative schemes, told apart by colour-blind readers too).
var palette = []color.RGBA{
	{0x44, 0x77, 0xaa, 255}, {0xee, 0x66, 0x77, 255}, {0x22, 0x88, 0x33, 255}, {0xcc, 0xbb, 0x44, 255},
	{0x66, 0xcc, 0xee, 255}, {0xaa, 0x33, 0x77, 255}, {0x33, 0x22, 0x88, 255}, {0x99, 0x99, 0x33, 255},
	{0x88, 0x22, 0x55, 255}, {0x44, 0xaa, 0x99, 255},
}

// dashes pattern the policies beyond the palette: the first ten are
// solid, the next ten dashed, the next dotted, so no two policies share
// a style.
var dashes = [][]vg.Length{nil, {vg.Points(6), vg.Points(3)}, {vg.Points(1.5), vg.Points(2)}, {vg.Points(8), vg.Points(2), vg.Points(2), vg.Points(2)}}

// style is policy i's line style.
func style(i int) draw.LineStyle {
	return draw.LineStyle{Color: palette[i%len(palette)], Width: vg.Points(1.3), Dashes: dashes[(i/len(palette))%len(dashes)]}
}

// panel is one chart of the page: a value per point, drawn per policy.
type panel struct {
	title, unit string
	value       func(Point) float64
	// gaps: a point where ok(p) is false draws nothing (p99 where no
	// answer came back is unknown, not zero).
	gaps func(Point) bool
	// clip: a value far above the others (an unlimited policy's huge
	// limit) runs along the top edge instead of setting the scale.
	clip bool
	// optional panels are left out when every value is zero.
	optional bool
}

// PlotFormat is the format WritePlot draws in, from a file name's
// extension: "svg" or "png".
func PlotFormat(path string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".svg", ".png":
		return ext[1:], nil
	default:
		return "", fmt.Errorf("--plot %s: want a .svg or .png file name", path)
	}
}

// WritePlot draws every policy's series on one page, in format "svg" or
// "png": in flight, the concurrency limit, the gateway's queue and the
// upstream servers' own, p99 latency, answers and sheds per second. The
// scenario's scripted events are shaded on every panel, and each breaker
// transition is marked on the first: ▲ open, ◆ half-open or a fail-back
// step, ● closed.
func WritePlot(w io.Writer, format, title string, series []*Series, events []Span, every time.Duration) error {
	perSec := func(n int) float64 { return float64(n) / every.Seconds() }
	all := []panel{
		{title: "in flight", unit: "requests", value: func(p Point) float64 { return float64(p.InFlight) }},
		{title: "concurrency limit", unit: "requests", value: func(p Point) float64 { return float64(p.Limit) }, clip: true, optional: true,
			gaps: func(p Point) bool { return p.Limit == 0 }}, // no limit
		{title: "waiting in the gateway's queue", unit: "requests", value: func(p Point) float64 { return float64(p.Queued) }},
		{title: "waiting in the upstream servers' own queues", unit: "requests", value: func(p Point) float64 { return float64(p.Upstream) }, optional: true},
		{title: "p99 latency of answers", unit: "seconds", value: func(p Point) float64 { return p.P99.Seconds() }, gaps: func(p Point) bool { return p.OK == 0 }},
		{title: "answered within patience", unit: "per second", value: func(p Point) float64 { return perSec(p.OK) }},
		{title: "shed (fast refusals)", unit: "per second", value: func(p Point) float64 { return perSec(p.Shed) }},
	}
	var panels []panel
	for _, pn := range all {
		if !pn.optional || maxOf(series, pn.value) > 0 {
			panels = append(panels, pn)
		}
	}
	tmax := max(maxOf(series, func(p Point) float64 { return p.At.Seconds() }), 1)

	plots := make([][]*plot.Plot, len(panels))
	for i, pn := range panels {
		p := plot.New()
		p.Title.Text = pn.title
		p.Title.TextStyle.Font.Size = vg.Points(11)
		p.Y.Label.Text = pn.unit
		p.X.Min, p.X.Max = 0, tmax
		p.X.Tick.Marker, p.Y.Tick.Marker = roundTicks{n: 8}, roundTicks{n: 4}
		if i == len(panels)-1 {
			p.X.Label.Text = "time (s)"
		}
		ymax := panelMax(series, pn)
		p.Y.Min, p.Y.Max = 0, ymax
		shade(p, events, ymax, i == 0)
		p.Add(plotter.NewGrid())
		for si, s := range series {
			for _, seg := range segments(s.Points, pn) {
				l, err := plotter.NewLine(seg)
				if err != nil {
					return err
				}
				l.LineStyle = style(si)
				p.Add(l)
			}
		}
		if i == 0 {
			if err := markTransitions(p, series, ymax); err != nil {
				return err
			}
		}
		plots[i] = []*plot.Plot{p}
	}

	const width = 9 * vg.Inch
	panelH := 2 * vg.Inch
	legendRows := (len(series) + 2) / 3
	legendH := vg.Length(legendRows)*vg.Points(14) + vg.Points(40)
	height := vg.Length(len(panels))*panelH + legendH + vg.Points(30)
	var c interface {
		vg.CanvasSizer
		io.WriterTo
	}
	switch format {
	case "svg":
		c = vgsvg.New(width, height)
	case "png":
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(110), vgimg.UseBackgroundColor(color.White))}
	default:
		return fmt.Errorf("plot format %q: want svg or png", format)
	}
	dc := draw.New(c)
	heading := plot.New().Title.TextStyle
	heading.Font.Size = vg.Points(14)
	heading.XAlign, heading.YAlign = draw.XLeft, draw.YTop
	dc.FillText(heading, vg.Point{X: vg.Points(12), Y: height - vg.Points(8)}, title)
	charts := draw.Crop(dc, 0, 0, legendH, -vg.Points(30))
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadTop: vg.Points(4), PadY: vg.Points(14), PadLeft: vg.Points(6), PadRight: vg.Points(14)}
	for i, row := range plot.Align(plots, tiles, charts) {
		plots[i][0].Draw(row[0])
	}
	legend(draw.Crop(dc, 0, 0, 0, legendH-height), series, events)
	_, err := c.WriteTo(w)
	return err
}

// panelMax is the panel's y scale: the largest value, rounded up, with a
// clipped panel's outliers left above it.
func panelMax(series []*Series, pn panel) float64 {
	vmax := maxOf(series, pn.value)
	if pn.clip {
		// The largest value at most four times the smallest policy's
		// peak: an "unlimited" limit then runs along the top edge.
		var peaks []float64
		for _, s := range series {
			if m := maxOf([]*Series{s}, pn.value); m > 0 {
				peaks = append(peaks, m)
			}
		}
		slices.Sort(peaks)
		if len(peaks) > 1 {
			vmax = peaks[0]
			for _, m := range peaks[1:] {
				if m <= 4*peaks[0] {
					vmax = m
				}
			}
		}
	}
	return niceCeil(vmax * 1.05)
}

// segments is a policy's line on a panel, in pieces: a gap point ends one
// and begins the next, and values above the scale run along its edge.
func segments(points []Point, pn panel) []plotter.XYs {
	var out []plotter.XYs
	var cur plotter.XYs
	for _, p := range points {
		if pn.gaps != nil && pn.gaps(p) {
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur = nil
			continue
		}
		cur = append(cur, plotter.XY{X: p.At.Seconds(), Y: pn.value(p)})
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// shade fills the scripted events' windows, labelled on the first panel.
func shade(p *plot.Plot, events []Span, ymax float64, label bool) {
	for _, e := range events {
		x0, x1 := e.Start.Seconds(), e.End.Seconds()
		poly, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: 0}, {X: x1, Y: 0}, {X: x1, Y: ymax}, {X: x0, Y: ymax}})
		if err != nil {
			continue
		}
		poly.Color = color.NRGBA{0xff, 0xb0, 0x50, 0x48}
		poly.LineStyle.Width = 0
		p.Add(poly)
		if label {
			l, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: x0, Y: ymax}}, Labels: []string{e.Label}})
			if err == nil {
				for i := range l.TextStyle {
					l.TextStyle[i].Font.Size = vg.Points(8)
					l.TextStyle[i].YAlign = draw.YTop
					l.TextStyle[i].Color = color.RGBA{0x99, 0x55, 0x00, 255}
				}
				l.Offset = vg.Point{X: vg.Points(2), Y: -vg.Points(1)}
				p.Add(l)
			}
		}
	}
}

// markTransitions draws each policy's breaker transitions as glyphs in
// its colour along the top of the panel, one row per policy.
func markTransitions(p *plot.Plot, series []*Series, ymax float64) error {
	glyphs := map[string]draw.GlyphDrawer{"open": draw.TriangleGlyph{}, "closed": draw.CircleGlyph{}}
	for si, s := range series {
		y := ymax * (0.86 - 0.05*float64(si%10))
		for _, m := range s.Marks {
			sc, err := plotter.NewScatter(plotter.XYs{{X: m.At.Seconds(), Y: y}})
			if err != nil {
				return err
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: palette[si%len(palette)], Radius: vg.Points(3), Shape: cmp.Or(glyphs[m.To], draw.GlyphDrawer(draw.RingGlyph{}))}
			p.Add(sc)
		}
	}
	return nil
}

// legend draws each policy's line style and name in three columns, and
// says what the shading and the glyphs mean.
func legend(c draw.Canvas, series []*Series, events []Span) {
	txt := plot.New().Legend.TextStyle
	txt.Font.Size = vg.Points(10)
	txt.YAlign = draw.YCenter
	colW := (c.Max.X - c.Min.X - vg.Points(40)) / 3
	top := c.Max.Y - vg.Points(8)
	for i, s := range series {
		x := c.Min.X + vg.Points(40) + vg.Length(i%3)*colW
		y := top - vg.Length(i/3)*vg.Points(14)
		c.StrokeLine2(style(i), x, y, x+vg.Points(28), y)
		c.FillText(txt, vg.Point{X: x + vg.Points(34), Y: y}, s.Name)
	}
	note := "breaker transitions on the first panel: ▲ opened, ○ half-open or a fail-back step, ● closed"
	if len(events) > 0 {
		note = "shaded: the scenario's scripted events; " + note
	}
	txt.Font.Size = vg.Points(9)
	c.FillText(txt, vg.Point{X: c.Min.X + vg.Points(40), Y: top - vg.Length((len(series)+2)/3)*vg.Points(14) - vg.Points(6)}, note)
}

// roundTicks puts about n round ticks on an axis, labelled without
// trailing zeros.
type roundTicks struct{ n float64 }

func (r roundTicks) Ticks(lo, hi float64) []plot.Tick {
	step := niceCeil((hi - lo) / r.n)
	var ts []plot.Tick
	for t := math.Ceil(lo/step) * step; t <= hi+1e-9; t += step {
		ts = append(ts, plot.Tick{Value: t, Label: trim(t)})
	}
	return ts
}

// scriptedEvents lists the scenario's scripted events: each upstream's
// brownouts and failure windows, and the fleet store's outages.
func scriptedEvents(f *scenario.File) []Span {
	var out []Span
	names := make([]string, 0, len(f.Scenario.Upstreams))
	for name := range f.Scenario.Upstreams {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		u := f.Upstream(name)
		for _, b := range u.Brownouts {
			out = append(out, Span{Start: b.Start, End: b.End, Label: name + " brownout"})
		}
		for _, fl := range u.Failures {
			if fl.End > fl.Start {
				out = append(out, Span{Start: fl.Start, End: fl.End, Label: fmt.Sprintf("%s %s", name, cmp.Or(failureLabel(fl.Status), fl.Kind))})
			}
		}
	}
	for _, w := range f.Scenario.Fleet.Store.Down {
		out = append(out, Span{Start: w.Start, End: w.End, Label: "store down"})
	}
	return out
}

func failureLabel(status int) string {
	if status == 0 {
		return ""
	}
	return fmt.Sprint(status, "s")
}

// niceCeil rounds up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p*(1+1e-9) {
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
