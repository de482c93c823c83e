package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"text/tabwriter"

	"github.com/snapstore/snapstore/snapshot"
)

const diffHelp = `What changed in a dataset between two kept versions, row by row in key
order: inserted, updated (with the columns that changed, before -> after)
and deleted rows. --from and --to take a version number or a tag name; --to
defaults to the current version, --from to the kept version just before
--to, so a bare diff shows the last run's changes (nothing, when it found
nothing new: give --from). --stats gives the counts only. --table NAME reads
a table of a dataset of several tables; the --stats of such a dataset
without --table lists every table with its counts, and its CHANGE:
compared (both versions hold the table; its rows were compared), added or
dropped (only the newer, or the older, version holds it: all its rows
count as inserted, or deleted), or replaced (dropped and created again in
between: the old rows count as deleted, the new as inserted; its --table
diff is refused, table_replaced, its rows being two tables'). The last
line, (all), sums every table.

--output json prints the API's NDJSON: one change object per line,
{"op","key","before","after","changed"}. --format asks the server for
another form and prints what it sends: ndjson (the same NDJSON), arrow (an
Apache Arrow IPC stream, one row per change) or parquet (a Parquet file,
--compression zstd or snappy), to standard output or to --out FILE
(written whole or not at all). Arrow and Parquet are binary: they go to a
file or a pipe, never to a terminal.`

// tableCompared is the CHANGE of diff --stats for a table both versions
// hold (snapshot.TableDiffStats.Change ""), whose rows were compared.
const tableCompared = "compared"

// cmdDiff is `snapstore diff DATASET`.
func cmdDiff(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("diff", "DATASET [--table NAME] [--from VERSION|TAG] [--to VERSION|TAG] [--stats] [--format ndjson|arrow|parquet] [--out FILE]", diffHelp, flagsClient, stdout)
	from := c.fs.String("from", "", "the older `version` or tag (default: the kept version before --to)")
	to := c.fs.String("to", "", "the newer `version` or tag (default: the current version)")
	stats := c.fs.Bool("stats", false, "counts of inserted, updated and deleted rows only")
	format := c.fs.String("format", "", "`format` of the changes as the server sends them: ndjson, arrow (an Arrow IPC stream) or parquet (default: a table, or NDJSON with --output json)")
	compression := c.fs.String("compression", "", "Parquet `compression`: zstd (the server's default) or snappy")
	out := c.fs.String("out", "", "write the --format answer to this `file` instead of standard output (written whole or not at all)")
	var table tableFlag
	table.register(c)
	pos, err := c.parseN(args, 1, 1)
	if err != nil {
		return err
	}
	if err := diffFormatFlags(*format, *compression, *out, *stats, stdout); err != nil {
		return err
	}
	if err := checkVersionOrTag("--from", *from); err != nil {
		return err
	}
	if err := checkVersionOrTag("--to", *to); err != nil {
		return err
	}
	q := url.Values{}
	if *from != "" {
		q.Set("from", *from)
	}
	if *to != "" {
		q.Set("to", *to)
	}
	path := table.path(pos[0], "/diff")
	err = withTarget(ctx, c.cf, stderr, func(t *target) error {
		if *stats {
			q.Set("stats_only", "true")
			var st struct {
				From, To, Inserted, Updated, Deleted int64
				Tables                               []snapshot.TableDiffStats
			}
			raw, err := t.api.get(ctx, path, q, &st)
			if err != nil {
				return err
			}
			if c.cf.json() {
				return printJSON(stdout, raw)
			}
			if len(st.Tables) > 0 {
				fmt.Fprintf(stderr, "%s: from version %d to %d\n", pos[0], st.From, st.To)
				tt := newTable(stdout, "TABLE", "CHANGE", "INSERTED", "UPDATED", "DELETED")
				for _, d := range st.Tables {
					change := d.Change
					if change == "" {
						change = tableCompared
					}
					tt.row(d.Table, change, count(d.Inserted), count(d.Updated), count(d.Deleted))
				}
				tt.row("(all)", "", count(st.Inserted), count(st.Updated), count(st.Deleted))
				return tt.flush()
			}
			return printFields(stdout, "dataset", pos[0], "from", fmt.Sprint(st.From), "to", fmt.Sprint(st.To),
				"inserted", count(st.Inserted), "updated", count(st.Updated), "deleted", count(st.Deleted))
		}
		if *format != "" {
			if *compression != "" {
				q.Set("compression", *compression)
			}
			if *out != "" {
				return t.api.getFile(ctx, *out, path, q, diffMedia[*format])
			}
			return t.api.copyGet(ctx, stdout, path, q, diffMedia[*format])
		}
		resp, err := t.api.do(ctx, "GET", path, q, nil, "application/x-ndjson")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if c.cf.json() {
			_, err := io.Copy(stdout, resp.Body)
			return err
		}
		fmt.Fprintf(stderr, "%s: from version %s to %s\n", pos[0], resp.Header.Get("Snapstore-Diff-From"), resp.Header.Get("Snapstore-Version"))
		return diffTable(stdout, resp.Body)
	})
	// The API's details point at its routes and parameters
	// (server.tableRequiredInDiff, stats_only); the command's user gets
	// its flags.
	var ae *apiError
	if !errors.As(err, &ae) {
		return err
	}
	switch ae.Problem.Code {
	case "table_required":
		ae.Problem.Detail, _, _ = strings.Cut(ae.Problem.Detail, "; each table's counts: GET ")
		ae.Hint = fmt.Sprintf("snapstore diff %s --stats lists every table's counts; --table NAME shows a table's changes", pos[0])
	case "table_replaced":
		ae.Problem.Detail, _, _ = strings.Cut(ae.Problem.Detail, "; the dataset's diff counts (stats_only)")
		ae.Hint = fmt.Sprintf("snapstore diff %s --stats with the same --from and --to counts it replaced: the older table's rows deleted, the newer's inserted", pos[0])
	case "tag_not_found":
		// A time is a valid tag name (2026-12-07T00:22:41Z): say that
		// --from and --to read it as one.
		for _, f := range []struct{ field, flag, v string }{{"from", "--from", *from}, {"to", "--to", *to}} {
			var a asOfTime
			if f.field == ae.Problem.Field && f.v != "" && a.Set(f.v) == nil {
				ae.Hint = fmt.Sprintf("%s takes a version number or a tag, not a time: snapstore versions %s lists the versions with their commit times", f.flag, pos[0])
				break
			}
		}
	case "table_not_found":
		// A table only one of the versions holds.
		if d, ok := strings.CutSuffix(ae.Problem.Detail, "; the dataset's diff counts (stats_only) count it"); ok {
			ae.Problem.Detail = d
			ae.Hint = fmt.Sprintf("snapstore diff %s --stats with the same --from and --to counts it added or dropped", pos[0])
		}
	}
	return err
}

