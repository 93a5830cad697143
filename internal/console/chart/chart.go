// Package chart lays out the usage page's bar chart on the server: an SVG
// with one bar per day, its y axis rounded to readable steps and its day
// labels kept apart, so that the page needs no script to draw it.
package chart

import (
	"fmt"
	"time"

	"genjobs/internal/billing"
)

// The usage page's two boxes: Wide for a wide screen, Compact for a phone.
var (
	Wide    = Layout{ID: "usage-chart", Class: "wide", Width: 720, Height: 240, Font: 11, Labels: 8}
	Compact = Layout{ID: "usage-chart-compact", Class: "compact", Width: 360, Height: 230, Font: 13, Labels: 4}
)

// Layout is the box a chart is drawn in, in the SVG's units.
type Layout struct {
	ID, Class     string
	Width, Height int
	Font          int // the axis text's size, as app.css sets it for Class
	Labels        int // at most this many day labels
}

// Chart is the usage's bar chart, laid out on the server: an SVG with one
// bar per day, the same figures as the table under it.
type Chart struct {
	Layout
	Bars       []Bar
	Ticks      []Tick
	Labels     []Label
	PlotTop    int
	PlotBottom int
	PlotLeft   int
	PlotRight  int
	Empty      bool
}

type Bar struct {
	X, Y, W, H int
	Title      string // the day and its cost, shown on hover and read by screen readers
}

type Tick struct {
	Y     int
	Label string
}

// Label is a day's label under its bar: centred on it, but the last one
// ends at its bar's right edge, so that it stays inside the chart.
type Label struct {
	X      int
	Anchor string // text-anchor: middle or end
	Text   string
}

// Draw lays the bars out in l's box: a y axis rounded up to a
// readable step, its labels given the room their text takes, a bar per
// day, and at most l.Labels day labels, the last day's always.
func Draw(u billing.Usage, l Layout) Chart {
	ch := Chart{Layout: l, PlotTop: 12, PlotBottom: l.Height - 2*l.Font - 10, PlotRight: l.Width - 4}
	var peak billing.Micros
	for _, d := range u.Days {
		peak = max(peak, d.Amount)
	}
	ch.Empty = peak == 0
	top, steps := niceCeiling(peak)
	plotH := ch.PlotBottom - ch.PlotTop
	longest := 0
	for i := 0; i <= steps; i++ {
		v := top * billing.Micros(i) / billing.Micros(steps)
		t := Tick{Y: ch.PlotBottom - int(int64(plotH)*int64(v)/int64(top)), Label: "$" + v.Dollars()}
		ch.Ticks = append(ch.Ticks, t)
		longest = max(longest, len(t.Label))
	}
	// A digit of the system fonts is about 0.6 of the text's size wide;
	// 8 units of gap between a tick's label and the plot.
	ch.PlotLeft = 8 + (longest*l.Font*62+99)/100 + 4
	n := len(u.Days)
	if n == 0 {
		return ch
	}
	slot := float64(ch.PlotRight-ch.PlotLeft) / float64(n)
	width := max(1, int(slot*0.7))
	every := max(1, (n+l.Labels-1)/l.Labels)
	for i, d := range u.Days {
		h := int(int64(plotH) * int64(d.Amount) / int64(top))
		if d.Amount > 0 && h < 2 {
			h = 2 // a day with any cost stays visible
		}
		x := ch.PlotLeft + int(slot*float64(i)+(slot-float64(width))/2)
		day, _ := time.Parse(time.DateOnly, d.Date)
		jobs := "jobs"
		if d.Jobs == 1 {
			jobs = "job"
		}
		ch.Bars = append(ch.Bars, Bar{X: x, Y: ch.PlotBottom - h, W: width, H: h,
			Title: fmt.Sprintf("%s: $%s, %d %s", day.Format("Mon 2 Jan"), d.Amount.Dollars(), d.Jobs, jobs)})
		switch {
		case i == n-1:
			ch.Labels = append(ch.Labels, Label{X: min(x+width, ch.PlotRight), Anchor: "end", Text: day.Format("2 Jan")})
		case (n-1-i)%every == 0:
			ch.Labels = append(ch.Labels, Label{X: x + width/2, Anchor: "middle", Text: day.Format("2 Jan")})
		}
	}
	return ch
}

// niceCeiling is the smallest 1, 2 or 5 times a power of ten cents at or
// above m (one dollar for an empty chart), and the number of grid steps
// that divide it into round figures (5 for 1 and 5, 4 for 2).
func niceCeiling(m billing.Micros) (billing.Micros, int) {
	if m <= 0 {
		return billing.USD, 4
	}
	for step := billing.Cent; ; step *= 10 {
		for _, k := range []billing.Micros{1, 2, 5} {
			if step*k >= m {
				if k == 2 {
					return step * k, 4
				}
				return step * k, 5
			}
		}
	}
}
