package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/snapshot"
)

// datasetView is a dataset as the API answers it.
type datasetView struct {
	Name        string                `json:"name"`
	CreatedAt   time.Time             `json:"created_at"`
	Partitions  int                   `json:"partitions"`
	Current     int64                 `json:"current_version"`
	CurrentInfo *snapshot.VersionInfo `json:"current"`
	Retention   api.Retention         `json:"retention"`
	Guard       snapshot.Guard        `json:"guard"`
	Versions    int                   `json:"versions"`
	VersionRead *snapshot.VersionInfo `json:"version_read"`
}

const datasetsHelp = `The datasets: each one's current version, when it was committed, its rows
and kept versions, and its retention.`

// cmdDatasets is `snapstore datasets list|show|drop`.
func cmdDatasets(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runGroup(ctx, "datasets", datasetsHelp, []subcommand{
		{"list", "", "every dataset", datasetsList},
		{"show", "DATASET", "one dataset: versions, retention, guard, the schema", datasetsShow},
		{"drop", "DATASET [--yes]", "drop a dataset and every version of it (asks first)", datasetsDrop},
	}, args, stdout, stderr)
}

func datasetsList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("datasets list", "", "Every dataset: current version, commit time and age, rows, kept versions, retention.", flagsClient, stdout)
	type answer struct {
		Datasets []datasetView `json:"datasets"`
	}
	return readCommand(ctx, c, args, stderr, 0, path0("/v1/datasets"), func(_ []string, body answer) error {
		now := time.Now()
		tb := newTable(stdout, "DATASET", "VERSION", "COMMITTED", "CHECKED", "ROWS", "KEPT", "TTL", "MIN VERSIONS")
		for _, d := range body.Datasets {
			version, committed, age, rows := "", "", "", ""
			if d.CurrentInfo != nil {
				version = fmt.Sprint(d.Current)
				checked := d.CurrentInfo.CheckedAt()
				committed, age = timeText(&d.CurrentInfo.CommittedAt), ageText(&checked, now)
				rows = count(d.CurrentInfo.Stats.Rows)
			}
			tb.row(d.Name, version, committed, age, rows, fmt.Sprint(d.Versions), ttlText(d.Retention.TTL), fmt.Sprint(d.Retention.MinVersions))
		}
		if len(body.Datasets) == 0 {
			// On stderr, so the table on stdout stays a table.
			fmt.Fprintln(stderr, "no datasets: an adapter's first successful run creates its dataset (snapstore adapters list, snapstore run ADAPTER)")
		}
		return tb.flush()
	})
}

// ttlText is a retention TTL as a definition writes it ("90d", "36h";
// api.Duration.Text), "forever" for none.
func ttlText(ttl api.Duration) string {
	if ttl == 0 {
		return "forever"
	}
	return ttl.Text()
}

const datasetsShowHelp = `One dataset: its current version (or, with --version, --as-of or --tag, that
version), commit time, rows, checksum, the run that committed it, kept
versions, retention, guard, and the schema of that version with its key
columns; for a dataset of several tables, its tables instead (snapstore
tables DATASET).`

