package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/snapstore/snapstore/snapshot"
)

// deliveryJournal is the journal of the delivery log in the store (N3).
const deliveryJournal = "notify.delivery"

// Outcomes of an attempt.
const (
	// OutcomeDelivered: the receiver answered 2xx.
	OutcomeDelivered = "delivered"
	// OutcomeRetry: the attempt failed; another follows.
	OutcomeRetry = "retry"
	// OutcomeFailed: the last attempt failed; the event is given up.
	OutcomeFailed = "failed"
	// OutcomeDropped: the queue was full when the attempt was due.
	OutcomeDropped = "dropped"
)

// Delivery is one attempt to deliver an event to a webhook: an entry of
// the delivery log and the wire form of GET
// /v1/notifications/deliveries. It names neither the URL nor the secret
// (N5).
type Delivery struct {
	// ID is the entry's id in the log (set when read).
	ID string `json:"id,omitempty"`
	// Time is when the attempt ended.
	Time    time.Time `json:"time"`
	Webhook string    `json:"webhook"`
	Event   string    `json:"event"`
	// EventID is the event's id (HeaderDelivery), shared by its attempts.
	EventID string `json:"event_id"`
	Adapter string `json:"adapter,omitempty"`
	Dataset string `json:"dataset,omitempty"`
	RunID   string `json:"run_id,omitempty"`
	// Attempt counts from 1; MaxAttempts is the webhook's bound.
	Attempt     int `json:"attempt"`
	MaxAttempts int `json:"max_attempts"`
	// Outcome is delivered, retry, failed or dropped.
	Outcome string `json:"outcome"`
	// StatusCode is the receiver's HTTP status, 0 when none came; Error
	// says what went wrong otherwise.
	StatusCode int    `json:"status_code,omitempty"`
	Error      string `json:"error,omitempty"`
	// DurationSeconds is how long the attempt took, in seconds.
	DurationSeconds float64 `json:"duration_seconds"`
	// Node is the cluster node that sent it; empty alone.
	Node string `json:"node,omitempty"`
}

// DeliveryFilter selects a page of the delivery log.
type DeliveryFilter struct {
	// Webhook, Adapter and Event keep the entries that have them; "" any.
	Webhook, Adapter, Event string
	// After continues after the entry of this id (the previous page's
	// last); "" starts at the newest.
	After string
	// Limit is the most entries returned; it must be positive.
	Limit int
	// MaxScan bounds the entries read to fill a filtered page
	// (snapshot.JournalQuery.MaxScan); 0: unbounded.
	MaxScan int
}

// appendDelivery records d in the delivery log of db.
func appendDelivery(ctx context.Context, db *snapshot.DB, d Delivery) error {
	d.ID = ""
	b, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("notify: encoding a delivery: %w", err)
	}
	_, err = db.AppendJournal(ctx, deliveryJournal, d.Time, b)
	return err
}

// ListDeliveries returns the entries of the delivery log of db that f
// selects, newest first, and the id to continue after ("" when none
// remains). snapshot.ErrInvalidArgument for a bad After or Limit.
func ListDeliveries(ctx context.Context, db *snapshot.DB, f DeliveryFilter) ([]Delivery, string, error) {
	q := snapshot.JournalQuery{After: f.After, Limit: f.Limit, MaxScan: f.MaxScan}
	if f.Webhook != "" || f.Adapter != "" || f.Event != "" {
		q.Match = func(v []byte) bool {
			var d Delivery
			if json.Unmarshal(v, &d) != nil {
				return false
			}
			return (f.Webhook == "" || d.Webhook == f.Webhook) && (f.Adapter == "" || d.Adapter == f.Adapter) && (f.Event == "" || d.Event == f.Event)
		}
	}
	page, next, err := db.JournalPage(ctx, deliveryJournal, q)
	if err != nil {
		return nil, "", err
	}
	out := make([]Delivery, 0, len(page))
	for _, je := range page {
		var d Delivery
		if err := json.Unmarshal(je.Value, &d); err != nil {
			return nil, "", fmt.Errorf("%w: delivery entry %s: %v", snapshot.ErrCorrupt, je.ID, err)
		}
		d.ID = je.ID
		out = append(out, d)
	}
	return out, next, nil
}