// diffMedia maps diff's --format to the media type asked for: the formats
// the diff endpoint offers.
var diffMedia = map[string]string{
	"ndjson":  "application/x-ndjson",
	"arrow":   "application/vnd.apache.arrow.stream",
	"parquet": "application/vnd.apache.parquet",
}

// diffFormatFlags checks --format, --compression and --out together, before
// anything is asked of the server: a format the endpoint offers, the other
// two only with one, no format with --stats, and a binary format (Arrow,
// Parquet) never written to a terminal.
func diffFormatFlags(format, compression, out string, stats bool, stdout io.Writer) error {
	switch {
	case format == "" && (compression != "" || out != ""):
		return usageError("--compression and --out go with --format")
	case format == "":
		return nil
	case diffMedia[format] == "":
		return usageError("--format: want ndjson, arrow or parquet, got %q (the diff is not offered as json or csv)", format)
	case stats:
		return usageError("--stats prints counts: it takes no --format")
	case compression != "" && format != "parquet":
		return usageError("--compression is for --format parquet")
	case format != "ndjson" && out == "" && isTerminal(stdout):
		return usageError("--format %s is binary: give --out FILE or redirect standard output to a file or a pipe", format)
	}
	return nil
}

// diffChange is one line of the diff stream.
type diffChange struct {
	Op      string            `json:"op"`
	Key     []json.RawMessage `json:"key"`
	Before  json.RawMessage   `json:"before"`
	After   json.RawMessage   `json:"after"`
	Changed []string          `json:"changed"`
}

// diffTable prints the changes of an NDJSON diff stream as they come: OP,
// KEY, and the changed columns (before -> after) of an update, or the row
// of an insert or delete. The table is aligned a block of lines at a time,
// so a long diff streams.
func diffTable(w io.Writer, r io.Reader) error {
	const block = 200
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "OP\tKEY\tCHANGES")
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 256<<20)
	n, ins, upd, del := 0, 0, 0, 0
	for sc.Scan() {
		var ch diffChange
		if err := json.Unmarshal(sc.Bytes(), &ch); err != nil {
			return fmt.Errorf("decoding a change: %w", err)
		}
		var keys []string
		for _, k := range ch.Key {
			keys = append(keys, valueText(k))
		}
		var what string
		switch ch.Op {
		case "update":
			upd++
			before, after := objectFields(ch.Before), objectFields(ch.After)
			var parts []string
			for _, col := range ch.Changed {
				parts = append(parts, fmt.Sprintf("%s: %s -> %s", col, fieldText(before, col), fieldText(after, col)))
			}
			what = strings.Join(parts, "; ")
		case "insert":
			ins++
			what = rowText(ch.After)
		case "delete":
			del++
			what = rowText(ch.Before)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", ch.Op, strings.Join(keys, ","), truncate(what, 200))
		if n++; n%block == 0 {
			if err := tw.Flush(); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading the diff: %w", err)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d inserted, %d updated, %d deleted\n", ins, upd, del)
	return err
}

// field is one column of a row object, in the object's order.
type field struct {
	name  string
	value json.RawMessage
}

// objectFields returns the members of a JSON object in their order; nil
// for anything else.
func objectFields(raw json.RawMessage) []field {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var out []field
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		name, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return out
		}
		out = append(out, field{name, v})
	}
	return out
}

// fieldText is the value of column name among fs, "(absent)" when the
// row has no such column (added or dropped by a schema change).
func fieldText(fs []field, name string) string {
	for _, f := range fs {
		if f.name == name {
			return valueText(f.value)
		}
	}
	return "(absent)"
}

// rowText is a row as "col=value col=value".
func rowText(raw json.RawMessage) string {
	var parts []string
	for _, f := range objectFields(raw) {
		parts = append(parts, f.name+"="+valueText(f.value))
	}
	return strings.Join(parts, " ")
}

// valueText is a JSON value for a person: a string without quotes unless
// it is empty or has spaces, null as NULL, the rest as JSON.
func valueText(raw json.RawMessage) string {
	s := strings.TrimSpace(string(raw))
	switch {
	case s == "null":
		return "NULL"
	case strings.HasPrefix(s, `"`):
		var str string
		if json.Unmarshal(raw, &str) == nil && str != "" && !strings.ContainsAny(str, " \t\n;,=") {
			return truncate(str, 60)
		}
		return truncate(s, 60)
	}
	return truncate(s, 60)
}
