package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

const notificationsHelp = `Run notifications: webhooks (notify.webhooks in the config file) get a
signed JSON event when a run fails, a guard refuses a run, a dataset goes
stale past its schedule, or it recovers (docs/notifications.md).`

// cmdNotifications is `snapstore notifications deliveries|test`.
func cmdNotifications(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runGroup(ctx, "notifications", notificationsHelp, []subcommand{
		{"deliveries", "[--webhook W] [--adapter A] [--event E] [--limit N | --all]", "the delivery log: each attempt, its outcome", notificationsDeliveries},
		{"test", "WEBHOOK", "send a test event to a webhook now", notificationsTest},
	}, args, stdout, stderr)
}

const deliveriesHelp = `The delivery log, newest first: each attempt to deliver an event to a
webhook, with the receiver's HTTP status or the error. --webhook, --adapter
and --event (run_failed, guard_refused, stale, recovered, test) filter. The
newest --limit entries (default 100); --all lists every one, a page at a
time. Operator tokens and up. --output json prints {"deliveries": [...]}
as GET /v1/notifications/deliveries does, every page in one list.`

// deliveryView is notify.Delivery as the CLI reads it.
type deliveryView struct {
	Time        time.Time `json:"time"`
	Webhook     string    `json:"webhook"`
	Event       string    `json:"event"`
	Adapter     string    `json:"adapter"`
	RunID       string    `json:"run_id"`
	Attempt     int       `json:"attempt"`
	MaxAttempts int       `json:"max_attempts"`
	Outcome     string    `json:"outcome"`
	StatusCode  int       `json:"status_code"`
	Error       string    `json:"error"`
	Node        string    `json:"node"`
}

func notificationsDeliveries(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("notifications deliveries", "[--webhook W] [--adapter A] [--event E] [--limit N | --all]", deliveriesHelp, flagsClient, stdout)
	webhook := c.fs.String("webhook", "", "only attempts to this `webhook`")
	adapter := c.fs.String("adapter", "", "only events of this `adapter`")
	event := c.fs.String("event", "", "only events of this `kind`: run_failed, guard_refused, stale, recovered, test")
	limit := c.intFlag("limit", 100, "the newest `N` entries")
	all := c.fs.Bool("all", false, "every entry")
	if _, err := c.parseN(args, 0, 0); err != nil {
		return err
	}
	if *limit < 1 {
		return usageError("--limit: want a positive number, got %d", *limit)
	}
	q := url.Values{}
	for k, v := range map[string]string{"webhook": *webhook, "adapter": *adapter, "event": *event} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return withTarget(ctx, c.cf, stderr, func(t *target) error {
		ds, more, err := listPages(ctx, t.api, "/v1/notifications/deliveries", "deliveries", q, *limit, *all)
		if err != nil {
			return err
		}
		if c.cf.json() {
			return encodeJSON(stdout, map[string]any{"deliveries": ds})
		}
		tb := newTable(stdout, "TIME", "WEBHOOK", "EVENT", "ADAPTER", "ATTEMPT", "OUTCOME", "DETAIL")
		for _, r := range ds {
			var d deliveryView
			if err := json.Unmarshal(r, &d); err != nil {
				return fmt.Errorf("reading the delivery log: %w", err)
			}
			detail := d.Error
			if d.StatusCode != 0 && d.Error == "" {
				detail = strconv.Itoa(d.StatusCode)
			}
			tb.row(timeText(&d.Time), d.Webhook, d.Event, d.Adapter, fmt.Sprintf("%d/%d", d.Attempt, d.MaxAttempts), d.Outcome, detail)
		}
		if err := tb.flush(); err != nil {
			return err
		}
		if more {
			fmt.Fprintf(stderr, "snapstore: older entries not listed (--limit N or --all)\n")
		}
		return nil
	})
}

// listPages reads the newest limit items (the array key of each page)
// that q selects from path, or every one with all, following the pages
// of the API; more reports that older ones were left out.
func listPages(ctx context.Context, api *apiClient, path, key string, q url.Values, limit int, all bool) (items []json.RawMessage, more bool, err error) {
	tok := ""
	for {
		pq := url.Values{}
		for k, v := range q {
			pq[k] = v
		}
		page := 1000
		if !all && limit-len(items) < page {
			page = limit - len(items)
		}
		pq.Set("limit", strconv.Itoa(page))
		if tok != "" {
			pq.Set("page_token", tok)
		}
		var body map[string]json.RawMessage
		if _, err := api.get(ctx, path, pq, &body); err != nil {
			return nil, false, err
		}
		var got []json.RawMessage
		if err := json.Unmarshal(body[key], &got); err != nil {
			return nil, false, fmt.Errorf("reading %s: %w", path, err)
		}
		items = append(items, got...)
		tok = ""
		if raw, ok := body["next_page_token"]; ok {
			_ = json.Unmarshal(raw, &tok)
		}
		if tok == "" {
			return items, false, nil
		}
		if !all && len(items) >= limit {
			return items, true, nil
		}
	}
}

const notificationsTestHelp = `Sends a signed test event (event "test") to the webhook now, once, whatever
events it subscribes to, and prints the attempt: delivered with the
receiver's status, or failed with the status or the error. It is recorded
in the delivery log. Exit code 1 when it was not delivered. Admin tokens
only.`

func notificationsTest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("notifications test", "WEBHOOK", notificationsTestHelp, flagsClient, stdout)
	pos, err := c.parseN(args, 1, 1)
	if err != nil {
		return err
	}
	return withTarget(ctx, c.cf, stderr, func(t *target) error {
		var d deliveryView
		raw, err := t.api.send(ctx, http.MethodPost, pathOf("/v1/notifications/webhooks/", pos[0], "/test"), nil, nil, &d)
		if err != nil {
			return err
		}
		if c.cf.json() {
			err = printJSON(stdout, raw)
		} else {
			status := ""
			if d.StatusCode != 0 {
				status = strconv.Itoa(d.StatusCode)
			}
			err = printFields(stdout, "webhook", d.Webhook, "outcome", d.Outcome, "status", status, "error", d.Error)
		}
		if err != nil {
			return err
		}
		if d.Outcome != "delivered" {
			return &exitError{code: exitFailed, err: fmt.Errorf("the test event was not delivered")}
		}
		return nil
	})
}
