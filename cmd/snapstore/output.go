package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"
	"golang.org/x/term"
)

// Output of the client commands: a table by default, or with --output json
// the API's JSON, indented. Tables are for people and may change; the JSON
// is the API's and is the one to script against.

// printJSON writes the API's JSON answer b, indented, with a newline.
func printJSON(w io.Writer, b []byte) error {
	var out bytes.Buffer
	if err := json.Indent(&out, bytes.TrimSpace(b), "", "  "); err != nil {
		return fmt.Errorf("the answer is not JSON: %w", err)
	}
	out.WriteByte('\n')
	_, err := w.Write(out.Bytes())
	return err
}

// encodeJSON writes v as indented JSON (an answer the CLI put together,
// such as every page of a list).
func encodeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table prints aligned columns; the header is upper case.
type table struct {
	tw *tabwriter.Writer
}

func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	t.row(header...)
	return t
}

// row adds a row; an empty cell prints as "-".
func (t *table) row(cells ...string) {
	for i, c := range cells {
		if c == "" {
			c = "-"
		}
		c = cellText(c)
		if i > 0 {
			io.WriteString(t.tw, "\t")
		}
		io.WriteString(t.tw, c)
	}
	io.WriteString(t.tw, "\n")
}

func (t *table) flush() error { return t.tw.Flush() }

// cellText is s as a cell of a table or the value of a field prints it:
// on one line, without a control character. Names and values come from
// the source databases (a column named with an ESC sequence or a line
// end is valid SQL): each such character is written as an escape
// (printable, "\n" too), so that it neither reaches the terminal nor
// breaks the columns.
func cellText(s string) string {
	return strings.ReplaceAll(printable(s), "\n", `\n`)
}

// fields prints "name: value" lines, the values aligned; an empty value
// prints as "-".
func printFields(w io.Writer, kv ...string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	for i := 0; i+1 < len(kv); i += 2 {
		v := kv[i+1]
		if v == "" {
			v = "-"
		}
		fmt.Fprintf(tw, "%s:\t%s\n", kv[i], cellText(v))
	}
	return tw.Flush()
}

// timeLayout is how the CLI writes every time: in the local zone, to the
// second, with its offset from UTC, "Z" for UTC itself
// ("2026-12-07 02:30:00+01:00", "2026-12-07 01:30:00Z"), so that no time
// printed leaves its zone to be guessed. It is the console's form (whose
// times are all UTC) and RFC 3339's but for the space, and --as-of reads
// it back (asOfTime).
const timeLayout = "2006-01-02 15:04:05Z07:00"

// timeText is a time in the local zone, to the second, with its offset
// (timeLayout); "" for none.
func timeText(t *time.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return t.Local().Format(timeLayout)
}

// ageText is how long ago t was, to the unit that matters ("3m ago").
func ageText(t *time.Time, now time.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return shortDuration(now.Sub(*t)) + " ago"
}

// shortDuration rounds d to what a person reads: 850ms, 42s, 3m10s, 5h2m,
// 3d4h.
func shortDuration(d time.Duration) string {
	switch {
	case d < 0:
		d = 0
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(time.Second).String()
	}
	d = d.Round(time.Second)
	days := d / (24 * time.Hour)
	d -= days * 24 * time.Hour
	h, m, s := d/time.Hour, (d%time.Hour)/time.Minute, (d%time.Minute)/time.Second
	switch {
	case days > 0:
		return fmt.Sprintf("%dd%dh", days, h)
	case h > 0:
		return fmt.Sprintf("%dh%dm", h, m)
	}
	return fmt.Sprintf("%dm%ds", m, s)
}

// count writes n with thousands separators: 1,234,567.
func count(n int64) string { return humanize.Comma(n) }

// bytesText is a size in binary units: 512 B, 1.5 MiB.
func bytesText(n int64) string {
	if n < 0 {
		return "-" + humanize.IBytes(uint64(-n))
	}
	return humanize.IBytes(uint64(n))
}

// isTerminal reports whether f is a terminal (a progress bar or a
// question makes sense there). Tests replace it.
var isTerminal = func(f any) bool {
	file, ok := f.(*os.File)
	return ok && term.IsTerminal(int(file.Fd()))
}

// terminalWidth is the width of the terminal f, 80 when unknown.
func terminalWidth(f any) int {
	if file, ok := f.(*os.File); ok {
		if w, _, err := term.GetSize(int(file.Fd())); err == nil && w > 20 {
			return w
		}
	}
	return 80
}

// stdin is where the questions of drop and rollback read the answer;
// tests replace it.
var stdin io.Reader = os.Stdin

// confirm asks question on w and reads the answer from stdin: true for
// "yes" or "y". yes (--yes) answers it beforehand. Without a terminal to
// ask on, it is a usage error naming --yes: a script never drops data by
// default.
func confirm(w io.Writer, question string, yes bool) (bool, error) {
	if yes {
		return true, nil
	}
	if !isTerminal(stdin) {
		return false, usageError("%s\nstdin is not a terminal to answer on; give --yes to go ahead", question)
	}
	fmt.Fprintf(w, "%s [y/N] ", question)
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && line == "" {
		return false, nil
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	}
	return false, nil
}
