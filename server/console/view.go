package console

import (
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/server"
	"github.com/snapstore/snapstore/snapshot"
)

// consoleFuncs are the functions every console template may call: how
// numbers, times, durations and values are written for people.
var consoleFuncs = template.FuncMap{
	"num":       formatCount,
	"bytes":     formatBytes,
	"when":      formatWhen,
	"ago":       formatAgo,
	"dur":       formatDuration,
	"pct":       func(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) },
	"esc":       url.PathEscape,
	"qesc":      url.QueryEscape,
	"join":      strings.Join,
	"deref":     func(f *float64) float64 { return *f },
	"since":     func(t time.Time) time.Duration { return time.Since(t) },
	"first":     func(s string, n int) string { return truncate(s, n) },
	"durTxt":    durationText,
	"took":      tookText,
	"list":      func(xs ...string) []string { return xs },
	"hasPrefix": strings.HasPrefix,
	"readText":  readText,
	"tableRead": tableReadText,
}

// tookText is how long an ended run took, "" for one still running.
func tookText(rec adapters.RunRecord) string {
	if rec.End == nil {
		return ""
	}
	return formatDuration(rec.End.Sub(rec.Start))
}

// formatCount writes n with thousands separators: 1,234,567.
func formatCount(n any) string {
	var v int64
	switch x := n.(type) {
	case int:
		v = int64(x)
	case int64:
		v = x
	case float64:
		v = int64(math.Round(x))
	default:
		return fmt.Sprint(n)
	}
	s := strconv.FormatInt(v, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// formatBytes writes a size in bytes with a binary unit: 1.5 MiB.
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	f, u := float64(n), 0
	for f >= unit && u < 4 {
		f /= unit
		u++
	}
	return strconv.FormatFloat(f, 'f', 1, 64) + " " + []string{"B", "KiB", "MiB", "GiB", "TiB"}[u]
}

// formatWhen writes a time in UTC to the second; "" for the zero time.
func formatWhen(t any) string {
	switch x := t.(type) {
	case time.Time:
		if x.IsZero() {
			return ""
		}
		return x.UTC().Format("2006-01-02 15:04:05Z")
	case *time.Time:
		if x == nil {
			return ""
		}
		return formatWhen(*x)
	}
	return fmt.Sprint(t)
}

// formatAgo writes how long ago t was, roughly: "12s ago", "3h ago".
func formatAgo(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := time.Since(t)
	if d < 0 {
		return "in " + roughDuration(-d)
	}
	return roughDuration(d) + " ago"
}

// roughDuration writes d in its largest unit: "45s", "12m", "3h", "2d".
func roughDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + "h"
	}
	return strconv.Itoa(int(d/(24*time.Hour))) + "d"
}

// formatDuration writes d to the millisecond below a second, to a tenth
// of a second below a minute, else to the second: "42ms", "1.4s",
// "2m31s". A run of a few rows takes milliseconds, which tenths of a
// second would show as "0.0s".
func formatDuration(d time.Duration) string {
	switch ms := d.Round(time.Millisecond); {
	case ms < time.Second:
		return strconv.FormatInt(ms.Milliseconds(), 10) + "ms"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	}
	return d.Round(time.Second).String()
}

// durationText is the text of a duration of a definition, on a page or
// in a form field, as the CLI writes it too ("90d", "36h", "1h30m";
// api.Duration.Text): "" for none.
func durationText(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return api.Duration(d).Text()
}

// truncate cuts s to at most n runes, marking the cut.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// valueCell is one value as a page shows it.
type valueCell struct {
	Text string
	Null bool
}

// cellOf writes v for a page: the API's text form (ValueText), NULL marked.
func cellOf(v snapshot.Value) valueCell {
	if v.Kind == snapshot.KindNull {
		return valueCell{Null: true}
	}
	return valueCell{Text: server.ValueText(v)}
}

