package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/snapstore/snapstore/snapshot"
)

const tablesHelp = `The tables of a dataset of several tables at one version (the current one
unless --version, --as-of or --tag), by name: rows, the changes of the run
that committed the version, key and column count. A dataset of one table
lists none: read it without --table. get, scan, diff and versions read one
table with --table NAME.`

// cmdTables is `snapstore tables DATASET`.
func cmdTables(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("tables", "DATASET [--version N|--as-of TIME|--tag TAG]", tablesHelp, flagsClient, stdout)
	var at atFlags
	at.register(c)
	return readCommand(ctx, c, args, stderr, 1, func(pos []string) (string, url.Values) {
		q := url.Values{}
		at.query(q)
		return pathOf("/v1/datasets/", pos[0], "/tables"), q
	}, func(pos []string, v struct {
		Version int64                `json:"version"`
		Tables  []snapshot.TableInfo `json:"tables"`
	}) error {
		if len(v.Tables) == 0 {
			_, err := fmt.Fprintf(stdout, "%s holds one table at version %d: read it without --table\n", pos[0], v.Version)
			return err
		}
		t := newTable(stdout, "TABLE", "ROWS", "INSERTED", "UPDATED", "DELETED", "KEY", "COLUMNS")
		for _, tb := range v.Tables {
			st := tb.Stats
			t.row(tb.Name, count(st.Rows), count(st.Inserted), count(st.Updated), count(st.Deleted), strings.Join(tb.Schema.Key, ","), fmt.Sprint(len(tb.Schema.Columns)))
		}
		return t.flush()
	})
}

// tableFlag is the --table flag of the read commands: a table of a
// dataset of several tables.
type tableFlag struct{ name string }

func (f *tableFlag) register(c *cmdLine) {
	c.fs.StringVar(&f.name, "table", "", "read this `table` of a dataset of several tables (snapstore tables DATASET lists them)")
}

// path is the API path of dataset's route suffix ("/rows", "/diff"), or of
// its table's (/v1/datasets/{dataset}/tables/{table}/rows) when --table
// names one.
func (f *tableFlag) path(dataset, suffix string) string {
	if f.name == "" {
		return pathOf("/v1/datasets/", dataset, suffix)
	}
	return pathOf("/v1/datasets/", dataset, "/tables/", f.name, suffix)
}
