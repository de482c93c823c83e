package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/api"
)

// adapterView is an adapter as the API answers it: its definition and
// where it stands.
type adapterView struct {
	api.Adapter
	Owner      string              `json:"owner"`
	SingleNode string              `json:"single_node"`
	Source     string              `json:"source"`
	Revision   int64               `json:"revision"`
	UpdatedAt  time.Time           `json:"updated_at"`
	NextRun    *time.Time          `json:"next_run"`
	LastRun    *adapters.RunRecord `json:"last_run"`
	Warnings   []string            `json:"warnings"`
}

const adaptersHelp = `Adapters: each pulls a table of a data connection, or several read at one
point of the source, into a dataset, on a schedule or when asked. Those of the config file are read-only here; those
made with create live in the data directory.`

// cmdAdapters is `snapstore adapters list|show|create|delete|run`.
func cmdAdapters(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runGroup(ctx, "adapters", adaptersHelp, []subcommand{
		{"list", "", "every adapter: schedule, next run, last run", adaptersList},
		{"show", "ADAPTER", "one adapter", adaptersShow},
		{"create", "-f FILE [--replace]", "an adapter from a YAML file (the config file's keys)", adaptersCreate},
		{"delete", "ADAPTER", "delete an adapter (the dataset it wrote stays)", adaptersDelete},
		{"run", "ADAPTER [--force] [--detach]", "one run now, followed to its end (as snapstore run)", func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
			return runAdapter(ctx, "adapters run", args, stdout, stderr)
		}},
	}, args, stdout, stderr)
}

func adaptersList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("adapters list", "", "Every adapter: its dataset, connection and resource, schedule, next run, and last run with its status.", flagsClient, stdout)
	type answer struct {
		Adapters []adapterView `json:"adapters"`
	}
	return readCommand(ctx, c, args, stderr, 0, path0("/v1/adapters"), func(_ []string, body answer) error {
		return adaptersTable(stdout, body.Adapters)
	})
}

// adaptersTable prints adapters, one a line: dataset, source table,
// schedule, next run, last run and its status, where defined; in a
// cluster (some adapter has an owner node) also the strategy and the
// owner, so that the table says where each adapter's runs happen.
func adaptersTable(w io.Writer, list []adapterView) error {
	now := time.Now()
	clustered := slices.ContainsFunc(list, func(a adapterView) bool { return a.Owner != "" || a.SingleNode != "" })
	header := []string{"ADAPTER", "DATASET", "SOURCE TABLE", "SCHEDULE", "NEXT RUN", "LAST RUN", "STATUS", "DEFINED IN"}
	if clustered {
		header = append(header, "STRATEGY", "OWNER")
	}
	tb := newTable(w, header...)
	for _, a := range list {
		last, status := "", ""
		if r := a.LastRun; r != nil {
			last, status = ageText(&r.Start, now), runStatusText(*r)
		}
		next := ""
		if a.NextRun != nil {
			next = "in " + shortDuration(a.NextRun.Sub(now))
		}
		cells := []string{a.Name, a.Dataset, sourceText(a.Adapter), a.Schedule, next, last, status, a.Source}
		if clustered {
			cells = append(cells, strategyText(a), a.Owner)
		}
		tb.row(cells...)
	}
	return tb.flush()
}

// sourceText is an adapter's source in a list: connection/resource, or
// for an adapter of several tables the connection and what selects them
// (its resources, else its patterns).
func sourceText(a api.Adapter) string {
	if !a.ManyTables() {
		return a.Connection + "/" + a.Resource
	}
	var sel []string
	if len(a.Resources) > 0 {
		sel = append(sel, strings.Join(a.Resources, ","))
	}
	if len(a.Include) > 0 {
		sel = append(sel, "include "+strings.Join(a.Include, ","))
	}
	if len(a.Exclude) > 0 {
		sel = append(sel, "exclude "+strings.Join(a.Exclude, ","))
	}
	return a.Connection + "/{" + strings.Join(sel, " ") + "}"
}

