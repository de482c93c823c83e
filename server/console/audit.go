package console

import (
	"html/template"
	"net/http"
	"net/url"

	"github.com/snapstore/snapstore/server"
)

// The audit page: the audit trail, newest first, filtered by actor,
// action and dataset, a page at a time (audit.go).

// auditView is the data of the audit page.
type auditView struct {
	Filter  url.Values // actor, action, dataset, since, until as given
	Entries []server.AuditEntry
	// Older is the link to the next page (a console path and the
	// encoded query, safe as a URL); empty on the last.
	Older template.URL
}

// auditPageUI answers GET /ui/audit, as GET /v1/audit does.
func (c *console) auditPageUI(w http.ResponseWriter, r *http.Request, v viewer) error {
	q := r.URL.Query()
	f := server.AuditFilter{Actor: q.Get("actor"), Action: q.Get("action"), Dataset: q.Get("dataset"), PageToken: q.Get("page_token")}
	var err error
	if f.Since, err = server.ParseTime("since", q.Get("since")); err != nil {
		return err
	}
	if f.Until, err = server.ParseTime("until", q.Get("until")); err != nil {
		return err
	}
	page, err := c.s.AuditList(r.Context(), f)
	if err != nil {
		return err
	}
	view := auditView{Filter: url.Values{}, Entries: page.Entries}
	for _, k := range []string{"actor", "action", "dataset", "since", "until"} {
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
		view.Older = template.URL("/ui/audit?" + nq.Encode())
	}
	return c.render(w, r, http.StatusOK, "audit", v, view)
}
