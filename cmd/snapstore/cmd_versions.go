package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"

	"github.com/snapstore/snapstore/snapshot"
)

const versionsHelp = `The kept versions of a dataset, newest first: version, commit time, rows,
the changes of the run that committed it, tags; the current one starred.
The newest --limit (default 100); --all lists every one, a page at a time.
--output json prints {"versions": [...]} as GET /v1/datasets/{dataset}/versions
does, every page in one list. For a dataset of several tables the counts
are the sums of its tables', TABLES their number, DELETED counting the
rows of the tables a version dropped; --table NAME gives that table's
counts instead ("-" at a version that lacks it; at the version that
dropped it, its rows under DELETED). When a rollback made one of the
versions listed, RESTORED gives the version each such one restored.`

// cmdVersions is `snapstore versions DATASET`.
func cmdVersions(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("versions", "DATASET [--table NAME] [--limit N | --all]", versionsHelp, flagsClient, stdout)
	limit := c.intFlag("limit", 100, "the newest `N` versions")
	all := c.fs.Bool("all", false, "every kept version")
	table := c.fs.String("table", "", "the counts of this `table` of a dataset of several tables")
	pos, err := c.parseN(args, 1, 1)
	if err != nil {
		return err
	}
	if *limit < 1 {
		return usageError("--limit: want a positive number, got %d", *limit)
	}
	return withTarget(ctx, c.cf, stderr, func(t *target) error {
		vs, more, err := listVersions(ctx, t.api, pos[0], *limit, *all)
		if err != nil {
			return err
		}
		if c.cf.json() {
			return encodeJSON(stdout, map[string]any{"versions": vs})
		}
		if err := versionsTable(stdout, vs, *table); err != nil {
			return err
		}
		if more {
			fmt.Fprintf(stderr, "snapstore: older versions not listed (--limit N or --all)\n")
		}
		return nil
	})
}

// listVersions reads the newest limit kept versions of dataset, or every
// one with all, following the pages of the API; more reports that older
// ones were left out.
func listVersions(ctx context.Context, api *apiClient, dataset string, limit int, all bool) (vs []json.RawMessage, more bool, err error) {
	tok := ""
	for {
		q := url.Values{}
		page := 1000
		if !all && limit-len(vs) < page {
			page = limit - len(vs)
		}
		q.Set("limit", strconv.Itoa(page))
		if tok != "" {
			q.Set("page_token", tok)
		}
		var body struct {
			Versions      []json.RawMessage `json:"versions"`
			NextPageToken string            `json:"next_page_token"`
		}
		if _, err := api.get(ctx, pathOf("/v1/datasets/", dataset, "/versions"), q, &body); err != nil {
			return nil, false, err
		}
		vs = append(vs, body.Versions...)
		tok = body.NextPageToken
		if tok == "" {
			return vs, false, nil
		}
		if !all && len(vs) >= limit {
			return vs, true, nil
		}
	}
}

// versionsTable prints versions (the API's JSON objects) as a table, the
// current version starred: the counts of table when it is not "", the
// number of tables of a dataset of several.
func versionsTable(w io.Writer, raw []json.RawMessage, table string) error {
	var named, restored bool
	for _, r := range raw {
		var v struct {
			Tables       []json.RawMessage `json:"tables"`
			RestoredFrom int64             `json:"restored_from"`
		}
		if json.Unmarshal(r, &v) == nil {
			named = named || len(v.Tables) > 0
			restored = restored || v.RestoredFrom != 0
		}
	}
	header := []string{"VERSION", "COMMITTED", "VERIFIED", "ROWS", "INSERTED", "UPDATED", "DELETED", "TAGS", "CURRENT"}
	if named && table == "" {
		header = append(header[:4], append([]string{"TABLES"}, header[4:]...)...)
	}
	if restored {
		// The version a rollback restored, for the versions it made.
		header = append(header, "RESTORED")
	}
	t := newTable(w, header...)
	for _, r := range raw {
		var v snapshot.VersionInfo
		if err := json.Unmarshal(r, &v); err != nil {
			return fmt.Errorf("decoding a version: %w", err)
		}
		cur := ""
		if v.Current {
			cur = "*"
		}
		counts := []string{count(v.Stats.Rows), count(v.Stats.Inserted), count(v.Stats.Updated), count(v.Stats.Deleted)}
		switch tb, ok := v.Table(table); {
		case table != "" && ok:
			counts = []string{count(tb.Stats.Rows), count(tb.Stats.Inserted), count(tb.Stats.Updated), count(tb.Stats.Deleted)}
		case table != "":
			counts = []string{"", "", "", ""}
			for _, d := range v.DroppedTables {
				if d.Name == table {
					counts[3] = count(d.Rows)
				}
			}
		case named:
			counts = append(counts[:1], append([]string{fmt.Sprint(len(v.Tables))}, counts[1:]...)...)
		}
		cells := append([]string{fmt.Sprint(v.Version), timeText(&v.CommittedAt), timeText(v.VerifiedAt)}, counts...)
		cells = append(cells, strings.Join(v.Tags, ","), cur)
		if restored && v.RestoredFrom != 0 {
			cells = append(cells, fmt.Sprint(v.RestoredFrom))
		} else if restored {
			cells = append(cells, "")
		}
		t.row(cells...)
	}
	return t.flush()
}
