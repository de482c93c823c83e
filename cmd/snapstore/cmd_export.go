package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
)

const exportHelp = `A version of a dataset as files in a directory, one per table (a dataset
has one table today: DATASET.parquet), at one version (the current one
unless --version, --as-of or --tag). --format parquet (the default) writes
Parquet files, --format arrow Arrow IPC stream files (DATASET.arrows). Each
file is written under a temporary name and renamed once whole. The files
are GET /v1/datasets/{dataset}/rows?format=... of the whole dataset.`

// exportFormats maps --format to the media type asked for and the file
// name's extension.
var exportFormats = map[string][2]string{
	"parquet": {"application/vnd.apache.parquet", ".parquet"},
	"arrow":   {"application/vnd.apache.arrow.stream", ".arrows"},
}

// cmdExport is `snapstore export DATASET --out DIR`.
func cmdExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("export", "DATASET --out DIR [--format parquet|arrow] [--version V|--tag T|--as-of TIME]", exportHelp, flagsClient, stdout)
	var at atFlags
	at.register(c)
	format := c.fs.String("format", "parquet", "`format` of the files: parquet or arrow")
	compression := c.fs.String("compression", "", "Parquet `compression`: zstd (the server's default) or snappy")
	out := c.fs.String("out", "", "the `directory` to write the files in (created if absent)")
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
		if *compression != "" {
			q.Set("compression", *compression)
		}
		name := filepath.Join(*out, pos[0]+f[1])
		if err := t.api.getFile(ctx, name, pathOf("/v1/datasets/", pos[0], "/rows"), q, f[0]); err != nil {
			return err
		}
		_, err := fmt.Fprintln(stdout, name)
		return err
	})
}
