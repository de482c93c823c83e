package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

const gcHelp = `Apply the retention of datasets now, as the server does every gc_interval:
versions older than their TTL and beyond their newest min_versions
expire (the current and tagged versions are always kept), and the cells
no kept version can see are deleted, with those of failed runs (OF FAILED
RUNS counts these: they go without a version expiring).
--dry-run reports what would go and changes nothing. Name the datasets, or
--all for every one.`

// gcReport is the answer of POST /v1/datasets/{dataset}/gc.
type gcReport struct {
	Dataset           string  `json:"dataset"`
	DryRun            bool    `json:"dry_run"`
	VersionsExpired   []int64 `json:"versions_expired"`
	CellsDeleted      int64   `json:"cells_deleted"`
	CellsOfFailedRuns int64   `json:"cells_of_invalid_txns"`
	BytesReclaimed    int64   `json:"bytes_reclaimed"`
	InvalidTxnsPruned int64   `json:"invalid_txns_pruned"`
}

// cmdGC is `snapstore gc DATASET...|--all`.
func cmdGC(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("gc", "DATASET...|--all [--dry-run]", gcHelp, flagsClient, stdout)
	dry := c.fs.Bool("dry-run", false, "report what would be collected; change nothing")
	all := c.fs.Bool("all", false, "every dataset")
	pos, err := c.parse(args)
	if err != nil {
		return err
	}
	if len(pos) == 0 && !*all || len(pos) > 0 && *all {
		return usageError("usage: snapstore gc DATASET... or snapstore gc --all (snapstore gc --help)")
	}
	if err := c.wantNamed(pos); err != nil {
		return err
	}
	q := url.Values{}
	if *dry {
		q.Set("dry_run", "true")
	}
	return withTarget(ctx, c.cf, stderr, func(t *target) error {
		names := pos
		if *all {
			var body struct {
				Datasets []struct{ Name string } `json:"datasets"`
			}
			if _, err := t.api.get(ctx, "/v1/datasets", nil, &body); err != nil {
				return err
			}
			for _, d := range body.Datasets {
				names = append(names, d.Name)
			}
		}
		var reports []json.RawMessage
		tb := newTable(stdout, "DATASET", "DRY RUN", "VERSIONS EXPIRED", "CELLS DELETED", "OF FAILED RUNS", "RECLAIMED", "TXNS PRUNED")
		for _, name := range names {
			var r gcReport
			raw, err := t.api.send(ctx, http.MethodPost, pathOf("/v1/datasets/", name, "/gc"), q, nil, &r)
			if err != nil {
				return err
			}
			reports = append(reports, raw)
			tb.row(r.Dataset, yesNo(r.DryRun), versionList(r.VersionsExpired), count(r.CellsDeleted), count(r.CellsOfFailedRuns), bytesText(r.BytesReclaimed), count(r.InvalidTxnsPruned))
		}
		if c.cf.json() {
			return encodeJSON(stdout, map[string]any{"reports": reports})
		}
		return tb.flush()
	})
}

// versionList is "3, 4, 7", or "none".
func versionList(vs []int64) string {
	if len(vs) == 0 {
		return "none"
	}
	s := ""
	for i, v := range vs {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprint(v)
	}
	return s
}
