package server

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/notify"
	"github.com/snapstore/snapstore/snapshot"
)

// Run notifications (package notify): GET /v1/notifications/deliveries
// lists the delivery log, which is in the store, so a server lists it
// even without a notifier; POST /v1/notifications/webhooks/{name}/test
// sends a test event through the server's Notifier.

// Delivery lists are pages as audit lists are: limit entries (default
// defaultAuditListed, at most maxAuditListed), newest first, a page
// reading at most maxAuditScanned entries.

// DeliveryPage is the answer of GET /v1/notifications/deliveries.
type DeliveryPage struct {
	Deliveries    []notify.Delivery `json:"deliveries"`
	NextPageToken string            `json:"next_page_token,omitempty"`
}

// DeliveryFilter selects a page of the delivery log: the parameters of
// GET /v1/notifications/deliveries.
type DeliveryFilter struct {
	Webhook, Adapter, Event string // "": any
	PageToken               string
	Limit                   int // 0: defaultAuditListed
}

// listDeliveries answers GET /v1/notifications/deliveries.
func (s *Server) listDeliveries(c echo.Context) error {
	limit, err := parseLimit(c, maxAuditListed)
	if err != nil {
		return err
	}
	f := DeliveryFilter{Webhook: c.QueryParam("webhook"), Adapter: c.QueryParam("adapter"), Event: c.QueryParam("event"),
		PageToken: c.QueryParam("page_token"), Limit: limit}
	page, err := s.DeliveryList(c.Request().Context(), f)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, page)
}

// DeliveryList returns the page of the delivery log f selects, newest
// first: what the API and the console's notifications page show.
func (s *Server) DeliveryList(ctx context.Context, f DeliveryFilter) (DeliveryPage, error) {
	q := notify.DeliveryFilter{Webhook: f.Webhook, Adapter: f.Adapter, Event: f.Event, Limit: f.Limit, MaxScan: maxAuditScanned}
	if q.Limit == 0 {
		q.Limit = defaultAuditListed
	}
	if f.PageToken != "" {
		var err error
		if q.After, err = decodeDeliveryToken(f.PageToken); err != nil {
			return DeliveryPage{}, err
		}
	}
	ds, next, err := notify.ListDeliveries(ctx, s.db, q)
	if err != nil {
		return DeliveryPage{}, err
	}
	out := DeliveryPage{Deliveries: ds}
	if next != "" {
		out.NextPageToken = encodeDeliveryToken(next)
	}
	return out, nil
}

// testWebhook answers POST /v1/notifications/webhooks/{name}/test: one
// attempt of a test event, synchronous, answered with its delivery entry
// (200 whatever the receiver answered: the entry says it).
func (s *Server) testWebhook(c echo.Context) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	if s.notifier == nil {
		return WebhookNotFound(name)
	}
	d, err := s.notifier.Test(c.Request().Context(), name)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, d)
}

// WebhookNotFound is the error of a test of webhook name on a server that
// has no notifier.
func WebhookNotFound(name string) error {
	return fmt.Errorf("%w: %q (no webhook is configured)", notify.ErrWebhookNotFound, name)
}

// A delivery page token holds the id of the last entry read: base64url
// of 'n' and the id's 16 bytes.

func encodeDeliveryToken(id string) string {
	b, _ := hex.DecodeString(id)
	return base64.RawURLEncoding.EncodeToString(append([]byte{'n'}, b...))
}

// decodeDeliveryToken returns the entry id a delivery page token
// continues after; snapshot.ErrBadPageToken for anything else.
func decodeDeliveryToken(tok string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(b) != 17 || b[0] != 'n' {
		return "", fmt.Errorf("%w: not a token of a delivery list", snapshot.ErrBadPageToken)
	}
	return hex.EncodeToString(b[1:]), nil
}