func adaptersShow(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("adapters show", "ADAPTER", "One adapter: its definition, next run and last run.", flagsClient, stdout)
	request := func(pos []string) (string, url.Values) { return pathOf("/v1/adapters/", pos[0]), nil }
	return readCommand(ctx, c, args, stderr, 1, request, func(_ []string, a adapterView) error {
		keys := strings.Join(a.KeyColumns, ", ")
		if keys == "" {
			keys = "the source's primary key"
		}
		last := ""
		if r := a.LastRun; r != nil {
			last = fmt.Sprintf("%s %s, %s", r.ID, runStatusText(*r), timeText(&r.Start))
		}
		schedule := a.Schedule
		if schedule == "" {
			schedule = "none (runs when asked)"
		}
		var placement []string
		if a.Owner != "" || a.SingleNode != "" || a.Strategy != "" {
			placement = []string{"strategy", strategyText(a), "owner", a.Owner}
		}
		retry := "no"
		if a.Retries > 0 {
			retry = fmt.Sprintf("%d times, first after %s", a.Retries, a.RetryBackoff.Text())
		}
		// The source options as connections show prints options: one
		// field each, the value as JSON text.
		var sourceOpts []string
		for _, k := range slices.Sorted(maps.Keys(a.SourceOptions)) {
			b, _ := json.Marshal(a.SourceOptions[k])
			sourceOpts = append(sourceOpts, "source_options."+k, string(b))
		}
		return printFields(stdout, slices.Concat([]string{
			"adapter", a.Name, "dataset", a.Dataset, "connection", a.Connection, "resource", a.Resource, "key columns", keys},
			tablesFields(a.Adapter), sourceOpts, []string{"schedule", schedule}, placement, []string{"next run", nextRunText(a.NextRun, a.Schedule), "last run", last,
				"retention", fmt.Sprintf("ttl %s, min versions %d", ttlText(a.Retention.TTL), a.Retention.MinVersions),
				"guard", fmt.Sprintf("allow empty %v, max shrink %g", a.Guard.AllowEmpty, a.Guard.MaxShrink),
				"retries", retry, "run on start", fmt.Sprint(a.RunOnStart), "embed json", fmt.Sprint(a.EmbedJSON), "commit unchanged", fmt.Sprint(a.CommitUnchanged),
				"audit reads", fmt.Sprint(a.AuditReads),
				"defined in", fmt.Sprintf("%s (revision %d, updated %s)", a.Source, a.Revision, timeText(&a.UpdatedAt))})...)
	})
}

// nextRunText is an adapter's next run as the CLI writes times
// (timeText) and, for a schedule of another zone (CRON_TZ=Europe/Berlin
// or TZ=...), also in that zone, the one its fields are read in:
// "2026-12-07 01:30:00Z (2026-12-07 02:30:00+01:00 in Europe/Berlin)".
func nextRunText(next *time.Time, schedule string) string {
	text := timeText(next)
	if text == "" {
		return text
	}
	spec := strings.TrimSpace(schedule)
	for _, prefix := range []string{"CRON_TZ=", "TZ="} {
		rest, ok := strings.CutPrefix(spec, prefix)
		if !ok {
			continue
		}
		name, _, _ := strings.Cut(rest, " ")
		if loc, err := time.LoadLocation(name); err == nil {
			if there := next.In(loc).Format(timeLayout); there != text {
				text += " (" + there + " in " + name + ")"
			}
		}
		break
	}
	return text
}

// scheduleText says an adapter's schedule in a sentence: `schedule
// "@every 1h"`, or no schedule.
func scheduleText(schedule string) string {
	if schedule == "" {
		return "no schedule (runs when asked)"
	}
	return fmt.Sprintf("schedule %q", schedule)
}

// strategyText is an adapter's strategy ("local" when unset) and, for a
// single-node adapter, the node its runs go to: "single-node: node3".
func strategyText(a adapterView) string {
	st := a.Strategy
	if st == "" {
		st = string(adapters.StrategyLocal)
	}
	if a.SingleNode != "" {
		st += ": " + a.SingleNode
	}
	return st
}

const adaptersCreateHelp = `Create an adapter from a YAML file ("-" for stdin): one mapping with the keys
of an entry of the config file's adapters list (docs/config.md), e.g.

  name: film
  connection: sakila
  resource: film
  schedule: "@every 1h"
  retention: {ttl: 720h, min_versions: 10}

Its connection must exist. The server checks the table: one that does not
exist, or has no usable key and no key_columns, is refused; one it cannot
reach (or that refuses the credentials) is saved with a warning on stderr,
and its runs fail alike until the connection's test passes. --replace
replaces an adapter of that name made this way (else it is created).
Errors that name a key say its line in the file.`

func adaptersCreate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return createDefinition(ctx, args, stdout, stderr, "adapters create", "adapter", "/v1/adapters", adaptersCreateHelp,
		func(w io.Writer, raw []byte) error {
			var a adapterView
			if err := json.Unmarshal(raw, &a); err != nil {
				return err
			}
			if _, err := fmt.Fprintf(w, "adapter %s: %s into dataset %s, %s (revision %d)\n", a.Name, sourceText(a.Adapter), a.Dataset, scheduleText(a.Schedule), a.Revision); err != nil {
				return err
			}
			for _, warning := range a.Warnings {
				fmt.Fprintf(stderr, "warning: %s\n", warning)
			}
			return nil
		})
}

