package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

const exportHelp = `A version of a dataset as files in a directory, one per table, at one
version (the current one unless --version, --as-of or --tag): DATASET.parquet
for a dataset of one table, TABLE.parquet for each table of a dataset of
several, named for the table as the dataset names it
(public.orders.parquet, shop.orders.parquet for MySQL's database.table;
every character but ASCII letters, digits, '.', '-' and '_' is '_'). --format parquet (the
default) writes Parquet files, --format arrow Arrow IPC stream files
(.arrows). Each file is written under a temporary name and renamed once
whole. The files are GET /v1/datasets/{dataset}/rows?format=... of the
whole dataset, or .../tables/{table}/rows?format=... of each table, all at
the version GET /v1/datasets/{dataset}/tables resolved, which a line on
standard error names; standard output lists the files written.

A file of that name already in the directory (an earlier export's) makes
export refuse before it writes anything, naming the files; --force
replaces them, and standard error names each file replaced. Files of
other names stay.`

// exportFormats maps --format to the media type asked for and the file
// name's extension.
var exportFormats = map[string][2]string{
	"parquet": {"application/vnd.apache.parquet", ".parquet"},
	"arrow":   {"application/vnd.apache.arrow.stream", ".arrows"},
}

// cmdExport is `snapstore export DATASET --out DIR`.
func cmdExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("export", "DATASET --out DIR [--force] [--format parquet|arrow] [--version V|--tag T|--as-of TIME]", exportHelp, flagsClient, stdout)
	var at atFlags
	at.register(c)
	format := c.fs.String("format", "parquet", "`format` of the files: parquet or arrow")
	compression := c.fs.String("compression", "", "Parquet `compression`: zstd (the server's default) or snappy")
	out := c.fs.String("out", "", "the `directory` to write the files in (created if absent)")
	force := c.fs.Bool("force", false, "replace files of those names already in the directory (else refused)")
	pos, err := c.parseN(args, 1, 1)
	if err != nil {
		return err
	}
	f, ok := exportFormats[*format]
	if !ok {
		return usageError("--format: want parquet or arrow, got %q", *format)
	}
	if *out == "" {
		return usageError("--out: give the directory to write the files in")
	}
	return withTarget(ctx, c.cf, stderr, func(t *target) error {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return err
		}
		q := url.Values{}
		at.query(q)
		var tl struct {
			Version int64 `json:"version"`
			Tables  []struct {
				Name string `json:"name"`
			} `json:"tables"`
		}
		if _, err := t.api.get(ctx, pathOf("/v1/datasets/", pos[0], "/tables"), q, &tl); err != nil {
			return err
		}
		if *compression != "" {
			q.Set("compression", *compression)
		}
		files := [][2]string{{pos[0], pathOf("/v1/datasets/", pos[0], "/rows")}}
		if tl.Version > 0 {
			// every file at the one version the list was read at, the
			// version the line on stderr names (a run may commit meanwhile)
			q.Del("as_of")
			q.Del("tag")
			q.Set("version", strconv.FormatInt(tl.Version, 10))
			fmt.Fprintf(stderr, "%s: version %d\n", pos[0], tl.Version)
		}
		if len(tl.Tables) > 0 {
			files = files[:0]
			var names []string
			for _, tb := range tl.Tables {
				files = append(files, [2]string{fileBase(tb.Name), pathOf("/v1/datasets/", pos[0], "/tables/", tb.Name, "/rows")})
				names = append(names, tb.Name)
			}
			if err := fileBasesClash(names); err != nil {
				return err
			}
		}
		// Files already there are of another export, or of this one
		// begun before: replaced only when asked, so that a directory
		// named for a version never silently holds another.
		var existing []string
		for _, fl := range files {
			if _, err := os.Lstat(filepath.Join(*out, fl[0]+f[1])); err == nil {
				existing = append(existing, fl[0]+f[1])
			} else if !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		if len(existing) > 0 && !*force {
			return fmt.Errorf("%s already holds %s, which this export of %s would replace (nothing written): --force replaces them, or give another --out",
				*out, strings.Join(existing, ", "), pos[0])
		}
		for _, fl := range files {
			name := filepath.Join(*out, fl[0]+f[1])
			if err := t.api.getFile(ctx, name, fl[1], q, f[0]); err != nil {
				return err
			}
			if slices.Contains(existing, fl[0]+f[1]) {
				fmt.Fprintf(stderr, "replaced %s\n", name)
			}
			if _, err := fmt.Fprintln(stdout, name); err != nil {
				return err
			}
		}
		return nil
	})
}

// fileBasesClash refuses tables whose files would have one name (fileBase
// maps "order lines" and "order_lines" alike; a file system that ignores
// case takes "Orders" for "orders"), before anything is written: the
// second file would replace the first.
func fileBasesClash(tables []string) error {
	seen := map[string]string{}
	var clashes []string
	for _, t := range tables {
		b := strings.ToLower(fileBase(t))
		if first, ok := seen[b]; ok {
			clashes = append(clashes, fmt.Sprintf("%q and %q", first, t))
			continue
		}
		seen[b] = t
	}
	if len(clashes) > 0 {
		return fmt.Errorf("tables %s would be written to one file name (nothing written): export them one at a time with scan --table", strings.Join(clashes, ", "))
	}
	return nil
}

// fileBase is a table's name as the base of a file name: every character
// but letters, digits, '.', '-' and '_' replaced by '_', and a name of
// dots alone prefixed with '_'.
func fileBase(table string) string {
	out := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, table)
	if strings.Trim(out, ".") == "" {
		out = "_" + out
	}
	return out
}
