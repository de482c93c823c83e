package console

import (
	"html/template"
	"net/http"
	"net/url"

	"github.com/snapstore/snapstore/notify"
	"github.com/snapstore/snapstore/server"
)

// The notifications page: the webhooks, with a test button for admins,
// and the delivery log, newest first, filtered by webhook, adapter and
// event, a page at a time (notifications.go).

// notificationsView is the data of the notifications page.
type notificationsView struct {
	// Webhooks are the names of the configured webhooks.
	Webhooks []string
	Filter   url.Values // webhook, adapter, event as given
	// Deliveries is the page of the delivery log.
	Deliveries []notify.Delivery
	// Older is the link to the next page (a console path and the
	// encoded query, safe as a URL); empty on the last.
	Older template.URL
}

// notificationsPage answers GET /ui/notifications, as GET
// /v1/notifications/deliveries does.
func (c *console) notificationsPage(w http.ResponseWriter, r *http.Request, v viewer) error {
	q := r.URL.Query()
	f := server.DeliveryFilter{Webhook: q.Get("webhook"), Adapter: q.Get("adapter"), Event: q.Get("event"), PageToken: q.Get("page_token")}
	page, err := c.s.DeliveryList(r.Context(), f)
	if err != nil {
		return err
	}
	view := notificationsView{Filter: url.Values{}, Deliveries: page.Deliveries}
	if c.s.notifier != nil {
		view.Webhooks = c.s.notifier.Webhooks()
	}
	for _, k := range []string{"webhook", "adapter", "event"} {
		if v := q.Get(k); v != "" {
			view.Filter.Set(k, v)
		}
	}
	if page.NextPageToken != "" {
		nq := url.Values{}
		for k, vs := range view.Filter {
			nq[k] = vs
		}
		nq.Set("page_token", page.NextPageToken)
		view.Older = template.URL("/ui/notifications?" + nq.Encode())
	}
	return c.render(w, r, http.StatusOK, "notifications", v, view)
}

// testWebhook answers POST /ui/notifications/webhooks/{name}/test: sends
// the test event, then shows the webhook's deliveries, the test's first.
func (c *console) testWebhook(w http.ResponseWriter, r *http.Request, v viewer) error {
	name := r.PathValue("name")
	if c.s.notifier == nil {
		return server.WebhookNotFound(name)
	}
	if _, err := c.s.notifier.Test(r.Context(), name); err != nil {
		return err
	}
	http.Redirect(w, r, "/ui/notifications?"+url.Values{"webhook": {name}}.Encode(), http.StatusSeeOther)
	return nil
}