// createDefinition is `adapters create` and `connections create`: the
// definition in -f FILE, POSTed to coll, or with --replace PUT to
// coll/NAME; done prints the answer as a sentence.
func createDefinition(ctx context.Context, args []string, stdout, stderr io.Writer, name, what, coll, help string, done func(io.Writer, []byte) error) error {
	c := newCmdLine(name, "-f FILE [--replace]", help, flagsClient, stdout)
	file := c.fs.String("f", "", "the YAML `file` (- for stdin)")
	replace := c.fs.Bool("replace", false, "replace the "+what+" of that name if there is one")
	if _, err := c.parseN(args, 0, 0); err != nil {
		return err
	}
	if *file == "" {
		return usageError("give the %s's file: snapstore %s -f FILE", what, name)
	}
	def, err := readDefinition(*file)
	if err != nil {
		return err
	}
	if def.name() == "" {
		return usageError("%s: the %s has no name (name: ...)", def.file, what)
	}
	return withTarget(ctx, c.cf, stderr, func(t *target) error {
		method, path := http.MethodPost, coll
		if *replace {
			method, path = http.MethodPut, pathOf(coll+"/", def.name())
		}
		raw, err := t.api.call(ctx, method, path, nil, def.body)
		var ae *apiError
		if errors.As(err, &ae) && !*replace && ae.Problem.Code == what+"_exists" && ae.Hint == "" {
			ae.Hint = fmt.Sprintf("snapstore %s -f %s --replace replaces it", name, *file)
		}
		if err != nil {
			return def.place(err)
		}
		if c.cf.json() {
			return printJSON(stdout, raw)
		}
		return done(stdout, raw)
	})
}

func adaptersDelete(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("adapters delete", "ADAPTER", "Delete an adapter made with create (or through the API) and its schedule. The dataset it wrote, if any, and its run records stay; a config file's adapter is read-only.", flagsClient, stdout)
	pos, err := c.parseN(args, 1, 1)
	if err != nil {
		return err
	}
	return withTarget(ctx, c.cf, stderr, func(t *target) error {
		path := pathOf("/v1/adapters/", pos[0])
		// The adapter's dataset, read first: the answer says whether one
		// stays, and names it. A failed read leaves the DELETE to answer.
		var a adapterView
		_, getErr := t.api.get(ctx, path, nil, &a)
		if _, err := t.api.call(ctx, http.MethodDelete, path, nil, nil); err != nil {
			return err
		}
		if c.cf.json() {
			return encodeJSON(stdout, deletedJSON{Deleted: pos[0]})
		}
		_, err := fmt.Fprintf(stdout, "adapter %s deleted%s\n", pos[0], datasetStays(ctx, t, a, getErr))
		return err
	})
}

// datasetStays is what a deleted adapter leaves, to end the sentence
// that says it was deleted: the dataset it wrote, which stays, or that
// its dataset does not exist (never written, or dropped before);
// nothing when that is not known (its definition or the dataset could
// not be read).
func datasetStays(ctx context.Context, t *target, a adapterView, getErr error) string {
	if getErr != nil {
		return ""
	}
	ds := a.Dataset
	if ds == "" {
		ds = a.Name // a dataset's name defaults to its adapter's
	}
	_, err := t.api.get(ctx, pathOf("/v1/datasets/", ds), nil, nil)
	var ae *apiError
	switch {
	case err == nil:
		return fmt.Sprintf("; its dataset %s stays (snapstore datasets drop %s drops it)", ds, ds)
	case errors.As(err, &ae) && ae.Status == http.StatusNotFound:
		return fmt.Sprintf("; its dataset %s does not exist (never written, or dropped)", ds)
	}
	return ""
}

// tablesFields are the fields of an adapter of several tables; of an
// adapter of one resource, its parallelism when set (the connections its
// key ranges' checksums are computed over).
func tablesFields(a api.Adapter) []string {
	if !a.ManyTables() {
		if a.Parallelism > 0 {
			return []string{"parallelism", fmt.Sprint(a.Parallelism)}
		}
		return nil
	}
	parallelism := "the connection's default"
	if a.Parallelism > 0 {
		parallelism = fmt.Sprint(a.Parallelism)
	}
	keys := a.TableKeysText()
	if keys == "" {
		keys = "none: each table's primary key"
	}
	return []string{"resources", strings.Join(a.Resources, ", "), "include", strings.Join(a.Include, ", "), "exclude", strings.Join(a.Exclude, ", "),
		"table keys", keys, "allow dropped tables", fmt.Sprint(a.AllowDroppedTables), "parallelism", parallelism}
}