// keyText writes a row key as the API's path does: the key column texts
// joined by "/".
func keyText(key []snapshot.Value) string {
	parts := make([]string, len(key))
	for i, v := range key {
		parts[i] = server.ValueText(v)
	}
	return strings.Join(parts, " / ")
}

// sparkline is a small SVG line of row counts over kept versions.
type sparkline struct {
	// Points is the polyline's points attribute, in a 100x24 box.
	Points string
	// Title says what the line shows.
	Title string
	// Min and Max are the fewest and most rows of the versions drawn, as
	// text, for labels beside the line.
	Min, Max string
}

// sparkWidth and sparkHeight are the sparkline's box.
const sparkWidth, sparkHeight = 100.0, 24.0

// rowsSparkline draws the rows of versions (newest first, as Versions
// lists them) from oldest to newest; nil for fewer than two versions.
// The scale starts at zero rows (the baseline, y = sparkHeight-2), so a
// change looks as large as it is: 200,000 to 199,902 rows is a nearly
// flat line, not a full-height step.
func rowsSparkline(versions []snapshot.VersionInfo) *sparkline {
	if len(versions) < 2 {
		return nil
	}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, v := range versions {
		lo, hi = min(lo, v.Stats.Rows), max(hi, v.Stats.Rows)
	}
	n := len(versions)
	var b strings.Builder
	for i := range versions {
		v := versions[n-1-i]
		x := sparkWidth * float64(i) / float64(n-1)
		y := sparkHeight - 2
		if hi > 0 {
			y -= (sparkHeight - 4) * float64(v.Stats.Rows) / float64(hi)
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%.1f,%.1f", x, y)
	}
	// The title gives the ends of the line, oldest first, beside the
	// range: "3 to 4" alone reads as a growth when the rows went 4 to 3.
	title := fmt.Sprintf("rows over %d kept versions, oldest %s, newest %s; the line is drawn from zero, between %s and %s",
		n, formatCount(versions[n-1].Stats.Rows), formatCount(versions[0].Stats.Rows), formatCount(lo), formatCount(hi))
	return &sparkline{Points: b.String(), Title: title, Min: formatCount(lo), Max: formatCount(hi)}
}

// freshness judges a dataset's current version against its adapter's
// schedule.
type freshness struct {
	// State is "fresh", "stale", "unscheduled" or "none" (no version).
	State string
	// Text says it in words.
	Text string
}

// freshnessOf judges current (nil: nothing committed) against a: fresh
// while the version was committed or verified less than two periods of the
// schedule ago (one run may be late or fail), stale after.
func freshnessOf(current *snapshot.VersionInfo, a *adapters.Adapter, now time.Time) freshness {
	if current == nil {
		return freshness{State: "none", Text: "no version yet"}
	}
	if a == nil || a.Schedule == "" {
		return freshness{State: "unscheduled", Text: "no schedule; runs on demand"}
	}
	period, err := adapters.SchedulePeriod(a.Schedule, now)
	if err != nil || period <= 0 {
		return freshness{State: "unscheduled", Text: "schedule " + a.Schedule}
	}
	age := now.Sub(current.CheckedAt())
	if age <= 2*period {
		return freshness{State: "fresh", Text: "fresh: runs every " + roughDuration(period)}
	}
	return freshness{State: "stale", Text: fmt.Sprintf("stale: %s old, runs every %s", roughDuration(age), roughDuration(period))}
}

// adapterOf returns the adapter writing dataset ds, nil when none does.
func adapterOf(as []adapters.Adapter, ds string) *adapters.Adapter {
	for i := range as {
		d := as[i].Dataset
		if d == "" {
			d = as[i].Name // the default
		}
		if d == ds && as[i].Status != "shadowed" {
			return &as[i]
		}
	}
	return nil
}

// jsonText writes v as the JSON API would, strings without quotes.
func jsonText(v any) (string, error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	b, err := json.Marshal(v)
	return string(b), err
}
