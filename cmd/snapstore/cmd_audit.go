package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

const auditHelp = `The audit trail, newest first: every change, every refused request (401,
403), and every read of a dataset whose adapter has audit_reads, with who
(the token's name), from where, what, and the outcome (docs/security.md).
--since and --until take an RFC 3339 time, a time as the table prints it
(2026-12-06 19:15:31Z: from the start of that second, until its end) or
a duration ago (24h); --actor,
--action (an operationId such as startRun, dropDataset) and --dataset
filter. The newest --limit entries (default 100); --all lists every one, a
page at a time. Admin tokens only. --output json prints {"entries": [...]}
as GET /v1/audit does, every page in one list.`

// cmdAudit is `snapstore audit`.
func cmdAudit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("audit", "[--since T] [--until T] [--actor A] [--action X] [--dataset D] [--limit N | --all]", auditHelp, flagsClient, stdout)
	since := c.fs.String("since", "", "only entries at or after `T` (RFC 3339, a time as the table prints it, or a duration ago: 24h)")
	until := c.fs.String("until", "", "only entries at or before `T` (RFC 3339, a time as the table prints it, or a duration ago)")
	actor := c.fs.String("actor", "", "only entries of this `actor` (a token's name, node:ID, anonymous)")
	action := c.fs.String("action", "", "only entries of this `action` (an operationId, login, logout)")
	dataset := c.fs.String("dataset", "", "only entries naming this `dataset`")
	limit := c.intFlag("limit", 100, "the newest `N` entries")
	all := c.fs.Bool("all", false, "every entry")
	if _, err := c.parseN(args, 0, 0); err != nil {
		return err
	}
	if *limit < 1 {
		return usageError("--limit: want a positive number, got %d", *limit)
	}
	q := url.Values{}
	now := time.Now()
	for _, f := range []struct{ name, v string }{{"since", *since}, {"until", *until}} {
		if f.v == "" {
			continue
		}
		t, err := auditTime(f.v, now, f.name == "until")
		if err != nil {
			return usageError("--%s: %v", f.name, err)
		}
		q.Set(f.name, t.UTC().Format(time.RFC3339Nano))
	}
	for k, v := range map[string]string{"actor": *actor, "action": *action, "dataset": *dataset} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return withTarget(ctx, c.cf, stderr, func(t *target) error {
		es, more, err := listAudit(ctx, t.api, q, *limit, *all)
		if err != nil {
			return err
		}
		if c.cf.json() {
			if es == nil {
				es = []json.RawMessage{} // [] as GET /v1/audit answers, not null
			}
			return encodeJSON(stdout, map[string]any{"entries": es})
		}
		if err := auditTable(stdout, es); err != nil {
			return err
		}
		if more {
			fmt.Fprintf(stderr, "snapstore: older entries not listed (--limit N or --all)\n")
		}
		return nil
	})
}

// auditTime reads a time flag: RFC 3339, a duration before now, or a
// time to the second as the table prints it (timeLayout, or without its
// offset in the local zone), so that a time copied from the trail selects
// its entries: the start of that second, or with end (--until) its last
// instant, as --as-of reads it (asOfTime).
func auditTime(v string, now time.Time, end bool) (time.Time, error) {
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	for _, layout := range []string{timeLayout, time.DateTime} {
		// In a layout with an offset, the offset given decides.
		if t, err := time.ParseInLocation(layout, v, time.Local); err == nil {
			if end {
				t = t.Add(time.Second - time.Nanosecond)
			}
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("want an RFC 3339 time (2026-01-02T15:04:05Z), a time as the table prints it (%s) or a duration ago (24h), got %q", now.Format(timeLayout), v)
}

// auditEntry is server.AuditEntry as the CLI reads it.
type auditEntry struct {
	Time       time.Time         `json:"time"`
	Actor      string            `json:"actor"`
	Remote     string            `json:"remote"`
	Node       string            `json:"node"`
	Action     string            `json:"action"`
	Method     string            `json:"method"`
	Route      string            `json:"route"`
	Dataset    string            `json:"dataset"`
	Adapter    string            `json:"adapter"`
	Connection string            `json:"connection"`
	Params     map[string]string `json:"params"`
	Status     int               `json:"status"`
	Code       string            `json:"code"`
}

// listAudit reads the newest limit entries that q selects, or every one
// with all, following the pages of the API; more reports that older ones
// were left out.
func listAudit(ctx context.Context, api *apiClient, q url.Values, limit int, all bool) (es []json.RawMessage, more bool, err error) {
	tok := ""
	for {
		pq := url.Values{}
		for k, v := range q {
			pq[k] = v
		}
		page := 1000
		if !all && limit-len(es) < page {
			page = limit - len(es)
		}
		pq.Set("limit", strconv.Itoa(page))
		if tok != "" {
			pq.Set("page_token", tok)
		}
		var body struct {
			Entries       []json.RawMessage `json:"entries"`
			NextPageToken string            `json:"next_page_token"`
		}
		if _, err := api.get(ctx, "/v1/audit", pq, &body); err != nil {
			return nil, false, err
		}
		es = append(es, body.Entries...)
		tok = body.NextPageToken
		if tok == "" {
			return es, false, nil
		}
		if !all && len(es) >= limit {
			return es, true, nil
		}
	}
}

// auditTable prints entries, one a line: time, actor, client address,
// action, target, status (and code).
func auditTable(w io.Writer, raw []json.RawMessage) error {
	tb := newTable(w, "TIME", "ACTOR", "FROM", "ACTION", "TARGET", "STATUS")
	for _, r := range raw {
		var e auditEntry
		if err := json.Unmarshal(r, &e); err != nil {
			return fmt.Errorf("reading the audit trail: %w", err)
		}
		actor := e.Actor
		if e.Node != "" {
			actor += " (on " + e.Node + ")"
		}
		status := strconv.Itoa(e.Status)
		if e.Code != "" {
			status += " " + e.Code
		}
		tb.row(timeText(&e.Time), actor, e.Remote, e.Action, auditTarget(e), status)
	}
	return tb.flush()
}

// auditTarget writes what an entry acted on: "dataset=sales tag=q1".
func auditTarget(e auditEntry) string {
	var out []string
	for _, kv := range [][2]string{{"dataset", e.Dataset}, {"adapter", e.Adapter}, {"connection", e.Connection}} {
		if kv[1] != "" {
			out = append(out, kv[0]+"="+kv[1])
		}
	}
	var ps []string
	for k, v := range e.Params {
		ps = append(ps, k+"="+v)
	}
	slices.Sort(ps)
	return strings.Join(append(out, ps...), " ")
}