func datasetsShow(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("datasets show", "DATASET [--version N|--as-of TIME|--tag TAG]", datasetsShowHelp, flagsClient, stdout)
	var at atFlags
	at.register(c)
	request := func(pos []string) (string, url.Values) {
		q := url.Values{}
		at.query(q)
		return pathOf("/v1/datasets/", pos[0]), q
	}
	return readCommand(ctx, c, args, stderr, 1, request, func(_ []string, d datasetView) error {
		v := d.CurrentInfo
		if d.VersionRead != nil {
			v = d.VersionRead
		}
		kv := []string{"dataset", d.Name, "created", timeText(&d.CreatedAt), "current version", fmt.Sprint(d.Current),
			"kept versions", fmt.Sprint(d.Versions), "retention", fmt.Sprintf("ttl %s, min versions %d", ttlText(d.Retention.TTL), d.Retention.MinVersions),
			"guard", fmt.Sprintf("allow empty %v, max shrink %g", d.Guard.AllowEmpty, d.Guard.MaxShrink)}
		if v != nil {
			now := time.Now()
			kv = append(kv, "version shown", fmt.Sprint(v.Version), "committed", timeText(&v.CommittedAt)+" ("+ageText(&v.CommittedAt, now)+")",
				"rows", count(v.Stats.Rows), "checksum", v.Stats.Checksum, "tags", strings.Join(v.Tags, ", "),
				"source", versionSourceText(v.Source))
			if v.RestoredFrom != 0 {
				kv = append(kv, "made by", fmt.Sprintf("rollback, restored from version %d", v.RestoredFrom))
			} else {
				kv = append(kv, "run", v.Source.RunID)
			}
		}
		if err := printFields(stdout, kv...); err != nil || v == nil {
			return err
		}
		fmt.Fprintln(stdout)
		if len(v.Tables) > 0 {
			tb := newTable(stdout, "TABLE", "ROWS", "KEY", "COLUMNS")
			for _, t := range v.Tables {
				tb.row(t.Name, count(t.Stats.Rows), strings.Join(t.Schema.Key, ","), fmt.Sprint(len(t.Schema.Columns)))
			}
			return tb.flush()
		}
		key := map[string]bool{}
		for _, k := range v.Schema.Key {
			key[k] = true
		}
		tb := newTable(stdout, "COLUMN", "KIND", "SOURCE TYPE", "NULLABLE", "KEY")
		for _, col := range v.Schema.Columns {
			tb.row(col.Name, col.Kind.String(), col.SourceType, yesNo(col.Nullable), yesNo(key[col.Name]))
		}
		return tb.flush()
	})
}

// yesNo is "yes" or "".
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return ""
}

const datasetsDropHelp = `Drop a dataset: every version of it and every cell go, and cannot be
brought back. Adapters that write it stay, and their next run starts it
anew. It asks first on a terminal; --yes answers for scripts (without a
terminal and without --yes nothing is dropped: exit code 2).`

func datasetsDrop(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("datasets drop", "DATASET [--yes]", datasetsDropHelp, flagsClient, stdout)
	yes := c.fs.Bool("yes", false, "drop without asking")
	pos, err := c.parseN(args, 1, 1)
	if err != nil {
		return err
	}
	name := pos[0]
	return withTarget(ctx, c.cf, stderr, func(t *target) error {
		var d datasetView
		if _, err := t.api.get(ctx, pathOf("/v1/datasets/", name), nil, &d); err != nil {
			return err
		}
		what := keptVersions(d.Versions)
		if d.CurrentInfo != nil {
			what += fmt.Sprintf(", the current one (%d) with %s rows", d.Current, count(d.CurrentInfo.Stats.Rows))
		}
		ok, err := confirm(stderr, fmt.Sprintf("Drop dataset %s in %s: %s, and every cell? This cannot be undone.", name, t.where, what), *yes)
		if err != nil {
			return err
		}
		if !ok {
			return &exitError{code: exitFailed, err: fmt.Errorf("not dropped")}
		}
		if _, err := t.api.call(ctx, http.MethodDelete, pathOf("/v1/datasets/", name), nil, nil); err != nil {
			return err
		}
		if c.cf.json() {
			return encodeJSON(stdout, deletedJSON{Deleted: name})
		}
		fmt.Fprintf(stdout, "dropped dataset %s (%s)\n", name, what)
		return nil
	})
}

// versionSourceText is where a version came from, for people: its
// adapter, and its connection and resource ("adapter products,
// shop/products"); a run of several tables of a database records no
// resource, its tables being listed apart.
func versionSourceText(src snapshot.SourceInfo) string {
	var parts []string
	if src.Adapter != "" {
		parts = append(parts, "adapter "+src.Adapter)
	}
	switch {
	case src.Connection == "":
	case src.Resource == "":
		parts = append(parts, "connection "+src.Connection)
	default:
		parts = append(parts, src.Connection+"/"+src.Resource)
	}
	return strings.Join(parts, ", ")
}

// keptVersions is "1 kept version" or "N kept versions".
func keptVersions(n int) string {
	if n == 1 {
		return "1 kept version"
	}
	return fmt.Sprintf("%d kept versions", n)
}
